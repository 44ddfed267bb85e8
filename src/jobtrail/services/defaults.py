"""Where a ledger and its results are, and who asks, when nobody said: the same answers for
the CLI and the Client, so both find the same ledger from the same folder. Cheap to import
(`jobtrail --version` reads it)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path


def ledger_url(db: str | None = None) -> str:
    """`db`, else JOBTRAIL_DB, else ./jobtrail.db."""
    return db or os.environ.get("JOBTRAIL_DB") or "jobtrail.db"


def data_dir_for(db: str) -> Path:
    """JOBTRAIL_DATA, else `jobtrail-data` beside a SQLite ledger (in the working directory
    for a PostgreSQL one)."""
    if os.environ.get("JOBTRAIL_DATA"):
        return Path(os.environ["JOBTRAIL_DATA"])
    base = Path.cwd() if db.startswith(("postgresql://", "postgres://")) else Path(db).parent
    return base / "jobtrail-data"


def results_url(results: str | None = None) -> str | None:
    """`results`, else JOBTRAIL_RESULTS, else None (files under the data folder)."""
    return results or os.environ.get("JOBTRAIL_RESULTS") or None


def actor(prefix: str) -> str:
    """JOBTRAIL_ACTOR, else `PREFIX:<the user's login name>`."""
    return os.environ.get("JOBTRAIL_ACTOR") or f"{prefix}:{_user()}"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
