"""No false success, by construction: whatever a provider file declares and whatever shape an
answer has, and whatever a code provider reports, `succeeded` only follows an answer that
states success (core/evidence.py), and a result of nothing only where it may be empty.

The drive is the pure pipeline a worker runs: the provider's reading of the answer
(parse_create / parse_status, or a code provider's outcome), `apply`, then result
collection (`validate`, `apply`). The oracle says what "states success" means in the
provider file's own words, independently of how jobtrail reads it: a status code declared
done, or an answer whose body is a JSON object (only a document can hold a state word, a
done flag, or be the document a `missing` state is declared for).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobtrail.core import outcomes as o
from jobtrail.core.apply import Schedule, apply
from jobtrail.core.evidence import is_nothing
from jobtrail.core.model import Capabilities, Operation, ResultMode
from jobtrail.core.outcomes import Basis, Body
from jobtrail.core.states import RemoteStatus, State
from jobtrail.core.validate import Candidate, Rules, validate
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.http.parse import parse_create, parse_status

from factories import T0, make_op

BASE = "https://api.example.test"
SCHEDULE = Schedule(rand=random.Random(3))
WORDS = {"Succeeded": "succeeded", "Failed": "failed", "Canceled": "cancelled", "Busy": "running"}
# Every answer shape the issue names, and documents that do state something.
SHAPES: dict[str, bytes] = {
    "empty": b"",
    "blank": b" \r\n",
    "null": b"null",
    "empty-object": b"{}",
    "cut-json": b'{"id": "j1", "properties": {"provisioningState": "Succ',
    "not-json": b"<html><body>OK</body></html>",
    "not-utf8": b"\xff\xfe{}",
    "a-list": b'[{"status": "Succeeded"}]',
    "a-number": b"1",
    "no-state": b'{"id": "j1"}',
    "state-succeeded": b'{"id": "j1", "status": "Succeeded"}',
    "state-failed": b'{"id": "j1", "status": "Failed", "error": {"code": "E", "message": "m"}}',
    "state-running": b'{"id": "j1", "status": "Busy"}',
    "state-unknown": b'{"id": "j1", "status": "Paused"}',
    "state-not-text": b'{"id": "j1", "status": 1}',
    "done-true": b'{"id": "j1", "done": true, "response": {"x": 1}}',
    "done-error": b'{"id": "j1", "done": true, "error": {"code": 3}}',
    "done-false": b'{"id": "j1", "done": false}',
}
READINGS = ("body", "running", "succeeded", "failed", "cancelled", "done", None)
CODES = (200, 201, 202, 204)
ANSWER_CODES = (*CODES, 400, 404, 409, 410, 422, 500, 503)
# 2xx answers drawn more often: they are the ones a provider file reads.
answer_codes = st.sampled_from(CODES) | st.sampled_from(ANSWER_CODES)
CONTENT_TYPES = ("application/json", "text/plain", "text/html", None)


@st.composite
def provider_files(draw: st.DrawFn) -> ProviderSpec:
    """A provider file with random codes, state sources, `missing`, `done`, results."""

    def codes() -> dict[str, str]:
        table = {}
        for code in CODES:
            reading = draw(st.sampled_from(READINGS))
            if reading is not None:
                table[str(code)] = reading
        return table

    missing = draw(st.sampled_from((None, "succeeded", "succeeded", "running", "failed")))
    status: dict[str, Any] = {"path": "/jobs/{job_id}", "state": "status", "codes": codes()}
    create: dict[str, Any] = {"path": "/jobs", "job_id": "id", "state": "status", "codes": codes()}
    if missing:
        status["missing"] = create["missing"] = missing
    if draw(st.booleans()):
        status["done"] = "done"
    if draw(st.booleans()):
        status["by_header"] = {
            "Location": {"codes": codes(), "answer_is_result": draw(st.booleans())}
        }
    result: dict[str, Any] = {"path": "/jobs/{job_id}/result", "allow_empty": draw(st.booleans())}
    if draw(st.booleans()):
        result["at_create"] = True
    doc = {
        "name": "prop",
        "base_url": BASE,
        "create": create,
        "status": status,
        "states": WORDS,
        "result": result,
    }
    return parse_provider(doc)


def stated_success(codes: dict[int, Any], code: int, body: bytes) -> bool:
    """The oracle: an answer states success if its code is declared done, or if its body is
    a JSON object with members (a document that can say so, by a word, a flag or `missing`)."""
    reading = codes.get(code)
    if reading is not None and reading.value in ("succeeded", "done"):
        return True
    if reading is not None and reading.value != "body":
        return False
    if not 200 <= code < 300:
        return False
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(document, dict) and bool(document)


def declared_bodiless_done(codes: dict[int, Any], code: int, body: bytes) -> bool:
    reading = codes.get(code)
    return reading is not None and reading.value in ("succeeded", "done") and not body.strip()


def collect(op: Operation, spec: ProviderSpec, content: bytes) -> Operation:
    """The worker's result step: validate what was fetched (or kept inline), apply it."""
    rules = Rules(allow_empty=spec.result.allow_empty)
    summary = validate(Candidate(content=content, content_type="application/json"), rules, "x")
    later = T0 + timedelta(seconds=3)
    return apply(
        op, o.ResultChecked(summary=summary), later, actor="w", schedule=SCHEDULE
    ).operation


def observing(spec: ProviderSpec) -> Operation:
    return make_op(
        state=State.OBSERVING, remote_job_id="j1", capabilities=spec.capabilities, poll_count=0
    )


@settings(max_examples=600, deadline=None)
@given(
    provider_files(),
    answer_codes,
    st.sampled_from(sorted(SHAPES)),
    st.sampled_from(CONTENT_TYPES),
    st.sampled_from((None, "Location")),
    st.sampled_from(sorted(SHAPES)),
)
def test_a_status_answer_ends_succeeded_only_when_it_states_success(
    spec: ProviderSpec, code: int, shape: str, media: str | None, via: str | None, result: str
) -> None:
    """Every status answer shape, through every declared code and state source."""
    body = SHAPES[shape]
    headers = {"Content-Type": media} if media else {}
    op = observing(spec)
    read = parse_status(spec, code, headers, body, via)
    after = apply(op, read, T0 + timedelta(seconds=1), actor="w", schedule=SCHEDULE).operation
    if after.state is not State.RESULT_COLLECTING:
        assert after.state is not State.SUCCEEDED
        return
    kept = after.inline_result is not None or (isinstance(read, o.Observed) and read.content)
    content = (read.content or b"") if isinstance(read, o.Observed) and kept else SHAPES[result]
    done = collect(after, spec, content)
    if done.state is State.SUCCEEDED:
        rule = spec.status_rule_for(via)
        assert stated_success(dict(rule.codes), code, body), (code, shape, via)
        if is_nothing(content):
            assert spec.result.allow_empty
            if kept:
                assert declared_bodiless_done(dict(rule.codes), code, body)


@settings(max_examples=600, deadline=None)
@given(
    provider_files(),
    answer_codes,
    st.sampled_from(sorted(SHAPES)),
    st.sampled_from(CONTENT_TYPES),
    st.sampled_from(sorted(SHAPES)),
)
def test_a_create_answer_ends_succeeded_only_when_it_states_success(
    spec: ProviderSpec, code: int, shape: str, media: str | None, result: str
) -> None:
    """Every create answer shape, through every declared code, `missing` and `at_create`:
    a synchronous result or an immediate end needs an answer stating success."""
    body = SHAPES[shape]
    headers = {"Content-Type": media} if media else {}
    op = make_op(capabilities=spec.capabilities)
    read = parse_create(spec, code, headers, body, f"{BASE}/jobs")
    after = apply(op, read, T0 + timedelta(seconds=1), actor="w", schedule=SCHEDULE).operation
    if after.state is not State.RESULT_COLLECTING:
        assert after.state is not State.SUCCEEDED
        return
    inline = isinstance(read, o.SyncResult)
    content = read.content if isinstance(read, o.SyncResult) else SHAPES[result]
    done = collect(after, spec, content)
    if done.state is State.SUCCEEDED:
        assert stated_success(dict(spec.create_rule.codes), code, body), (code, shape)
        if is_nothing(content):
            assert spec.result.allow_empty
            if inline:
                assert declared_bodiless_done(dict(spec.create_rule.codes), code, body)


# -- code providers: they report what they read; the same core judges it --------------------

statuses = st.sampled_from(list(RemoteStatus))
words = st.none() | st.sampled_from(("", "  ", "SUCCEEDED", "RUNNING", "done"))
bases = st.sampled_from(list(Basis))
shapes = st.sampled_from(list(Body))
contents = st.sampled_from((b"", b"null", b" null\n", b'{"rows": 3}', b"a,b\n1,2\n"))


def code_states_success(basis: Basis, body: Body, word: str | None) -> bool:
    """The oracle for a code provider's report: a word it read, a code it declares, or a
    document holding a flag or declared state."""
    if basis is Basis.WORD:
        return bool(word and word.strip())
    if basis is Basis.CODE:
        return True
    if basis in (Basis.FLAG, Basis.DEFAULT, Basis.CONTENT):
        return body in (Body.OBJECT, Body.UNREAD)
    return False


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.tuples(statuses, words, bases, shapes), min_size=1, max_size=4),
    contents,
    st.booleans(),
    st.sampled_from(list(ResultMode)),
)
def test_a_code_providers_reports_end_succeeded_only_on_stated_success(
    reads: list[tuple[RemoteStatus, str | None, Basis, Body]],
    content: bytes,
    empty_ok: bool,
    mode: ResultMode,
) -> None:
    """Whatever a code provider returns (any status, word, basis, body), a stated success
    and a result that is something (or may be empty) are the only way to `succeeded`."""
    caps = Capabilities(result=mode, empty_result=empty_ok, cancel=True)
    op = make_op(state=State.OBSERVING, remote_job_id="j1", capabilities=caps, poll_count=0)
    claimed: tuple[Basis, Body, str | None] | None = None
    for n, (status, word, basis, body) in enumerate(reads):
        if op.state is not State.OBSERVING:
            break
        read = o.Observed(remote_state=word, remote_status=status, basis=basis, body=body)
        op = apply(op, read, T0 + timedelta(seconds=n), actor="w", schedule=SCHEDULE).operation
        if op.state is State.RESULT_COLLECTING:
            claimed = (basis, body, word)
    if op.state is not State.RESULT_COLLECTING:
        assert op.state is not State.SUCCEEDED
        return
    assert claimed is not None and code_states_success(*claimed)
    summary = validate(
        Candidate(content=content, content_type="text/csv"),
        Rules(allow_empty=empty_ok),
        "x",
    )
    if mode is ResultMode.NONE and not content:
        summary = replace(summary, sha256=None, size=None)  # nothing fetched, nothing declared
    done = apply(op, o.ResultChecked(summary=summary), T0, actor="w", schedule=SCHEDULE).operation
    if done.state is State.SUCCEEDED and summary.sha256 is not None and is_nothing(content):
        assert empty_ok


@settings(max_examples=300, deadline=None)
@given(words, bases, shapes, contents, st.sampled_from([None, "j1"]))
def test_a_code_providers_synchronous_result_needs_a_stated_result(
    word: str | None, basis: Basis, body: Body, content: bytes, job_id: str | None
) -> None:
    """A synchronous result of nothing is refused unless a code declares it done without a
    body; an unstated one is no result (the job, if named, is polled instead)."""
    caps = Capabilities(result=ResultMode.INLINE, empty_result=True)
    op = make_op(capabilities=caps)
    read = o.SyncResult(
        job_id=job_id, content=content, content_type="text/csv", basis=basis, body=body
    )
    after = apply(op, read, T0, actor="w", schedule=SCHEDULE).operation
    if after.state is State.RESULT_COLLECTING:
        assert code_states_success(basis, body, "result")
        if is_nothing(content):
            assert basis is Basis.CODE and body is Body.ABSENT
    elif job_id is not None:
        assert after.state is State.ACCEPTED and after.remote_job_id == job_id
    else:
        assert after.state is State.CREATE_UNKNOWN


def test_the_docs_arm_put_answered_201_with_no_body_is_not_a_null_result() -> None:
    """The break found on the real AutoRest server: PUT 201 with an empty body, read with
    `"201" = "body"`, `missing = "succeeded"` and `at_create`, was a valid null result."""
    doc = {
        "name": "arm",
        "base_url": BASE,
        "create": {
            "method": "PUT",
            "path": "/things/t1",
            "idempotency": {"natural": True},
            "identity": ["request"],
            "codes": {"200": "body", "201": "body", "202": "running", "204": "succeeded"},
            "state": "properties.provisioningState",
            "missing": "succeeded",
        },
        "status": {"state": "properties.provisioningState", "missing": "succeeded"},
        "states": {"Succeeded": "succeeded", "Failed": "failed"},
        "result": {"at_create": True},
    }
    spec = parse_provider(doc)
    read = parse_create(spec, 201, {}, b"", f"{BASE}/things/t1")
    op = make_op(capabilities=spec.capabilities)
    after = apply(op, read, T0, actor="w", schedule=SCHEDULE).operation
    assert after.state is State.ACCEPTED and after.remote_status is RemoteStatus.UNKNOWN
    assert after.remote_job_id == f"{BASE}/things/t1"
    # and the resource read back empty is not done either
    polled = apply(after, parse_status(spec, 200, {}, b""), T0, actor="w", schedule=SCHEDULE)
    assert polled.operation.state is State.ACCEPTED and polled.operation.refused_reads == 1
