"""Task handles (MCP Tasks, core/tasks.py): durable, unguessable handles on operations."""

from __future__ import annotations

from datetime import timedelta

from jobtrail.core.model import (
    Operation,
)
from jobtrail.core.tasks import TASK_PREFIX, TaskHandle, new_task_id, task_hash
from jobtrail.ledger.common import LedgerBase


class Handles(LedgerBase):
    async def open_task(
        self, op: Operation, *, owner: str, tool: str, existing: bool, ttl: timedelta | None
    ) -> tuple[str, TaskHandle]:
        """Record a durable handle on `op` bound to `owner`, committed before this returns.
        The task id is returned here once: the ledger keeps only its hash."""
        task_id, now = new_task_id(self.rand), self.now()
        handle = TaskHandle(
            task_hash=task_hash(task_id),
            operation_id=op.operation_id,
            owner=owner,
            tool=tool,
            existing=existing,
            created_at=now,
            expires_at=None if ttl is None else now + ttl,
        )
        await self.store.add_task(handle)
        return task_id, handle

    async def task(self, task_id: str, *, owner: str) -> TaskHandle | None:
        """The handle `task_id` names, expired or not, if it is bound to `owner`; anyone
        else learns nothing, not even that it exists."""
        if not task_id.startswith(TASK_PREFIX) or len(task_id) > 200:
            return None
        handle = await self.store.task(task_hash(task_id))
        return handle if handle is not None and handle.owner == owner else None
