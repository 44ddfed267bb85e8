"""How these fixtures were made: on the commit before migration 0017 (7ab269e), `python tests/contract/ledger_0016/capture.py KIND OUT`
one JSON file per dialect: every table's rows as the database holds them."""
import asyncio, json, sqlite3, sys, tempfile
from pathlib import Path
sys.path[:0] = ["tests", "tests/contract"]
import psycopg
from retention_records import ledger_at, succeeded, failed, observing
from stores import fresh_ledger

TABLES = ("operations", "provider_configs", "transitions", "attempts", "observations", "leases",
          "audit_log", "audit_keying")

async def main(kind: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with fresh_ledger(kind, Path(tmp)) as db:
            async with db.opened() as store:
                ledger, _ = ledger_at(store)
                await succeeded(ledger, 1); await failed(ledger, 2); await observing(ledger, 3)
            tables = {}
            if kind == "sqlite":
                conn = sqlite3.connect(db.url); conn.row_factory = sqlite3.Row
                for t in TABLES:
                    tables[t] = [dict(r) for r in conn.execute(f"SELECT * FROM {t}")]
                conn.close()
            else:
                async with await psycopg.AsyncConnection.connect(db.url) as pg:
                    for t in TABLES:
                        cur = await pg.execute(f"SELECT row_to_json(x)::text FROM {t} x")
                        tables[t] = [json.loads(r[0]) for r in await cur.fetchall()]
                    cur = await pg.execute("SELECT row_to_json(x)::text FROM audit_head x")
                    tables["audit_head"] = [json.loads(r[0]) for r in await cur.fetchall()]
    out.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")

asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
