"""The census from Python (`jobtrail.Client`, `SyncClient`) against the real simulator: a
duplicate under an operation's reference is found, cancelled on a person's word, and the
provider's confirmation ends it; a code provider is refused with a clear error."""

from __future__ import annotations

import tomllib
from pathlib import Path

import aiohttp
import pytest

from jobtrail import Client, State, SyncClient
from jobtrail.core.census import Category
from jobtrail.errors import InvalidInput
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.simulator import Simulator
from jobtrail.simulator.thread import SimulatorThread

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "census-client-token-not-a-real-one"


def spec_for(base_url: str) -> ProviderSpec:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8"))
    doc |= {"base_url": base_url, "timeout": "1s", "poll": {"initial": "50ms", "cap": "200ms"}}
    return parse_provider(doc)


async def plant(base_url: str, marker: str) -> str:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Client-Reference": marker}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/v1/reports", json={"a": 1}, headers=headers) as answer,
    ):
        return str((await answer.json())["job_id"])


async def test_a_duplicate_is_found_and_cancelled_from_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """census -> a second job -> cancel_job -> cancelled on the provider's word."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    sim = Simulator(token=TOKEN)
    await sim.start()
    try:
        spec = spec_for(sim.base_url)
        async with Client(tmp_path / "l.db", data_dir=tmp_path / "data", actor="alice") as jt:
            op = await jt.wait((await jt.submit(spec, {"account": "a"})).operation_id, timeout=30)
            assert op.state is State.SUCCEEDED
            duplicate = await plant(sim.base_url, op.operation_id)
            census = await jt.census(spec)
            assert [f.job.job_id for f in census.of(Category.SECOND_JOB)] == [duplicate]
            asked = await jt.cancel_job(spec, duplicate, reason="a duplicate")
            assert asked.state is State.CANCEL_REQUESTED and asked.cancel_intent is not None
            ended = await jt.wait(asked.operation_id, timeout=30)
            assert ended.state is State.CANCELLED
            assert not (await jt.census(spec)).of(Category.SECOND_JOB)
            with pytest.raises(InvalidInput, match="code provider"):
                await jt.census("aws-stepfunctions")
    finally:
        await sim.close()


def test_the_sync_client_takes_a_census(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SyncClient.census: the same census, blocking."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    with SimulatorThread(token=TOKEN) as sim, SyncClient(tmp_path / "l.db", worker=False) as jt:
        census = jt.census(spec_for(sim.base_url), since="1d")
        assert census.reach.complete and census.tally[Category.SECOND_JOB] == 0
