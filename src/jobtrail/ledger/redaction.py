"""The one redaction chokepoint: every value the ledger records passes `redacted` on its way
to the store, whatever produced it (a parser, the core's reasons, a webhook, a person).

Parsers keep what a provider said; they are not trusted to have left secrets out. A provider
that echoes the bearer token into a state word, a progress document, a request id, an error
message or a result item id is answered here, once, with the secret values that operation's
provider uses (read from the environment when the change is written, so a rotated secret
is known at once). Everything shown later (CLI, MCP, explain, escalation) is read back from
the store, so it is clean too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import (
    Attempt,
    ItemCounts,
    Observation,
    Operation,
    ResultSummary,
    Transition,
    evolve,
)
from jobtrail.core.redact import Redactor
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.store.changes import Change

if TYPE_CHECKING:
    from jobtrail.providers.file.spec import Auth

_FALLBACK = Redactor()
_SHAPES_KEPT = 4096
OutcomeT = TypeVar("OutcomeT")


class Redactors:
    """The redactor of each operation: its provider file's sensitive names and the secret
    values that provider uses now. Built once per provider shape and set of values."""

    def __init__(self) -> None:
        self._bases: dict[str, tuple[Redactor, tuple[str, ...], Auth | None]] = {}
        self._built: dict[tuple[str, tuple[str, ...]], Redactor] = {}
        # The records of one operation share its provider document: its shape is worked out
        # once per document object (the document is kept, so its id is not reused).
        self._shapes: dict[int, tuple[Any, str]] = {}
        self._extended: dict[tuple[Redactor, tuple[str, ...]], Redactor] = {}

    def for_operation(self, op: Operation) -> Redactor:
        doc = op.provider_config if isinstance(op.provider_config, dict) else {}
        known_shape = self._shapes.get(id(doc))
        if known_shape is not None and known_shape[0] is doc:
            shape = known_shape[1]
        else:
            shape = json.dumps(
                [
                    op.provider,
                    doc.get("auth"),
                    doc.get("webhooks"),
                    doc.get("redact"),
                    doc.get("secret_env"),
                ],
                sort_keys=True,
                default=str,
            )
            if len(self._shapes) >= _SHAPES_KEPT:
                self._shapes.clear()
            self._shapes[id(doc)] = (doc, shape)
        known = self._bases.get(shape)
        if known is None:
            known = self._bases[shape] = _base(doc)
        base, names, auth = known
        from jobtrail.providers.http.tokens import known_values  # where used: see _base

        # the secrets in use: from the environment, and tokens this process fetched
        values = tuple(os.environ.get(name, "") for name in names) + known_values(auth)
        redactor = self._built.get((shape, values))
        if redactor is None:
            redactor = self._built[(shape, values)] = base.extended(values=values)
        return redactor

    def extended(self, base: Redactor, values: Iterable[str]) -> Redactor:
        """`base.extended(values=values)`, built once per base and values (a submit's check)."""
        key = (base, tuple(values))
        redactor = self._extended.get(key)
        if redactor is None:
            if len(self._extended) >= _SHAPES_KEPT:
                self._extended.clear()
            redactor = self._extended[key] = base.extended(values=key[1])
        return redactor


def _base(doc: dict[str, Any]) -> tuple[Redactor, tuple[str, ...], Auth | None]:
    """The provider's redactor without values, the environment variables holding them, and
    its `auth` (whose fetched tokens are secrets in use too)."""
    # imported here: a ledger opened only to read (`status`) parses no provider file
    from jobtrail.providers.code.contract import is_code_document, stored_document
    from jobtrail.providers.file.config import parse_provider

    if is_code_document(doc):
        try:
            code = stored_document(doc)
        except (ProviderConfigError, InvalidInput, TypeError, ValueError):
            return _FALLBACK, (), None
        return code.redactor, code.secret_env, None
    try:
        spec = parse_provider(doc)
    except ProviderConfigError:
        return _FALLBACK, (), None
    names = [spec.auth.env] if spec.auth and spec.auth.env else []
    if spec.webhooks:
        names.append(spec.webhooks.secret_env)
    return spec.redactor, tuple(names), spec.auth


def redacted(change: Change, r: Redactor) -> Change:
    """`change` with every recorded value passed through `r`. The submitted request is left
    as it is: it was refused at submit if it held a secret, and it must stay resendable.

    Most changes hold nothing to redact: one look at all their recorded values together
    returns such a change as it is, and only a change with something in sight is walked."""
    if r.leaves_unchanged(_recorded_values(change)):
        return change
    return evolve(
        change,
        operation=_operation(change.operation, r),
        transitions=[_transition(t, r) for t in change.transitions],
        observations=[_observation(o, r) for o in change.observations],
        attempt_started=_attempt(change.attempt_started, r),
        attempt_finished=_attempt(change.attempt_finished, r),
        safe_read=_attempt(change.safe_read, r),
        audit=redacted_entries(change.audit, r),
    )


def _recorded_values(change: Change) -> list[Any]:
    """Every value `redacted` passes through the redactor, as one JSON document (a value
    this leaves out would escape the look that lets a clean change through unwalked)."""
    op = change.operation
    values: list[Any] = [
        op.remote_state,
        op.remote_job_id,
        op.candidate_job_id,
        op.status_url,
        op.conflicting_job_ids,
        op.progress,
    ]
    if op.result is not None:
        items = op.result.items
        values += [op.result.content_type, op.result.checks, op.result.problems]
        values.append(items.failed_refs if isinstance(items, ItemCounts) else items)
    for t in change.transitions:
        values += [t.cause, t.remote_job_id]
    for o in change.observations:
        values += [
            o.remote_state,
            o.progress,
            o.provider_updated_at,
            o.ref,
            o.event_id,
            o.request_id,
            o.last_progress,
        ]
    for a in (change.attempt_started, change.attempt_finished, change.safe_read):
        if a is not None:
            values += [a.request, a.outcome, a.provider_request_id, a.detail]
    for e in change.audit:
        values += [e.data, e.actor]
    return values


def redacted_entries(entries: Iterable[AuditEntry], r: Redactor) -> list[AuditEntry]:
    return [evolve(e, data=r.json(e.data), actor=r.text(e.actor)) for e in entries]


def _text(value: str | None, r: Redactor) -> str | None:
    return None if value is None else r.text(value)


def _operation(op: Operation, r: Redactor) -> Operation:
    changed = {
        "remote_state": _text(op.remote_state, r),
        "remote_job_id": _text(op.remote_job_id, r),
        "candidate_job_id": _text(op.candidate_job_id, r),
        "status_url": _text(op.status_url, r),
        "conflicting_job_ids": tuple(r.text(j) for j in op.conflicting_job_ids),
        "progress": r.json(op.progress),
        "result": _summary(op.result, r),
    }
    if all(changed[name] == getattr(op, name) for name in changed):
        return op  # the common case: no secret in sight, no copy
    return evolve(op, **changed)


def _summary(summary: ResultSummary | None, r: Redactor) -> ResultSummary | None:
    if summary is None:
        return None
    items = summary.items
    if items is not None:
        items = evolve(items, failed_refs=_texts(items.failed_refs, r))
    return evolve(
        summary,
        content_type=_text(summary.content_type, r),
        checks=_texts(summary.checks, r),
        problems=_texts(summary.problems, r),
        items=items if isinstance(items, ItemCounts) else None,
    )


def _texts(values: Sequence[str], r: Redactor) -> tuple[str, ...]:
    return tuple(r.text(v) for v in values)


def _transition(t: Transition, r: Redactor) -> Transition:
    return evolve(t, cause=r.text(t.cause), remote_job_id=_text(t.remote_job_id, r))


def _observation(o: Observation, r: Redactor) -> Observation:
    return evolve(
        o,
        remote_state=_text(o.remote_state, r),
        progress=r.json(o.progress),
        provider_updated_at=_text(o.provider_updated_at, r),
        ref=_text(o.ref, r),
        event_id=_text(o.event_id, r),
        request_id=_text(o.request_id, r),
        last_progress=r.json(o.last_progress),
    )


def _attempt(a: Attempt | None, r: Redactor) -> Attempt | None:
    if a is None:
        return None
    return evolve(
        a,
        request=r.json(a.request),
        outcome=_text(a.outcome, r),
        provider_request_id=_text(a.provider_request_id, r),
        detail=r.json(a.detail),
    )


def redacted_outcome(outcome: OutcomeT, r: Redactor) -> OutcomeT:
    """An outcome with its provider-given texts redacted (bytes of a result excepted: those
    are handled where they are stored)."""
    if not is_dataclass(outcome):
        return outcome
    texts: dict[str, Any] = {}
    for f in fields(outcome):
        value = getattr(outcome, f.name)
        if _redactable(value):
            texts[f.name] = value
    if r.leaves_unchanged(list(texts.values())):
        return outcome  # the common case, told by one look at all its texts
    changes: dict[str, Any] = {}
    for name, value in texts.items():
        new: Any
        if isinstance(value, str):
            new = r.text(value)
        elif isinstance(value, tuple):
            new = tuple(r.text(v) for v in value)
        else:
            new = r.json(value)
        if new != value:
            changes[name] = new
    return evolve(outcome, **changes) if changes else outcome


def _redactable(value: Any) -> bool:
    """An outcome field that `redacted_outcome` passes: a text, a JSON document or texts."""
    if isinstance(value, str):
        return not isinstance(value, Enum)
    if isinstance(value, tuple):
        return all(isinstance(v, str) for v in value)
    return isinstance(value, dict | list)
