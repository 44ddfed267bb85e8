"""CPU seconds of a process tree and of the PostgreSQL server processes serving one database,
sampled from /proc while they run (bench.processes), and what those server processes wait
on (pg_stat_activity)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from types import TracebackType

import psycopg

SAMPLE = 0.1  # seconds between samples
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, its own user + system CPU seconds), or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


class Sampler:
    """Every SAMPLE seconds: the CPU of `root` and of each of its child processes (the last
    reading of each counts, so a child that exits between two samples loses at most
    SAMPLE of its CPU), and with `pg_url`, of the server's processes serving that database,
    and their wait events."""

    def __init__(self, root: int, pg_url: str | None) -> None:
        self.root, self.pg_url = root, pg_url
        self.own = 0.0
        self.children: dict[int, float] = {}
        self.server: dict[int, float] = {}
        self.waits: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        conn = psycopg.connect(self.pg_url, autocommit=True) if self.pg_url else None
        try:
            while not self._stop.wait(SAMPLE):
                self._sample(conn)
        finally:
            if conn is not None:
                conn.close()

    def _sample(self, conn: psycopg.Connection[tuple[object, ...]] | None) -> None:
        if (own := _stat(self.root)) is not None:
            self.own = own[1]
        for entry in Path("/proc").iterdir():
            found = _stat(int(entry.name)) if entry.name.isdigit() else None
            if found is not None and found[0] == self.root:
                self.children[int(entry.name)] = found[1]
        if conn is None:
            return
        rows = conn.execute(
            "SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        for pid, state, kind, event in rows:
            if (found := _stat(int(str(pid)))) is not None:
                self.server[int(str(pid))] = found[1]
            if state == "active":
                self.waits[f"{kind}:{event}" if kind else "on CPU"] += 1
            elif state == "idle in transaction":
                self.waits["idle in transaction"] += 1

    def describe(self, operations: int) -> str:
        def per(seconds: float) -> str:
            return f"{1000 * seconds / operations:.2f} ms"

        text = (
            f"CPU per operation: the process started {per(self.own)} (the worker itself with "
            f"--processes 1, else the supervisor), its child processes "
            f"{per(sum(self.children.values()))} ({len(self.children)} processes)"
        )
        if self.pg_url:
            text += (
                f", PostgreSQL backends {per(sum(self.server.values()))} "
                f"({len(self.server)} backends); backend samples (every {SAMPLE:g}s): "
                + ", ".join(f"{name} {n}" for name, n in self.waits.most_common(6))
            )
        return text
