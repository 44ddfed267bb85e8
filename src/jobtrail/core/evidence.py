"""What an answer proves: the one place that judges a provider's reading, for every kind of
provider (provider files, code providers, AWS).

Providers translate: they say what an answer held — its state word, what gave it its state
(`Basis`: a word, a status code the provider file declares, a done flag, the state declared
for a document without one) and the shape of its body (`Body`). The core judges here:

- An answer states a state when it holds a state word, when its status code is declared to
  mean one, or when it is a document (a JSON object with members) that holds a done flag or
  for which the provider declares a state (`missing`). An empty body, `null`, `{}`, JSON cut
  short or not JSON states nothing by itself, whatever the provider file says of it.
- Success, failure and cancellation need such a statement: a status answer that claims an
  end without one is unreadable (counted with refused reads, see refused.py), never an end;
  a create answer's claim is dropped (the job is then polled).
- A create answer that names a status monitor in a header (Azure-AsyncOperation, Location)
  says the job goes on there: the state declared for a document without one (`missing`)
  claims no end of it, and the monitor is asked (azure-core's pollers do the same).
- A result of nothing at all (0 bytes, JSON `null`) comes only from an answer whose code is
  declared done without a body, and it is valid only where the provider declares that a
  result may be empty (`Capabilities.empty_result`; a provider file's `allow_empty`).
"""

from __future__ import annotations

import hashlib

from jobtrail.core import outcomes as o
from jobtrail.core.model import Capabilities, ResultMode, ResultSummary, evolve
from jobtrail.core.outcomes import Basis, Body
from jobtrail.core.states import RemoteStatus

# What `ResultSummary.sha256` holds for a result of nothing: no bytes, or JSON null.
EMPTY_DIGESTS = frozenset(hashlib.sha256(b).hexdigest() for b in (b"", b"null", b"null\n"))
_DOCUMENTS = frozenset({Body.OBJECT, Body.UNREAD})  # a document, or a code provider's reading
# What may say "still running" of any answer: a word, a declared code, a done flag's absence.
_CLAIMS_RUNNING = frozenset({Basis.WORD, Basis.CODE, Basis.FLAG})


def is_nothing(content: bytes) -> bool:
    """Whether `content` is a result of nothing: no bytes (or only white space), or `null`."""
    return content.strip() in (b"", b"null")


def unstated(basis: Basis, body: Body, word: str | None) -> str | None:
    """Why an answer states no state, or None when it states one."""
    match basis:
        case Basis.WORD:
            if isinstance(word, str) and word.strip():
                return None
            return "it holds no state word" + _shape(body)
        case Basis.CODE:
            return None
        case Basis.FLAG | Basis.DEFAULT | Basis.CONTENT:
            if body in _DOCUMENTS:
                return None
            return f"its body is {body.describe()}, which states nothing"
    return "it states no state" + _shape(body)


def _shape(body: Body) -> str:
    return "" if body in _DOCUMENTS else f" (its body is {body.describe()})"


def judge(outcome: o.CallOutcome) -> o.CallOutcome:
    """The outcome as evidence allows it: an end claimed without a statement is not an end.
    Anything else passes unchanged (a readable running poll costs two attribute reads)."""
    if isinstance(outcome, o.Observed):
        return _observed(outcome)
    if isinstance(outcome, o.Accepted):
        return _accepted(outcome)
    if isinstance(outcome, o.SyncResult):
        return _sync_result(outcome)
    return outcome


def _observed(out: o.Observed) -> o.CallOutcome:
    if out.remote_status is RemoteStatus.RUNNING and out.basis in _CLAIMS_RUNNING:
        problem = None  # "still running" claims no end (Google's `{}` is not done, AIP-151)
    else:
        problem = unstated(out.basis, out.body, out.remote_state)
    if problem is None and out.content is not None:
        problem = _empty_result(out)
    if problem is None:
        return out
    where = f" ({out.unread})" if out.unread else ""
    return o.Ambiguous(
        reason=f"the status answer states no state{where}: {problem}",
        http_status=out.http_status,
        request_id=out.request_id,
        ref=out.ref,
        unreadable=True,
    )


def _empty_result(out: o.Observed | o.SyncResult) -> str | None:
    """A done answer of no content is a result (`null`) only when its code says it is done
    without a body (a 204, ARM's Location monitor): never a body that is empty or `null`."""
    content = out.content
    if content is None or not is_nothing(content):
        return None
    if out.basis is Basis.CODE and out.body is Body.ABSENT:
        return None
    return f"its result is {out.body.describe()}, and no code declares it done without a body"


def _elsewhere(basis: Basis, status_via: str | None) -> bool:
    """Whether the answer's end is only a declared default, though it names a monitor."""
    return basis is Basis.DEFAULT and status_via is not None


def _accepted(out: o.Accepted) -> o.Accepted:
    if not out.remote_status.terminal:
        return out
    if unstated(out.basis, out.body, out.remote_state) is None and not _elsewhere(
        out.basis, out.status_via
    ):
        return out
    # The job id stands (it has its own evidence); the end it claims does not: poll it.
    return evolve(out, remote_status=RemoteStatus.UNKNOWN)


def _sync_result(out: o.SyncResult) -> o.CallOutcome:
    problem = unstated(out.basis, out.body, "result" if out.basis is Basis.WORD else None)
    if problem is None:
        problem = _empty_result(out)
    if problem is None and _elsewhere(out.basis, out.status_via):
        problem = f"it names a status monitor ({out.status_via}) and no state"
    if problem is None:
        return out
    if out.job_id is not None:
        return o.Accepted(
            job_id=out.job_id,
            remote_state=None,
            remote_status=RemoteStatus.UNKNOWN,
            status_url=out.status_url,
            status_via=out.status_via,
            http_status=out.http_status,
            request_id=out.request_id,
            ref=out.ref,
            basis=Basis.NONE,
            body=out.body,
        )
    return o.Ambiguous(
        reason=f"the create answer does not state a result: {problem}",
        http_status=out.http_status,
        request_id=out.request_id,
        ref=out.ref,
        unreadable=True,
    )


def checked_result(summary: ResultSummary, caps: Capabilities) -> ResultSummary:
    """A collected result as evidence allows it: valid only with content that was checked,
    and a result of nothing only where the provider declares a result may be empty."""
    if not summary.valid:
        return summary
    if summary.sha256 is None:
        if caps.result is ResultMode.NONE:
            return summary  # nothing declared, nothing fetched: success is the state alone
        return _invalid(summary, "no result content was checked")
    if (summary.size == 0 or summary.sha256 in EMPTY_DIGESTS) and not caps.empty_result:
        return _invalid(
            summary,
            "the result is empty (no bytes, or JSON null), and the provider does not declare "
            "that a result may be empty",
        )
    return summary


def _invalid(summary: ResultSummary, problem: str) -> ResultSummary:
    return evolve(summary, valid=False, problems=(*summary.problems, problem))
