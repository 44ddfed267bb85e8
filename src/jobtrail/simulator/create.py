"""``POST /v1/reports``: job creation with careful idempotency and create-side faults.

The idempotency rules follow a careful (Stripe-style) server: a key is bound
to the fingerprint of the first request that used it; the same request again
replays the stored answer, a different request under the key is refused, and
a request racing the first one is told to come back later.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from jobtrail.simulator import echo
from jobtrail.simulator.answers import (
    compact_json,
    drop_connection,
    error,
    json_response,
    throttled,
    unauthorized,
)
from jobtrail.simulator.faults import FaultError, Faults, merge_fault_specs, parse_faults
from jobtrail.simulator.lifecycle import create_succeeded
from jobtrail.simulator.records import CreateAnswer, KeyEntry, SimJob
from jobtrail.simulator.results import result_rows
from jobtrail.simulator.state import SimState

# records one create call: (status answered or None for a dropped answer, job id)
_Record = Callable[[int | None, str | None], None]

HUGE_BODY_BYTES = 50 * 1024 * 1024
_HUGE_CHUNK = b"x" * (1024 * 1024)


def fingerprint(method: str, path: str, body: Any) -> str:
    """``sha256:`` of the canonical JSON of method, path and body (sorted keys, no spaces)."""
    canonical = json.dumps(
        {"method": method, "path": path, "body": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


class CreateEndpoint:
    """Handles create requests against one :class:`SimState`."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    # C901: the simulator's create faults, one branch each, in the order a request meets them
    async def handle(self, request: web.Request) -> web.StreamResponse:  # noqa: C901
        st = self.state
        st.counts["create"] += 1
        now = st.clock()
        auth = st.check_auth(request)
        if not auth[1]:
            st.record("create", request, 401, at=now, auth=auth)
            return unauthorized()
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            st.record("create", request, 400, at=now, auth=auth)
            return error(400, "invalid_request", "the body must be a JSON object")
        key = request.headers.get("Idempotency-Key") or _str_field(body, "idempotency_key")
        ref = request.headers.get("X-Client-Reference") or _str_field(body, "client_reference")

        def record(status: int | None, job_id: str | None) -> None:
            st.record(
                "create",
                request,
                status,
                at=now,
                auth=auth,
                job_id=job_id,
                idempotency_key=key,
                client_reference=ref,
            )

        try:
            faults = self._faults_for(body, ref)
        except FaultError as exc:
            record(400, None)
            return error(400, "invalid_sim", str(exc))
        fp = fingerprint(request.method, request.path, body) if key is not None else None

        entry = st.keys.get(key) if key is not None else None
        if entry is not None:
            return await self._retry(request, entry, fp, body, record)

        throttle = faults.throttle_create
        if throttle is not None:
            identity = key or ref or fingerprint(request.method, request.path, body)
            seen = st.create_throttled.get(identity, 0)
            if seen < throttle.times:
                st.create_throttled[identity] = seen + 1
                record(throttle.status, None)
                return throttled(throttle)
        if faults.reject_create is not None:
            record(faults.reject_create.status, None)
            return error(faults.reject_create.status, "rejected", faults.reject_create.message)

        if faults.delay_accept > 0:
            # a slow front end: nothing exists yet, so a lookup meanwhile finds no job
            await asyncio.sleep(faults.delay_accept)
            now = st.clock()
            entry = st.keys.get(key) if key is not None else None
            if entry is not None:  # a same-key request got in first
                return await self._retry(request, entry, fp, body, record)
        job = self._new_job(body, key, ref, faults, now)
        answer = self._answer_for(request, job)
        if key is not None and fp is not None:
            entry = KeyEntry(fingerprint=fp, job_id=job.job_id)
            st.keys[key] = entry
        try:
            if faults.delay_create > 0:
                # the key stays in flight meanwhile: a concurrent retry gets 409
                await asyncio.sleep(faults.delay_create)
        finally:
            if entry is not None:
                entry.in_flight = False
                entry.answer = answer
        if faults.drop_create_answer > 0:
            if entry is not None:
                entry.drops_done = 1
            record(None, job.job_id)
            return drop_connection(request)
        if faults.create_error_after_accept is not None:
            record(faults.create_error_after_accept, job.job_id)
            return error(
                faults.create_error_after_accept, "internal_error", "simulated error after accept"
            )
        record(answer.status, job.job_id)
        return await _send(request, answer, job.job_id, replayed=False)

    async def _retry(
        self,
        request: web.Request,
        entry: KeyEntry,
        fp: str | None,
        body: dict[str, Any],
        record: _Record,
    ) -> web.StreamResponse:
        """A request under a key already seen: 422, 409, a replay, or a contract violation."""
        if fp != entry.fingerprint:
            record(422, entry.job_id)
            return error(
                422,
                "idempotency_key_reused",
                "this Idempotency-Key was used with a different request body",
            )
        if entry.in_flight or entry.answer is None:
            record(409, entry.job_id)
            return json_response(
                409,
                {"error": "idempotency_key_in_flight", "message": "retry later"},
                {"Retry-After": "1"},
            )
        original = self.state.jobs.get(entry.job_id)
        if original is None:  # pragma: no cover - keys and jobs are reset together
            record(409, entry.job_id)
            return error(409, "idempotency_key_orphaned", "the original job is gone")
        faults = original.faults
        if entry.drops_done < faults.drop_create_answer:
            entry.drops_done += 1
            record(None, entry.job_id)
            return drop_connection(request)
        hostile = _hostile_retry_answer(faults)
        if hostile is not None:
            record(hostile.status, entry.job_id)
            return hostile
        if faults.different_id_on_retry:
            # the contract violation under test: same key, same body, another job
            job = self._new_job(
                body,
                original.idempotency_key,
                original.client_reference,
                faults,
                self.state.clock(),
            )
            answer = self._answer_for(request, job)
            record(answer.status, job.job_id)
            return await _send(request, answer, job.job_id, replayed=False)
        record(entry.answer.status, entry.job_id)
        return await _send(request, entry.answer, entry.job_id, replayed=True)

    def _faults_for(self, body: dict[str, Any], ref: str | None) -> Faults:
        st = self.state
        sim = body.get("_sim")
        if sim is not None and not isinstance(sim, dict):
            raise FaultError("_sim must be a JSON object")
        per_ref = st.reference_faults.get(ref) if ref is not None else None
        items = body.get("items")
        if items is not None and (isinstance(items, bool) or not isinstance(items, int)):
            raise FaultError("items must be an integer")
        # the request's own "items" beats registered faults; only its "_sim" beats it
        own = None if items is None else {"items": items}
        return parse_faults(merge_fault_specs(st.default_faults, per_ref, own, sim))

    def _new_job(
        self,
        body: dict[str, Any],
        key: str | None,
        ref: str | None,
        faults: Faults,
        now: float,
    ) -> SimJob:
        job = SimJob(
            job_id="job_" + secrets.token_hex(8),
            client_reference=ref,
            idempotency_key=key,
            faults=faults,
            body=body,
            created_ts=now,
            updated_ts=now,
        )
        self.state.add_job(job)
        if faults.sync_result:
            create_succeeded(job, now)
        elif faults.duration_seconds is not None and not faults.never_finish:
            self.state.start_clock(job)
        return job

    # C901: one branch per create fault shaping the answer
    def _answer_for(self, request: web.Request, job: SimJob) -> CreateAnswer:  # noqa: C901
        """The answer stored under the key: what every same-key retry will see again."""
        faults = job.faults
        if faults.sync_result:
            payload: Any = {
                "job_id": job.job_id,
                "state": "succeeded",
                "result": {"rows": result_rows(job)},
            }
            return _json_answer(200, payload, ())
        malformed = faults.malformed_create
        if malformed is not None:
            # no Location header either: the malformed body is the only evidence the client gets
            if malformed == "huge":
                return CreateAnswer(status=faults.create_status, headers=(), body=b"", huge=True)
            if malformed == "not_json":
                # a proxy's HTML page that still claims to be JSON
                return CreateAnswer(
                    status=faults.create_status,
                    headers=(("Content-Type", "application/json"),),
                    body=b"<html><body><h1>202 Accepted</h1>queued</body></html>",
                )
            if malformed == "missing_job_id":
                return _json_answer(faults.create_status, {"state": "queued"}, ())
            return _json_answer(faults.create_status, {"job_id": 12345, "state": "queued"}, ())
        job_id = faults.dot_job_id or job.job_id
        status_url = f"/v1/jobs/{job_id}"
        absolute = f"{request.url.origin()}{status_url}"
        hostile = _hostile_status_url(request, faults.hostile_status_url, job_id)
        if hostile is not None:
            status_url = absolute = hostile
        payload = {"job_id": job_id, "state": "queued", "status_url": status_url}
        headers: tuple[tuple[str, str], ...] = ()
        if faults.echo_credentials:
            token = echo.bearer(request)
            status_url = echo.status_url(status_url, token)
            absolute = status_url if hostile is not None else f"{request.url.origin()}{status_url}"
            payload = echo.create({**payload, "status_url": status_url}, token)
            headers = tuple(echo.request_id(token).items())
        if faults.status_location == "Location":
            headers += (("Location", status_url),)
        elif faults.status_location == "Operation-Location":
            # Azure-style: an absolute URL, unlike the article's relative Location
            headers += (("Operation-Location", absolute),)
        if faults.set_cookie:
            headers = (*headers, ("Set-Cookie", f"sim_session={job.job_id}; Path=/"))
        return _json_answer(faults.create_status, payload, headers)


def _hostile_status_url(request: web.Request, kind: str | None, job_id: str) -> str | None:
    """A status URL that tests the client's URL handling (the `hostile_status_url` fault)."""
    match kind:
        case "relative":
            # a relative-path reference: RFC 3986 resolves it against /v1/reports
            return f"jobs/{job_id}"
        case "off_origin":
            # another host: nothing listens there, and credentials must never go there
            return f"http://127.0.0.2:{request.url.port}/v1/jobs/{job_id}"
        case "userinfo":
            # the same host, but with user info that would become a Basic credential
            return f"http://jobtrail:stolen@{request.host}/v1/jobs/{job_id}"
    return None


def _hostile_retry_answer(faults: Faults) -> web.Response | None:
    """What a careless provider answers a retry of a create it already carried out: a
    refusal, a server error or garbage, never the job it made."""
    if faults.reject_retry is not None:
        status = faults.reject_retry.status
        code = "already_exists" if status == 409 else "rejected"
        return error(status, code, faults.reject_retry.message)
    if faults.retry_error is not None:
        return error(faults.retry_error, "internal_error", "simulated error on a retry")
    if faults.retry_malformed:
        return web.Response(
            status=202,
            body=b"<html><body><h1>202 Accepted</h1>queued</body></html>",
            content_type="application/json",
        )
    return None


def _str_field(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    return value if isinstance(value, str) and value else None


def _json_answer(status: int, payload: Any, headers: tuple[tuple[str, str], ...]) -> CreateAnswer:
    return CreateAnswer(
        status=status,
        headers=(*headers, ("Content-Type", "application/json")),
        body=compact_json(payload),
    )


async def _send(
    request: web.Request, answer: CreateAnswer, job_id: str, *, replayed: bool
) -> web.StreamResponse:
    headers = dict(answer.headers)
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    if not answer.huge:
        return web.Response(status=answer.status, body=answer.body, headers=headers)
    return await _send_huge(request, answer.status, headers, job_id)


async def _send_huge(
    request: web.Request, status: int, headers: dict[str, str], job_id: str
) -> web.StreamResponse:
    """A valid but 50 MB JSON answer, streamed: it tests the client's size cap, not our memory."""
    prefix = json.dumps({"job_id": job_id, "state": "queued", "padding": ""})[:-2].encode()
    suffix = b'"}'
    response = web.StreamResponse(status=status, headers=headers)
    response.content_type = "application/json"
    response.content_length = len(prefix) + HUGE_BODY_BYTES + len(suffix)
    try:
        await response.prepare(request)
        await response.write(prefix)
        for _ in range(HUGE_BODY_BYTES // len(_HUGE_CHUNK)):
            await response.write(_HUGE_CHUNK)
        await response.write(suffix)
        await response.write_eof()
    except ConnectionError:
        # the client stopped reading, which is exactly what a size cap should do
        pass
    return response
