"""Presentation: the words, tables and JSON shapes every surface shows for an operation,
from the core's rules (what is allowed, what comes next, why it failed)."""
