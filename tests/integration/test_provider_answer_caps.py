"""A provider's answers are stored capped (issue 19): a code provider that answers every
status read with a 2 MB progress document, a 2 MB detail and a 200 kB state word costs the
ledger (SQLite file, PostgreSQL) at most about 64 KiB of each per read, and every cut is
recorded where the value was (how long it was, its beginning kept)."""

from __future__ import annotations

import json
from pathlib import Path

import jobtrail
from jobtrail.core.caps import DOCUMENT_LIMIT, TEXT_LIMIT
from jobtrail.testing import (
    AttemptKind,
    RemoteStatus,
    Reply,
    ScriptedCall,
    ScriptedProvider,
    outcomes,
)

from stores import migrated_ledger

BIG = 2_000_000
READS = 4


def huge(call: ScriptedCall) -> Reply:
    if call.kind is AttemptKind.CREATE:
        job = f"job-{call.operation.operation_id}"
        accepted = outcomes.Accepted(
            job_id=job, remote_state="queued", remote_status=RemoteStatus.RUNNING
        )
        return Reply(outcome=accepted)
    if call.kind is AttemptKind.STATUS and call.number < READS:
        running = outcomes.Observed(
            remote_state="running " + "w" * 200_000 + str(call.number),
            remote_status=RemoteStatus.RUNNING,
            progress={"read": call.number, "blob": "p" * BIG},
        )
        return Reply(outcome=running, detail={"dump": "d" * BIG})
    return Reply(
        outcome=outcomes.Observed(remote_state="done", remote_status=RemoteStatus.SUCCEEDED)
    )


async def test_huge_answers_are_stored_capped_with_the_cut_recorded(
    store_kind: str, tmp_path: Path
) -> None:
    provider = ScriptedProvider(huge)
    async with (
        migrated_ledger(store_kind, tmp_path) as db,
        jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt,
    ):
        op = await jt.submit("scripted", {"n": 1})
        done = await jt.wait(op.operation_id, timeout=60)
        store = jt._opened.ledger.store
        attempts = await store.attempts(op.operation_id)
        observations = await store.observations(op.operation_id)
    assert done.state is jobtrail.State.SUCCEEDED
    reads = [a for a in attempts if a.kind is AttemptKind.STATUS]
    assert len(provider.calls_of(AttemptKind.STATUS)) == READS
    cut = [read.detail for read in reads if read.detail and "cut" in read.detail]
    assert cut and all(detail["characters"] > BIG for detail in cut)
    assert all(len(json.dumps(read.detail)) < DOCUMENT_LIMIT for read in reads)
    running = [ob for ob in observations if ob.source == "status" and ob.progress]
    assert running and all("cut" in ob.progress for ob in running)
    words = [ob.remote_state or "" for ob in observations]
    assert max(len(w) for w in words) < TEXT_LIMIT + 100
    assert any("[cut: " in w for w in words)
    if store_kind == "sqlite":
        size = sum(p.stat().st_size for p in tmp_path.rglob("ledger.db*"))
        assert size < 3 * READS * (DOCUMENT_LIMIT + TEXT_LIMIT) + 2_000_000, size
