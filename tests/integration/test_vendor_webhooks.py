"""A vendor's signed webhook shortens the time to `succeeded`, and success still waits for a
status read: the simulator's vendor mode ends the job on its own time and posts its event
(Standard Webhooks), the webhook receiver `jobtrail serve` mounts records it, and the next
status read, made at once, is what moves the operation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from jobtrail.core.states import State
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import parse_provider
from jobtrail.simulator.vendors.skeleton import end_now
from jobtrail.simulator.webhooks import new_webhook_secret
from jobtrail.webhooks.routes import WebhookReceiver
from vendor_rig import Rig, vendor_rig

POLL = timedelta(minutes=10)


@asynccontextmanager
async def receiver(rig: Rig, folder: Path) -> AsyncIterator[str]:
    """The webhook receiver of `jobtrail serve` on loopback, for the profiles in `folder`."""
    app = web.Application()
    WebhookReceiver(rig.h.rt.ledger, folder).add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def slow_polls(rig: Rig) -> None:
    """Polls ten minutes apart: what a deployment that relies on webhooks may choose."""
    doc: dict[str, Any] = dict(rig.h.spec.document)
    doc["poll"] = {"initial": "10m", "cap": "10m", "min": "10m"}
    rig.h.spec = parse_provider(doc)


@pytest.mark.parametrize(
    ("name", "event"), [("replicate", "succeeded"), ("openai-responses", "response.completed")]
)
async def test_a_webhook_shortens_the_time_to_succeeded_but_a_read_decides(
    name: str, event: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job ends a minute after the last poll, whose successor is due nine minutes
    later. Its webhook is recorded at once, yet the operation is still `observing`: the
    event only makes a status read due now. That read (after the event, before the end)
    moves it to `succeeded`, at the minute the job ended; a job of the same kind without
    a webhook is only seen done at its next poll."""
    secret = new_webhook_secret()
    env = {"replicate": "REPLICATE_WEBHOOK_SECRET", "openai-responses": "OPENAI_WEBHOOK_SECRET"}
    monkeypatch.setenv(env[name], secret)
    folder = tmp_path / "providers"
    folder.mkdir()
    profile = shipped_profile(name)
    assert profile is not None
    (folder / f"{name}.toml").write_text(profile.text)
    async with vendor_rig(name, "hook", tmp_path, monkeypatch, shared_clock=True) as rig:
        slow_polls(rig)
        rig.faults(duration_polls=1000)
        hooked = await rig.h.until(await rig.submit(), State.OBSERVING)
        quiet = await rig.h.until(await rig.submit(), State.OBSERVING)
        assert hooked.next_poll_at is not None and quiet.next_poll_at is not None
        rig.h.clock.advance(60)
        ended = rig.h.clock.now()
        async with receiver(rig, folder) as url:
            for op, hook in ((hooked, f"{url}/webhooks/{name}"), (quiet, None)):
                job_id = (op.remote_job_id or "").rpartition("/")[2]
                status = await end_now(rig.h.sim.vendors, rig.mode, job_id, hook, secret)
                assert status == (200 if hook else None)
        waiting = await rig.h.op(hooked)
        assert waiting.state is State.OBSERVING  # the event alone ends nothing
        assert waiting.next_poll_at == ended  # it made a status read due now
        seen = await rig.h.rt.ledger.store.observations(hooked.operation_id)
        assert seen[-1].source == "webhook" and seen[-1].remote_state == event
        await rig.h.tick()
        done = await rig.h.op(hooked)
        assert done.state is State.SUCCEEDED, done
        steps = await rig.h.history(done)
        succeeded_at = next(t.at for t in steps if t.to_state is State.SUCCEEDED)
        assert succeeded_at - ended < POLL
        attempts = await rig.h.rt.ledger.store.attempts(hooked.operation_id)
        reads = [a for a in attempts if a.kind.value == "status" and a.started_at >= ended]
        assert reads and reads[0].started_at <= succeeded_at  # read after the event, before success
        assert (await rig.h.op(quiet)).state is State.OBSERVING
        quiet_done = await rig.finish(quiet)
        quiet_steps = await rig.h.history(quiet_done)
        quiet_at = next(t.at for t in quiet_steps if t.to_state is State.SUCCEEDED)
        assert quiet_at - ended >= POLL - timedelta(minutes=1)
