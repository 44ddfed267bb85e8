"""The PostgreSQL claim walks the due index in order and stops at its LIMIT, whatever the
planner estimates: with many operations due (a backlog), a plan that reads every due row
and sorts them (a bitmap scan) made each claim cost grow with the backlog (issue 32).
Checked on a real server, in a generic plan (what a prepared claim ends up with, its `now`
unknown to the planner) and a custom one, with the table's statistics older than its rows
(a ledger that grew since autovacuum last analyzed it), where the old claim read all 7,000
due rows."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from jobtrail.providers.file.config import parse_provider
from jobtrail.store import open_store
from jobtrail.store.postgres import Q

from stores import migrated_ledger

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the bench package lives beside src/, not in it

from bench import seed  # noqa: E402
from bench.common import provider_doc  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # 100,000 operations seeded

DUE, LATER, LIMIT = 7_000, 93_000, 50


def _due_scan(plan: dict[str, Any]) -> dict[str, Any]:
    if plan.get("Index Name") == "operations_due":
        return plan
    for child in plan.get("Plans", []):
        if found := _due_scan(child):
            return found
    return {}


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
async def test_the_claim_reads_no_more_due_rows_than_it_claims(mode: str, tmp_path: Path) -> None:
    async with migrated_ledger("postgres", tmp_path) as db:
        await (await open_store(db.url)).close()
        spec = parse_provider(provider_doc("http://127.0.0.1:1", poll_initial="200s"))
        start = seed.now()

        def dues() -> Any:  # DUE operations due over the last 10 s, LATER in the next hour
            for i in range(DUE + LATER):
                ahead = -10 * i / DUE if i < DUE else 3600 * i / (DUE + LATER)
                yield start + timedelta(seconds=ahead)

        codec = seed.codec_for(db.url)
        rows = seed.rows(codec, seed.template(spec, start), None, dues(), count=DUE + LATER, seed=1)
        seed.insert(db.url, rows)
        now = seed.now()
        args = {"now": now, "limit": LIMIT, "owner": "w", "expires": now + timedelta(minutes=1)}
        args |= {"lease_s": 60.0, "only": None, "code": []}
        with psycopg.connect(db.url) as conn:
            conn.execute(f"SET plan_cache_mode = {mode}")
            explain = "EXPLAIN (ANALYZE, FORMAT JSON) " + Q["claim_due_drives"]
            (plan,) = conn.execute(explain, args, prepare=True).fetchone() or (None,)
            conn.rollback()
    top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    scan = _due_scan(top)
    assert scan["Node Type"] == "Index Scan", scan["Node Type"]
    assert scan["Actual Rows"] <= LIMIT
