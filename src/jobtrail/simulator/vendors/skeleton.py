"""The handler skeleton every vendor mode shares: create, read, cancel and list, with the
test-only faults (`_sim` in a body, lost create answers, 404s and 500s on status reads) and
the calls log written once. A mode supplies only its vendor's words: how it authenticates,
what its errors, jobs and listings look like, what a create body must hold.

A mode may also announce a job's end by webhook, signed the Standard Webhooks way (the form
OpenAI and Replicate use): `VendorState.end_now` ends a job without a status read, as a
provider finishing on its own does, and the mode posts its event to the URL the test set.
"""

from __future__ import annotations

from typing import Any, ClassVar

import aiohttp
from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.faults import FaultError
from jobtrail.simulator.vendors.shared import (
    VendorFaults,
    VendorJob,
    VendorState,
    advance,
    dropped,
    finish,
    json_body,
    refused_read,
    request_cancel,
    retry_after,
    strip_sim,
)
from jobtrail.simulator.webhooks import WebhookSigner


class VendorMode:
    """One vendor's API over the shared lifecycle. Subclasses set `mode`, `id_prefix` and
    override the hooks below; the handlers are the same for every vendor."""

    mode: ClassVar[str]
    id_prefix: ClassVar[str] = ""
    create_status: ClassVar[int] = 200

    def __init__(self, state: VendorState) -> None:
        self.state = state
        state.modes[self.mode] = self

    # -- the vendor's words (override) ---------------------------------------------------

    def authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        return self.state.auth_ok(header.removeprefix("Bearer ") if header else None)

    def error(self, status: int, message: str) -> web.Response:
        return json_response(status, {"error": {"message": message, "status": status}})

    async def refused(self, request: web.Request) -> web.Response | None:
        """A refusal before anything is read (auth, a required header), or None."""
        if not self.authorized(request):
            return self.error(401, "invalid credentials")
        return None

    def invalid(self, body: Any, request: web.Request) -> str | None:
        """Why a create body is refused (400), or None."""
        return None

    def made(self, job: VendorJob, request: web.Request) -> None:
        """Fill in what the vendor keeps of a new job (its tag, extras, its deadline)."""

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        raise NotImplementedError

    def missing(self, job_id: str) -> str:
        return f"no job {job_id}"

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        """The answer to an accepted cancel (the job, by default)."""
        return json_response(200, self.render(job, request))

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        """The answer to a cancel of a job that already ended."""
        return self.error(400, f"job {job.job_id} has already ended")

    def created(self, job: VendorJob, request: web.Request) -> web.StreamResponse:
        return json_response(self.create_status, self.render(job, request), retry_after(job))

    def event(self, job: VendorJob) -> tuple[str, dict[str, Any]] | None:
        """The webhook event announcing the job's end: (event id, body), or None."""
        return None

    # -- the shared handlers --------------------------------------------------------------

    def job_id(self, request: web.Request) -> str:
        return request.match_info["job_id"]

    async def create(self, request: web.Request) -> web.StreamResponse:
        st, mode = self.state, self.mode
        refusal = await self.refused(request)
        if refusal is not None:
            st.record(mode, "create", request, refusal.status, auth_valid=False)
            return refusal
        raw = await json_body(request)
        try:
            faults: VendorFaults = st.faults_for(mode, raw)
        except FaultError as exc:
            return self.error(400, str(exc))
        body = strip_sim(raw)
        problem = self.invalid(body, request)
        if problem is not None:
            st.record(mode, "create", request, 400)
            return self.error(400, problem)
        job = VendorJob(
            job_id=st.new_id(self.id_prefix),
            mode=mode,
            faults=faults,
            body=body,
            created_ts=st.clock(),
        )
        self.made(job, request)
        st.add(job)
        if st.take_drop(mode):
            st.record(mode, "create", request, None, job_id=job.job_id)
            return dropped(request)
        response = self.created(job, request)
        st.record(mode, "create", request, response.status, job_id=job.job_id)
        return response

    async def retrieve(self, request: web.Request) -> web.Response:
        st, job_id = self.state, self.job_id(request)
        job = st.get(self.mode, job_id)
        response = await self.refused(request)
        if response is None:
            if job is None:
                response = self.error(404, self.missing(job_id))
            else:
                refused = refused_read(job)
                if refused == 404:
                    response = self.error(404, self.missing(job_id))
                elif refused is not None:
                    response = self.error(500, "internal server error")
                else:
                    advance(job, st.clock())
                    response = json_response(200, self.render(job, request), retry_after(job))
        st.record(self.mode, "status", request, response.status, job_id=job_id)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        st, job_id = self.state, self.job_id(request)
        job = st.get(self.mode, job_id)
        response = await self.refused(request)
        if response is None:
            if job is None:
                response = self.error(404, self.missing(job_id))
            elif not request_cancel(job, st.clock()):
                response = self.too_late(job, request)
            else:
                response = self.cancelled(job, request)
        st.record(self.mode, "cancel", request, response.status, job_id=job_id)
        return response

    def listed(self, request: web.Request, keep: Any = None) -> list[VendorJob]:
        """The mode's jobs newest first, as the listing shows them (lagging, if faulted),
        those `keep(job)` accepts; the call is logged."""
        jobs = [j for j in self.state.listed(self.mode) if keep is None or keep(j)]
        self.state.record(self.mode, "list", request, 200)
        return jobs

    # -- webhooks -------------------------------------------------------------------------

    async def announce(self, job: VendorJob, url: str, secret: str) -> int | None:
        """Post the job's end event to `url`, signed with `secret`; the answer's status."""
        found = self.event(job)
        if found is None:
            return None
        event_id, document = found
        body = compact_json(document)
        headers = WebhookSigner(secret).headers(event_id, body, int(self.state.clock()))
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, data=body, headers=headers) as answer,
        ):
            await answer.read()
            return answer.status


async def end_now(
    state: VendorState, mode: str, job_id: str, url: str | None = None, secret: str | None = None
) -> int | None:
    """End a job of `mode` now, as it would end on its own (its faulted outcome), and post
    its end event to `url` signed with `secret`; the receiver's status (None: not sent)."""
    handlers = state.modes.get(mode)
    job = state.get(mode, job_id)
    if not isinstance(handlers, VendorMode) or job is None:
        raise KeyError(f"no job {job_id} of the vendor mode {mode}")
    finish(job, state.clock())
    if url is None or secret is None:
        return None
    return await handlers.announce(job, url, secret)
