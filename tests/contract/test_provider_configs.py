"""Provider documents are stored once (migration 0008): operations submitted under one
document share one provider_configs row and hold its key, every read gives the document
back, rows written before 0008 (holding the document itself) read as before, and a stored
document can be neither changed nor removed."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from jobtrail.core.model import Operation
from jobtrail.store import Store
from jobtrail.store.codec import config_key
from jobtrail.store.finding import OperationQuery
from jobtrail.store.sqlite import CODEC

from contract_records import LEASE, at, entry, operation
from stores import RAW_ERRORS, LedgerDb

OTHER = {"name": "sim", "poll": {"initial": "5s"}, "states": {"done": "succeeded"}}


async def _raw_rows(db: LedgerDb, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on a plain connection, outside the store."""
    if db.kind == "sqlite":
        conn = sqlite3.connect(db.url)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    async with await psycopg.AsyncConnection.connect(db.url, autocommit=True) as pg:
        cur = await pg.execute(sql.encode())
        return await cur.fetchall()


async def _create(store: Store, op: Operation) -> None:
    await store.create_operation(op, [entry(op, "operation.submitted")])


async def _every_read(store: Store, op: Operation) -> list[Operation]:
    """`op` as each of the store's reads returns it."""
    by_id, by_key = await store.get(op.operation_id), await store.get_by_key(op.key)
    assert by_id is not None and by_key is not None
    listed = [o for o in await store.list_operations(limit=10) if o.operation_id == op.operation_id]
    page = await store.find_operations(OperationQuery(limit=10))
    found = [o for o in page.operations if o.operation_id == op.operation_id]
    (claim,) = await store.claim_due("worker:a", at(100), 1, LEASE, only=op.operation_id)
    return [by_id, by_key, *listed, *found, claim.operation]


async def test_operations_under_one_document_share_one_stored_copy(ledger_db: LedgerDb) -> None:
    """Three operations under one provider document and one under another: two documents
    stored, each operation row holding a key, and every read giving its document back."""
    ops = [operation(1), operation(2), operation(3), operation(4, provider_config=OTHER)]
    async with ledger_db.opened() as store:
        for op in ops:
            await _create(store, op)
        for op in ops:
            for read in await _every_read(store, op):
                assert read.provider_config == op.provider_config
                assert read == replace(op, **_lease_fields(read))
    stored = await _raw_rows(ledger_db, "SELECT digest, document FROM provider_configs")
    assert sorted(digest for digest, _ in stored) == sorted(
        {config_key(CODEC.operation_row(op)["provider_config"]) for op in ops}
    )
    assert len(stored) == 2
    held = await _raw_rows(ledger_db, "SELECT provider_config FROM operations")
    assert {value for (value,) in held} == {digest for digest, _ in stored}


def _lease_fields(read: Operation) -> dict[str, Any]:
    """What a claim changes on the record (the reads before it leave the record as stored)."""
    return {
        "fence": read.fence,
        "lease_owner": read.lease_owner,
        "lease_expires_at": read.lease_expires_at,
        "version": read.version,
    }


async def test_a_row_holding_its_document_reads_as_before(ledger_db: LedgerDb) -> None:
    """A ledger written before 0008 holds each document in the operation's row: get, list
    and claim read it from there."""
    op = operation(1, provider_config=OTHER)
    async with ledger_db.opened():
        pass  # migrated
    row = CODEC.operation_row(op)
    assert row["provider_config"].startswith("{")
    await ledger_db.raw_execute(_insert(row))
    async with ledger_db.opened() as store:
        for read in await _every_read(store, op):
            assert read.provider_config == OTHER
    assert await _raw_rows(ledger_db, "SELECT digest FROM provider_configs") == []


def _insert(row: dict[str, Any]) -> str:
    def literal(value: Any) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bool | int | float):
            return str(int(value) if isinstance(value, bool) else value)
        return "'" + str(value).replace("'", "''") + "'"

    values = ", ".join(literal(v) for v in row.values())
    return f"INSERT INTO operations ({', '.join(row)}) VALUES ({values})"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE provider_configs SET document = '{}'",
        "DELETE FROM provider_configs",
    ],
)
async def test_a_stored_document_is_write_once(ledger_db: LedgerDb, statement: str) -> None:
    """The database refuses to change or remove a stored document: every operation holding
    its key is driven by it."""
    async with ledger_db.opened() as store:
        await _create(store, operation(1))
    with pytest.raises(RAW_ERRORS):
        await ledger_db.raw_execute(statement)
    async with ledger_db.opened() as store:
        read = await store.get(operation(1).operation_id)
        assert read is not None and read.provider_config == operation(1).provider_config
