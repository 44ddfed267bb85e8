"""Local states, remote statuses, evidence kinds and the one transition table.

The table is the rule book: a transition is legal only when the pair (from, to) is listed
*and* the evidence offered is one of the kinds listed for that pair. Seeing progress 100 is
not evidence of success; sending a cancel is not evidence of cancellation.
"""

from __future__ import annotations

from enum import StrEnum

from jobtrail.errors import TransitionRefused


class State(StrEnum):
    CREATE_PENDING = "create_pending"
    CREATE_UNKNOWN = "create_unknown"
    RECONCILIATION = "reconciliation"
    ACCEPTED = "accepted"
    OBSERVING = "observing"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLING = "cancelling"
    RESULT_COLLECTING = "result_collecting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RESULT_TIMED_OUT = "result_timed_out"
    CANCELLATION_UNCONFIRMED = "cancellation_unconfirmed"
    RESULT_UNAVAILABLE = "result_unavailable"
    RESULT_VALIDATION_FAILED = "result_validation_failed"
    NEEDS_HUMAN = "needs_human"

    @property
    def ends_automation(self) -> bool:
        return self in ENDS_AUTOMATION


ENDS_AUTOMATION = frozenset(
    {
        State.SUCCEEDED,
        State.FAILED,
        State.CANCELLED,
        State.RESULT_TIMED_OUT,
        State.CANCELLATION_UNCONFIRMED,
        State.RESULT_UNAVAILABLE,
        State.RESULT_VALIDATION_FAILED,
        State.NEEDS_HUMAN,
    }
)

# States in which a remote job may exist and be running under our name.
REMOTE_MAY_RUN = frozenset(
    {
        State.CREATE_UNKNOWN,
        State.RECONCILIATION,
        State.ACCEPTED,
        State.OBSERVING,
        State.CANCEL_REQUESTED,
        State.CANCELLING,
        State.RESULT_TIMED_OUT,
        State.CANCELLATION_UNCONFIRMED,
        State.NEEDS_HUMAN,
    }
)


class RemoteStatus(StrEnum):
    """The provider's word for its job, mapped through the provider file's [states] table."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in (RemoteStatus.SUCCEEDED, RemoteStatus.FAILED, RemoteStatus.CANCELLED)


class Evidence(StrEnum):
    CREATE_ACCEPTED = "create_accepted"
    SYNC_RESULT = "sync_result"
    CREATE_REJECTED = "create_rejected"
    CREATE_AMBIGUOUS = "create_ambiguous"
    RECONCILE_LOOKUP = "reconcile_lookup"
    RECONCILED_FOUND = "reconciled_found"
    ABSENCE_PROVEN = "absence_proven"
    CONTRACT_VIOLATION = "contract_violation"
    CREATE_UNPROVEN = "create_unproven"
    NO_RECONCILIATION = "no_reconciliation"
    OBSERVED_RUNNING = "observed_running"
    OBSERVED_SUCCEEDED = "observed_succeeded"
    OBSERVED_FAILED = "observed_failed"
    OBSERVED_CANCELLED = "observed_cancelled"
    CANCEL_INTENT = "cancel_intent"
    CANCEL_ACKNOWLEDGED = "cancel_acknowledged"
    WITHDRAWN = "withdrawn"
    RESULT_VALIDATED = "result_validated"
    RESULT_INVALID = "result_invalid"
    RESULT_UNAVAILABLE = "result_unavailable"
    CREATE_DEADLINE_PASSED = "create_deadline_passed"
    RESULT_DEADLINE_PASSED = "result_deadline_passed"
    CANCEL_DEADLINE_PASSED = "cancel_deadline_passed"
    HUMAN_DECISION = "human_decision"
    READS_REFUSED = "reads_refused"
    READS_UNREADABLE = "reads_unreadable"
    LOOKUP_CAPPED = "lookup_capped"


EVIDENCE_MEANING: dict[Evidence, str] = {
    Evidence.CREATE_ACCEPTED: "a create response carrying a remote job id",
    Evidence.SYNC_RESULT: "a create response carrying the result itself",
    Evidence.CREATE_REJECTED: "a definitive rejection of the create request (4xx)",
    Evidence.CREATE_AMBIGUOUS: "a create call whose outcome is unknown "
    "(timeout, reset after sending, 5xx, malformed answer, 409 in flight, interrupted attempt)",
    Evidence.RECONCILE_LOOKUP: "a lookup for our job was made (by the provider's declared means)",
    Evidence.RECONCILED_FOUND: "a lookup found exactly our job",
    Evidence.ABSENCE_PROVEN: "a lookup proved that no job exists",
    Evidence.CONTRACT_VIOLATION: "the provider tied our token or reference to another job id",
    Evidence.CREATE_UNPROVEN: "an answer after a create may have reached the provider that "
    "proves neither a job nor its absence (a refused retry: 409 already exists, 400, 422)",
    Evidence.NO_RECONCILIATION: "the create outcome is unknown and the provider "
    "offers no reconciliation means",
    Evidence.OBSERVED_RUNNING: "an observation of a non-terminal remote state",
    Evidence.OBSERVED_SUCCEEDED: "an observation of the remote state succeeded",
    Evidence.OBSERVED_FAILED: "an observation of the remote state failed",
    Evidence.OBSERVED_CANCELLED: "an observation of the remote state cancelled",
    Evidence.CANCEL_INTENT: "a recorded cancel request (who, why, expected effect)",
    Evidence.CANCEL_ACKNOWLEDGED: "the provider acknowledged the cancel call",
    Evidence.WITHDRAWN: "a cancel request recorded while no remote job can exist",
    Evidence.RESULT_VALIDATED: "a result fetched, validated and stored",
    Evidence.RESULT_INVALID: "a result fetched that failed validation",
    Evidence.RESULT_UNAVAILABLE: "the result could not be fetched (gone, refused)",
    Evidence.CREATE_DEADLINE_PASSED: "the create deadline passed",
    Evidence.RESULT_DEADLINE_PASSED: "the result deadline passed",
    Evidence.CANCEL_DEADLINE_PASSED: "the cancel deadline passed",
    Evidence.HUMAN_DECISION: "a recorded human decision (actor and reason)",
    Evidence.READS_REFUSED: "status reads refused (4xx) as many times in a row as the "
    "provider file's [poll] max_refused_reads",
    Evidence.READS_UNREADABLE: "status answers that could not be read as a state (no body, "
    "no state field, JSON cut short, not JSON), with any refused ones, as many times in a "
    "row as the provider file's [poll] max_refused_reads",
    Evidence.LOOKUP_CAPPED: "a bounded scan of the provider's listing stopped at its page or "
    "time cap before it reached back to the create, without finding our job",
}

# Where a terminal observation moves a watched operation (a succeeded job is collected first).
OBSERVED_MOVES: dict[RemoteStatus, tuple[State, Evidence]] = {
    RemoteStatus.SUCCEEDED: (State.RESULT_COLLECTING, Evidence.OBSERVED_SUCCEEDED),
    RemoteStatus.FAILED: (State.FAILED, Evidence.OBSERVED_FAILED),
    RemoteStatus.CANCELLED: (State.CANCELLED, Evidence.OBSERVED_CANCELLED),
}

S, E = State, Evidence
_OBSERVING = (S.ACCEPTED, S.OBSERVING)
_CANCELLING = (S.CANCEL_REQUESTED, S.CANCELLING)

TRANSITIONS: dict[tuple[State, State], frozenset[Evidence]] = {
    # HUMAN_DECISION: a job found at the provider under our marker (a census) and adopted
    # into an operation recorded for it, on a person's word and a status read of the job
    (S.CREATE_PENDING, S.ACCEPTED): frozenset({E.CREATE_ACCEPTED, E.HUMAN_DECISION}),
    (S.CREATE_PENDING, S.RESULT_COLLECTING): frozenset({E.SYNC_RESULT}),
    (S.CREATE_PENDING, S.FAILED): frozenset(
        {E.CREATE_REJECTED, E.WITHDRAWN, E.CREATE_DEADLINE_PASSED}
    ),
    (S.CREATE_PENDING, S.CREATE_UNKNOWN): frozenset({E.CREATE_AMBIGUOUS}),
    (S.CREATE_UNKNOWN, S.ACCEPTED): frozenset({E.CREATE_ACCEPTED}),
    (S.CREATE_UNKNOWN, S.RESULT_COLLECTING): frozenset({E.SYNC_RESULT}),
    # No (create_unknown, failed): once a create may have reached the provider, no answer
    # but the provider's declared lookup can prove that nothing was created.
    (S.CREATE_UNKNOWN, S.RECONCILIATION): frozenset(
        {E.RECONCILE_LOOKUP, E.CREATE_ACCEPTED, E.CREATE_UNPROVEN}
    ),
    (S.CREATE_UNKNOWN, S.NEEDS_HUMAN): frozenset(
        {E.CREATE_DEADLINE_PASSED, E.NO_RECONCILIATION, E.CREATE_UNPROVEN}
    ),
    (S.RECONCILIATION, S.ACCEPTED): frozenset({E.RECONCILED_FOUND}),
    (S.RECONCILIATION, S.CREATE_PENDING): frozenset({E.ABSENCE_PROVEN}),
    (S.RECONCILIATION, S.NEEDS_HUMAN): frozenset(
        {E.CONTRACT_VIOLATION, E.CREATE_DEADLINE_PASSED, E.LOOKUP_CAPPED}
    ),
    (S.ACCEPTED, S.OBSERVING): frozenset({E.OBSERVED_RUNNING}),
    (S.RESULT_TIMED_OUT, S.OBSERVING): frozenset({E.HUMAN_DECISION}),
    (S.RESULT_TIMED_OUT, S.CANCEL_REQUESTED): frozenset({E.CANCEL_INTENT}),
    (S.NEEDS_HUMAN, S.ACCEPTED): frozenset({E.HUMAN_DECISION}),
    (S.NEEDS_HUMAN, S.FAILED): frozenset({E.HUMAN_DECISION}),
    (S.CANCEL_REQUESTED, S.CANCELLING): frozenset({E.CANCEL_ACKNOWLEDGED}),
    (S.CANCELLATION_UNCONFIRMED, S.CANCELLING): frozenset({E.HUMAN_DECISION}),
    # A result that failed validation: a person marks it failed, accepts it as it is, or
    # has it collected again.
    (S.RESULT_VALIDATION_FAILED, S.FAILED): frozenset({E.HUMAN_DECISION}),
    (S.RESULT_VALIDATION_FAILED, S.SUCCEEDED): frozenset({E.HUMAN_DECISION}),
    (S.RESULT_VALIDATION_FAILED, S.RESULT_COLLECTING): frozenset({E.HUMAN_DECISION}),
    (S.RESULT_COLLECTING, S.SUCCEEDED): frozenset({E.RESULT_VALIDATED}),
    (S.RESULT_COLLECTING, S.RESULT_VALIDATION_FAILED): frozenset({E.RESULT_INVALID}),
    (S.RESULT_COLLECTING, S.RESULT_UNAVAILABLE): frozenset(
        {E.RESULT_UNAVAILABLE, E.RESULT_DEADLINE_PASSED}
    ),
}
# A job that ended failed or cancelled with a partial result (the requests a batch finished)
# has it collected first; the operation then ends as the remote said it ended.
_PARTIAL = frozenset({E.OBSERVED_SUCCEEDED, E.OBSERVED_FAILED, E.OBSERVED_CANCELLED})
TRANSITIONS[(S.RESULT_COLLECTING, S.FAILED)] = frozenset({E.OBSERVED_FAILED})
TRANSITIONS[(S.RESULT_COLLECTING, S.CANCELLED)] = frozenset({E.OBSERVED_CANCELLED})
for _from in _OBSERVING:
    TRANSITIONS[(_from, S.RESULT_COLLECTING)] = _PARTIAL
    TRANSITIONS[(_from, S.FAILED)] = frozenset({E.OBSERVED_FAILED})
    TRANSITIONS[(_from, S.CANCELLED)] = frozenset({E.OBSERVED_CANCELLED})
    TRANSITIONS[(_from, S.RESULT_TIMED_OUT)] = frozenset({E.RESULT_DEADLINE_PASSED})
    TRANSITIONS[(_from, S.CANCEL_REQUESTED)] = frozenset({E.CANCEL_INTENT})
    TRANSITIONS[(_from, S.NEEDS_HUMAN)] = frozenset({E.READS_REFUSED, E.READS_UNREADABLE})
for _from in _CANCELLING:
    TRANSITIONS[(_from, S.CANCELLED)] = frozenset({E.OBSERVED_CANCELLED})
    TRANSITIONS[(_from, S.RESULT_COLLECTING)] = _PARTIAL
    TRANSITIONS[(_from, S.FAILED)] = frozenset({E.OBSERVED_FAILED})
    TRANSITIONS[(_from, S.CANCELLATION_UNCONFIRMED)] = frozenset({E.CANCEL_DEADLINE_PASSED})
del S, E, _from, _PARTIAL


def check_transition(from_state: State, to_state: State, evidence: Evidence) -> None:
    """Raise TransitionRefused unless the table allows this move with this evidence."""
    allowed = TRANSITIONS.get((from_state, to_state))
    if allowed is None:
        raise TransitionRefused(
            f"{from_state} -> {to_state} is not in the transition table; "
            "see docs/states.md for the allowed moves"
        )
    if evidence not in allowed:
        needs = " or ".join(EVIDENCE_MEANING[e] for e in sorted(allowed))
        raise TransitionRefused(
            f"{from_state} -> {to_state} needs {needs}; "
            f"'{EVIDENCE_MEANING[evidence]}' is not enough"
        )
