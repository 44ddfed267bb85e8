"""How `jobtrail run` ends: exit 0 only when the operation succeeded, so that
`jobtrail run OP && next-step` never runs the next step on a failure, a cancellation, an
operation waiting for a person, a timeout, an interruption or a provider it cannot call."""

from __future__ import annotations

from enum import IntEnum

from jobtrail.core.states import State


class RunExit(IntEnum):
    SUCCEEDED = 0
    FAILED = 3  # failed, result_unavailable, result_validation_failed
    CANCELLED = 4
    NEEDS_PERSON = 5  # needs_human, cancellation_unconfirmed
    TIMED_OUT = 6  # result_timed_out
    # The operation's code provider is not installed here, or its provider's credential
    # variable is not set: this process cannot send anything for it.
    PROVIDER_MISSING = 7
    INTERRUPTED = 130  # Ctrl-C or SIGTERM before automation ended (the shell's 128 + SIGINT)


_BY_STATE = {
    State.SUCCEEDED: RunExit.SUCCEEDED,
    State.FAILED: RunExit.FAILED,
    State.RESULT_UNAVAILABLE: RunExit.FAILED,
    State.RESULT_VALIDATION_FAILED: RunExit.FAILED,
    State.CANCELLED: RunExit.CANCELLED,
    State.NEEDS_HUMAN: RunExit.NEEDS_PERSON,
    State.CANCELLATION_UNCONFIRMED: RunExit.NEEDS_PERSON,
    State.RESULT_TIMED_OUT: RunExit.TIMED_OUT,
}


def run_exit(state: State) -> RunExit:
    """The exit code for an operation in `state` when `run` stops; a state that does not end
    automation can only be left by an interruption."""
    return _BY_STATE.get(state, RunExit.INTERRUPTED)


# Shown by `jobtrail run --help` (click keeps \b paragraphs as written).
EXIT_HELP = """\b
Exit codes:
  0    succeeded (the only success)
  1    error (unknown operation, unreadable ledger...)
  3    failed, result_unavailable or result_validation_failed
  4    cancelled
  5    needs a person: needs_human or cancellation_unconfirmed
  6    timed out: result_timed_out
  7    provider missing: its code provider is not installed here, or its
       credential variable is not set; nothing was sent by this run
  130  interrupted (Ctrl-C, SIGTERM) before the operation ended"""
