"""Status, cancel, result and list endpoints of the simulated provider."""

from __future__ import annotations

import hashlib

from aiohttp import web

from jobtrail.simulator import echo
from jobtrail.simulator.answers import (
    error,
    json_response,
    not_found,
    server_error,
    throttled,
    unauthorized,
    unreadable,
)
from jobtrail.simulator.faults import HOSTILE_HEADER_TEXT
from jobtrail.simulator.lifecycle import request_cancel
from jobtrail.simulator.records import SimJob, iso_utc
from jobtrail.simulator.results import echoed_csv, result_csv
from jobtrail.simulator.state import SimState


class JobEndpoints:
    """``/v1/jobs/...`` and ``GET /v1/reports`` handlers over one :class:`SimState`."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    def _find(
        self, request: web.Request, kind: str
    ) -> tuple[float, tuple[bool, bool], SimJob | web.Response]:
        """Count the call, check auth and find the job: (now, auth, job or the refusal)."""
        st = self.state
        st.counts[kind] += 1
        now = st.clock()
        job_id = request.match_info["job_id"]
        auth = st.check_auth(request)
        if not auth[1]:
            return now, auth, unauthorized()
        job = st.jobs.get(job_id)
        return now, auth, job if job is not None else not_found(job_id)

    async def status(self, request: web.Request) -> web.StreamResponse:
        st = self.state
        now, auth, job = self._find(request, "status")
        job_id = request.match_info["job_id"]
        response: web.StreamResponse
        if isinstance(job, web.Response):
            response = job
        else:
            job.status_reads += 1
            faults = job.faults
            throttle = faults.throttle_status
            refusal = faults.refuse_status
            if refusal is not None and (refusal.times is None or job.status_reads <= refusal.times):
                # a refused read is not an observation either
                response = error(refusal.status, "refused", f"status of {job_id} refused")
            elif faults.unreadable_status and faults.unreadable_status.applies(job.status_reads):
                # nothing readable as a state: not an observation, the job does not advance
                response = await unreadable(request, faults.unreadable_status.body)
            elif throttle is not None and job.status_throttled < throttle.times:
                # a throttled read is not an observation: the job does not advance
                job.status_throttled += 1
                response = throttled(throttle)
            elif job.status_errors < faults.status_error:
                job.status_errors += 1
                response = server_error()
            elif faults.echo_credentials and job.status_reads == 1:
                token = echo.bearer(request)
                response = json_response(500, echo.error_body(token), echo.request_id(token))
            else:
                st.advance_job(job, now, read=True)
                hint = faults.status_retry_after
                headers = None if hint is None or job.terminal else {"Retry-After": str(hint)}
                hostile = faults.status_hint
                reads = job.status_reads
                if (
                    hostile
                    and not job.terminal
                    and (hostile.times is None or reads <= hostile.times)
                ):
                    headers = {"Retry-After": hostile.header}
                payload = job.status_json()
                if faults.echo_credentials:
                    token = echo.bearer(request)
                    payload = echo.status(payload, token)
                    headers = {**(headers or {}), **echo.request_id(token)}
                response = json_response(200, payload, headers)
                if faults.hostile_text:
                    response.headers["X-Request-ID"] = f"req_{HOSTILE_HEADER_TEXT}"
        st.record("status", request, response.status, at=now, auth=auth, job_id=job_id)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        st = self.state
        now, auth, job = self._find(request, "cancel")
        job_id = request.match_info["job_id"]
        throttle = None if isinstance(job, web.Response) else job.faults.throttle_cancel
        if isinstance(job, web.Response):
            response = job
        elif throttle is not None and job.cancel_throttled < throttle.times:
            job.cancel_throttled += 1  # nothing is done: the cancel was not taken
            response = throttled(throttle)
        elif request_cancel(job):
            answer = {"job_id": job_id, "state": "cancelling"}
            if job.faults.echo_credentials:
                token = echo.bearer(request)
                response = json_response(202, {**answer, "echo": token}, echo.request_id(token))
            else:
                response = json_response(202, answer)
        else:
            response = error(
                409, "not_cancellable", "the job cannot be cancelled now", state=job.state
            )
        st.record("cancel", request, response.status, at=now, auth=auth, job_id=job_id)
        return response

    async def result(self, request: web.Request) -> web.Response:
        st = self.state
        now, auth, job = self._find(request, "result")
        job_id = request.match_info["job_id"]
        if isinstance(job, web.Response):
            response = job
        else:
            job.result_reads += 1
            faults = job.faults
            if not job.terminal:
                response = error(409, "not_ready", "the job has not finished", state=job.state)
            elif job.state != "succeeded":
                response = error(409, "no_result", "the job did not succeed", state=job.state)
            elif job.result_errors < faults.result_error:
                job.result_errors += 1
                response = server_error()
            elif faults.result_gone is not None:
                response = error(faults.result_gone, "result_gone", "the result expired")
            else:
                body, digest = result_csv(job)
                if faults.echo_credentials:
                    body, digest = echoed_csv(job, echo.bearer(request))
                rows = faults.items + (1 if faults.record_count_mismatch else 0)
                if faults.bad_checksum:
                    # the digest of a slightly different body: plausible, and wrong
                    digest = hashlib.sha256(body + b"\n").hexdigest()
                response = web.Response(
                    status=200,
                    body=body,
                    content_type="application/json" if faults.wrong_content_type else "text/csv",
                    headers={"X-Checksum-SHA256": digest, "X-Record-Count": str(rows)},
                )
                if faults.echo_credentials:
                    response.headers.update(echo.request_id(echo.bearer(request)))
        st.record("result", request, response.status, at=now, auth=auth, job_id=job_id)
        return response

    async def list_reports(self, request: web.Request) -> web.Response:
        st = self.state
        st.counts["list"] += 1
        now = st.clock()
        auth = st.check_auth(request)
        ref = request.query.get("client_reference")
        if not auth[1]:
            response = unauthorized()
        elif not ref:
            response = error(400, "invalid_request", "client_reference is required")
        else:
            data = []
            for job_id in st.by_reference.get(ref, ()):
                job = st.jobs[job_id]
                if now < job.created_ts + job.faults.list_visible_after:
                    continue  # not visible in the listing yet
                data.append(
                    {
                        "job_id": job.job_id,
                        "state": job.state,
                        "client_reference": job.client_reference,
                        "created_at": iso_utc(job.created_ts),
                    }
                )
            response = json_response(200, {"data": data})
        st.record("list", request, response.status, at=now, auth=auth, client_reference=ref)
        return response
