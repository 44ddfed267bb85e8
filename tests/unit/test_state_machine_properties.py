"""Property-based (Hypothesis stateful): whatever outcomes arrive, in whatever order, every
recorded transition is in the table with its evidence and the history replays to the state."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from jobtrail.core import outcomes as o
from jobtrail.core.apply import apply
from jobtrail.core.model import AttemptKind, CancelIntent, ItemCounts, Operation, ResultSummary
from jobtrail.core.plan import Call, Settle, Wait, plan
from jobtrail.core.replay import replay
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused, TransitionRefused

from factories import FULL, T0, make_op, schedule

JOBS = ("job_A", "job_B", "job_C")
statuses = st.sampled_from(list(RemoteStatus))
retry_after = st.none() | st.sampled_from(["0", "3", "120", "Sat, 08 Mar 2025 15:00:00 GMT", "x"])
summaries = st.builds(
    ResultSummary,
    valid=st.booleans(),
    size=st.integers(0, 10),
    items=st.none()
    | st.builds(
        ItemCounts, total=st.just(3), succeeded=st.integers(0, 3), failed=st.integers(0, 3)
    ),
)
CALL_OUTCOMES = {
    AttemptKind.CREATE: st.one_of(
        st.builds(
            o.Accepted,
            job_id=st.sampled_from(JOBS),
            remote_state=st.just("queued"),
            remote_status=statuses,
            retry_after=retry_after,
        ),
        st.builds(
            o.SyncResult,
            job_id=st.none(),
            content=st.just(b"{}"),
            content_type=st.just("application/json"),
            location=st.just("/r"),
        ),
        st.builds(o.Rejected, reason=st.just("400")),
    ),
    AttemptKind.STATUS: st.builds(
        o.Observed,
        remote_state=st.sampled_from(["queued", "x"]),
        remote_status=statuses,
        retry_after=retry_after,
        progress=st.none() | st.integers(0, 100),
    ),
    AttemptKind.CANCEL: st.one_of(
        st.builds(o.CancelAcknowledged), st.builds(o.Rejected, reason=st.just("409"))
    ),
    AttemptKind.RESULT: st.one_of(
        st.builds(o.ResultChecked, summary=summaries),
        st.builds(o.ResultMissing, reason=st.just("410")),
    ),
    AttemptKind.RECONCILE: st.builds(
        o.Found, job_ids=st.lists(st.sampled_from(JOBS), max_size=3).map(tuple)
    ),
}
ANY_CALL = st.one_of(
    st.builds(o.Ambiguous, reason=st.just("timeout")),
    st.builds(o.Throttled, reason=st.just("429"), retry_after=retry_after),
)
LOOSE = st.one_of(
    *CALL_OUTCOMES.values(),
    ANY_CALL,
    st.builds(o.DeadlinePassed, deadline=st.sampled_from(list(o.Deadline))),
    st.builds(o.Interrupted, attempt_id=st.just("at_x")),
    st.builds(o.NoReconciliation),
)
CAPS = st.sampled_from(
    [
        FULL,
        replace(FULL, same_token_retry=False),
        replace(FULL, list_by_reference=False),
        replace(FULL, same_token_retry=False, list_by_reference=False),
    ]
)


class OperationLife(RuleBasedStateMachine):
    op: Operation
    now = T0

    def __init__(self) -> None:
        super().__init__()
        self.history: list = []
        self.observed_cancelled = False

    @initialize(caps=CAPS)
    def start(self, caps: object) -> None:
        self.op = make_op(capabilities=caps)

    def _apply(self, outcome: o.Outcome, actor: str = "w1") -> None:
        before = self.op
        try:
            applied = apply(self.op, outcome, self.now, actor=actor, schedule=schedule())
        except (TransitionRefused, ActionRefused):
            assert self.op is before  # refused: nothing changed
            return
        for tr in applied.transitions:
            if tr.to_state is State.CANCELLED:
                assert any(
                    ob.remote_status is RemoteStatus.CANCELLED for ob in applied.observations
                )
            if tr.to_state is State.SUCCEEDED:
                assert applied.operation.result is not None and applied.operation.result.valid
        self.history.extend(applied.transitions)
        self.op = applied.operation

    @rule(data=st.data(), extra=ANY_CALL)
    def follow_the_plan(self, data: st.DataObject, extra: o.Outcome) -> None:
        """Do what plan() says, with a plausible answer for that kind of call."""
        action = plan(self.op, self.now)
        if isinstance(action, Wait):
            self.now = action.until
            action = plan(self.op, self.now)
        if isinstance(action, Settle):
            self._apply(action.outcome)
        elif isinstance(action, Call):
            outcome = data.draw(st.one_of(CALL_OUTCOMES[action.kind], st.just(extra)))
            self._apply(outcome)

    @rule(outcome=LOOSE)
    def anything_arrives(self, outcome: o.Outcome) -> None:
        """Outcomes out of place (late, duplicated, wrong kind) are refused or harmless."""
        self._apply(outcome)

    @rule(minutes=st.integers(0, 180))
    def time_passes(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)

    @rule()
    def someone_cancels(self) -> None:
        intent = CancelIntent(
            actor="alice",
            reason="stop",
            expected_effect="stop",
            requested_at=self.now,
            request_id="req_1",
        )
        if self.op.state in (State.ACCEPTED, State.OBSERVING, State.RESULT_TIMED_OUT):
            self._apply(o.CancelRequested(intent=intent), actor="alice")
        elif self.op.cancel_intent is None and not self.op.state.ends_automation:
            self.op = replace(self.op, cancel_intent=intent)

    @rule(job=st.sampled_from(JOBS), decision=st.sampled_from(list(o.Decision)))
    def a_human_decides(self, job: str, decision: o.Decision) -> None:
        self._apply(
            o.HumanDecision(
                decision=decision,
                actor="bob",
                reason="r",
                job_id=job,
                new_deadline=self.now + timedelta(hours=1),
            ),
            actor="bob",
        )

    @invariant()
    def history_replays_to_the_state(self) -> None:
        if hasattr(self, "op"):
            assert replay(self.history) is self.op.state

    @invariant()
    def ended_operations_are_never_scheduled(self) -> None:
        if hasattr(self, "op") and self.op.state.ends_automation:
            assert self.op.next_poll_at is None

    @invariant()
    def succeeded_only_after_validation(self) -> None:
        """Succeeded needs a validated result, or a person's acceptance of one that failed
        validation (the result then says so)."""
        into = [t for t in self.history if t.to_state is State.SUCCEEDED]
        assert all(
            t.evidence is Evidence.RESULT_VALIDATED
            or (
                t.from_state is State.RESULT_VALIDATION_FAILED
                and t.evidence is Evidence.HUMAN_DECISION
            )
            for t in into
        )
        if hasattr(self, "op") and self.op.state is State.SUCCEEDED:
            assert self.op.result is not None and self.op.result.valid


OperationLife.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
TestOperationLife = OperationLife.TestCase
