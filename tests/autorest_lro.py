"""Driving the AutoRest test server's `/lro/*` scenarios through jobtrail: a real ledger
(SQLite file), the real worker and real loopback HTTP to the real server
(tests/autorest_server.py). The scenario table and what each must end as live in
tests/integration/test_autorest_lro.py.

Two ways to write the provider file for a scenario, each run over every scenario:

- `profile`: the shipped profile that fits the operation, used BY NAME, pointed at the
  scenario with `JOBTRAIL_AZURE_ARM_URL` (as its comments tell a user to);
- `docs`: the ARM example of docs/providers.md for the operation's method, read out of the
  markdown, with its `base_url` and create `path` naming the scenario's URL (what an
  integrator writing from the docs changes) and nothing else.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jobtrail.clock import VirtualClock
from jobtrail.core.states import State
from jobtrail.errors import JobtrailError
from jobtrail.providers.file.config import ProviderSpec, find_provider_named, parse_provider
from jobtrail.results import open_results
from jobtrail.services.runtime import runtime

ROOT = Path(__file__).resolve().parents[1]
CLIENT_REQUEST_ID = "9C4D50EE-2D56-4CD3-8152-34347DC9F2B0"  # the CustomHeader* scenarios'
RAISES = "raises"  # what the reference client does instead of returning a value
PRODUCT = {"location": "West US"}  # the body test_lro.py sends to a PUT or PATCH


@dataclass(frozen=True, kw_only=True)
class Row:
    """One lros.js scenario and how it must end.

    `sdk` is what the reference client's poller gives (autorest.python's test_lro.py):
    the final body it returns (None: it returns None) or RAISES. `end` is the state jobtrail
    must end in, and `stored` the result it must store when it succeeds (JSON; None is a
    stored JSON null): by default what the SDK returns, or the final answer's body where the
    SDK returns None only because its swagger declares no model for it. `design`, when set,
    says why jobtrail's end differs from the SDK's on purpose."""

    key: str  # the coverage key in legacy/routes/lros.js
    method: str
    route: str  # under /lro
    sdk: Any
    end: State
    asserts: str  # the test_lro.py test (and assertion) the expected end comes from
    stored: Any = field(default=RAISES)  # RAISES here means: the same as `sdk`
    design: str = ""
    final: str = ""  # swagger's final-state-via, when it names one
    custom_header: bool = False  # CustomHeader*: every call carries CLIENT_REQUEST_ID

    @property
    def expected_result(self) -> Any:
        return self.sdk if self.stored == RAISES else self.stored

    @property
    def profile(self) -> str:
        """The shipped profile that fits the operation: its method and final-state-via
        (POST: a final GET on `Location`, azure-core's default, unless swagger says
        azure-async-operation)."""
        if self.method == "POST":
            return (
                "azure-arm-post-async"
                if self.final == "azure-async-operation"
                else "azure-arm-post"
            )
        return f"azure-arm-{self.method.lower()}"


@dataclass(frozen=True, kw_only=True)
class Ended:
    """How one scenario ended in jobtrail."""

    state: State | None  # None: refused at submit (`reason` says why)
    result: Any  # the stored result as JSON; NO_RESULT when nothing was stored
    reason: str  # the last transition's cause, for the failure message
    took: float = 0.0  # seconds (on the run's clock) from the first transition to the last

    def matches_sdk(self, row: Row) -> bool:
        """Whether jobtrail ended as the reference client does: returned (succeeded, with
        the SDK's value stored when it returns one) or raised (not succeeded)."""
        if row.sdk == RAISES:
            return self.state is not State.SUCCEEDED
        if self.state is not State.SUCCEEDED:
            return False
        return row.sdk is None or self.result == row.sdk

    def as_expected(self, row: Row) -> bool:
        """Whether jobtrail ended as the row says it must (state, and stored result)."""
        if self.state is not row.end:
            return False
        if row.end is not State.SUCCEEDED:
            return True
        wanted = row.expected_result
        return self.result == wanted or (wanted is None and self.result is NO_RESULT)


NO_RESULT: Any = type("NoResult", (), {"__repr__": lambda self: "<no result stored>"})()


def docs_examples() -> dict[str, dict[str, Any]]:
    """Every TOML example of docs/providers.md, by name."""
    text = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    docs = [tomllib.loads(block) for block in re.findall(r"```toml\n(.*?)```", text, re.S)]
    return {doc["name"]: doc for doc in docs}


def docs_spec(row: Row, origin: str, examples: dict[str, dict[str, Any]]) -> ProviderSpec:
    """The docs' ARM example for the row's operation, pointed at the scenario."""
    name = row.profile
    doc = json.loads(json.dumps(examples[name]))
    doc["base_url"] = origin
    doc["create"]["path"] = "/lro" + row.route
    return parse_provider(doc)


def profile_spec(row: Row, origin: str, monkeypatch: pytest.MonkeyPatch) -> ProviderSpec:
    """The shipped profile, by name, with JOBTRAIL_AZURE_ARM_URL naming the scenario."""
    monkeypatch.setenv("JOBTRAIL_AZURE_ARM_URL", f"{origin}/lro{row.route}")
    return find_provider_named(row.profile, search=str(ROOT / "no-local-providers"))


async def run(specs: list[tuple[Row, ProviderSpec]], tmp_path: Path) -> dict[str, Ended]:
    """Submit every scenario, run the worker until nothing is left to do (on a virtual
    clock: backoff takes no wall time, the HTTP calls are real), and read how each ended."""
    clock = VirtualClock()
    tmp_path.mkdir(parents=True, exist_ok=True)  # a new ledger's folder must exist
    db, data = str(tmp_path / "ledger.db"), tmp_path / "data"
    ended = {}
    async with runtime(db, data, clock=clock, idle_poll=24 * 3600) as rt:
        results = open_results(None, data_dir=data, ledger=db)
        ops = {}
        for row, spec in specs:
            body = PRODUCT if row.method in ("PUT", "PATCH") else None
            headers = {"x-ms-client-request-id": CLIENT_REQUEST_ID} if row.custom_header else None
            try:
                op = await rt.ledger.submit(spec, body, headers=headers, actor="test", key=row.key)
            except JobtrailError as exc:
                ended[row.key] = Ended(state=None, result=NO_RESULT, reason=f"submit: {exc}")
                continue
            ops[row.key] = op.operation_id
        await rt.worker.run(until_idle=True)
        for key, operation_id in ops.items():
            op = await rt.ledger.get(operation_id)
            result = NO_RESULT
            if op.result is not None and op.result.location is not None:
                result = _json(await results.read(op.result.location))
            history = await rt.ledger.store.history(operation_id)
            reason = history[-1].cause if history else ""
            took = (history[-1].at - history[0].at).total_seconds() if history else 0.0
            ended[key] = Ended(state=op.state, result=result, reason=str(reason), took=took)
    return ended


def _json(content: bytes) -> Any:
    """A stored result as JSON; one that is not JSON (0 bytes, say) as a marker saying so."""
    try:
        return json.loads(content)
    except ValueError:
        return f"<{len(content)} bytes, not JSON: {content[:60]!r}>"
