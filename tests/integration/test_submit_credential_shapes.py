"""Credential-shaped input is refused at submit, so never stored (issue 36): headers named
`X-Sig`, `X-Hmac`, `X-OTP`, `X-Private`; a body `{"auth": {"bearer": …}}`; a bearer token or
a JWT as a value; and a beginning of 17 to 20 characters of the token in use in a header or
body value (the redactor's own rule, so submit and the chokepoint agree). Each refusal names
the header or field; nothing reaches the ledger (SQLite, its raw file bytes; PostgreSQL, every
row as text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_hostile_secrets import database_files, stored_rows

from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import parse_provider
from jobtrail.store import open_store

from harness import SECRET, simulator_doc
from stores import fresh_ledger

BEARER = "b3arer-Vq8Lx2Nw7Kd4Rm9Tz6Hc"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZXBvcnRzIn0.c2lnbmF0dXJlLXZhbHVl"
HEADERS = {
    name: f"{name.lower()}-value-9Pq7Wm3Zt" for name in ("X-Sig", "X-Hmac", "X-OTP", "X-Private")
}
# (headers, body, what the refusal names, the secret that must not be stored)
CASES: list[tuple[dict[str, str], dict[str, Any], str, str]] = [
    *(({name: value}, {}, f"header {name!r}", value) for name, value in HEADERS.items()),
    ({}, {"auth": {"bearer": BEARER}}, "body.auth.bearer", BEARER),
    ({}, {"auth": f"Bearer {BEARER}"}, "body.auth", BEARER),
    ({"X-Upstream": f"Bearer {BEARER}"}, {}, "header 'X-Upstream'", BEARER),
    ({}, {"items": [{"note": JWT}]}, "body.items[0].note", JWT),
    *(({"X-Trace-Note": SECRET[:n]}, {}, "header 'X-Trace-Note'", SECRET[:n]) for n in (17, 20)),
    *(({}, {"note": f"{SECRET[:n]} and more"}, "body.note", SECRET[:n]) for n in (17, 20)),
]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_credential_shaped_input_is_refused_and_never_stored(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case is refused, naming what it refuses and never repeating it; afterwards the
    ledger holds one operation, the clean one, and none of the values."""
    monkeypatch.setenv("REPORTS_API_TOKEN", SECRET)
    spec = parse_provider(simulator_doc("http://127.0.0.1:9"))
    refusals = []
    async with fresh_ledger(kind, tmp_path) as db:
        store = await open_store(db.url)
        try:
            ledger = Ledger(store)
            for n, (headers, body, named, secret) in enumerate(CASES):
                with pytest.raises(InvalidInput) as refused:
                    await ledger.submit(
                        spec, {"account": f"a{n}", **body}, headers=headers, actor="agent:x"
                    )
                refusals.append((named, secret, str(refused.value)))
            clean = await ledger.submit(spec, {"account": "clean"}, actor="agent:x")
            listed = await ledger.list_operations(limit=50)
        finally:
            await store.close()
        stored = await stored_rows(db) + database_files(db)
    assert [op.operation_id for op in listed] == [clean.operation_id]
    assert [(named, named in why) for named, _, why in refusals] == [
        (named, True) for named, _, _ in refusals
    ]
    assert [named for named, secret, why in refusals if secret in why] == []
    assert [secret for _, secret, _ in refusals if secret.encode() in stored] == []
