"""Hostile provider answers against the simulator over loopback HTTP, a real SQLite
ledger and the real worker: job ids that are not one URL segment, status URLs that are
relative, off-origin or carry user info, and cookies that must not travel between
operations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State

from harness import Harness, harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

S = State


@pytest.mark.parametrize("dot", [".", ".."])
async def test_a_dot_job_id_is_a_malformed_create_answer(rig: Harness, dot: str) -> None:
    """A create answer naming the job "." or ".." is never accepted: the create is
    ambiguous and goes to reconciliation, and no URL is ever built from the dot (every
    call after the create names the real job, or none is made)."""
    op = await rig.submit({"account": "a", "_sim": {"dot_job_id": dot}})
    await rig.run()
    op = await rig.op(op)
    (real,) = rig.jobs_for(op)
    assert op.remote_job_id in (None, real.job_id)
    assert op.state in (S.NEEDS_HUMAN, S.SUCCEEDED)
    assert (await rig.path(op))[:2] == [S.CREATE_PENDING, S.CREATE_UNKNOWN]
    assert S.ACCEPTED not in (await rig.path(op))[:3]
    assert all(t.remote_job_id in (None, real.job_id) for t in await rig.history(op))
    for attempt in await rig.rt.ledger.store.attempts(op.operation_id):
        if attempt.kind in (AttemptKind.STATUS, AttemptKind.CANCEL, AttemptKind.RESULT):
            assert f"/v1/jobs/{real.job_id}" in attempt.request["url"], attempt.request
    # a lookup by reference names no job; any call that names one names the real one
    assert all(c.job_id in (None, real.job_id) for c in rig.calls(op) if c.kind != "create")


@pytest.mark.parametrize("where", ["Location", "Operation-Location", "body"])
async def test_a_relative_status_url_resolves_against_the_create_url(
    rig: Harness, where: str
) -> None:
    """`jobs/ID` (in Location, Operation-Location or the body) answered to POST /v1/reports
    means /v1/jobs/ID (RFC 3986), not /jobs/ID: every status read goes there and the
    operation succeeds."""
    faults = {"hostile_status_url": "relative", "status_location": where}
    op = await rig.submit({"account": "a", "_sim": faults})
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED and op.status_url == f"jobs/{op.remote_job_id}"
    reads = rig.calls(op, "status")
    assert reads and {c.path for c in reads} == {f"/v1/jobs/{op.remote_job_id}"}
    assert {c.status for c in reads} == {200}


@pytest.mark.parametrize("kind", ["off_origin", "userinfo"])
async def test_a_status_url_off_the_origin_or_with_user_info_is_not_used(
    rig: Harness, kind: str
) -> None:
    """A status URL on another host, or on ours with user info (which would turn into a
    Basic credential), is not followed: the provider file's status path is used."""
    op = await rig.submit({"account": "a", "_sim": {"hostile_status_url": kind}})
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED
    reads = rig.calls(op, "status")
    assert reads and {c.path for c in reads} == {f"/v1/jobs/{op.remote_job_id}"}
    described = rig.rt.providers.for_operation(op).describe(AttemptKind.STATUS, op)
    assert described["url"] == f"{rig.spec.base_url}/v1/jobs/{op.remote_job_id}"


@pytest.mark.parametrize("job_id", ["..", ".", "a/b", "%2e%2e", "%2E.", "a?b", "a#b", "a\\b"])
async def test_a_stored_job_id_that_is_not_one_segment_is_never_sent(
    rig: Harness, job_id: str
) -> None:
    """Even an id already in the ledger (an older version, a human adoption) is refused
    when a URL is built from it: status, cancel and result calls are not sendable."""
    op = await rig.submit({"account": "a"})
    op = replace(await rig.op(op), remote_job_id=job_id, status_url=None)
    chosen = rig.rt.providers.for_operation(op)
    for kind in (AttemptKind.STATUS, AttemptKind.CANCEL, AttemptKind.RESULT):
        described = chosen.describe(kind, op)
        assert "url" not in described, described
        assert "nothing was sent" in described["unsendable"]


async def test_a_job_id_is_percent_encoded_as_one_segment(rig: Harness) -> None:
    """Characters that are safe in an id but not in a path are percent-encoded."""
    op = await rig.submit({"account": "a"})
    op = replace(await rig.op(op), remote_job_id="job 7;x=1", status_url=None)
    described = rig.rt.providers.for_operation(op).describe(AttemptKind.RESULT, op)
    assert described["url"] == f"{rig.spec.base_url}/v1/jobs/job%207%3Bx%3D1/result"


def _by_host_name(doc: dict[str, Any]) -> None:
    # a host name, not an IP: a default cookie jar keeps cookies only from host names
    doc["base_url"] = doc["base_url"].replace("127.0.0.1", "localhost")


async def _two_operations_setting_cookies(rig: Harness) -> tuple[list[Any], list[Any]]:
    ops = [await rig.submit({"account": name, "_sim": {"set_cookie": True}}) for name in ("a", "b")]
    await rig.run()
    done = [await rig.op(op) for op in ops]
    assert [op.state for op in done] == [S.SUCCEEDED, S.SUCCEEDED]
    return done, [rig.calls(op) for op in done]


async def test_cookies_are_not_kept_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that sets a cookie on create gets no Cookie header back on any later call
    of that operation or of another one."""
    async with harness(tmp_path, monkeypatch=monkeypatch, edit=_by_host_name) as rig:
        _, calls = await _two_operations_setting_cookies(rig)
        assert all(len(own) >= 3 for own in calls)
        assert [c.cookie for own in calls for c in own] == [None] * sum(map(len, calls))


async def test_cookies_are_kept_per_operation_when_the_provider_file_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `cookies = "per-operation"`, each operation's later calls carry the cookie its
    own create answer set, and never another operation's; nothing is recorded of it."""

    def edit(doc: dict[str, Any]) -> None:
        _by_host_name(doc)
        doc["cookies"] = "per-operation"

    async with harness(tmp_path, monkeypatch=monkeypatch, edit=edit) as rig:
        done, calls = await _two_operations_setting_cookies(rig)
        for op, own in zip(done, calls, strict=True):
            creates = [c for c in own if c.kind == "create"]
            later = [c for c in own if c.kind != "create"]
            assert [c.cookie for c in creates] == [None] * len(creates)
            assert later and {c.cookie for c in later} == {f"sim_session={op.remote_job_id}"}
        raw = Path(rig.db).read_bytes() + b"".join(
            p.read_bytes() for p in tmp_path.glob("ledger.db*") if p.is_file()
        )
        assert b"sim_session" not in raw
