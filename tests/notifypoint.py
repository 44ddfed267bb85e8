"""A process that drives an operation into needs_human with the real library, then SIGKILLs
itself (or is killed) at a named point of its notice's life. Used by test_notify_crash.py.

    python notifypoint.py DB DATA_DIR PROVIDER_FILE POINT [URL]

after_transition: killed once the transition (and its notice) is committed, before any
delivery. in_delivery: delivers to URL, whose receiver SIGKILLs this process while the
post is in flight (before its outcome is recorded). Prints the operation id first.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import timedelta

from jobtrail.providers.file.config import load_provider_file
from jobtrail.services.notify import Notifier, endpoint
from jobtrail.services.runtime import runtime

POINTS = ("after_transition", "in_delivery")
BODY = {"account": "a", "_sim": {"drop_create_answer": True, "different_id_on_retry": True}}


async def main(db: str, data: str, provider_file: str, point: str, url: str) -> None:
    spec = load_provider_file(provider_file)
    async with runtime(db, data, worker_id="doomed-worker", concurrency=1) as rt:
        op = await rt.ledger.submit(spec, json.loads(json.dumps(BODY)), actor="crash-test")
        print(op.operation_id, flush=True)
        await rt.worker.run(until_idle=True)
        if point == "after_transition":
            os.kill(os.getpid(), signal.SIGKILL)
        async with Notifier(rt.ledger, [endpoint(url)], hold=timedelta(seconds=1)) as n:
            await n.deliver_due()  # the receiver kills us during this post
        raise SystemExit("the receiver did not kill this process")


if __name__ == "__main__":
    db, data, provider_file, point = sys.argv[1:5]
    assert point in POINTS, point
    asyncio.run(main(db, data, provider_file, point, sys.argv[5] if len(sys.argv) > 5 else ""))
