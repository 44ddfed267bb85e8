"""`jobtrail.Client`: submit, follow, cancel and collect operations from asyncio code.

One client is one ledger (a SQLite path or a `postgresql://` URL) opened with everything
that moves operations: the runtime is built in exactly one place, `_runtime()`. Unless the
client is opened with `worker=False` (workers run elsewhere: `jobtrail worker`, `serve`), an
in-process worker drives every due operation of that ledger while the client is open, as
`jobtrail worker` would. `wait` only reads the ledger; it never decides anything itself."""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import warnings
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobtrail.client.census import CensusMethods
from jobtrail.client.providers import ProviderRef, resolve_provider
from jobtrail.client.result import Result, read_result
from jobtrail.clock import Clock
from jobtrail.core.durations import parse_duration
from jobtrail.core.failure import failure_reason
from jobtrail.core.model import Operation, ProviderKind
from jobtrail.core.states import State
from jobtrail.core.words import iso
from jobtrail.errors import (
    ActionRefused,
    ClientClosed,
    CredentialMissing,
    InvalidInput,
    MissingCredentialWarning,
    WaitTimedOut,
)
from jobtrail.providers.code.contract import CodeProvider
from jobtrail.providers.credentials import unset_by_provider, unset_credentials
from jobtrail.services import decisions, defaults
from jobtrail.services.runtime import Runtime, runtime
from jobtrail.services.story import read_story

Duration = timedelta | str  # "90s", "2h", "1d" or a timedelta
log = logging.getLogger("jobtrail.client")


class Client(CensusMethods):
    """An asyncio client over one ledger; use it as `async with jobtrail.Client(db) as jt:`.

    `db` is a SQLite path or a `postgresql://` URL (default: JOBTRAIL_DB, else
    ./jobtrail.db); `data_dir` and `results` say where results are stored, as the CLI's
    `--data-dir` and `--results` do. `actor` is recorded as who asks (default: JOBTRAIL_ACTOR,
    else `python:<user>`). `audit_key` keys the audit chain (default: JOBTRAIL_AUDIT_KEY), and
    must be the key every other writer of this ledger uses. `wait` reads the ledger every
    `poll_interval` seconds.

    Code providers (docs/code-providers.md): every installed one (entry points in the group
    `jobtrail.providers`), those of the modules in `provider_modules` (each with a
    `PROVIDERS` mapping), and the provider objects in `providers`. Each can be submitted
    to by name; the in-process worker drives only operations whose provider it has.
    `clock` (tests: `jobtrail.testing.VirtualClock`) is the time the ledger and worker use."""

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        worker: bool = True,
        data_dir: str | os.PathLike[str] | None = None,
        results: str | None = None,
        actor: str | None = None,
        audit_key: bytes | str | None = None,
        concurrency: int = 10,
        provider_modules: Sequence[str] = (),
        providers: Sequence[CodeProvider] = (),
        poll_interval: float = 0.2,
        clock: Clock | None = None,
    ) -> None:
        self.db = defaults.ledger_url(os.fspath(db) if db is not None else None)
        self.data_dir = Path(data_dir) if data_dir is not None else defaults.data_dir_for(self.db)
        self.results = defaults.results_url(results)
        self.actor = actor or defaults.actor("python")
        key = audit_key if audit_key is not None else os.environ.get("JOBTRAIL_AUDIT_KEY")
        if isinstance(key, str):
            key = key.encode("utf-8")
        self._audit_key = key or None
        self.worker = worker
        self.concurrency = concurrency
        self.provider_modules = tuple(provider_modules)
        self.providers = tuple(providers)
        self.clock = clock
        self.poll_interval = poll_interval
        self._rt: Runtime | None = None
        self._stack: AsyncExitStack | None = None
        self._worker_task: asyncio.Task[Any] | None = None

    # -- opening and closing -------------------------------------------------------------

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Open the ledger (creating and migrating it when new) and start the worker."""
        if self._rt is not None:
            return
        stack = AsyncExitStack()
        self._rt = await stack.enter_async_context(self._runtime())
        self._stack = stack
        if self.worker:
            for unset in await self._rt.unset_credentials():
                log.warning("%s", unset.at_start())
            self._worker_task = asyncio.create_task(self._rt.worker.run())

    async def close(self) -> None:
        """Stop the worker (in-flight calls finish, or stay recorded as sent) and close."""
        rt, stack, task = self._rt, self._stack, self._worker_task
        self._rt, self._stack, self._worker_task = None, None, None
        try:
            if rt is not None and task is not None:
                rt.worker.stop.set()
                await task
        finally:
            if stack is not None:
                await stack.aclose()

    def _runtime(self) -> AbstractAsyncContextManager[Runtime]:
        """The one place the runtime is built; it loads the code providers too."""
        return runtime(
            self.db,
            self.data_dir,
            audit_key=self._audit_key,
            concurrency=self.concurrency,
            results=self.results,
            provider_modules=self.provider_modules,
            providers=self.providers,
            clock=self.clock,
        )

    @property
    def _opened(self) -> Runtime:
        if self._rt is None:
            raise ClientClosed(
                "the client is not open: use it as `async with jobtrail.Client(...) as jt:` "
                "(or call `await jt.open()` first)"
            )
        return self._rt

    # -- asking --------------------------------------------------------------------------

    async def submit(
        self,
        provider: ProviderRef,
        body: Any = None,
        *,
        key: str | None = None,
        actor: str | None = None,
        authorized_by: str | None = None,
        reason: str | None = None,
        headers: dict[str, str] | None = None,
        create_deadline: Duration | None = None,
        result_deadline: Duration | None = None,
        cancel_deadline: Duration | None = None,
        path: dict[str, str] | None = None,
    ) -> Operation:
        """Record an operation; nothing is sent here (a worker sends it). The same `key` with
        the same request returns the existing operation, so a re-run never sends twice; a
        changed request under a used key raises KeyConflict. `path` fills the placeholders
        of the provider's create path (`{"group": "rg1", "name": "w1"}`)."""
        rt = self._opened
        spec = resolve_provider(provider, rt.providers.plugins)
        unset = unset_credentials(spec)
        op = await rt.ledger.submit(
            spec,
            body,
            headers=headers,
            path=path,
            key=key,
            actor=actor or self.actor,
            authorized_by=authorized_by,
            reason=reason,
            create_deadline=_duration(create_deadline),
            result_deadline=_duration(result_deadline),
            cancel_deadline=_duration(cancel_deadline),
        )
        if unset is not None:  # said once it is recorded, as `jobtrail submit` says it
            warnings.warn(unset.at_submit(), MissingCredentialWarning, stacklevel=2)
            if self.worker:
                log.warning("%s", unset.at_start())
        rt.worker.wake()
        return op

    async def cancel(
        self,
        operation_id: str,
        reason: str,
        *,
        actor: str | None = None,
        expected_effect: str | None = None,
    ) -> Operation:
        """Record the intent to cancel. The job stops only when the provider says so; it may
        still succeed or fail first. Follow it with `wait`."""
        rt = self._opened
        op = await rt.ledger.cancel(
            operation_id, actor=actor or self.actor, reason=reason, expected_effect=expected_effect
        )
        rt.worker.wake()
        return op

    # -- reading -------------------------------------------------------------------------

    async def get(self, operation_id: str) -> Operation:
        """The operation's record, by its id or its key (NotFound if this ledger holds none
        by either)."""
        return await self._opened.ledger.get(operation_id)

    async def find(self, key: str) -> Operation | None:
        """The operation submitted under `key` (or whose id it is), or None: `get` raises
        where `find` answers None."""
        return await self._opened.ledger.find(key)

    async def list(
        self, states: Iterable[State | str] = (), limit: int = 50
    ) -> builtins.list[Operation]:
        """Operations, newest first, optionally only those in `states`."""
        try:
            wanted = [State(s) for s in states]
        except ValueError as exc:
            raise InvalidInput(f"{exc}; states are {', '.join(State)}") from None
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, not {limit}")
        return await self._opened.ledger.list_operations(states=wanted, limit=limit)

    # A `timeout` argument, not asyncio.timeout(): giving up raises WaitTimedOut with what to
    # do next, and the SyncClient's callers have no asyncio to time out with.
    async def wait(self, operation_id: str, timeout: float | None = None) -> Operation:  # noqa: ASYNC109
        """Wait until automation ends for the operation (a terminal state, or needs_human)
        and return it. WaitTimedOut after `timeout` seconds; the operation carries on.
        CredentialMissing at once when this client's worker cannot send anything for it
        (its provider's credential variable is not set here); WaitTimedOut names the
        reason of its last failed call, if any."""
        loop = asyncio.get_running_loop()
        give_up = None if timeout is None else loop.time() + timeout
        op = await self.get(operation_id)
        while not op.state.ends_automation:
            self._check_worker()
            self._check_credentials(op)
            left = None if give_up is None else give_up - loop.time()
            if left is not None and left <= 0:
                why = await self._last_failure(op)
                raise WaitTimedOut(
                    f"{operation_id} is still {op.state} after {timeout} s; it carries on "
                    "without you: wait again, or follow it with get"
                    + ("" if self.worker else " (is a `jobtrail worker` running on this ledger?)")
                    + (f"; its last call failed: {why}" if why else "")
                )
            await asyncio.sleep(
                self.poll_interval if left is None else min(self.poll_interval, left)
            )
            op = await self.get(operation_id)
        return op

    async def result(self, operation_id: str) -> Result:
        """The validated result and its content, re-hashed against what was validated.
        ActionRefused while there is none (not collected yet, or the operation ended
        without one)."""
        rt = self._opened
        op = await rt.ledger.get(operation_id)
        if op.result is None:
            why = "it ended" if op.state.ends_automation else "not yet: it is"
            raise ActionRefused(
                f"{operation_id} has no result ({why} {op.state}); `wait` follows it, "
                "`explain` tells its story"
            )
        return await read_result(op, rt.results, self.data_dir, ledger=rt.ledger)

    async def explain(self, operation_id: str) -> str:
        """The operation's story, as `jobtrail explain` tells it."""
        rt = self._opened
        story = await read_story(rt.ledger, await rt.ledger.get(operation_id))
        missing = story.op.provider_kind is ProviderKind.CODE and (
            story.op.provider not in rt.providers.code_names()
        )
        return story.text(
            missing="not available to this client: pass its module in provider_modules, or "
            "install it"
            if missing
            else None
        )

    # -- human decisions -----------------------------------------------------------------

    async def resolve(
        self,
        operation_id: str,
        decision: str,
        *,
        reason: str,
        job_id: str | None = None,
        actor: str | None = None,
    ) -> Operation:
        """A recorded decision for an operation in needs_human: "adopt" (a remote job id:
        `job_id`), "mark-failed", or "retry-as-new". Returns the operation to follow: the
        same one, or for retry-as-new the new operation (same request, new token)."""
        rt = self._opened
        who = actor or self.actor
        done = await decisions.resolve(
            rt.ledger, rt.providers, operation_id, decision, actor=who, reason=reason, job_id=job_id
        )
        rt.worker.wake()
        return done.replaced_by or done.op

    async def extend(
        self,
        operation_id: str,
        *,
        reason: str,
        result_deadline: Duration | None = None,
        cancel_deadline: Duration | None = None,
        actor: str | None = None,
    ) -> Operation:
        """Resume automation after result_timed_out (`result_deadline`) or
        cancellation_unconfirmed (`cancel_deadline`): the new deadline is now + duration."""
        if (result_deadline is None) == (cancel_deadline is None):
            raise InvalidInput("give exactly one of result_deadline or cancel_deadline")
        by = _duration(result_deadline or cancel_deadline)
        assert by is not None
        rt = self._opened
        op = await decisions.extend(
            rt.ledger,
            operation_id,
            deadline="result" if result_deadline is not None else "cancel",
            by=by,
            actor=actor or self.actor,
            reason=reason,
        )
        rt.worker.wake()
        return op

    # -- helpers -------------------------------------------------------------------------

    def _check_credentials(self, op: Operation) -> None:
        """This client's worker stops every call of an HTTP provider whose credential is not
        set before sending: waiting would only end at the create deadline. Say why now."""
        if not self.worker:
            return  # the worker runs elsewhere, with its own environment
        for unset in unset_by_provider([(op.provider, op.provider_config)]):
            if not unset.code:
                deadline = iso(op.create_deadline) if op.state is State.CREATE_PENDING else None
                raise CredentialMissing(
                    unset.at_start().removeprefix("WARNING: ")
                    + f" {op.operation_id} is still {op.state}"
                    + (f" and fails at its create deadline ({deadline})" if deadline else "")
                    + " unless it is set before; set it and wait again"
                )

    async def _last_failure(self, op: Operation) -> str | None:
        """The provider's (or our) reason for `op`'s last failed call (core/failure.py)."""
        ledger = self._opened.ledger
        attempts = await ledger.attempts(op.operation_id)
        return failure_reason(op, attempts, await ledger.observations(op.operation_id))

    def _check_worker(self) -> None:
        """A worker that died would leave `wait` waiting for nothing: say so instead."""
        task = self._worker_task
        if task is not None and task.done() and not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error


def _duration(value: Duration | None) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    return parse_duration(value)
