"""``/_sim/...``: the simulator's own admin API, for tests and the demo.

It is deliberately outside ``/v1`` and needs no token: it is the test's
window into the provider, not part of the provider's contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import error, json_response
from jobtrail.simulator.faults import FaultError, parse_faults
from jobtrail.simulator.state import SimState


def register_faults(
    state: SimState,
    *,
    client_reference: str | None = None,
    faults: Mapping[str, Any] | None = None,
    default: Mapping[str, Any] | None = None,
) -> None:
    """Store faults for the jobs of ``client_reference``, and/or defaults for all later jobs.

    The spec is checked now (raising :class:`FaultError`), so a typo fails
    where it was written rather than at some later create.
    """
    if client_reference is not None:
        spec = dict(faults or {})
        parse_faults(spec)
        state.reference_faults[client_reference] = spec
    elif faults is not None and default is None:
        default = faults
    if default is not None:
        spec = dict(default)
        parse_faults(spec)
        state.default_faults = spec


class AdminEndpoints:
    def __init__(self, state: SimState) -> None:
        self.state = state

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/_sim/stats", self.stats)
        app.router.add_get("/_sim/jobs", self.jobs)
        app.router.add_get("/_sim/jobs/{job_id}", self.job)
        app.router.add_get("/_sim/calls", self.calls)
        app.router.add_post("/_sim/faults", self.faults)
        app.router.add_post("/_sim/reset", self.reset)

    async def stats(self, request: web.Request) -> web.Response:
        return json_response(200, self.state.stats())

    async def jobs(self, request: web.Request) -> web.Response:
        return json_response(200, {"data": [j.admin_json() for j in self.state.jobs.values()]})

    async def job(self, request: web.Request) -> web.Response:
        job = self.state.jobs.get(request.match_info["job_id"])
        if job is None:
            return error(404, "not_found", "no such job")
        return json_response(200, job.admin_json())

    async def calls(self, request: web.Request) -> web.Response:
        job_id = request.query.get("job_id")
        kind = request.query.get("kind")
        data = [
            c.to_json()
            for c in self.state.calls
            if (job_id is None or c.job_id == job_id) and (kind is None or c.kind == kind)
        ]
        return json_response(200, {"data": data})

    async def faults(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return error(400, "invalid_request", "the body must be a JSON object")
        reference = body.get("client_reference")
        faults = body.get("faults")
        default = body.get("default")
        if reference is None and default is None:
            return error(400, "invalid_request", "give client_reference + faults, or default")
        if reference is not None and not isinstance(reference, str):
            return error(400, "invalid_request", "client_reference must be a string")
        if any(x is not None and not isinstance(x, dict) for x in (faults, default)):
            return error(400, "invalid_sim", "faults and default must be JSON objects")
        try:
            register_faults(
                self.state, client_reference=reference, faults=faults or {}, default=default
            )
        except FaultError as exc:
            return error(400, "invalid_sim", str(exc))
        return json_response(200, {"ok": True})

    async def reset(self, request: web.Request) -> web.Response:
        self.state.reset()
        return json_response(200, {"ok": True})
