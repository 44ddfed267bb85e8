"""The worker loop: claim due operations in batches, drive each in its own task, and keep
at most `concurrency` in flight. Nothing lives only in memory: a killed worker's operations
become due again when its leases expire, and their interrupted calls are settled by whoever
claims them next."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from jobtrail.clock import Clock
from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Operation
from jobtrail.errors import LedgerBusy
from jobtrail.ledger import Claim
from jobtrail.worker.runner import Runner

log = logging.getLogger("jobtrail.worker")
# Seconds between looks for due work while steps are in flight and none has ended: the
# lateness of an operation coming due meanwhile (0.25 s made it the p99 of a busy worker's
# poll lateness; an empty look is one indexed claim, ~0.5 ms of the store's time).
BUSY_POLL = 0.05
RECHECK = 0.25  # seconds before looking again at a due time whose lease still runs
LOCK_RETRY = 1.0  # seconds between tries while another process holds the ledger's lock
LOCK_NOTE_EVERY = 60.0  # seconds between the log lines saying the worker still waits


@dataclass
class WorkerStats:
    claimed: int = 0
    finished: int = 0
    lost: int = 0
    lateness: list[float] = field(default_factory=list)  # seconds past the stored due time


class Worker:
    def __init__(
        self,
        runner: Runner,
        clock: Clock,
        *,
        concurrency: int = 50,
        batch: int = 100,
        idle_poll: float = 1.0,
        grace: float = 10.0,
        record_lateness: bool = False,
    ) -> None:
        self.runner, self.clock = runner, clock
        self.concurrency, self.batch = concurrency, batch
        self.idle_poll, self.grace = idle_poll, grace
        self.record_lateness = record_lateness
        self.stats = WorkerStats()
        self.stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._only: str | None = None
        self._busy_since: datetime | None = None  # since when the ledger's lock was held
        self._busy_noted = datetime.min.replace(tzinfo=UTC)

    def wake(self) -> None:
        """Look for due work now (a submit or cancel in this process made some)."""
        self._wake.set()

    @property
    def worker_id(self) -> str:
        return self.runner.actor

    async def run(self, *, until_idle: bool = False, only: str | None = None) -> WorkerStats:
        """Claim and drive due operations until stopped; with `until_idle`, until nothing is
        left to do; with `only` (an operation id), that operation alone, until automation
        ends for it (`jobtrail run`)."""
        self._only = only
        stopper = asyncio.create_task(self.stop.wait())
        try:
            while not self.stop.is_set():
                try:
                    if await self._round(stopper, until_idle=until_idle, only=only):
                        break
                except LedgerBusy as exc:
                    await self._wait_for_lock(exc)
                else:
                    if self._busy_since is not None:
                        log.info("the ledger's write lock is free again: working on")
                    self._busy_since = None
        finally:
            stopper.cancel()
            await self._drain()
        return self.stats

    async def _round(
        self, stopper: asyncio.Task[bool], *, until_idle: bool, only: str | None
    ) -> bool:
        """One look for due work, and the wait after it; True when the run is over."""
        ledger = self.runner.ledger
        free = self.concurrency - len(self._inflight)
        looked = self.clock.now()  # what was due by now, the claim below claimed
        claims: list[Claim] = []
        if free > 0:
            claims = await ledger.claim(
                self.worker_id,
                min(free, self.batch),
                self.runner.lease_for,
                only=only,
                code=self.runner.providers.code_names(),
            )
            # One reading for the batch: the steps start only once this loop yields.
            claimed_at = self.clock.now() if claims and self.record_lateness else None
            for claim in claims:
                self._start(claim, claimed_at)
        if claims and len(claims) == min(free, self.batch) and only is None:
            await asyncio.sleep(0)  # more may be due: claim again after a yield
            return False
        idle = not self._inflight
        if idle and only is not None and (await ledger.get(only)).state.ends_automation:
            return True
        if until_idle and idle and await self._next_due() is None:
            return True
        await self._wait(stopper, claimed=bool(claims), looked=looked)
        return False

    async def _wait_for_lock(self, exc: LedgerBusy) -> None:
        """Another process holds the ledger's write lock past the store's busy timeout: say
        so (once per spell, then every LOCK_NOTE_EVERY seconds) and keep waiting for it,
        rather than die. Nothing was claimed meanwhile; steps in flight carry on."""
        now = self.clock.now()
        if self._busy_since is None or (now - self._busy_noted).total_seconds() >= LOCK_NOTE_EVERY:
            since = self._busy_since or now
            log.warning(
                "%s; this worker claims nothing meanwhile and keeps waiting for it "
                "(waiting %.0fs so far; find the process holding it: a backup, a sqlite3 "
                "shell, another program with the file open in a transaction)",
                exc,
                (now - since).total_seconds(),
            )
            self._busy_noted = now
        if self._busy_since is None:
            self._busy_since = now
        await self.clock.sleep(LOCK_RETRY)

    def _start(self, claim: Claim, claimed_at: datetime | None) -> None:
        """Drive `claim` in a task of its own; its lateness counted at `claimed_at` if given."""
        self.stats.claimed += 1
        if claimed_at is not None:
            self.stats.lateness.append((claimed_at - claim.was_due).total_seconds())
        op = claim.operation
        log.info(
            "claimed (fence %d, due %s)",
            op.fence,
            claim.was_due.isoformat(),
            extra={"operation_id": op.operation_id, "state": op.state.value},
        )
        task = asyncio.create_task(self._drive(op), name=op.operation_id)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    def in_flight(self) -> list[str]:
        """The operations whose steps are running now (what a stopping worker waits for)."""
        return sorted(task.get_name() for task in self._inflight)

    def abandon(self) -> None:
        """Stop waiting for in-flight steps (a second Ctrl-C): their calls keep their
        recorded intent, and the next owner settles them as interrupted."""
        for task in self._inflight:
            task.cancel()

    async def _drive(self, op: Operation) -> None:
        try:
            result = await self.runner.drive(op)
        except Exception:
            log.exception(
                "step failed; the lease will expire and the operation be retried",
                extra={"operation_id": op.operation_id},
            )
            return
        if result is None:
            self.stats.lost += 1
        elif result.state.ends_automation:
            self.stats.finished += 1

    async def _wait(
        self, stopper: asyncio.Task[bool], *, claimed: bool = True, looked: datetime | None = None
    ) -> None:
        """Sleep until something may be due: a task finishing, the next due time, or a stop.
        While steps are in flight their ends wake us often, so the next due time is only
        asked of the store when the worker is otherwise idle. A due time that has passed
        by the time of the claim (`looked`) while the claim found nothing is a lease still
        running on the ledger's clock (its shown expiry, reckoned by its holder, came a
        little sooner): look again shortly, never spin. A due time after the claim's is
        waited for exactly (or not at all, if it has passed since), whatever the claim found.
        Times here are the ledger's (the runtime's clock is the ledger's)."""
        delay = min(self.idle_poll, BUSY_POLL)
        if not self._inflight:
            next_due = await self._next_due()
            delay = self.idle_poll
            if next_due is not None:
                delay = min(delay, max(0.0, (next_due - self.clock.now()).total_seconds()))
                if not claimed and (looked is None or next_due <= looked):
                    delay = max(delay, min(self.idle_poll, RECHECK))
        if self._wake.is_set():
            self._wake.clear()
            return
        waker = asyncio.create_task(self._wake.wait())
        try:
            if self._inflight:
                await asyncio.wait(
                    [*self._inflight, stopper, waker],
                    timeout=delay,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            elif delay > 0:
                sleeper = asyncio.create_task(self.clock.sleep(delay))
                await asyncio.wait([sleeper, stopper, waker], return_when=asyncio.FIRST_COMPLETED)
                sleeper.cancel()
        finally:
            waker.cancel()
            self._wake.clear()

    async def _next_due(self) -> datetime | None:
        """When something this worker may claim is due: operations of code providers it
        lacks are someone else's, and must neither keep it awake nor spinning. With `only`,
        when that operation is: its poll time, or when the lease another holds expires."""
        ledger = self.runner.ledger
        if self._only is None:
            return await ledger.next_due(self.runner.providers.code_names())
        op = await ledger.get(self._only)
        if op.state.ends_automation:
            return None
        return op.lease_expires_at if lease_alive(op, self.clock.now()) else op.next_poll_at

    async def _drain(self) -> None:
        """Let in-flight steps finish for a grace period; then abandon them. An abandoned call
        keeps its recorded intent, so the next owner settles it as interrupted."""
        if not self._inflight:
            return
        _, pending = await asyncio.wait(self._inflight, timeout=self.grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
            log.warning("abandoned %d in-flight steps at shutdown", len(pending))
