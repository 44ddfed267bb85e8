"""Where a worker's poll lateness comes from (bench.workerproc --diagnose): the worker's own
timings, taken inside its process while it runs.

- the event loop's stalls: a ticker sleeping TICK seconds records how late it wakes (what
  anything blocking the loop, a garbage collection included, costs every task);
- garbage collection: each collection's pause, by generation (gc.callbacks), in wall time
  and in the thread's CPU time (which the machine's load does not stretch);
- the claim: each `ledger.claim` call's wall time and rows, as the worker awaits it (the
  store's queue wait included);
- PostgreSQL: the connection pool's requests, how many queued for a connection and their
  total wait (psycopg_pool's stats);
- the store's transactions (SQLite): each one's time on the writer thread, commit included,
  so a WAL checkpoint that a commit runs shows as a long one, and its CPU time; and the
  WAL's resets, counted from its header's salt (which SQLite increments each time a
  checkpointed WAL restarts).
"""

from __future__ import annotations

import asyncio
import gc
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import percentile

TICK = 0.01  # seconds the loop ticker sleeps


class Diagnosis:
    def __init__(self) -> None:
        self.loop_lag: list[float] = []
        self.gc_pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.gc_cpu: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.claims: list[tuple[float, int]] = []
        self.transactions: list[float] = []
        self.transaction_cpu: list[float] = []
        self._gc_started = self._gc_cpu_started = 0.0
        self._wal: Path | None = None
        self._salt_first: int | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._pool: Any = None  # PostgreSQL: the store's connection pool

    # -- installing ----------------------------------------------------------------------

    def install(self, ledger: Any, store: Any, sqlite_path: str | None) -> None:
        gc.callbacks.append(self._on_gc)
        self._ticker = asyncio.create_task(self._tick())
        claim = ledger.claim

        async def timed_claim(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            got = await claim(*args, **kwargs)
            self.claims.append((time.perf_counter() - started, len(got)))
            return got

        ledger.claim = timed_claim
        self._pool = getattr(store, "_pool", None)
        if sqlite_path is not None:
            store._transaction = self._timed(store._transaction)
            self._wal = Path(sqlite_path + "-wal")
            self._salt_first = self._salt()

    def reset(self) -> None:
        """Forget what start-up and the warmup did."""
        self.loop_lag.clear()
        for pauses in (*self.gc_pauses.values(), *self.gc_cpu.values()):
            pauses.clear()
        self.transaction_cpu.clear()
        self.claims.clear()
        self.transactions.clear()
        self._salt_first = self._salt()
        if self._pool is not None:
            self._pool.pop_stats()

    def remove(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._ticker is not None:
            self._ticker.cancel()

    # -- recording -----------------------------------------------------------------------

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started, self._gc_cpu_started = time.perf_counter(), time.thread_time()
        else:
            generation = info["generation"]
            self.gc_pauses[generation].append(time.perf_counter() - self._gc_started)
            self.gc_cpu[generation].append(time.thread_time() - self._gc_cpu_started)

    async def _tick(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(TICK)
            self.loop_lag.append(time.perf_counter() - started - TICK)

    def _timed(self, transaction: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return transaction(*args, **kwargs)
            finally:
                self.transactions.append(time.perf_counter() - started)
                self.transaction_cpu.append(time.thread_time() - cpu)

        return timed

    def _salt(self) -> int | None:
        try:
            with self._wal.open("rb") if self._wal else open("/dev/null", "rb") as wal:
                header = wal.read(24)
        except OSError:
            return None
        return struct.unpack(">I", header[16:20])[0] if len(header) == 24 else None

    # -- reporting -----------------------------------------------------------------------

    def figures(self) -> dict[str, float]:
        out: dict[str, float] = {}
        out |= _spread("loop_lag", self.loop_lag)
        for generation, pauses in self.gc_pauses.items():
            out[f"gc{generation}_count"] = len(pauses)
            out[f"gc{generation}_total_s"] = sum(pauses)
            out[f"gc{generation}_max"] = max(pauses, default=0.0)
            out[f"gc{generation}_cpu_s"] = sum(self.gc_cpu[generation])
            out[f"gc{generation}_cpu_max"] = max(self.gc_cpu[generation], default=0.0)
        out |= _spread("claim", [seconds for seconds, _ in self.claims])
        out["claim_rows_mean"] = (
            sum(rows for _, rows in self.claims) / len(self.claims) if self.claims else 0.0
        )
        if self._pool is not None:  # psycopg_pool's counters since the reset
            stats = self._pool.pop_stats()
            out["pool_requests"] = stats.get("requests_num", 0)
            out["pool_queued"] = stats.get("requests_queued", 0)
            out["pool_wait_ms"] = stats.get("requests_wait_ms", 0)
            out["pool_size"] = stats.get("pool_size", 0)
        if self._wal is not None:
            out |= _spread("transaction", self.transactions)
            out |= _spread("transaction_cpu", self.transaction_cpu)
            out["transactions_over_100ms"] = sum(1 for t in self.transactions if t > 0.1)
            salt = self._salt()
            if salt is not None and self._salt_first is not None:
                out["wal_resets"] = (salt - self._salt_first) % 2**32
        return out


def _spread(name: str, values: list[float]) -> dict[str, float]:
    return {
        f"{name}_count": len(values),
        f"{name}_p50": percentile(values, 50),
        f"{name}_p99": percentile(values, 99),
        f"{name}_max": max(values, default=float("nan")),
        f"{name}_total_s": sum(values),
    }
