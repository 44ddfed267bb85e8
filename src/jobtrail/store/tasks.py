"""Task handles in both stores (migration 0013; queries in sql/<dialect>/tasks.sql): one
row per handle, converted here with the store's own time codec."""

from __future__ import annotations

from typing import Any

from jobtrail.core.tasks import TaskHandle
from jobtrail.store.codec import Codec


def task_row(codec: Codec, handle: TaskHandle) -> dict[str, Any]:
    return {
        "task_hash": handle.task_hash,
        "operation_id": handle.operation_id,
        "owner": handle.owner,
        "tool": handle.tool,
        "existing": handle.existing,
        "created_at": codec.t_out(handle.created_at),
        "expires_at": codec.t_out(handle.expires_at),
    }


def task_handle(codec: Codec, row: Any) -> TaskHandle:
    created = codec.t_in(row["created_at"])
    assert created is not None
    return TaskHandle(
        task_hash=row["task_hash"],
        operation_id=row["operation_id"],
        owner=row["owner"],
        tool=row["tool"],
        existing=bool(row["existing"]),
        created_at=created,
        expires_at=codec.t_in(row["expires_at"]),
    )
