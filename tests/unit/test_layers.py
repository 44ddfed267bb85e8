"""The layers, held: core ← store ← ledger ← services ← surfaces (DESIGN, "Shape of the code").

Every `import` of every module under src/jobtrail (inside functions and TYPE_CHECKING blocks
too) is read with `ast` and checked: a module imports only its own layer or those below it,
the store is private to the ledger (nothing else imports jobtrail.store), siblings of one
layer stay apart (providers, results and the store know nothing of each other), and no two
packages or modules import each other round in a cycle.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# The layer of each top-level part of the package, bottom (0) to top.
LAYERS: dict[str, int] = {
    # foundation: what every layer may use
    "errors": 0,
    "clock": 0,
    "randomness": 0,
    "_version": 0,
    # the pure core
    "core": 1,
    # what the ledger stands on: the store, the providers, the result stores
    "store": 2,
    "providers": 2,
    "profiles": 2,
    "results": 2,
    # the one reader and writer of the store
    "ledger": 3,
    # services: decisions, adoption, bulk, the runtime, the worker, the words shown
    "services": 4,
    "presentation": 4,
    "worker": 4,
    # surfaces
    "cli": 5,
    "dashboard": 5,
    "agent": 5,
    "webhooks": 5,
    "client": 5,
    "integrations": 5,
    "simulator": 5,
    "plugin": 5,
    "testing": 5,
    "": 5,  # jobtrail/__init__.py, the public API
}
# Parts of one layer that must not know each other.
APART = {frozenset({"store", "providers"}), frozenset({"store", "results"})}
PRIVATE = {"store": {"store", "ledger"}}  # who may import it


def part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ""


def module_of(path: Path) -> str:
    pieces = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(pieces[:-1] if pieces[-1] == "__init__" else pieces)


def imports() -> list[tuple[str, str]]:
    """(importer, imported) for every jobtrail import in the source tree."""
    return list(_parsed())


@functools.cache
def _parsed() -> tuple[tuple[str, str], ...]:
    """The source tree's imports, parsed once per test process (13 tests read them; the
    tree does not change during a run)."""
    found = []
    for path in sorted((SRC / "jobtrail").rglob("*.py")):
        importer = module_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "jobtrail":
                    found += [(importer, f"jobtrail.{a.name}") for a in node.names]
                elif node.module.startswith("jobtrail."):
                    found.append((importer, node.module))
            elif isinstance(node, ast.Import):
                found += [(importer, a.name) for a in node.names if a.name.startswith("jobtrail")]
    return tuple(found)


def violations(edges: Iterable[tuple[str, str]]) -> list[str]:
    """What breaks the layering, one line each."""
    problems = []
    for importer, imported in edges:
        if imported.startswith("jobtrail.simulator") and part(importer) not in (
            "simulator",
            "cli",
            "testing",
        ):
            problems.append(f"{importer} imports the simulator, a tool beside jobtrail")
        a, b = part(importer), part(imported)
        if a == b:
            continue
        if a not in LAYERS or b not in LAYERS:
            problems.append(f"{importer} -> {imported}: a part with no layer (add it to LAYERS)")
            continue
        if LAYERS[b] > LAYERS[a]:
            above = f"{imported} (layer {LAYERS[b]})"
            problems.append(f"{importer} (layer {LAYERS[a]}) imports {above}")
        if b in PRIVATE and a not in PRIVATE[b]:
            problems.append(f"{importer} imports {imported}: the store is private to the ledger")
        if frozenset({a, b}) in APART:
            problems.append(f"{importer} imports {imported}: {a} and {b} stay apart")
    return problems


def cycles(edges: Iterable[tuple[str, str]], key: object = part) -> list[list[str]]:
    """Import cycles, between parts (key=part) or between modules (key=str)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for importer, imported in edges:
        a, b = key(importer), key(imported)  # type: ignore[operator]
        if a != b:
            graph[a].add(b)
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(list(graph)):
        if node not in state:
            visit(node)
    return found


def _resolved(edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`from jobtrail.x import y` names the module jobtrail.x.y when there is one."""
    modules = {module_of(p) for p in (SRC / "jobtrail").rglob("*.py")}
    return [(a, b) for a, b in edges if b in modules]


def test_every_import_respects_the_layers() -> None:
    """No module imports a layer above its own, nor the store unless it is the ledger."""
    assert violations(imports()) == []


def test_no_two_parts_import_each_other() -> None:
    """No cycle between the package's parts (results and worker, say)."""
    assert cycles(imports()) == []


@pytest.mark.parametrize("package", ["store", "ledger", "core", "providers"])
def test_no_module_cycle_inside_the_lower_layers(package: str) -> None:
    """No two modules of the lower layers import each other, even for type checking only
    (the store's base and retention modules once did)."""
    inside = [
        (a, b)
        for a, b in _resolved(imports())
        if part(a) == package and part(b) == package and a != f"jobtrail.{package}"
    ]
    assert cycles(inside, key=str) == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("jobtrail.cli.ops", "jobtrail.store.sqlite"),
        ("jobtrail.dashboard.web", "jobtrail.store.finding"),
        ("jobtrail.services.story", "jobtrail.store.changes"),
        ("jobtrail.core.plan", "jobtrail.ledger"),
        ("jobtrail.ledger.reading", "jobtrail.presentation.views"),
        ("jobtrail.providers.http.provider", "jobtrail.store.codec"),
        ("jobtrail.ledger.common", "jobtrail.simulator.server"),
    ],
)
def test_the_check_refuses_a_forbidden_import(importer: str, imported: str) -> None:
    """A surface importing the store, the core importing the ledger, a provider importing
    the store: each is named (the check above cannot pass by seeing nothing)."""
    assert violations([*imports(), (importer, imported)]) != []
