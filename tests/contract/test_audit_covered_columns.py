"""Every column the audit chain covers, edited in the database by hand, is named by `jobtrail
audit verify` (and `--replay` where the chain covers it through the history): the chain's own
columns, the attempt rows and the closed observation runs its entries bind by hash
(migration 0017), the transitions it vouches for step by step, and the operation columns the
history, the request fingerprint and the result digest bind. Run through the command itself,
on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner
from retention_records import failed, ledger_at, observing, succeeded, tamper

from jobtrail.cli.main import cli
from jobtrail.store import Store

from stores import LedgerDb


@dataclass(frozen=True)
class Case:
    table: str
    column: str
    statement: str  # formatted with the ids below
    named: str  # what the command must say (formatted likewise)
    replay: bool = False  # found by `--replay` only


# The first operation's status run: closed (its automation ended) and sealed. (A create's
# observation is closed at once and covered by the create's attempt instead.)
FIRST_RUN = "(SELECT id FROM observations WHERE operation_id = '{one}' AND source = 'status')"
CASES = [
    Case(
        "audit_log",
        "entry",
        "UPDATE audit_log SET entry = replace(entry, 'worker:a', 'worker:b') WHERE seq = {seq}",
        "entry #{seq} was edited",
    ),
    Case(
        "audit_log",
        "hash",
        "UPDATE audit_log SET hash = (SELECT hash FROM audit_log WHERE seq = 1) WHERE seq = {seq}",
        "entry #{seq} was edited",
    ),
    Case(
        "audit_log",
        "prev_hash",
        "UPDATE audit_log SET prev_hash = (SELECT hash FROM audit_log WHERE seq = 1) "
        "WHERE seq = {seq}",
        "entry #{seq} was edited",
    ),
    Case(
        "audit_log",
        "seq",
        "UPDATE audit_log SET seq = {last} + 1 WHERE seq = 2",
        "entry #{next} was moved (reordered: it belongs after #1)",
    ),
    Case(
        "audit_log",
        "operation_id",
        "UPDATE audit_log SET operation_id = '{two}' WHERE seq = {seq}",
        "entry #{seq} was relabelled: its operation_id column",
    ),
    *(
        Case(
            "attempts",
            column,
            f"UPDATE attempts SET {column} = {value} WHERE attempt_id = '{{attempt}}'",
            f"attempt {{attempt}} was edited: its {column} column is not what audit entry",
        )
        for column, value in [
            ("request", '\'{{"method":"DELETE"}}\''),
            ("detail", "'{{\"n\":2}}'"),
            ("kind", "'cancel'"),
            ("outcome", "'rejected'"),
            ("http_status", "500"),
            ("provider_request_id", "'req_forged'"),
            ("operation_id", "'{two}'"),
        ]
    ),
    Case(
        "attempts",
        "(the row)",
        "DELETE FROM attempts WHERE attempt_id = '{attempt}'",
        "attempt {attempt} of {one}, bound by audit entry #",
    ),
    *(
        Case(
            "observations",
            column,
            f"UPDATE observations SET {column} = {value} WHERE id = {FIRST_RUN}",
            named,
        )
        for column, value, named in [
            *(
                (column, value, "{one} first read by at_")
                for column, value in [
                    ("remote_state", "'RUNNING'"),
                    ("remote_status", "'running'"),
                    ("provider_updated_at", "'2025-03-01T11:00:00Z'"),
                    ("observed_at", "'2025-03-01T11:00:00.000000Z'"),
                    ("last_seen_at", "'2025-03-01T11:00:00.000000Z'"),
                    ("last_request_id", "'req_forged'"),
                    ("progress", "'{{\"percent\":50}}'"),
                    ("last_progress", "'{{\"percent\":50}}'"),
                    ("closed_at", "'2025-03-01T13:00:00.000000Z'"),
                    ("usage", "'{{\"tokens\":1}}'"),
                    ("event_id", "'ev_forged'"),
                ]
            ),
            ("seen_count", "7", "its seen_count column is not what audit entry"),
            ("source", "'webhook'", "is missing from the observations table"),
            ("ref", "'at_forged'", "is missing from the observations table"),
        ]
    ),
    Case(
        "observations",
        "(the row)",
        f"DELETE FROM observations WHERE id = {FIRST_RUN}",
        "sealed by audit entry #",
    ),
    *(
        Case(
            "transitions",
            column,
            f"UPDATE transitions SET {column} = {value} WHERE seq = (SELECT seq FROM "
            "transitions WHERE operation_id = '{one}' ORDER BY seq LIMIT 1 OFFSET 1)",
            "{one}: history step 2 ",
            replay=True,
        )
        for column, value in [
            ("at", "'2025-03-01T12:00:01.000000Z'"),
            ("actor", "'worker:b'"),
            ("from_state", "'observing'"),
            ("to_state", "'observing'"),
            ("evidence", "'observed_running'"),
            ("cause", "'forged'"),
            ("remote_job_id", "'job_evil'"),
        ]
    ),
    Case(
        "operations",
        "state",
        "UPDATE operations SET state = 'succeeded' WHERE operation_id = '{two}'",
        "{two}: stored state is succeeded",
        replay=True,
    ),
    Case(
        "operations",
        "remote_job_id",
        "UPDATE operations SET remote_job_id = 'job_evil' WHERE operation_id = '{three}'",
        "{three}: stored remote job id is 'job_evil'",
        replay=True,
    ),
    Case(
        "operations",
        "request",
        "UPDATE operations SET request = replace(request, '\"n\":2', '\"n\":20') "
        "WHERE operation_id = '{two}'",
        "{two}: its stored request does not match the fingerprint",
        replay=True,
    ),
    Case(
        "operations",
        "result",
        "UPDATE operations SET result = replace(result, 'abab', 'cdcd') "
        "WHERE operation_id = '{one}'",
        "{one}: its stored result",
        replay=True,
    ),
]


async def _ids(store: Store) -> dict[str, Any]:
    ledger, _ = ledger_at(store)
    one, two = await succeeded(ledger, 1), await failed(ledger, 2)
    three = await observing(ledger, 3)
    rows = await store.audit_rows()
    intent = next(r for r in rows if '"kind":"attempt.intent"' in r.entry)
    attempt = json.loads(intent.entry)["data"]["attempt_id"]
    # an entry of the first operation's, not its first two, written by its worker
    seq = next(r.seq for r in rows[2:] if r.columns.get("operation_id") == one.operation_id)
    return {
        "one": one.operation_id,
        "two": two.operation_id,
        "three": three.operation_id,
        "seq": seq,
        "last": len(rows),
        "next": len(rows) + 1,
        "attempt": attempt,
    }


async def _verify(db: LedgerDb, *args: str) -> tuple[int, str]:
    env = {"JOBTRAIL_DB": db.url, "JOBTRAIL_AUDIT_KEY": None}
    done = await asyncio.to_thread(
        CliRunner().invoke, cli, ["audit", "verify", *args], env=env, catch_exceptions=False
    )
    return done.exit_code, done.output


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.table}.{c.column}")
async def test_an_edited_covered_column_is_named(ledger_db: LedgerDb, case: Case) -> None:
    async with ledger_db.opened() as store:
        ids = await _ids(store)
    code, said = await _verify(ledger_db, "--replay")
    assert code == 0, said  # intact before
    await tamper(ledger_db, case.table, case.statement.format(**ids))
    code, said = await _verify(ledger_db, *(["--replay"] if case.replay else []))
    assert code == 1, said
    assert case.named.format(**ids) in said, said
