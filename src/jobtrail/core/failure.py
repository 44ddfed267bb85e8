"""The provider's own reason for a failure, the same words on every surface (`explain`,
`status --json`, the dashboard, the agents' tools).

Providers record what the answer said (`provider_error`: its code and message, read by the
provider file's reader or a code provider), and our own reason where the answer said none
(`error`, or the body of a refused create). The reason shown is that of the last finished
attempt that failed, as long as nothing since went right: a 503 on a create that was then
accepted, or a refused read followed by good ones, is history, not the reason now. An
operation that succeeded has no failure reason, and a lookup's answer (a declared 404 says
"no job") is a reading, never a failure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.model import Attempt, Observation, Operation
from jobtrail.core.states import State
from jobtrail.core.words import cut_middle

# Outcome words of an answer that went right: a later one makes an earlier failure stale.
_WENT_RIGHT = frozenset(
    {
        o.Accepted.word,
        o.SyncResult.word,
        o.Observed.word,
        o.Found.word,
        o.CancelAcknowledged.word,
        o.ResultChecked.word,
    }
)
_FAILED = frozenset({o.Rejected.word, o.ResultMissing.word, o.Ambiguous.word, o.Throttled.word})
MAX_TEXT = 500


def provider_said(at: Attempt) -> str | None:
    """The provider's code and message in `at`'s answer ("job_failed: no rows (and 2
    more)"), or None when it gave none."""
    detail: dict[str, Any] = at.detail if isinstance(at.detail, dict) else {}
    found = detail.get("provider_error")
    if not isinstance(found, dict):
        return None
    code, message = found.get("code"), found.get("message")
    text = ": ".join(str(part) for part in (code, message) if part)
    count = found.get("count")
    more = f" (and {int(count) - 1} more)" if isinstance(count, int) and count > 1 else ""
    return (text + more) or None


def failure_reason(
    op: Operation, attempts: Sequence[Attempt], observations: Sequence[Observation] = ()
) -> str | None:
    """Why `op` failed (or its last call did), in the provider's words where it gave some:
    "account_closed: account acct_9 is closed (create answered HTTP 422)"; None when nothing
    failed, or when what failed has since gone right."""
    if op.state is State.SUCCEEDED:
        return None
    for at in reversed(attempts):
        outcome = o.stored_word(at.outcome)
        if at.finished_at is None or outcome is None or _refused_adoption(at):
            continue
        if outcome == o.Found.word:
            return None  # a lookup answered (a declared 404 is "no job"): not a failure
        said = provider_said(at)
        if said is None and outcome in _WENT_RIGHT:
            return None
        words = said or (_our_words(at) if outcome in _FAILED else None)
        if words is None:
            continue
        if any(ob.source == "status" and ob.seen_last > at.finished_at for ob in observations):
            return None  # read fine since: the failure is history
        where = f"{at.kind.value} answered HTTP {at.http_status}" if at.http_status else None
        # cut in the middle: a reason that ends the text ("… must be an integer") is kept
        return cut_middle(words, MAX_TEXT) + (f" ({where})" if where else "")
    return None


def _refused_adoption(at: Attempt) -> bool:
    """A read of a job id a person asked to adopt, refused when it could not be read: a
    fact of the record, but not the operation's own failure."""
    return isinstance(at.detail, dict) and at.detail.get("refused_adoption") is True


def _our_words(at: Attempt) -> str | None:
    """What the attempt recorded of a failure when the provider gave no code or message:
    our reason, or the refused answer's body as it was kept."""
    detail: dict[str, Any] = at.detail if isinstance(at.detail, dict) else {}
    words = detail.get("error") or detail.get("body")
    if words is None:
        return "the provider gave no reason"
    return words if isinstance(words, str) else json.dumps(words, ensure_ascii=False)
