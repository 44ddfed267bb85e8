"""Replaying every operation's history against its stored record (`audit verify --replay`).

The operations table is mutable by design, so a forged state (an UPDATE setting `succeeded`,
or another remote job id) leaves no mark in the hash chain. The history can say what the
record must hold: replayed through the one transition table from `create_pending`, it must
end in the stored state, with the remote job id its last step carried; and every step must
be one the audit chain recorded, so a forger cannot make the replay agree by inserting steps.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobtrail.core.audit import AuditRow, digest
from jobtrail.core.canonical import fingerprint
from jobtrail.core.model import Operation, Transition
from jobtrail.core.redact import REDACTED
from jobtrail.core.replay import replay
from jobtrail.core.states import State
from jobtrail.errors import TransitionRefused
from jobtrail.store.codec import storable

_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
StepKey = tuple[str | None, ...]


@dataclass(frozen=True, kw_only=True)
class Forgery:
    operation_id: str
    problem: str

    def message(self) -> str:
        return f"{self.operation_id}: {self.problem}"


def audited_steps(rows: Iterable[AuditRow]) -> Counter[str]:
    """The transitions the audit chain recorded, each as its step's sha256 (`step_digest`):
    what an entry from migration 0017 on holds, or computed from an older entry's copy."""
    steps: Counter[str] = Counter()
    for row in rows:
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "transition":
            continue
        data = doc.get("data") or {}
        if isinstance(data.get("step_sha256"), str):
            steps[data["step_sha256"]] += 1
            continue
        copied = (
            doc.get("operation_id"),
            doc.get("at"),
            storable(doc.get("actor")),
            data.get("from"),
            data.get("to"),
            data.get("evidence"),
            storable(data.get("cause")),  # the stored step holds it as text
            storable(data.get("remote_job_id")),
        )
        steps[step_digest(copied)] += 1
    return steps


def _key(tr: Transition) -> StepKey:
    return (
        tr.operation_id,
        tr.at.strftime(_TIME),
        storable(tr.actor),
        tr.from_state.value,
        tr.to_state.value,
        tr.evidence.value,
        storable(tr.cause),
        storable(tr.remote_job_id),
    )


def step_digest(key: StepKey) -> str:
    """The sha256 of a step's columns as stored (operation, time, actor, from, to, evidence,
    cause, remote job id): what a `transition` entry binds its transition row by."""
    return digest(list(key))


def transition_digest(tr: Transition) -> str:
    return step_digest(_key(tr))


def check(op: Operation, history: Sequence[Transition], audited: Counter[str]) -> str | None:
    """What is wrong with `op` given its history, or None when the history yields it.
    `audited` is consumed: each audited step vouches for one stored step only."""
    for number, tr in enumerate(history, 1):
        key = transition_digest(tr)
        if audited[key] <= 0:
            return (
                f"history step {number} ({tr.from_state} -> {tr.to_state}) is not in the "
                "audit log: it was inserted outside jobtrail"
            )
        audited[key] -= 1
    try:
        state = replay(history)
    except TransitionRefused as exc:
        return f"its history does not replay: {exc}"
    if state is not op.state:
        return f"stored state is {op.state} but its history ends in {state} (forged state)"
    expected = history[-1].remote_job_id if history else None
    if op.remote_job_id != expected:  # each step that learns an id moves right after
        return (
            f"stored remote job id is {op.remote_job_id!r} but its history carries "
            f"{expected!r} (forged remote job id)"
        )
    return None


def audited_requests(rows: Iterable[AuditRow]) -> dict[str, dict[str, Any]]:
    """Each operation's submission as its `operation.submitted` entry recorded it: the
    request fingerprint (the body itself is stored once, in the operation row: this is
    what binds it), the idempotency token, the key, who submitted it and its trace id."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "operation.submitted":
            continue
        data = doc.get("data") or {}
        if isinstance(doc.get("operation_id"), str) and isinstance(data, dict):
            found[doc["operation_id"]] = {**data, "actor": doc.get("actor")}
    return found


# What an operation row holds that its submission audited, and what a change of it forges:
# the token a retried create is sent under, and who the operation belongs to.
_SUBMITTED = (
    ("idempotency_token", "idempotency token"),
    ("key", "key"),
    ("actor", "owner (the actor who submitted it)"),
    ("authorized_by", "authorizer"),
    ("trace_id", "trace id"),
    ("provider", "provider"),
)


def request_problem(op: Operation, audited: Mapping[str, Any] | None) -> str | None:
    """What is wrong with `op`'s stored request and submission given what its submission
    audited, or None."""
    if audited is None:
        return None
    request = op.request
    again = fingerprint(
        request.method, request.target, request.body, request.headers or None, request.path or None
    )
    if isinstance(audited.get("fingerprint"), str) and again != audited["fingerprint"]:
        return (
            "its stored request does not match the fingerprint the audit log recorded "
            "(forged request)"
        )
    for name, words in _SUBMITTED:
        if name not in audited:
            continue  # an entry older than the field
        said, stored = audited[name], getattr(op, name)
        if isinstance(said, str) and REDACTED in said:
            continue  # what the audit could not keep cannot be compared
        if storable(said) != storable(stored):
            return (
                f"its stored {words} is {stored!r} but its submission audited {said!r} "
                f"(forged {words.split(' (')[0]})"
            )
    return None


# The states a collection ends in with a stored result summary: their transition's audit
# entry binds the result's sha256 and size to the chain.
COLLECTED = frozenset({State.SUCCEEDED, State.RESULT_VALIDATION_FAILED})


def audited_results(rows: Iterable[AuditRow]) -> dict[str, dict[str, Any]]:
    """Each operation's result as its latest audited collection recorded it (sha256, size).
    Operations collected before results were bound have none."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "transition":
            continue
        data = doc.get("data") or {}
        bound = data.get("result") if isinstance(data, dict) else None
        if isinstance(bound, dict) and isinstance(doc.get("operation_id"), str):
            found[doc["operation_id"]] = bound
    return found


def result_problem(op: Operation, bound: Mapping[str, Any] | None) -> str | None:
    """What is wrong with `op`'s stored result summary given the digest and size its
    collection audited, or None (also when nothing was bound: an older ledger)."""
    if bound is None:
        return None
    summary = op.result
    if summary is not None and (summary.sha256, summary.size) == (
        bound.get("sha256"),
        bound.get("size"),
    ):
        return None
    stored = "no result" if summary is None else f"sha256:{summary.sha256} ({summary.size} bytes)"
    return (
        f"its stored result, {stored}, is not the one the audit log recorded when it was "
        f"collected, sha256:{bound.get('sha256')} ({bound.get('size')} bytes) (planted result)"
    )
