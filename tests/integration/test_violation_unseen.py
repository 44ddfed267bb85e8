"""A provider that answers a same-token retry with another job (a contract violation) can
only be caught breaking its contract if a retry reaches it. When the first create's answer
is lost and every retry after it is cut before it is sent (workers killed between the
intent and the send, as tests/acceptance/test_crash_many.py does at random), the provider
made one job: the declared lookup lists that one job, which is adopted and followed to its
end. One job, no violation to see: `succeeded` is the truth. A retry that does reach the
provider makes the second job, and the same lookup then stops the operation for a person.
On SQLite and PostgreSQL, over loopback, on a virtual clock."""

from __future__ import annotations

from datetime import timedelta

from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.plan import Call, Settle, plan
from jobtrail.core.states import Evidence, State
from jobtrail.providers.guarded import guarded_call
from jobtrail.store.machine_clock import machine_now

from harness import Harness
from waits import until_true

DEAD = "dead-worker"
VIOLATION = {"drop_create_answer": True, "different_id_on_retry": True}
LEASE = 0.2  # the dead workers' lease (seconds, on the machine's clock)


async def _dies_mid_retry(rig: Harness, op_id: str, *, send: bool) -> None:
    """A worker takes `op_id` over when it is due, settles the call its predecessor left
    in flight (if any), records the intent of a create retry and dies, before sending it
    or (`send`) just after the provider answered; its short lease then lapses."""
    due = await rig.rt.ledger.next_due()
    assert due is not None
    if due > rig.clock.now():
        rig.clock.advance((due - rig.clock.now()).total_seconds())
    (claim,) = await rig.rt.ledger.claim(DEAD, 1, timedelta(seconds=LEASE))
    op: Operation = claim.operation
    action = plan(op, rig.rt.ledger.now())
    if isinstance(action, Settle):  # the call the previous dead worker left in flight
        op = await rig.rt.ledger.settle(op, action.outcome, DEAD)
        action = plan(op, rig.rt.ledger.now())
    assert action == Call(kind=AttemptKind.CREATE, retry=True), action
    provider = rig.rt.providers.for_operation(op)
    request = provider.describe(AttemptKind.CREATE, op)
    op, _ = await rig.rt.ledger.begin_call(op, AttemptKind.CREATE, request, DEAD)
    ended = machine_now()[1] + LEASE + 0.1
    if send:
        reply = await guarded_call(provider, rig.rt.ledger.redactor(op), AttemptKind.CREATE, op)
        assert reply.outcome is not None and reply.outcome.word == "accepted"
    until_true(lambda: machine_now()[1] > ended, 5, "the dead worker's lease lapsed")
    rig.clock.advance(LEASE + 0.1)


async def _first_answer_lost(rig: Harness) -> str:
    """The first create reaches the provider, which makes a job and drops the answer."""
    op = await rig.submit({"account": "a", "_sim": VIOLATION})
    await rig.tick()  # one worker round: the create is sent, its answer lost
    op = await rig.op(op)
    assert op.state is State.CREATE_UNKNOWN and len(rig.jobs_for(op)) == 1
    return op.operation_id


async def test_retries_that_never_reach_the_provider_leave_one_job_adopted(rig: Harness) -> None:
    """Both retries after the lost answer are cut before they are sent: the lookup the
    third unanswered create calls for lists the one job there is, which is followed."""
    op_id = await _first_answer_lost(rig)
    await _dies_mid_retry(rig, op_id, send=False)
    await _dies_mid_retry(rig, op_id, send=False)
    await rig.run()
    op = await rig.op(op_id)
    (job,) = rig.jobs_for(op)  # the provider never saw a retry: it made one job
    assert op.state is State.SUCCEEDED and op.remote_job_id == job.job_id
    evidence = [t.evidence for t in await rig.history(op)]
    assert Evidence.RECONCILED_FOUND in evidence and Evidence.CONTRACT_VIOLATION not in evidence
    kinds = [a.kind for a in await rig.rt.ledger.store.attempts(op_id)]
    assert kinds.count(AttemptKind.CREATE) == 3 and AttemptKind.RECONCILE in kinds


async def test_a_retry_that_reaches_the_provider_shows_the_violation(rig: Harness) -> None:
    """The same, but the second retry reached the provider (its answer, a second job, was
    never recorded): the lookup lists both jobs and a person decides."""
    op_id = await _first_answer_lost(rig)
    await _dies_mid_retry(rig, op_id, send=False)
    await _dies_mid_retry(rig, op_id, send=True)
    await rig.run()
    op = await rig.op(op_id)
    jobs = {job.job_id for job in rig.jobs_for(op)}
    assert op.state is State.NEEDS_HUMAN and len(jobs) == 2
    assert set(op.conflicting_job_ids) == jobs
    assert (await rig.history(op))[-1].evidence is Evidence.CONTRACT_VIOLATION
