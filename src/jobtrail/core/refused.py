"""Refused and unreadable status reads: back off, forgive a 404 just after create, and stop
for a human when they keep coming (DESIGN rule 13: nothing spins).

A refusal is a status answer in 4xx other than 408, 425 and 429 (unknown or "later",
see core/classify.py). An unreadable answer is one the provider gave (2xx, or a code its file
declares) that states nothing jobtrail can read as a state: no body, `{}` without a state
field, JSON cut short, not JSON. Both are the provider's answer, not a lost one, and both
break its status contract: a provider that keeps answering either way would otherwise be
polled until the result deadline (24 h for a batch profile). They share one count, since a
person is needed either way and a provider alternating between them is no better; a
transport failure (timeout, reset, a body cut short of its Content-Length, 5xx) neither
counts nor resets it. Neither is evidence about the remote job, so neither moves the
operation on its own; only a run of them as long as the provider file's
`[poll] max_refused_reads` does, to `needs_human`, with every answer kept on its attempt.
"""

from __future__ import annotations

from jobtrail.core import outcomes as o
from jobtrail.core.draft import Draft, cause_of
from jobtrail.core.states import Evidence, State

# States in which a run of refusals stops automation. While cancelling, the cancel
# deadline already bounds the wait and ends in cancellation_unconfirmed (escalated).
_STOPS = frozenset({State.ACCEPTED, State.OBSERVING})


def on_refused_read(draft: Draft, out: o.Rejected | o.Ambiguous) -> None:
    op, rules = draft.op, draft.schedule.refusals
    since = op.refused_since or draft.now
    # No status read has succeeded yet (still `accepted`): a 404 may only mean the new job
    # is not visible yet, so it is forgiven for a while after the first refusal.
    not_yet_visible = (
        isinstance(out, o.Rejected)
        and out.http_status == 404
        and op.state is State.ACCEPTED
        and (draft.now - since).total_seconds() < rules.not_found_grace
    )
    count = op.refused_reads if not_yet_visible else op.refused_reads + 1
    draft.set(refused_reads=count, refused_since=since)
    if count >= rules.limit and op.state in _STOPS:
        # named by the answer that ended the run
        if isinstance(out, o.Rejected):
            evidence, cause = Evidence.READS_REFUSED, cause_of("status_refused", out.ref)
        else:
            evidence, cause = Evidence.READS_UNREADABLE, cause_of("status_unreadable", out.ref)
        draft.move(State.NEEDS_HUMAN, evidence, cause)
        draft.set(next_poll_at=None)
        return
    draft.schedule_poll(None)  # exponential: every scheduled read raises the poll count


def reset(draft: Draft) -> None:
    """A readable status answer ends a run of refusals and unreadable answers."""
    draft.set(refused_reads=0, refused_since=None)
