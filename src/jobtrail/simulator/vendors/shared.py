"""What every vendor mode shares: faults, the job record, the lifecycle and the calls log.

Each vendor module renders a :class:`VendorJob` in its own vendor's words (status codes,
headers, body shapes, error shapes), written from that vendor's public API reference.
The lifecycle underneath is the same lazy one as the article simulator's: a job moves on
status reads only, so a test controls its timeline by counting reads.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web

from jobtrail.simulator.answers import drop_connection
from jobtrail.simulator.faults import FaultError

Phase = Literal["pending", "running", "cancelling", "succeeded", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
VendorOutcome = Literal["succeeded", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True, slots=True)
class VendorFaults:
    """What one vendor-mode job may do; defaults are a well-behaved job.

    ``drop_create_answer`` counts create answers to lose (the job is made, the socket is
    closed); the others shape each job made while they are set.
    """

    drop_create_answer: int = 0
    not_found_polls: int = 0  # status reads answered 404 right after create (replication lag)
    status_errors: int = 0  # status reads answered with a transient 500 (after the 404s)
    retry_after: int | None = None  # Retry-After seconds on every non-terminal answer
    duration_polls: int = 2  # status reads until the job ends
    outcome: VendorOutcome = "succeeded"  # how it ends ("cancelled": the provider gave up)
    items: int = 3  # requests in a batch
    failed_items: int = 0  # of which end with a per-request error
    cancel_polls: int = 1  # reads spent in the provider's cancelling state
    in_flight_items: int = 1  # requests a batch still finishes after a cancel (Anthropic)
    finished_before_expiry: int = 0  # requests an expiring batch finished (OpenAI)
    # an eventually consistent listing: a new job is listed only this many seconds after its
    # create arrived (status reads of its id answer at once)
    list_visible_after: int = 0
    # Azure Resource Manager only
    create_status: int | None = None  # 200, 201, 202 or 204; None: the method's usual answer
    headers: Literal["azure-async-operation", "location", "both", "none"] = "azure-async-operation"
    # "none": a 200/201 create answer's resource holds no provisioningState (azure-core reads
    # a 201 without one as still running, a 200 without one as succeeded)
    create_state: Literal["word", "none"] = "word"


_CHOICES: dict[str, tuple[Any, ...]] = {
    "outcome": ("succeeded", "failed", "cancelled"),
    "headers": ("azure-async-operation", "location", "both", "none"),
    "create_status": (None, 200, 201, 202, 204),
    "create_state": ("word", "none"),
}


def parse_vendor_faults(spec: Mapping[str, Any]) -> VendorFaults:
    """Build :class:`VendorFaults` from JSON, refusing unknown names and bad values."""
    if not isinstance(spec, Mapping):
        raise FaultError("vendor faults must be a JSON object")
    known = {f.name for f in fields(VendorFaults)}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise FaultError(f"unknown vendor fault(s): {', '.join(unknown)}; known: {sorted(known)}")
    for name, value in spec.items():
        if name == "retry_after" and value is None:
            continue
        if name in _CHOICES:
            if value not in _CHOICES[name] or isinstance(value, bool):
                raise FaultError(f"{name} cannot be {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FaultError(f"{name} must be a non-negative integer, got {value!r}")
    faults = VendorFaults(**spec)
    if faults.failed_items > faults.items:
        raise FaultError("failed_items cannot exceed items")
    return faults


@dataclass(kw_only=True, slots=True, eq=False)
class VendorJob:
    """One remote job (operation, batch) of a vendor mode, as the provider sees it."""

    job_id: str
    mode: str
    faults: VendorFaults
    body: Any
    created_ts: float
    phase: Phase = "pending"
    reads: int = 0
    cancel_reads: int = 0
    cancel_requested: bool = False
    cancelled_ts: float | None = None
    ended_ts: float | None = None
    # the client's own words the vendor keeps (metadata, displayName, resource name, ...)
    tag: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # status reads that were refused (404 just after create, transient 500)
    refused_reads: int = 0
    # the deadline the create asked the provider to enforce (simulator clock seconds), and
    # whether the job ended because it passed (the provider stopped it by itself)
    deadline_ts: float | None = None
    timed_out: bool = False

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL

    @property
    def succeeded_items(self) -> int:
        """Requests that finished well: all but the failed ones, or the in-flight ones when
        the batch was cancelled."""
        f = self.faults
        if self.phase == "cancelled":
            return min(f.in_flight_items, f.items - f.failed_items) if self.cancel_requested else 0
        if self.phase == "succeeded":
            return f.items - f.failed_items
        return 0


def advance(job: VendorJob, now: float) -> None:
    """Move a job forward for one status read that reached it. A job whose own deadline
    has passed ends first, at its deadline, as the provider would have stopped it."""
    if job.terminal:
        return
    if job.deadline_ts is not None and now >= job.deadline_ts:
        job.timed_out = True
        _end(job, "cancelled", job.deadline_ts)
        return
    job.reads += 1
    if job.cancel_requested:
        job.cancel_reads += 1
        if job.cancel_reads > job.faults.cancel_polls:
            _end(job, "cancelled", now)
        else:
            job.phase = "cancelling"
        return
    if job.reads >= job.faults.duration_polls:
        _end(job, job.faults.outcome, now)
    else:
        job.phase = "running"


def request_cancel(job: VendorJob, now: float) -> bool:
    """Note a cancel; False when the job already ended."""
    if job.terminal:
        return False
    if not job.cancel_requested:
        job.cancel_requested, job.cancelled_ts = True, now
    job.phase = "cancelling" if job.faults.cancel_polls > 0 else job.phase
    if job.faults.cancel_polls == 0:
        _end(job, "cancelled", now)
    return True


def finish(job: VendorJob, now: float) -> None:
    """End a job now as its faults say, without a status read: a provider finishing on
    its own time (what a webhook then announces)."""
    if job.terminal:
        return
    job.reads = max(job.reads, job.faults.duration_polls)
    _end(job, "cancelled" if job.cancel_requested else job.faults.outcome, now)


def _end(job: VendorJob, phase: VendorOutcome, now: float) -> None:
    job.phase, job.ended_ts = phase, now


@dataclass(frozen=True, kw_only=True, slots=True)
class VendorCall:
    """One request a vendor mode received (the credential itself is never kept)."""

    mode: str
    kind: str  # create, status, cancel, result, list, get
    method: str
    path: str
    status: int | None  # None: the answer was dropped
    job_id: str | None
    auth_valid: bool
    client_request_id: str | None = None  # Azure's x-ms-client-request-id, when sent

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class VendorState:
    """The jobs, faults and calls of every vendor mode, on the simulator's one loop."""

    def __init__(self, *, token: str | None, clock: Callable[[], float]) -> None:
        self._token_digest = None if token is None else hashlib.sha256(token.encode()).digest()
        self.clock = clock
        self.jobs: dict[str, dict[str, VendorJob]] = {}
        self.faults: dict[str, dict[str, Any]] = {}
        self.drops_left: dict[str, int] = {}
        self.calls: list[VendorCall] = []
        self.creates: dict[str, int] = {}
        # file id -> (content type, bytes): results files (OpenAI files, Anthropic results)
        self.files: dict[str, tuple[str, bytes]] = {}
        # each mode's handlers, by mode name (vendors/skeleton.py ends jobs through them)
        self.modes: dict[str, Any] = {}
        # AWS access key id -> secret key: the credentials a SigV4-signed request may use
        self.aws_keys: dict[str, str] = {}
        self._ids = itertools.count(1)

    def reset(self) -> None:
        self.jobs.clear()
        self.faults.clear()
        self.drops_left.clear()
        self.calls.clear()
        self.creates.clear()
        self.files.clear()

    def set_faults(self, mode: str, spec: Mapping[str, Any]) -> None:
        """Faults for the jobs ``mode`` makes from now on (checked now, so typos fail here)."""
        faults = parse_vendor_faults(spec)
        self.faults[mode] = dict(spec)
        self.drops_left[mode] = faults.drop_create_answer

    def faults_for(self, mode: str, body: Any) -> VendorFaults:
        """The mode's faults, overridden name by name by a JSON body's test-only ``_sim``."""
        spec = dict(self.faults.get(mode, {}))
        if isinstance(body, dict) and isinstance(body.get("_sim"), dict):
            # a lost answer is the mode's counter only: a body cannot lose its own answer twice
            spec.update({k: v for k, v in body["_sim"].items() if k != "drop_create_answer"})
        return parse_vendor_faults(spec)

    def take_drop(self, mode: str) -> bool:
        """True when this create's answer is to be lost (the mode's counter, spent once each)."""
        left = self.drops_left.get(mode, 0)
        if left > 0:
            self.drops_left[mode] = left - 1
            return True
        return False

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}{secrets.token_hex(4)}"

    def add(self, job: VendorJob) -> VendorJob:
        self.jobs.setdefault(job.mode, {})[job.job_id] = job
        self.creates[job.mode] = self.creates.get(job.mode, 0) + 1
        return job

    def get(self, mode: str, job_id: str) -> VendorJob | None:
        return self.jobs.get(mode, {}).get(job_id)

    def listed(self, mode: str) -> list[VendorJob]:
        """Newest first, as the batch APIs list; a job made with `list_visible_after` is
        left out until that many seconds after its create arrived."""
        now = self.clock()
        shown = (
            j
            for j in self.jobs.get(mode, {}).values()
            if now >= j.created_ts + j.faults.list_visible_after
        )
        return sorted(shown, key=lambda j: j.created_ts, reverse=True)

    def auth_ok(self, presented: str | None) -> bool:
        if self._token_digest is None:
            return True
        if presented is None:
            return False
        digest = hashlib.sha256(presented.encode()).digest()
        return hmac.compare_digest(digest, self._token_digest)

    def record(
        self,
        mode: str,
        kind: str,
        request: web.Request,
        status: int | None,
        *,
        job_id: str | None = None,
        auth_valid: bool = True,
    ) -> None:
        self.calls.append(
            VendorCall(
                mode=mode,
                kind=kind,
                method=request.method,
                path=request.path_qs,
                status=status,
                job_id=job_id,
                auth_valid=auth_valid,
                client_request_id=request.headers.get("x-ms-client-request-id"),
            )
        )

    def summary(self, mode: str) -> dict[str, Any]:
        """What a test asserts on: jobs made, their phases, and the calls by kind."""
        calls = [c for c in self.calls if c.mode == mode]
        kinds = sorted({c.kind for c in calls})
        return {
            "mode": mode,
            "jobs_created": self.creates.get(mode, 0),
            "calls": {k: sum(1 for c in calls if c.kind == k) for k in kinds},
            "jobs": [
                {
                    "job_id": j.job_id,
                    "phase": j.phase,
                    "tag": j.tag,
                    "cancel_requested": j.cancel_requested,
                    "reads": j.reads,
                }
                for j in sorted(
                    self.jobs.get(mode, {}).values(), key=lambda j: j.created_ts, reverse=True
                )
            ],
        }


def refused_read(job: VendorJob) -> int | None:
    """The status code a fault makes this read answer (404 lag, then 500s), or None."""
    f = job.faults
    if job.refused_reads < f.not_found_polls:
        job.refused_reads += 1
        return 404
    if job.refused_reads < f.not_found_polls + f.status_errors:
        job.refused_reads += 1
        return 500
    return None


def retry_after(job: VendorJob) -> dict[str, str]:
    hint = job.faults.retry_after
    return {} if hint is None or job.terminal else {"Retry-After": str(hint)}


def strip_sim(body: Any) -> Any:
    """The body without its test-only ``_sim`` object: the vendor never sees it."""
    if isinstance(body, dict) and "_sim" in body:
        return {k: v for k, v in body.items() if k != "_sim"}
    return body


async def json_body(request: web.Request) -> Any:
    """The request's JSON body, or None when it has none or it does not parse (read once:
    a mode that checked a signature over the body has read it already)."""
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def dropped(request: web.Request) -> web.Response:
    return drop_connection(request)


def rfc3339(ts: float | None) -> str | None:
    """RFC 3339 UTC with a ``Z``, as these vendors write times."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unix(ts: float | None) -> int | None:
    return None if ts is None else int(ts)


def base_url(request: web.Request) -> str:
    """Where the client reached us, for absolute URLs in headers and bodies."""
    return f"{request.scheme}://{request.host}"
