"""More credential names, and a long beginning of a secret, kept out of the ledger (issue
19): body fields `accessToken`, `jwt`, `pwd`, `credentials`; headers such as `X-Auth`,
`X-JWT`, `X-Bearer`, `X-Pwd`, `X-Passphrase` and any whose name holds a credential word; and
the first PREFIX (12) characters of a secret in use followed by other text. A code provider
returns them, the ledger (SQLite file and PostgreSQL) records the call: none is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import jobtrail
from jobtrail.core.redact import PREFIX, REDACTED, Redactor
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.config import parse_provider
from jobtrail.testing import (
    AttemptKind,
    RemoteStatus,
    Reply,
    ScriptedCall,
    ScriptedProvider,
    outcomes,
)

from harness import simulator_doc
from stores import migrated_ledger

SECRET = "sk_live_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
FIELD_VALUES = {
    "accessToken": "access-value-1f2e3d4c5b6a",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.jwt-value-0a9b8c",
    "pwd": "pwd-value-7y6t5r4e3w2q",
    "passphrase": "passphrase-value-1q2w3e4r",
}
CREDENTIALS = {"user": "u-1", "key": "credentials-value-zz9y8x7w"}
HEADERS = ["X-Auth", "X-JWT", "X-Bearer", "X-Pwd", "X-Passphrase", "X-Vendor-Session-Id"]


def _echoing(call: ScriptedCall) -> Reply:
    """Accept, then report done; each call's record carries credentials by name, and a
    long beginning of the secret in use followed by more text."""
    cut = SECRET[: PREFIX + 2]
    outcome: outcomes.CallOutcome
    if call.kind is AttemptKind.CREATE:
        outcome = outcomes.Accepted(
            job_id=f"job-{call.operation.operation_id}",
            remote_state=f"queued for {cut}... (key shown cut)",
            remote_status=RemoteStatus.RUNNING,
        )
    else:
        outcome = outcomes.Observed(
            remote_state="done", remote_status=RemoteStatus.SUCCEEDED, progress=FIELD_VALUES
        )
    detail: dict[str, Any] = {
        **FIELD_VALUES,
        "credentials": CREDENTIALS,
        "error": f"the key {cut}... was refused once",
    }
    return Reply(outcome=outcome, detail=detail)


async def test_credential_fields_and_a_secrets_beginning_are_never_stored(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_TOKEN", SECRET)
    provider = ScriptedProvider(_echoing, secret_env=("SCRIPTED_TOKEN",))
    async with (
        migrated_ledger(store_kind, tmp_path) as db,
        jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt,
    ):
        op = await jt.submit("scripted", {"n": 1})
        done = await jt.wait(op.operation_id, timeout=30)
        store = jt._opened.ledger.store
        attempts = await store.attempts(op.operation_id)
        observations = await store.observations(op.operation_id)
        rows = await store.audit_rows(op.operation_id)
        story = await jt.explain(op.operation_id)
    assert done.state is jobtrail.State.SUCCEEDED
    recorded = json.dumps(
        [a.detail for a in attempts]
        + [[o.remote_state, o.progress] for o in observations]
        + [row.entry for row in rows]
        + [done.remote_state, done.progress, story],
        default=str,
    )
    assert "was refused once" in recorded and REDACTED in recorded  # the rest is kept
    secrets = [*FIELD_VALUES.values(), CREDENTIALS["key"], SECRET[:PREFIX]]
    assert [s for s in secrets if s in recorded] == []
    if store_kind == "sqlite":
        raw = b"".join(p.read_bytes() for p in tmp_path.rglob("ledger.db*"))
        assert [s for s in secrets if s.encode() in raw] == []


@pytest.mark.parametrize("name", HEADERS)
def test_a_provider_file_header_with_a_credential_name_is_refused(name: str) -> None:
    """A header the provider file writes is stored with every attempt: one whose name says
    it carries a credential is refused at load, pointing to `auth`."""
    doc = simulator_doc("http://127.0.0.1:9")
    doc["headers"] = {name: "some-literal-value"}
    with pytest.raises(ProviderConfigError, match="carries a credential"):
        parse_provider(doc)


def test_public_headers_stay_readable_and_credential_headers_are_masked() -> None:
    """What the record of an answer keeps of its headers (the HTTP provider's `header_map`):
    credential names masked, a rate limit's token counts and the idempotency key kept."""
    headers = {name: "value-of-" + name for name in HEADERS}
    public = {
        "x-ratelimit-remaining-tokens": "9000",
        "anthropic-ratelimit-tokens-remaining": "100",
        "Idempotency-Key": "tok_1",
        "Content-Type": "application/json",
    }
    shown = Redactor().header_map({**headers, **public})
    assert {name: shown[name] for name in HEADERS} == dict.fromkeys(HEADERS, REDACTED)
    assert {name: shown[name] for name in public} == public
