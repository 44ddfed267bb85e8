"""The public API as a user's type checker sees it: checked by `make typecheck` with mypy
--strict and pyright (never run). An error that goes missing is an unused ignore, which
both checkers report: so the lines marked as errors must stay errors."""

from __future__ import annotations

from typing import assert_type

import jobtrail
from jobtrail.plugin import (
    AttemptKind,
    Capabilities,
    CodeProvider,
    Operation,
    RemoteStatus,
    Reply,
    ResultMode,
)
from jobtrail.plugin import outcomes as o


async def client_calls() -> None:
    async with jobtrail.Client("ledger.db", worker=False) as jt:
        op = await jt.submit("simulator", {"account": "a"}, key="k", reason="why")
        assert_type(op, jobtrail.Operation)
        done = await jt.wait(op.operation_id, timeout=5.0)
        assert_type(done.state, jobtrail.State)
        result = await jt.result(op.operation_id)
        assert_type(result, jobtrail.Result)
        await jt.submit("simulator", {}, nokey="k")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def sync_client_calls() -> None:
    with jobtrail.SyncClient("ledger.db", worker=False) as jt:
        op = jt.submit("simulator", {"account": "a"}, key="k")
        assert_type(op, jobtrail.Operation)
        assert_type(jt.wait(op.operation_id, timeout=5.0), jobtrail.Operation)
        assert_type(jt.explain(op.operation_id), str)
        jt.wait(op.operation_id, timeout="soon")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    jobtrail.SyncClient("ledger.db", wrker=False)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


class Minimal:
    """A code provider that satisfies the protocol a plug-in author implements."""

    name = "minimal"
    version = "1.0"
    capabilities = Capabilities(result=ResultMode.NONE)
    deadlines = {"create": "1m"}  # noqa: RUF012 (as docs/code-providers.md writes it)
    poll: dict[str, str] = {}  # noqa: RUF012

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, str]:
        return {"call": kind.value}

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        seen = o.Observed(remote_state="done", remote_status=RemoteStatus.SUCCEEDED)
        return Reply(outcome=seen)


def as_plugin() -> CodeProvider:
    return Minimal()


def errors_are_public() -> type[jobtrail.JobtrailError]:
    return jobtrail.NotPermitted
