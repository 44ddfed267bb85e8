"""What every benchmark shares: figures and their printing, the simulator in its own process,
provider documents, PostgreSQL scratch databases, memory and percentile helpers."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_FILE = ROOT / "providers" / "simulator.toml"
TOKEN_ENV = "REPORTS_API_TOKEN"
TOKEN = "tok_bench_7c1e4f2a9b3d5e60"
PG_SERVER = os.environ.get("JOBTRAIL_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
PG_DATABASE = "jobtrail_bench"


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One measured figure, with the baseline measured in the same run.

    `higher_is_better` says which way the ratio reads: for a throughput the ratio is
    figure / baseline, for a cost (calls, latency) it is baseline / figure, so a ratio
    above 1 always means jobtrail does better than the baseline."""

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    target: str = ""
    met: bool | None = None
    higher_is_better: bool = True
    notes: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0 or self.value == 0:
            return None
        if self.higher_is_better:
            return self.value / self.baseline
        return self.baseline / self.value


@dataclass
class Report:
    """The figures of one benchmark, printed as they come and summed up at the end."""

    title: str
    figures: list[Figure] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def add(self, figure: Figure) -> None:
        self.figures.append(figure)
        print(f"  {line(figure)}", flush=True)

    def note(self, text: str) -> None:
        self.details.append(text)
        print(f"  {text}", flush=True)


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def line(figure: Figure) -> str:
    text = f"{figure.name}: {fmt(figure.value)} {figure.unit}"
    if figure.baseline is not None:
        text += f" | baseline ({figure.baseline_name}): {fmt(figure.baseline)} {figure.unit}"
    if figure.ratio is not None:
        text += f" | ratio {figure.ratio:.2f}"
    if figure.target:
        verdict = {True: "met", False: "NOT met", None: "n/a"}[figure.met]
        text += f" | target {figure.target}: {verdict}"
    return text


def summary(reports: list[Report]) -> str:
    rows = ["| benchmark | figure | value | baseline | ratio | target | met |"]
    rows.append("|---|---|---|---|---|---|---|")
    for report in reports:
        for f in report.figures:
            base = f"{fmt(f.baseline)} ({f.baseline_name})" if f.baseline is not None else "-"
            ratio = f"{f.ratio:.2f}" if f.ratio is not None else "-"
            met = {True: "yes", False: "no", None: "-"}[f.met]
            value = f"{fmt(f.value)} {f.unit}"
            rows.append(
                f"| {report.title} | {f.name} | {value} | {base} | {ratio} | {f.target} | {met} |"
            )
    return "\n".join(rows)


# -- the simulator, in a process of its own ------------------------------------------------


@contextlib.contextmanager
def simulator_process(*, record_calls: bool = False) -> Iterator[str]:
    """Serve the simulator from a separate process (so its CPU is not the client's) and
    yield its base URL; requests need `Authorization: Bearer TOKEN`."""
    command = [sys.executable, "-m", "bench.simserver", "--port", "0", "--token-env", TOKEN_ENV]
    if record_calls:
        command.append("--record-calls")
    env = os.environ | {TOKEN_ENV: TOKEN}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the simulator process did not start (printed {url!r})")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def auth_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def use_token() -> None:
    """The provider file names the token's environment variable; jobtrail reads it there."""
    os.environ[TOKEN_ENV] = TOKEN


async def sim_admin(base_url: str, path: str) -> Any:
    async with (
        aiohttp.ClientSession() as session,
        session.get(base_url + path) as response,
    ):
        response.raise_for_status()
        return await response.json()


def provider_doc(
    base_url: str,
    *,
    poll_initial: str | None = None,
    poll_cap: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """providers/simulator.toml pointed at `base_url`, optionally with another [poll] policy."""
    doc = tomllib.loads(PROVIDER_FILE.read_text(encoding="utf-8"))
    doc["base_url"] = base_url
    doc["timeout"] = "10s"
    if name is not None:
        doc["name"] = name
    poll: dict[str, str] = {}
    if poll_initial is not None:
        poll["initial"] = poll_initial
    if poll_cap is not None:
        poll["cap"] = poll_cap
    if poll:
        doc["poll"] = poll
    return doc


def provider_toml(doc: dict[str, Any]) -> str:
    """A provider document as TOML text (only the shapes simulator.toml uses)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    top = [f"{k} = {value(v)}" for k, v in doc.items() if not isinstance(v, dict) or k == "auth"]
    tables = [
        f"\n[{k}]\n" + "\n".join(f"{sk} = {value(sv)}" for sk, sv in v.items())
        for k, v in doc.items()
        if isinstance(v, dict) and k != "auth"
    ]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


# -- PostgreSQL ------------------------------------------------------------------------------


def pg_available() -> str | None:
    """None if the bench server answers, else why not."""
    try:
        with psycopg.connect(f"{PG_SERVER}/postgres", connect_timeout=3, autocommit=True) as c:
            c.execute("SELECT 1")
    except psycopg.Error as exc:
        return " ".join(str(exc).split())
    return None


def fresh_pg_database(name: str = PG_DATABASE) -> str:
    """Drop and recreate database `name`; return its URL."""
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{PG_SERVER}/{name}"


def pg_version() -> str:
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


# -- measuring -------------------------------------------------------------------------------


def rss_mb(pid: int | None = None) -> tuple[float, float]:
    """(current, peak) resident memory of a process in MB, from /proc."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    values = {}
    for row in status.splitlines():
        key, _, rest = row.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


class Stopwatch:
    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started
