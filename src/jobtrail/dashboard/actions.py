"""The guarded actions: cancel, resolve (adopt / mark failed / retry as new) and extend a
deadline. Each is a form that names a reason and carries a CSRF token, and each goes
through the ledger's own verbs, so the policy, the core's rules and the audit log apply
exactly as they do for the CLI. The answer says whether the action took effect."""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

from jobtrail.adoption import adopt
from jobtrail.core import outcomes as o
from jobtrail.core.durations import parse_duration
from jobtrail.core.ids import short_id
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
    request_id = short_id("req_", ledger.rand)
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
        which = form.get("deadline", "result")
        decision = o.Decision.EXTEND_CANCEL if which == "cancel" else o.Decision.EXTEND
        duration = parse_duration(form.get("duration", "").strip() or "1h")
        human = o.HumanDecision(
            decision=decision,
            actor=actor,
            reason=reason,
            new_deadline=ledger.clock() + duration,
            request_id=request_id,
        )
        after = await ledger.decide(operation_id, human)
        return Done(
            before=before,
            after=after,
            message=f"{which} deadline extended by {duration}; state now {after.state}",
        )
    if action != "resolve":
        raise InvalidInput(f"no action {action!r}; actions are {', '.join(ACTIONS)}")
    try:
        choice = o.Decision(form.get("decision", "").replace("-", "_"))
    except ValueError:
        raise InvalidInput("decision must be adopt, mark_failed or retry_as_new") from None
    if choice not in (o.Decision.ADOPT, o.Decision.MARK_FAILED, o.Decision.RETRY_AS_NEW):
        raise InvalidInput("decision must be adopt, mark_failed or retry_as_new")
    human = o.HumanDecision(
        decision=choice,
        actor=actor,
        reason=reason,
        job_id=form.get("job_id", "").strip() or None,
        request_id=request_id,
    )
    if choice is o.Decision.ADOPT:
        after = await adopt(ledger, providers, operation_id, human)
    else:
        after = await ledger.decide(operation_id, human)
    replaced = None
    if choice is o.Decision.RETRY_AS_NEW:
        replaced = (await ledger.resubmit(after, actor=actor, reason=reason)).operation_id
    return Done(
        before=before,
        after=after,
        message=f"decision {choice.value} recorded; state now {after.state}"
        + (f"; submitted again as {replaced}" if replaced else ""),
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
