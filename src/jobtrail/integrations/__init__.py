"""Small integrations with agent frameworks, each an optional extra (docs/agents.md)."""
