"""The Python Client in front of a person (issue 21): a missing credential is said at
submit (a warning, as the CLI says it), logged by the in-process worker, and named by
`wait` at once instead of a wait that ends at the create deadline with no reason; a wait
that times out names the reason of the last failed call. Against the real simulator over
loopback and a real SQLite ledger."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_client import TOKEN, spec_for

import jobtrail
from jobtrail import Client, CredentialMissing, MissingCredentialWarning, WaitTimedOut
from jobtrail.simulator import Simulator

from waits import until_true_async


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    simulator = Simulator(token=TOKEN)
    await simulator.start()
    yield simulator
    await simulator.close()


async def test_a_missing_credential_is_warned_logged_and_named_by_wait(
    tmp_path: Path,
    sim: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without REPORTS_API_TOKEN: submit records the operation and warns naming the
    variable; the worker logs it; wait raises CredentialMissing at once, naming it and the
    create deadline; nothing reached the provider."""
    monkeypatch.delenv("REPORTS_API_TOKEN", raising=False)
    caplog.set_level(logging.WARNING, logger="jobtrail")
    async with Client(tmp_path / "ledger.db", data_dir=tmp_path / "data") as jt:
        with pytest.warns(MissingCredentialWarning, match="REPORTS_API_TOKEN is not set"):
            op = await jt.submit(spec_for(sim.base_url), {"account": "a"}, key="no-token")
        assert (await jt.get(op.operation_id)).state is jobtrail.State.CREATE_PENDING
        # At once, not at the create deadline (minutes away): a wait that waited for it would
        # end in WaitTimedOut at its own 30 s, not in CredentialMissing.
        with pytest.raises(CredentialMissing) as raised:
            await jt.wait(op.operation_id, timeout=30)
        said = str(raised.value)
        assert "REPORTS_API_TOKEN" in said and op.operation_id in said
        assert "create deadline" in said and "set it and wait again" in said
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("REPORTS_API_TOKEN is not set" in line for line in logged), logged
    assert sim.jobs == {}  # nothing was sent


async def test_a_wait_that_times_out_names_the_last_failure(
    tmp_path: Path, sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that keeps answering 503 to the create: WaitTimedOut carries on as
    before, and now says what the last call met."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    busy = {"throttle_create": {"status": 503, "retry_after": 1, "times": 1000}}
    async with Client(tmp_path / "ledger.db", data_dir=tmp_path / "data") as jt:
        op = await jt.submit(spec_for(sim.base_url), {"account": "b", "_sim": busy})

        async def called() -> bool:  # the worker's first call
            return "HTTP 503" in await jt.explain(op.operation_id)

        await until_true_async(called, 20, "the worker made no call")
        with pytest.raises(WaitTimedOut) as raised:
            await jt.wait(op.operation_id, timeout=1)
    said = str(raised.value)
    assert "its last call failed" in said and "503" in said, said
