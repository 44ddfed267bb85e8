"""Helpers of the census tests: jobs planted at the simulator behind jobtrail's back, a
census taken by a person, and what the audit log recorded."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import aiohttp

from jobtrail.core.census import Category
from jobtrail.services.census import Census, take_census
from vendor_rig import Rig

from harness import SECRET, Harness


async def plant_batch(rig: Rig, marker: str | None) -> str:
    """A batch made at the provider behind jobtrail's back, with our marker or none."""
    body: dict[str, Any] = {
        "input_file_id": "file-x",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    if marker is not None:
        body["metadata"] = {"jobtrail_ref": marker}
    headers = {"Authorization": f"Bearer {SECRET}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{rig.h.sim.base_url}/openai/v1/batches", json=body, headers=headers) as r,
    ):
        assert r.status == 200, await r.text()
        return str((await r.json())["id"])


async def census_of(h: Harness, **options: Any) -> Census:
    return await take_census(h.rt.ledger, h.rt.providers, h.spec, actor="person:alice", **options)


async def entries(h: Harness, kind: str) -> list[dict[str, Any]]:
    """The audit log's entries of one kind, as recorded."""
    rows = [json.loads(r.entry) for r in await h.rt.ledger.audit_rows()]
    return [r for r in rows if r["kind"] == kind]


def ids(census: Census, category: Category) -> set[str]:
    return {f.job.job_id for f in census.of(category)}


async def plant_report(h: Harness, marker: str) -> str:
    """A report made at the simulator behind jobtrail's back, under `marker`."""
    headers = {"Authorization": f"Bearer {SECRET}", "X-Client-Reference": marker}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{h.sim.base_url}/v1/reports", json={"a": 1}, headers=headers) as r,
    ):
        assert r.status in (200, 201, 202), await r.text()
        return str((await r.json())["job_id"])


def plant_at(base_url: str, marker: str) -> str:
    """A report made at the simulator (a thread's, `base_url`) behind jobtrail's back."""
    request = urllib.request.Request(
        f"{base_url}/v1/reports",
        data=b'{"a": 1}',
        headers={
            "Authorization": f"Bearer {SECRET}",
            "X-Client-Reference": marker,
            "Content-Type": "application/json",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(json.loads(answer.read())["job_id"])
