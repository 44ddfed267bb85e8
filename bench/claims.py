"""The claim query's cost with a million operations in the table (part of benchmark 3).

The ledger holds 100,000 live operations (all due at the `now` used here) and 900,000 that
ended (no next poll time, so outside the partial due index). On PostgreSQL two claim shapes
are compared on the same rows, each claim run in a transaction that is rolled back:

- A, jobtrail's: the database derives `due_at` (the lease expiry while leased, else
  next_poll_at; migration 0003), so `due_at <= now` on its index alone decides what is
  claimable;
- B, the usual alternative: the claim reads next_poll_at (its own index, made here for the
  comparison) and also filters `lease_expires_at IS NULL OR lease_expires_at < now`,
  stepping over every leased row that is past due.

Both run with some operations already leased by another worker (in flight), as in a busy
ledger: in A they sit outside the due range; in B they sit at its head.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from datetime import datetime, timedelta

import psycopg

from jobtrail.store.postgres import Q
from jobtrail.store.sqlite import Q as SQLITE_Q
from jobtrail.store.sqlite import _t_out

# What SqliteStore.claim_due selects before leasing (jobtrail/store/sqlite.py).
SQLITE_DUE = SQLITE_Q["claimable"].format(only="")
CLAIM_A = Q["claim_due"]
_DUE = (
    "SELECT operation_id, due_at FROM operations\n    WHERE due_at <= %(now)s\n"
    "        AND (lease_owner IS NULL OR lease_until IS NULL\n"
    "            OR lease_until <= (SELECT now FROM clock))\n    ORDER BY due_at"
)
assert _DUE in CLAIM_A, "the claim query changed: update bench/claims.py"
CLAIM_B = CLAIM_A.replace(
    _DUE,
    "SELECT operation_id, next_poll_at AS due_at FROM operations WHERE next_poll_at <= %(now)s "
    "AND (lease_expires_at IS NULL OR lease_expires_at < %(now)s) ORDER BY next_poll_at",
)


def sqlite_plan(path: str, now: datetime) -> str:
    with sqlite3.connect(path) as conn:
        args = (_t_out(now), "boot:bench", 0.0, 100)  # now, the machine clock and its reading
        rows = conn.execute("EXPLAIN QUERY PLAN " + SQLITE_DUE, args).fetchall()
    return "\n".join(str(row[-1]) for row in rows)


def pg_explain(url: str, query: str, args: dict[str, object]) -> str:
    with psycopg.connect(url) as conn:
        rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, args).fetchall()
        conn.rollback()
    return "\n".join(str(row[0]) for row in rows)


def pg_claim_ms(url: str, query: str, args: dict[str, object], repeat: int) -> tuple[float, int]:
    """(median ms per claim, rows it claimed), each claim rolled back so all see one state."""
    times, claimed = [], 0
    with psycopg.connect(url) as conn:
        for _ in range(repeat):
            started = time.perf_counter()
            claimed = len(conn.execute(query, args).fetchall())
            times.append((time.perf_counter() - started) * 1000)
            conn.rollback()
    return statistics.median(times), claimed


def pg_lease_some(url: str, count: int, now: datetime, representation: str) -> None:
    """Make every live operation due at its last update, then leave the `count` earliest
    leased by another worker for a day. The rows are the same for both shapes (the lease
    lives in its own columns); B gets the next_poll_at index it reads."""
    expires = now + timedelta(days=1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL, "
            "next_poll_at = updated_at WHERE next_poll_at IS NOT NULL"
        )
        if representation == "B":
            conn.execute(
                "CREATE INDEX IF NOT EXISTS bench_next_poll ON operations (next_poll_at) "
                "WHERE next_poll_at IS NOT NULL"
            )
        if count:
            conn.execute(
                "UPDATE operations o SET lease_owner = 'other-worker', "
                "lease_expires_at = %(expires)s "
                "FROM (SELECT operation_id FROM operations WHERE next_poll_at <= %(now)s "
                "ORDER BY next_poll_at LIMIT %(n)s) d WHERE o.operation_id = d.operation_id",
                {"expires": expires, "now": now, "n": count},
            )
        conn.execute("VACUUM ANALYZE operations")
