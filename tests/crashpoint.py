"""A process that does part of an operation's work with the real library, then SIGKILLs
itself at a named point. Used by test_crash.py to prove nothing is lost or sent twice.

    python crashpoint.py DB DATA_DIR PROVIDER_FILE POINT [BODY_JSON]

Prints the operation id before dying.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import replace
from datetime import timedelta

from jobtrail.core.model import AttemptKind
from jobtrail.providers.file.config import load_provider_file
from jobtrail.services.runtime import runtime

POINTS = ("after_submit", "after_intent", "after_answer", "after_job_id_stored")


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def main(db: str, data: str, provider_file: str, point: str, body: str) -> None:
    spec = load_provider_file(provider_file)
    async with runtime(db, data, worker_id="doomed-worker", concurrency=1) as rt:
        op = await rt.ledger.submit(spec, json.loads(body), actor="crash-test")
        print(op.operation_id)
        if point == "after_submit":
            die()
        (claim,) = await rt.ledger.store.claim_due(
            "doomed-worker", rt.clock.now(), 1, timedelta(seconds=2)
        )
        held = replace(claim.operation, next_poll_at=claim.was_due)
        provider = rt.providers.for_operation(held)
        held, attempt = await rt.ledger.begin_call(
            held, AttemptKind.CREATE, provider.describe(AttemptKind.CREATE, held), "doomed-worker"
        )
        if point == "after_intent":
            die()
        reply = await provider.call(AttemptKind.CREATE, held)
        if point == "after_answer":
            die()
        assert reply.outcome is not None
        await rt.ledger.finish_call(
            held, attempt, reply.outcome, detail=reply.detail, actor="doomed-worker"
        )
        die()  # after_job_id_stored: before the first poll


if __name__ == "__main__":
    db, data, provider_file, point = sys.argv[1:5]
    assert point in POINTS, point
    asyncio.run(main(db, data, provider_file, point, sys.argv[5] if len(sys.argv) > 5 else "{}"))
