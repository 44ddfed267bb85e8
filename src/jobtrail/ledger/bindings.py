"""Audit entries that bind the rows they cover by hash instead of copying them (issue 24,
migration 0017), and the check that the rows still hold what was bound: attempt rows and
transitions (bound here, in the ledger) and closed observation runs (bound by the store as
it seals each run, store.codec.run_closed, core.seals).

An effectful call's `attempt.intent` entry held a copy of the attempt's request, and its
`attempt.outcome` entry a copy of the answer's detail: the same bytes twice, once in the
attempts table and once in the chain. Now each holds the sha256 of the column's canonical
JSON (`request_sha256`, `detail_sha256`) and the attempt's small columns as they are (its
kind; its outcome, HTTP status and provider request id), all taken from the attempt as it is
stored, after redaction. The chain covers the entry, the entry covers the row: an edit of
any bound column is named by `audit verify` (`edited_rows`), row and column. An
`observation.run` entry likewise holds the run's source, first read and count, and the sha256
of its final values (`run_values`): an edited run is named by row (and by column for those
three). A `transition` entry holds the sha256 of its step's columns as stored
(`histories.step_digest`; the result it binds stays), which `audit verify --replay` matches
each stored step against. Entries written before 0017 keep their copies and verify as they
did.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from jobtrail.core.audit import AuditEntry, AuditRow, digest
from jobtrail.core.model import Attempt, Observation, Transition
from jobtrail.core.seals import run_values
from jobtrail.ledger.histories import transition_digest
from jobtrail.store.changes import Change
from jobtrail.store.codec import storable

INTENT, OUTCOME, RUN, STEP = "attempt.intent", "attempt.outcome", "observation.run", "transition"
# The attempt's columns each entry binds: by hash (the JSON ones) or as they are.
HASHED = {INTENT: ("request",), OUTCOME: ("detail",)}
COPIED = {INTENT: ("kind",), OUTCOME: ("outcome", "http_status", "provider_request_id")}


def bind(change: Change) -> Change:
    """`change` with each attempt entry binding its attempt's stored columns (the change's
    attempts, already redacted) by hash: an intent the attempt it starts, an outcome the
    attempt it finishes (or records finished, as a decision's adopted read)."""
    started, finished = change.attempt_started, change.attempt_finished
    if not change.audit or (started is None and finished is None and not change.transitions):
        return change
    steps = iter(change.transitions)  # their entries come in the same order (ledger._change)
    audit = [
        _step(entry, steps) if entry.kind == STEP else _bound(entry, started, finished)
        for entry in change.audit
    ]
    return replace(change, audit=audit)


def _step(entry: AuditEntry, steps: Iterator[Transition]) -> AuditEntry:
    """A `transition` entry binding its transition row by hash (the step's columns as stored:
    histories.step_digest), keeping the result it binds, if any."""
    tr, data = next(steps, None), entry.data
    if tr is None or not isinstance(data, dict):
        return entry
    same = (data.get("from"), data.get("to")) == (tr.from_state.value, tr.to_state.value)
    if not same or tr.operation_id != entry.operation_id or tr.at != entry.at:
        return entry
    bound: dict[str, Any] = {"step_sha256": transition_digest(tr)}
    if "result" in data:
        bound["result"] = data["result"]
    return replace(entry, data=bound)


def _bound(entry: AuditEntry, started: Attempt | None, finished: Attempt | None) -> AuditEntry:
    data = entry.data
    if entry.kind not in HASHED or not isinstance(data, dict):
        return entry
    if entry.kind == INTENT:
        candidates = [started]
    else:
        candidates = [finished, started if started and started.outcome is not None else None]
    attempt = next((a for a in candidates if a and a.attempt_id == data.get("attempt_id")), None)
    if attempt is None or entry.operation_id != attempt.operation_id:
        return entry
    bound: dict[str, Any] = {"attempt_id": attempt.attempt_id}
    if entry.kind == OUTCOME:
        bound["kind"] = attempt.kind.value
    for column in COPIED[entry.kind]:
        bound[column] = _value(attempt, column)
    for column in HASHED[entry.kind]:
        bound[f"{column}_sha256"] = digest(getattr(attempt, column))
    return replace(entry, data=bound)


def _value(attempt: Attempt, column: str) -> Any:
    value = getattr(attempt, column)
    return value.value if column == "kind" else value


@dataclass(frozen=True, kw_only=True)
class Binding:
    """What one entry (#seq) bound of one attempt row: column -> value, or -> sha256 for a
    hashed column (named `<column>_sha256` in the entry)."""

    seq: int
    operation_id: str | None
    copied: Mapping[str, Any]
    hashed: Mapping[str, str]


def bindings(rows: Iterable[AuditRow]) -> dict[str, list[Binding]]:
    """Each attempt's bindings in the chain, by attempt id (entries from 0017 on)."""
    found: dict[str, list[Binding]] = {}
    for row in rows:
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") not in HASHED:
            continue
        kind, data = doc["kind"], doc.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("attempt_id"), str):
            continue
        hashed = {c: data[f"{c}_sha256"] for c in HASHED[kind] if f"{c}_sha256" in data}
        if not hashed:
            continue  # an entry written before 0017: it holds copies
        copied = {c: data.get(c) for c in COPIED[kind]}
        binding = Binding(
            seq=row.seq, operation_id=doc.get("operation_id"), copied=copied, hashed=hashed
        )
        found.setdefault(data["attempt_id"], []).append(binding)
    return found


def edited_rows(
    rows: Iterable[AuditRow],
    attempts: Iterable[Attempt],
    observations: Mapping[str, list[Observation]],
) -> list[str]:
    """Each attempt row and closed observation run (by operation) that no longer holds what
    the chain's `rows` bound, by row and column, and each bound row that is gone; in chain
    order."""
    listed = list(rows)
    found = _edited_attempts(attempts, bindings(listed))
    found += _edited_runs(observations, sealed_runs(listed))
    return [text for _, text in sorted(found)]


def _edited_attempts(
    attempts: Iterable[Attempt], bound: Mapping[str, list[Binding]]
) -> list[tuple[int, str]]:
    problems: list[tuple[int, str]] = []
    seen = set()
    for attempt in attempts:
        seen.add(attempt.attempt_id)
        for binding in bound.get(attempt.attempt_id, ()):
            column = _edited(attempt, binding)
            if column is not None:
                problems.append(
                    (
                        binding.seq,
                        f"attempt {attempt.attempt_id} was edited: its {column} column is not "
                        f"what audit entry #{binding.seq} bound",
                    )
                )
    for attempt_id, found in bound.items():
        if attempt_id not in seen:
            first = found[0]
            problems.append(
                (
                    first.seq,
                    f"attempt {attempt_id} of {first.operation_id}, bound by audit entry "
                    f"#{first.seq}, is missing from the attempts table (deleted)",
                )
            )
    return problems


def _edited(attempt: Attempt, binding: Binding) -> str | None:
    """The first bound column of `attempt` that differs from `binding`, or None."""
    if binding.operation_id != attempt.operation_id:
        return "operation_id"
    for column, value in binding.copied.items():
        if storable(_value(attempt, column)) != storable(value):
            return column
    for column, expected in binding.hashed.items():
        if digest(getattr(attempt, column)) != expected:
            return column
    return None


@dataclass(frozen=True, kw_only=True)
class Sealed:
    """What an `observation.run` entry (#seq, from 0017 on) bound of a closed run."""

    seq: int
    source: Any
    first_ref: Any
    count: Any
    sha256: str


def sealed_runs(rows: Iterable[AuditRow]) -> dict[str, list[Sealed]]:
    """The runs the chain sealed by hash, by operation id, in chain order."""
    found: dict[str, list[Sealed]] = {}
    for row in rows:
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != RUN:
            continue
        data, op_id = doc.get("data"), doc.get("operation_id")
        if not isinstance(data, dict) or "run_sha256" not in data or not isinstance(op_id, str):
            continue  # an entry written before 0017: it holds copies
        sealed = Sealed(
            seq=row.seq,
            source=data.get("source"),
            first_ref=data.get("first_ref"),
            count=data.get("count"),
            sha256=str(data["run_sha256"]),
        )
        found.setdefault(op_id, []).append(sealed)
    return found


def _edited_runs(
    observations: Mapping[str, list[Observation]], sealed: Mapping[str, list[Sealed]]
) -> list[tuple[int, str]]:
    problems: list[tuple[int, str]] = []
    for op_id, runs in sealed.items():
        closed = [ob for ob in observations.get(op_id, ()) if ob.closed_at is not None]
        for run in runs:
            same = [ob for ob in closed if (ob.source, ob.ref) == (run.source, run.first_ref)]
            match = next((ob for ob in same if _run_digest(ob) == run.sha256), None)
            if match is None and not same:
                problems.append((run.seq, _missing_run(op_id, run)))
                continue
            ob = match or same[0]
            closed.remove(ob)
            column = _run_edited(ob, run)
            if column is not None:
                problems.append(
                    (
                        run.seq,
                        f"the observation run of {op_id} first read by {run.first_ref} was "
                        f"edited: its {column} is not what audit entry #{run.seq} bound",
                    )
                )
    return problems


def _run_digest(ob: Observation) -> str:
    assert ob.closed_at is not None
    return digest(run_values(ob, ob.closed_at))


def _run_edited(ob: Observation, run: Sealed) -> str | None:
    if ob.seen_count != run.count:
        return "seen_count column"
    if _run_digest(ob) != run.sha256:
        return (
            "stored values (remote_state, remote_status, provider_updated_at, observed_at, "
            "last_seen_at, last_request_id, progress, last_progress, closed_at, usage or "
            "event_id)"
        )
    return None


def _missing_run(op_id: str, run: Sealed) -> str:
    return (
        f"the observation run of {op_id} first read by {run.first_ref} ({run.source}), "
        f"sealed by audit entry #{run.seq}, is missing from the observations table (deleted, "
        "or its source or ref column edited)"
    )
