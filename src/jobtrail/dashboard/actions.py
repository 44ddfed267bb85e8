"""The guarded actions on one operation: cancel, resolve (adopt / mark failed / retry as new;
for a result that failed validation: mark failed / accept as is / collect again) and extend
a deadline. Each is a form that names a reason and carries a CSRF token and its own request
id, and each goes through the ledger's own verbs, so the policy, the core's rules and the
audit log apply exactly as they do for the CLI. Which forms a page offers is the core's
word (core/allows.py), the same the ledger then applies.

A form sent twice (F5 on an old answer, a double click, the back button) carries the same
request id: the ledger finds it recorded and nothing is done twice; the answer says so."""

from __future__ import annotations

from dataclasses import dataclass
from random import Random
from string import Template

from jobtrail.core.allows import cancellability, extendable, resolutions
from jobtrail.core.durations import parse_duration
from jobtrail.core.ids import short_id
from jobtrail.core.local import seen_job_ids
from jobtrail.core.model import Operation
from jobtrail.core.outcomes import Decision
from jobtrail.dashboard.html import Html, join, path, render
from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services import decisions

ACTIONS = ("cancel", "resolve", "extend")
_LABELS = {
    Decision.ADOPT: "adopt a job id",
    Decision.MARK_FAILED: "mark failed",
    Decision.RETRY_AS_NEW: "retry as new",
    Decision.ACCEPT_AS_IS: "accept the result as it is",
    Decision.COLLECT_AGAIN: "collect the result again",
}


@dataclass(frozen=True, kw_only=True)
class Done:
    before: Operation
    after: Operation
    message: str
    replaced_by: str | None = None
    repeat: bool = False  # this very request was recorded before: nothing was done twice

    @property
    def took_effect(self) -> bool:
        changed = self.after.version != self.before.version
        return self.repeat or changed or self.replaced_by is not None


def request_of(form: dict[str, str]) -> str | None:
    """The request id a form carries (None for a form without one: a script's post)."""
    given = form.get("request", "").strip()
    if not given:
        return None
    if len(given) > 64 or not all(c.isascii() and (c.isalnum() or c == "_") for c in given):
        raise InvalidInput("the form's request id is malformed; reload the page")
    return given


async def perform(
    ledger: Ledger,
    providers: ProviderRegistry,
    action: str,
    operation_id: str,
    form: dict[str, str],
    actor: str,
) -> Done:
    """Run one action for `actor`; JobtrailError (refusals included) propagates."""
    reason = form.get("reason", "").strip()
    if not reason:
        raise InvalidInput("every action needs a reason: say why, it goes into the audit log")
    request = request_of(form)
    before = await ledger.get(operation_id)
    repeat = request is not None and await ledger.was_requested(before, request)
    again = " (this form was sent before: nothing was done twice)" if repeat else ""
    if action == "cancel":
        after = await ledger.cancel(operation_id, actor=actor, reason=reason, request_id=request)
        intent = after.cancel_intent
        by = intent.actor if intent else actor
        return Done(
            before=before,
            after=after,
            repeat=repeat,
            message=f"cancel intent recorded (asked by {by}); the worker sends the cancel and "
            f"keeps observing; state now {after.state}{again}",
        )
    if action == "extend":
        which: decisions.Deadline = "cancel" if form.get("deadline") == "cancel" else "result"
        duration = parse_duration(form.get("duration", "").strip() or "1h")
        after = await decisions.extend(
            ledger,
            operation_id,
            deadline=which,
            by=duration,
            actor=actor,
            reason=reason,
            request_id=request,
        )
        return Done(
            before=before,
            after=after,
            repeat=repeat,
            message=f"{which} deadline extended by {duration}; state now {after.state}{again}",
        )
    if action != "resolve":
        raise InvalidInput(f"no action {action!r}; actions are {', '.join(ACTIONS)}")
    choice = form.get("decision", "")
    job_id = form.get("job_id", "").strip() or form.get("other_job_id", "").strip() or None
    done = await decisions.resolve(
        ledger,
        providers,
        operation_id,
        choice,
        actor=actor,
        reason=reason,
        job_id=job_id,
        request_id=request,
    )
    replaced = done.replaced_by.operation_id if done.replaced_by else None
    return Done(
        before=before,
        after=done.op,
        repeat=repeat,
        message=f"decision {decisions.resolution(choice).spoken} recorded; state now "
        f"{done.op.state}" + (f"; submitted again as {replaced}" if replaced else "") + again,
        replaced_by=replaced,
    )


_FORM = Template(
    '<form class="action" method="post" action="$href">'
    '<input type="hidden" name="csrf" value="$csrf">'
    '<input type="hidden" name="request" value="$request"><fieldset><legend>$title</legend>'
    '$fields<label>reason <input name="reason" required maxlength="500"></label>'
    '<button type="submit">$title</button></fieldset></form>'
)


def action_forms(op: Operation, csrf: str, may_act: bool, rand: Random) -> Html:
    """The forms that fit `op`'s state, as the core says (the ledger still judges each)."""
    if not may_act:
        return Html('<p class="ro">Read-only access: actions need the operator role.</p>')
    forms: list[tuple[str, str, Html]] = []
    if cancellability(op).allowed:
        forms.append(("cancel", "Cancel", Html("")))
    if choices := resolutions(op.state):
        forms.append(("resolve", "Resolve", _resolve_fields(op, choices)))
    if (which := extendable(op.state)) is not None:
        fields = render(
            Template(
                '<input type="hidden" name="deadline" value="$which">'
                '<label>by <input name="duration" value="1h" size="6"></label>'
            ),
            which=which,
        )
        forms.append(("extend", f"Extend the {which} deadline", fields))
    if not forms:
        return Html('<p class="empty">No action fits this state.</p>')
    return join(
        render(
            _FORM,
            href=path("operations", op.operation_id, action),
            csrf=csrf,
            request=short_id("req_", rand),  # one per form: each names its own request
            title=title,
            fields=fields,
        )
        for action, title, fields in forms
    )


def _resolve_fields(op: Operation, choices: tuple[Decision, ...]) -> Html:
    options = join(
        render(Template('<option value="$v">$label</option>'), v=d.spoken, label=_LABELS[d])
        for d in choices
    )
    fields = render(
        Template('<label>decision <select name="decision">$options</select></label>'),
        options=options,
    )
    if Decision.ADOPT not in choices:
        return fields
    known = join(
        render(Template('<option value="$id">$id</option>'), id=job_id)
        for job_id in seen_job_ids(op)
    )
    return Html(
        fields
        + render(
            Template(
                '<label>job id (adopt) <select name="job_id"><option value="">—</option>'
                "$known</select></label>"
                '<label>or another job id <input name="other_job_id" size="24"></label>'
            ),
            known=known,
        )
    )
