"""Text holding a NUL (U+0000) is storable, the same way on every store (issue 19): a text
field keeps U+FFFD in its place (PostgreSQL text cannot hold a NUL), a JSON document keeps
it exactly, and every lookup by such a text finds what was stored under it."""

from __future__ import annotations

from dataclasses import replace

from jobtrail.core.states import State
from jobtrail.store import Store
from jobtrail.store.changes import Verdict

from contract_records import LEASE, at, attempt, finished, observation, operation, step

NUL, REPLACED = "\x00", "\ufffd"


async def test_provider_text_with_a_nul_is_recorded_and_found_again(store: Store) -> None:
    """A state word, job id, request id, event id, error detail and cause holding a NUL are
    committed; text fields read back with U+FFFD, JSON documents exactly; the operation is
    found by its NUL-bearing remote job id, and the same event id is known as a duplicate."""
    op = operation(1, key=f"key{NUL}1", state=State.OBSERVING, remote_job_id=f"job{NUL}1")
    await store.create_operation(op, [])
    assert (await store.get_by_key(f"key{NUL}1")) is not None
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    op = claim.operation
    seen = replace(
        observation(op, at(2), event_id=f"evt{NUL}1", state=f"run{NUL}ning"),
        request_id=f"req{NUL}1",
        progress={"note": f"half{NUL}way"},
    )
    done = replace(
        finished(attempt(op, at(2)), at(2)),
        provider_request_id=f"preq{NUL}1",
        detail={"error": f"bad{NUL}thing"},
    )
    change = step(op, at(2), fence=op.fence, to=State.OBSERVING)
    change = replace(
        change,
        operation=replace(change.operation, remote_state=f"run{NUL}ning"),
        observations=[seen],
        safe_read=done,
        transitions=[replace(t, cause=f"saw{NUL}it") for t in change.transitions],
    )
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK
    stored = await store.get(op.operation_id)
    assert stored is not None and stored.remote_state == f"run{REPLACED}ning"
    assert stored.remote_job_id == f"job{REPLACED}1"
    (ob,) = await store.observations(op.operation_id)
    assert (ob.remote_state, ob.request_id, ob.event_id) == (
        f"run{REPLACED}ning",
        f"req{REPLACED}1",
        f"evt{REPLACED}1",
    )
    assert ob.progress == {"note": f"half{NUL}way"}  # JSON keeps it exactly
    (read,) = await store.attempts(op.operation_id)
    assert read.provider_request_id == f"preq{REPLACED}1"
    assert read.detail == {"error": f"bad{NUL}thing"}
    assert all(NUL not in t.cause for t in await store.history(op.operation_id))
    found = await store.find_by_remote_job(op.provider, f"job{NUL}1")
    assert found is not None and found.operation_id == op.operation_id
    again = replace(change, operation=stored, before=stored, transitions=[], safe_read=None)
    (dup,) = await store.commit([replace(again, observations=[replace(seen, observed_at=at(3))])])
    assert dup.verdict is Verdict.DUPLICATE_EVENT
