"""What the AWS code providers share: one traced call per attempt, dispatched by its kind to
the provider's own action, and a reconcile that sends nothing where the service has no
lookup (Athena, Bedrock), stated in one sentence the attempt records."""

from __future__ import annotations

from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.classify import classify
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.providers.aws.calls import AwsCalls, Failure
from jobtrail.providers.protocol import Reply


class AwsProvider:
    """The call dispatch of an AWS provider; subclasses write the actions."""

    calls: AwsCalls
    # Why a reconcile sends nothing (the service has no lookup), or None when `_lookup` is
    # written.
    no_lookup: str | None = None

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        with self.calls.traced(kind, op):
            match kind:
                case AttemptKind.CREATE:
                    return await self._start(op)
                case AttemptKind.STATUS:
                    return await self._status(op)
                case AttemptKind.CANCEL:
                    return await self._stop(op)
                case AttemptKind.RESULT:
                    return await self._result(op)
                case AttemptKind.RECONCILE if self.no_lookup is None:
                    return await self._lookup(op)
        reason = f"{self.no_lookup}; nothing was sent"
        return Reply(outcome=o.Rejected(reason=reason), detail={"error": reason, "sent": False})

    async def close(self) -> None:
        await self.calls.close()

    async def _send_stop(self, action: str, params: dict[str, Any]) -> Reply:
        """The cancel every AWS provider sends: `action` on the job `params` name."""
        stopped = await self.calls.invoke(action, params)
        if isinstance(stopped, Failure):
            return Reply(outcome=classify(AttemptKind.CANCEL, stopped), detail=stopped.detail)
        ack = o.CancelAcknowledged(http_status=stopped.http_status, request_id=stopped.request_id)
        return Reply(outcome=ack, detail=stopped.detail)

    async def _start(self, op: Operation) -> Reply:
        raise NotImplementedError

    async def _status(self, op: Operation) -> Reply:
        raise NotImplementedError

    async def _stop(self, op: Operation) -> Reply:
        raise NotImplementedError

    async def _result(self, op: Operation) -> Reply:
        raise NotImplementedError

    async def _lookup(self, op: Operation) -> Reply:
        raise NotImplementedError
