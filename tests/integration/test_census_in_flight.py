"""A create whose intent is recorded and whose answer never was (a worker that died right
after sending) may have made a job: a per-operation census asks about that operation too,
and calls the job it finds that operation's, never a second job nor unseen."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from census_rig import census_of, plant_report
from jobtrail.core.census import Category
from jobtrail.core.model import AttemptKind

from harness import Harness


async def test_a_create_sent_and_never_answered_is_asked_about(rig: Harness) -> None:
    """The create intent is committed, the job made (planted under the operation's
    reference), the answer lost with the worker: the census finds it as that operation's."""
    op = await rig.submit({"n": 1})
    (claim,) = await rig.rt.ledger.store.claim_due(
        "doomed-worker", rig.clock.now(), 1, timedelta(minutes=10)
    )
    held = replace(claim.operation, next_poll_at=claim.was_due)
    request = rig.rt.providers.for_operation(op).describe(AttemptKind.CREATE, held)
    await rig.rt.ledger.begin_call(held, AttemptKind.CREATE, request, "doomed-worker")
    job = await plant_report(rig, op.operation_id)

    census = await census_of(rig)

    assert census.reach.requests == 1 and census.reach.complete
    (found,) = census.findings
    assert (found.job.job_id, found.category) == (job, Category.FOLLOWED)
    assert found.operation_id == op.operation_id and "not yet named there" in found.knows
