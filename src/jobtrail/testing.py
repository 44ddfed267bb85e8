"""Helpers for your own tests of code that uses jobtrail (docs/python.md, "Testing").

- `ScriptedProvider`: a code provider whose every call is answered by a function you give,
  in the manner of httpx's MockTransport. Hand it to `jobtrail.Client(..., providers=[p])`
  and submit to it by name: the real ledger, worker, schedule and validation run around it.
- `VirtualClock`: time that moves only when jobtrail sleeps, so days of backoff and
  deadlines pass at once (`jobtrail.Client(..., clock=VirtualClock())`).
- `running_simulator()` and the pytest fixture `jobtrail_simulator`: the provider simulator
  on a free loopback port, with the shipped `simulator` profile pointed at it.

This module is public: unlike jobtrail's internals, it keeps its names across versions.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from jobtrail.clock import VirtualClock
from jobtrail.core import outcomes
from jobtrail.core.model import AttemptKind, Capabilities, Idempotency, Operation, ResultMode
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.code.contract import CodeProvider
from jobtrail.providers.protocol import Fetched, Reply
from jobtrail.simulator.thread import SimulatorThread

__all__ = [
    "AttemptKind",
    "Capabilities",
    "Fetched",
    "RemoteStatus",
    "Reply",
    "ScriptedCall",
    "ScriptedProvider",
    "VirtualClock",
    "jobtrail_simulator",
    "outcomes",
    "running_simulator",
]

SIMULATOR_TOKEN = "jobtrail-testing-token"


@dataclass(frozen=True)
class ScriptedCall:
    """One call made to a `ScriptedProvider`: which kind, for which operation (as stored
    when the call was made), and how many calls of that kind that operation had before."""

    kind: AttemptKind
    operation: Operation
    number: int  # 1 for the first call of this kind for this operation


Answer = Reply | outcomes.CallOutcome
Handler = Callable[[ScriptedCall], Answer | Awaitable[Answer]]


@dataclass
class ScriptedProvider:
    """A code provider answering each call with `handler(call)`: a `Reply`, or an outcome
    of `jobtrail.testing.outcomes` (wrapped in a Reply). The handler may be async, and may
    raise (jobtrail records that as a call with an unknown outcome, as for any provider).
    Every call is kept in `calls`. Capabilities default to a provider with an idempotency
    token, same-token retry and cancel, and no result endpoint."""

    handler: Handler
    name: str = "scripted"
    version: str = "0"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            idempotency=Idempotency.HEADER,
            same_token_retry=True,
            cancel=True,
            result=ResultMode.NONE,
        )
    )
    deadlines: Mapping[str, str | timedelta] = field(default_factory=dict)
    poll: Mapping[str, Any] = field(default_factory=lambda: {"initial": "10ms", "min": "10ms"})
    secret_env: tuple[str, ...] = ()
    timeout: timedelta = timedelta(seconds=30)
    calls: list[ScriptedCall] = field(default_factory=list)

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        return {"call": kind.value, "provider": self.name, "job": op.remote_job_id}

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        number = 1 + sum(
            1 for c in self.calls if c.kind is kind and c.operation.operation_id == op.operation_id
        )
        call = ScriptedCall(kind=kind, operation=op, number=number)
        self.calls.append(call)
        answer = self.handler(call)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer if isinstance(answer, Reply) else Reply(outcome=answer)

    def calls_of(self, kind: AttemptKind) -> list[ScriptedCall]:
        return [c for c in self.calls if c.kind is kind]


@contextmanager
def running_simulator(token: str = SIMULATOR_TOKEN) -> Iterator[SimulatorThread]:
    """The provider simulator on a free loopback port, in a background thread, with the
    environment set so that `submit("simulator", ...)` reaches it: JOBTRAIL_SIMULATOR_BASE_URL
    (read by the shipped profile) and REPORTS_API_TOKEN. Both are restored afterwards."""
    names = ("JOBTRAIL_SIMULATOR_BASE_URL", "REPORTS_API_TOKEN")
    before = {name: os.environ.get(name) for name in names}
    with SimulatorThread(token=token) as sim:
        os.environ["JOBTRAIL_SIMULATOR_BASE_URL"] = sim.base_url
        os.environ["REPORTS_API_TOKEN"] = token
        try:
            yield sim
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


if TYPE_CHECKING:

    def _is_a_code_provider(provider: ScriptedProvider) -> CodeProvider:
        return provider  # mypy checks that ScriptedProvider follows the contract


try:  # the fixture exists where pytest does; the rest of this module needs no pytest
    import pytest
except ImportError:  # pragma: no cover - pytest is how these helpers are meant to be used
    pass
else:

    @pytest.fixture
    def jobtrail_simulator() -> Iterator[SimulatorThread]:
        """The simulator for one test (import it into your conftest.py to use it)."""
        with running_simulator() as sim:
            yield sim
