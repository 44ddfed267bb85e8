"""How the fixtures beside this file were made, on the commit before migration 0017 (7ab269e):
`python tests/contract/ledger_0016/capture.py KIND OUT.json` drives three operations through
the ledger of that code (succeeded, failed, observing) and writes every table's rows as the
database holds them (hex hashes, audit entries copying requests and details)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path[:0] = ["tests", "tests/contract"]

import psycopg  # noqa: E402
from retention_records import failed, ledger_at, observing, succeeded  # noqa: E402

from stores import fresh_ledger  # noqa: E402

TABLES = (
    "operations",
    "provider_configs",
    "transitions",
    "attempts",
    "observations",
    "leases",
    "audit_log",
    "audit_keying",
)


async def main(kind: str, out: Path) -> None:
    tables: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with fresh_ledger(kind, Path(tmp)) as db:
            async with db.opened() as store:
                ledger, _ = ledger_at(store)
                await succeeded(ledger, 1)
                await failed(ledger, 2)
                await observing(ledger, 3)
            if kind == "sqlite":
                conn = sqlite3.connect(db.url)
                conn.row_factory = sqlite3.Row
                for t in TABLES:
                    tables[t] = [dict(r) for r in conn.execute(f"SELECT * FROM {t}")]
                conn.close()
            else:
                async with await psycopg.AsyncConnection.connect(db.url) as pg:
                    for t in (*TABLES, "audit_head"):
                        cur = await pg.execute(f"SELECT row_to_json(x)::text FROM {t} x".encode())
                        tables[t] = [json.loads(r[0]) for r in await cur.fetchall()]
    out.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
