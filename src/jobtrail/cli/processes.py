"""`jobtrail worker --processes N`: N worker processes under one supervisor, for a machine
with more cores than one Python process can use (docs/scaling.md).

Each child is an ordinary `jobtrail worker` with its own worker id, its own lease and its
own claims: the children share the work exactly as separate workers on the same ledger
do (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one write lock, taken by one process
at a time). The supervisor holds no ledger and makes no call; it

* starts the children in their own process group, so a Ctrl-C at the terminal reaches
  the supervisor only, and forwards every SIGINT and SIGTERM it gets to each child once
  (the first stops taking work, the second abandons the step in flight, as for one worker);
* starts a child again when it dies while no stop was asked for (a kill -9, an out-of-memory
  kill, a crash): its leases run out and it, or another, resumes from the record;
* gives up when a child dies `RESTARTS` times within `WINDOW` seconds (a ledger that cannot
  be opened, a provider module that does not load): it stops the others and exits 1 with
  that child's exit code (the child's own words are above it: children write to the
  supervisor's stderr);
* exits 0 once every child has exited 0 (a stop, or `--until-idle` with nothing left).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from types import FrameType

import click

RESTARTS = 3  # deaths of one child within WINDOW seconds before the supervisor gives up
WINDOW = 60.0
TICK = 0.1  # seconds between two looks at the children


@dataclass
class Child:
    number: int
    command: list[str]
    proc: subprocess.Popen[bytes] | None = None
    deaths: deque[float] = field(default_factory=deque)
    done: bool = False  # exited 0: not started again

    def start(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            self.command, env=env, start_new_session=True, preexec_fn=_die_with_parent
        )
        pid = self.proc.pid
        click.echo(f"supervisor: worker process {self.number} started (pid {pid})", err=True)


def child_command(args: list[str], worker_id: str | None, number: int) -> list[str]:
    """One child's command line: `jobtrail worker ARGS`, with its own worker id when one was
    given (`ID-1`, `ID-2`, ...; else each child's default id names its own pid)."""
    named = ["--worker-id", f"{worker_id}-{number}"] if worker_id else []
    return [sys.executable, "-m", "jobtrail.cli.main", "worker", *args, *named]


def supervise(args: list[str], processes: int, worker_id: str | None, env: dict[str, str]) -> int:
    """Run `processes` children until they have all exited; the supervisor's exit code."""
    children = [Child(n, child_command(args, worker_id, n)) for n in range(1, processes + 1)]
    signals: list[int] = []

    def forward(sig: int, _frame: FrameType | None) -> None:
        signals.append(sig)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for child in children:
            child.start(env)
        return _watch(children, signals, env)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(children: list[Child], signals: list[int], env: dict[str, str]) -> int:
    forwarded, failure = 0, None
    while True:
        while forwarded < len(signals):  # each signal to each child, once
            _send(children, signals[forwarded])
            forwarded += 1
        running = 0
        for child in children:
            verdict = _look(child, stopping=bool(signals) or failure is not None)
            if verdict is None:
                running += 1
            elif verdict == "restart":
                child.start(env)
                running += 1
            elif verdict and failure is None:
                failure = verdict
                signals.append(signal.SIGTERM)  # the others stop as for a Ctrl-C
        if not running:
            if failure is not None:
                click.echo(f"supervisor: {failure}", err=True)
                return 1
            return 0
        time.sleep(TICK)


def _send(children: list[Child], sig: int) -> None:
    for child in children:
        if child.proc is not None and child.proc.poll() is None:
            child.proc.send_signal(sig)


def _look(child: Child, *, stopping: bool) -> str | None:
    """None: still running (or done before); "restart"; "" : exited and left so; else why
    the supervisor gives up."""
    proc = child.proc
    if proc is None or child.done:
        return ""
    code = proc.poll()
    if code is None:
        return None
    child.done = True
    if code == 0 or stopping:
        return ""
    now = time.monotonic()
    child.deaths.append(now)
    while child.deaths and child.deaths[0] < now - WINDOW:
        child.deaths.popleft()
    how = f"signal {-code}" if code < 0 else f"exit code {code}"
    if len(child.deaths) >= RESTARTS:
        return (
            f"worker process {child.number} (pid {proc.pid}) died {len(child.deaths)} times "
            f"within {WINDOW:g} s (last: {how}); the others were stopped"
        )
    click.echo(
        f"supervisor: worker process {child.number} (pid {proc.pid}) died ({how}); "
        "starting it again",
        err=True,
    )
    child.done = False
    return "restart"


def _die_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the supervisor dies, even by kill -9
    (Linux's PR_SET_PDEATHSIG), so no worker is left running unsupervised. Elsewhere the
    children outlive a killed supervisor, as separate workers would."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def child_env(db: str, data_dir: str, results: str | None) -> dict[str, str]:
    """The children's environment: this one, with the ledger, data and result store this
    command was given (so `--db` and the like reach them)."""
    env = dict(os.environ, JOBTRAIL_DB=db, JOBTRAIL_DATA=data_dir)
    if results:
        env["JOBTRAIL_RESULTS"] = results
    return env
