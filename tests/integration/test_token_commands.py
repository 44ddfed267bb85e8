"""Expiring credentials against the simulator over loopback, on a SQLite ledger: a token
command's token sent, refreshed once after a 401 and the call sent again only where that
is harmless, redacted everywhere when the provider echoes it; and a submit to a profile
whose base URL is still a placeholder refused, naming the variable to set."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_hostile_secrets import stored_rows

from jobtrail.core.states import State
from jobtrail.errors import InvalidInput
from jobtrail.providers.file.config import find_provider_named

from harness import SECRET, Harness, harness
from stores import LedgerDb

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

BODY = {"report": "monthly", "month": "2026-02"}


def token_command(tmp_path: Path, tokens: list[str]) -> list[str]:
    """A command printing tokens[n] on its n-th run (the last one after that)."""
    listing, count = tmp_path / "tokens", tmp_path / "runs"
    listing.write_text("\n".join(tokens))
    code = (
        "import pathlib, sys; c = pathlib.Path(sys.argv[2]); "
        "n = int(c.read_text()) if c.exists() else 0; c.write_text(str(n + 1)); "
        "lines = pathlib.Path(sys.argv[1]).read_text().split(); "
        "print(lines[min(n, len(lines) - 1)])"
    )
    return [sys.executable, "-c", code, str(listing), str(count)]


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


@pytest.fixture
async def rig_with(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Harness]:
    """The harness whose provider fetches its token with a command printing the tokens of
    the test's `tokens` mark, and no REPORTS_API_TOKEN in the environment."""
    marker = request.node.get_closest_marker("tokens")
    tokens: list[str] = marker.args[0]
    drop_idempotency = bool(marker.kwargs.get("no_idempotency"))
    lifetime = marker.kwargs.get("lifetime")

    def edit(doc: dict[str, Any]) -> None:
        auth: dict[str, Any] = {
            "header": "Authorization",
            "prefix": "Bearer ",
            "command": token_command(tmp_path, tokens),
        }
        if lifetime:
            auth["lifetime"] = lifetime
        doc["auth"] = auth
        if drop_idempotency:
            doc["create"].pop("idempotency")
            doc.pop("reconcile")

    async with harness(tmp_path, edit=edit, kind=store_kind) as h:
        yield h


@pytest.mark.tokens(["expired-token-0123456789", SECRET])
async def test_an_idempotent_create_answered_401_is_sent_again_with_a_fresh_token(
    rig_with: Harness, tmp_path: Path
) -> None:
    """The create carries the idempotency token, so after the 401 it is sent once more,
    with the next token from the command, and succeeds."""
    op = await rig_with.submit(BODY)
    await rig_with.run()
    done = await rig_with.op(op)
    assert done.state is State.SUCCEEDED, done
    assert rig_with.sim.state.counts["create"] == 2 and runs(tmp_path) == 2
    (create,) = [
        a
        for a in await rig_with.rt.ledger.store.attempts(op.operation_id)
        if a.kind.value == "create"
    ]
    assert create.detail["refused_token"]["status"] == 401 and create.detail["status"] in (
        200,
        201,
        202,
    )


@pytest.mark.tokens(["expired-token-0123456789", SECRET], no_idempotency=True)
async def test_a_create_without_idempotency_answered_401_is_never_sent_again(
    rig_with: Harness, tmp_path: Path
) -> None:
    """No token the provider honours: the 401 answer stands (nothing is resent on jobtrail's
    own), and the refused token is dropped so the next call fetches a fresh one."""
    op = await rig_with.submit(BODY)
    await rig_with.tick()
    assert rig_with.sim.state.counts["create"] == 1 and runs(tmp_path) == 1
    (create,) = await rig_with.rt.ledger.store.attempts(op.operation_id)
    assert create.detail["status"] == 401 and "refused_token" not in create.detail
    assert (await rig_with.op(op)).state is State.FAILED


@pytest.mark.tokens([SECRET, "revoked-token-0123456789", SECRET], lifetime="1s")
async def test_a_status_read_answered_401_is_read_again_with_a_fresh_token(
    rig_with: Harness, tmp_path: Path
) -> None:
    """The first token lapses (1 s); the next one is refused (401); the status read, a safe
    read, is sent again with the third, and the job is observed."""
    op = await rig_with.submit(BODY)
    await rig_with.tick()  # the create, with the first token
    assert (await rig_with.op(op)).state is State.ACCEPTED
    await asyncio.sleep(1.1)
    await rig_with.tick()  # a status read: a new token (refused), then a fresh one
    assert runs(tmp_path) == 3
    reads = [
        a
        for a in await rig_with.rt.ledger.store.attempts(op.operation_id)
        if a.kind.value == "status"
    ]
    observed = await rig_with.rt.ledger.store.observations(op.operation_id)
    assert observed and (await rig_with.op(op)).state is State.OBSERVING
    assert all(a.detail.get("status") != 401 for a in reads)


@pytest.mark.tokens([SECRET])
async def test_an_echoed_fetched_token_is_redacted_in_everything_stored(
    rig_with: Harness, tmp_path: Path
) -> None:
    """The provider repeats the bearer token (from the command, in no environment variable)
    in its state words, URLs and request ids: the redactor learned it when it was fetched."""
    rig_with.sim.set_faults(default={"echo_credentials": True, "duration_polls": 2})
    op = await rig_with.submit(BODY)
    await rig_with.run()
    assert (await rig_with.op(op)).state is State.SUCCEEDED
    stored = await stored_rows(LedgerDb(rig_with.kind, rig_with.db))
    assert SECRET[:24].encode() not in stored and SECRET[-24:].encode() not in stored


async def test_a_placeholder_base_url_is_refused_at_submit_naming_its_variable(
    rig: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """azure-ai's https://RESOURCE.cognitiveservices.azure.com: refused before anything is
    recorded, saying which variable to set; with it set, the same submit is recorded."""
    monkeypatch.delenv("JOBTRAIL_AZURE_AI_BASE_URL", raising=False)
    spec = find_provider_named("azure-ai", search="/nonexistent")
    with pytest.raises(
        InvalidInput, match="set the environment variable JOBTRAIL_AZURE_AI_BASE_URL"
    ):
        await rig.rt.ledger.submit(spec, {"analysisInput": {}}, actor="test-agent")
    assert await rig.rt.ledger.store.list_operations() == []
    monkeypatch.setenv("JOBTRAIL_AZURE_AI_BASE_URL", rig.spec.base_url + "/azure-ai")
    spec = find_provider_named("azure-ai", search="/nonexistent")
    op = await rig.rt.ledger.submit(spec, {"analysisInput": {}}, actor="test-agent")
    assert op.state is State.CREATE_PENDING
