"""Providers: the provider file, its capabilities, and the generic HTTP provider."""
