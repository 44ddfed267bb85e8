"""The public Python API: `Client` (asyncio), `SyncClient` (scripts, notebooks) and
`Result`. Import them from `jobtrail`; see docs/python.md."""

from __future__ import annotations

from jobtrail.client.aio import Client
from jobtrail.client.result import Result
from jobtrail.client.sync import SyncClient

__all__ = ["Client", "Result", "SyncClient"]
