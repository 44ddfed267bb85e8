"""The guarded actions: cancel, resolve (adopt / mark failed / retry as new) and extend a
deadline. Each is a form that names a reason and carries a CSRF token, and each goes
through the ledger's own verbs, so the policy, the core's rules and the audit log apply
exactly as they do for the CLI. The answer says whether the action took effect."""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

from jobtrail import decisions
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Operation
from jobtrail.core.states import REMOTE_MAY_RUN, State
from jobtrail.dashboard.html import Html, join, path, render
from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.registry import ProviderRegistry

ACTIONS = ("cancel", "resolve", "extend")


@dataclass(frozen=True, kw_only=True)
class Done:
    before: Operation
    after: Operation
    message: str
    replaced_by: str | None = None

    @property
    def took_effect(self) -> bool:
        return self.after.version != self.before.version or self.replaced_by is not None


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
    before = await ledger.get(operation_id)
    if action == "cancel":
        after = await ledger.cancel(operation_id, actor=actor, reason=reason)
        intent = after.cancel_intent
        by = intent.actor if intent else actor
        return Done(
            before=before,
            after=after,
            message=f"cancel intent recorded (asked by {by}); the worker sends the cancel and "
            f"keeps observing; state now {after.state}",
        )
    if action == "extend":
        which: decisions.Deadline = "cancel" if form.get("deadline") == "cancel" else "result"
        duration = parse_duration(form.get("duration", "").strip() or "1h")
        after = await decisions.extend(
            ledger, operation_id, deadline=which, by=duration, actor=actor, reason=reason
        )
        return Done(
            before=before,
            after=after,
            message=f"{which} deadline extended by {duration}; state now {after.state}",
        )
    if action != "resolve":
        raise InvalidInput(f"no action {action!r}; actions are {', '.join(ACTIONS)}")
    choice = form.get("decision", "")
    done = await decisions.resolve(
        ledger,
        providers,
        operation_id,
        choice,
        actor=actor,
        reason=reason,
        job_id=form.get("job_id", "").strip() or None,
    )
    replaced = done.replaced_by.operation_id if done.replaced_by else None
    return Done(
        before=before,
        after=done.op,
        message=f"decision {decisions.resolution(choice).value} recorded; state now "
        f"{done.op.state}" + (f"; submitted again as {replaced}" if replaced else ""),
        replaced_by=replaced,
    )


_FORM = Template(
    '<form class="action" method="post" action="$href">'
    '<input type="hidden" name="csrf" value="$csrf"><fieldset><legend>$title</legend>$fields'
    '<label>reason <input name="reason" required maxlength="500"></label>'
    '<button type="submit">$title</button></fieldset></form>'
)


def action_forms(op: Operation, csrf: str, may_act: bool) -> Html:
    """The forms that fit `op`'s state (the ledger still judges every one)."""
    if not may_act:
        return Html('<p class="ro">Read-only access: actions need the operator role.</p>')
    forms = []
    oid = op.operation_id
    # the states Ledger.cancel takes: a job may run, and no person has to decide first
    cancellable = (REMOTE_MAY_RUN | {State.CREATE_PENDING}) - {
        State.NEEDS_HUMAN,
        State.CANCELLATION_UNCONFIRMED,
    }
    if op.cancel_intent is None and op.state in cancellable:
        forms.append(("cancel", "Cancel", Html("")))
    if op.state is State.NEEDS_HUMAN:
        fields = Html(
            '<label>decision <select name="decision"><option value="adopt">adopt a job id</option>'
            '<option value="mark_failed">mark failed</option>'
            '<option value="retry_as_new">retry as new</option></select></label>'
            '<label>job id (adopt) <input name="job_id"></label>'
        )
        forms.append(("resolve", "Resolve", fields))
    if op.state in (State.RESULT_TIMED_OUT, State.CANCELLATION_UNCONFIRMED):
        which = "cancel" if op.state is State.CANCELLATION_UNCONFIRMED else "result"
        fields = Html(
            f'<input type="hidden" name="deadline" value="{which}">'
            '<label>by <input name="duration" value="1h" size="6"></label>'
        )
        forms.append(("extend", f"Extend the {which} deadline", fields))
    if not forms:
        return Html('<p class="empty">No action fits this state.</p>')
    return join(
        render(
            _FORM,
            href=path("operations", oid, action),
            csrf=csrf,
            title=title,
            fields=fields,
        )
        for action, title, fields in forms
    )
