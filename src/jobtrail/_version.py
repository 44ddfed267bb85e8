"""jobtrail's version, readable without importlib.metadata (which costs `jobtrail --version`
more than the rest of its start-up); tests/unit/test_version.py keeps it equal to the
version in pyproject.toml."""

VERSION = "0.1.0"
