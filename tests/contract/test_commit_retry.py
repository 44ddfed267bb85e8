"""A group commit that PostgreSQL rolls back (a deadlock) and the store tries again starts
from nothing of its first try: the retry seals each observation run it closes once, and
the audit chain binds what the tables hold (`audit verify` finds nothing edited).

The deadlock is a real one, made on the server: a second connection holds the audit
chain's head (as a concurrent prune or writer does) while the commit has updated the
operation's row and closed its observation run, then asks for that row; PostgreSQL's
deadlock check aborts the commit, which waited first, and the store runs it again."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg

from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.ledger.bindings import edited_rows
from jobtrail.store.changes import Change, Verdict
from jobtrail.store.engine import Store

from contract_records import LEASE, at, attempt, finished, observation, operation, step
from stores import fresh_ledger
from waits import until_true_async


def _read(op: Operation, second: float, n: int, state: str) -> Change:
    """A status read that changes the remote state: it closes the open observation run."""
    seen = replace(observation(op, at(second), state=state), request_id=f"preq_{n}")
    done = finished(attempt(op, at(second), n), at(second))
    change = step(op, at(second), fence=op.fence)
    return replace(change, observations=[seen], safe_read=done, audit=[])


async def _blocked_by(admin: psycopg.AsyncConnection, holder_pid: int) -> bool:
    """Whether a session (the store's commit) waits for a lock the holder has."""
    found = await (
        await admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (holder_pid,),
        )
    ).fetchone()
    return bool(found and found[0] >= 1)


def _checked_after(url: str, seconds: int) -> str:
    """`url` whose sessions look for a deadlock only after waiting `seconds` (libpq options;
    deadlock_timeout is a superuser setting, and the test server's user is one)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query["options"] = f"{query.get('options', '')} -c deadlock_timeout={seconds}s".strip()
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


async def test_a_commit_retried_after_a_deadlock_seals_each_run_once(tmp_path: Path) -> None:
    # Which session PostgreSQL aborts depends on whose deadlock check runs once the cycle
    # exists: each session checks once, deadlock_timeout after it began to wait. The commit
    # waits first; on a loaded machine the holder's UPDATE could come after the commit's
    # check at the default 1 s, and the holder would be the one aborted. So the commit checks
    # after 10 s and the holder only after 10 minutes: the commit is always the victim.
    async with fresh_ledger("postgres", tmp_path) as plain:
        db = replace(plain, url=_checked_after(plain.url, 10))
        async with db.opened() as store:
            await _deadlocked_commit(db.url, store)


async def _deadlocked_commit(url: str, store: Store) -> None:
    """Deadlock a commit with a second session holding the audit chain's head: the store
    retries it, and the retry seals each observation run once."""
    op = operation(1, next_poll_at=at(0), state=State.OBSERVING, remote_job_id="j1")
    await store.create_operation(op, [])
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    (first,) = await store.commit([_read(claim.operation, 2, 0, "RUNNING")])
    assert first.verdict is Verdict.OK and first.operation is not None
    seals_before = [r for r in await store.audit_rows() if '"observation.run"' in r.entry]

    async with (
        await psycopg.AsyncConnection.connect(url) as holder,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as admin,
    ):
        await holder.execute("SET deadlock_timeout = '600s'")
        await holder.execute("SELECT seq FROM audit_head FOR UPDATE")  # holds the head
        commit = asyncio.create_task(store.commit([_read(first.operation, 4, 2, "QUEUED")]))
        pid = holder.info.backend_pid
        await until_true_async(
            lambda: _blocked_by(admin, pid), 20, "the commit waiting for the head"
        )
        # Ask for the row the waiting commit updated: a cycle, which PostgreSQL breaks
        # by aborting the commit (it waited first); the store then tries it again.
        await holder.execute(
            "UPDATE operations SET operation_id = operation_id WHERE operation_id = %s",
            (op.operation_id,),
        )
        # It was granted: the commit's first try was aborted, and it waits to try again.
        await holder.rollback()
        (second,) = await asyncio.wait_for(commit, 60)
    assert second.verdict is Verdict.OK

    rows = await store.audit_rows()
    seals = [r for r in rows if '"observation.run"' in r.entry]
    assert len(seals) == len(seals_before) + 1, "one run closed, one seal"
    attempts = await store.attempts(op.operation_id)
    observed = {op.operation_id: await store.observations(op.operation_id)}
    assert edited_rows(rows, attempts, observed) == []
