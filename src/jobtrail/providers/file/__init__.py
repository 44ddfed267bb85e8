"""The provider file: its schema (keys.py, schema.py), the records it becomes (spec.py)
and the rules that tie its keys together (config.py and its helpers)."""
