"""Who may do what: the action policy the ledger enforces for every surface (design rule 15).

An actor's kind comes from its name: `agent:…` is an agent (the MCP server names its clients
so), `worker:…` a worker, anything else a person (`cli:alice`, `dashboard:alice`). A policy
gives each kind, and optionally single actors, a scope per action:

    any    the action on any operation
    own    only on operations this actor submitted (for submit: the same as any)
    none   never (also what an action the table does not list gets)

`read` is reading an operation and its result (the agent tools `get_job`, `wait_job`,
`get_result`, `explain_job`, a task's answer; `list_jobs` lists only what may be read). The
dashboard's viewers and the CLI's people read under their own rules (the dashboard's roles,
the ledger file's permissions), not this one.

A policy file (TOML, named by `--policy` or JOBTRAIL_POLICY) looks like the default below.
It may also say who is told: a `[notify]` table (core/notify_file.py), checked with the rest
of the file wherever it is read and used by `serve` and `worker` (services/notify_setup.py).
A kind the file does not mention keeps its default; an actor's table overrides its kind's
entries one action at a time. A kind's table that does not name `read` keeps the default's
`read` (policy files written before reads were governed keep working as they did, with
agents reading their own operations).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from jobtrail.core.notify_file import NotifyFile, parse_notify
from jobtrail.errors import InvalidInput


class Action(StrEnum):
    SUBMIT = "submit"
    CANCEL = "cancel"
    RESOLVE = "resolve"  # adopt, mark failed, retry as new
    EXTEND = "extend"  # a result or cancel deadline
    PRUNE = "prune"
    READ = "read"  # an operation, its story and its result


class Kind(StrEnum):
    PERSON = "person"
    AGENT = "agent"
    WORKER = "worker"


class Scope(StrEnum):
    ANY = "any"
    OWN = "own"
    NONE = "none"


DEFAULT_POLICY = """\
# Who may do what (jobtrail's default). Scopes: any, own (operations the actor submitted), none.
[kinds.person]
submit = "any"
cancel = "any"
resolve = "any"
extend = "any"
prune = "any"
read = "any"

[kinds.agent]
submit = "any"
cancel = "own"
read = "own"

[kinds.worker]
# workers drive operations under leases; they take no decisions of their own

# [actors."agent:nightly-reports"]   # one actor, over its kind
# cancel = "any"
# read = "any"
"""


_PLURAL = {Kind.PERSON: "people", Kind.AGENT: "agents", Kind.WORKER: "workers"}


def kind_of(actor: str) -> Kind:
    if actor.startswith("agent:"):
        return Kind.AGENT
    if actor.startswith("worker:"):
        return Kind.WORKER
    return Kind.PERSON


@dataclass(frozen=True, kw_only=True)
class ActionPolicy:
    kinds: Mapping[Kind, Mapping[Action, Scope]]
    actors: Mapping[str, Mapping[Action, Scope]] = field(default_factory=dict)
    source: str = "the default policy"

    def scope(self, action: Action, actor: str) -> Scope:
        own = self.actors.get(actor, {})
        if action in own:
            return own[action]
        return self.kinds.get(kind_of(actor), {}).get(action, Scope.NONE)

    def allows(self, action: Action, actor: str, *, owner: str | None) -> bool:
        """`owner` is the actor who submitted the operation acted on (None: no operation)."""
        scope = self.scope(action, actor)
        if scope is Scope.ANY:
            return True
        if scope is Scope.OWN:
            return action is Action.SUBMIT or (owner is not None and owner == actor)
        return False

    def refusal(
        self, action: Action, actor: str, operation_id: str | None, owner: str | None
    ) -> str:
        """Why `actor` may not take `action`, and what to do about it, in one sentence."""
        what = f"operation {operation_id}" if operation_id else "this ledger"
        if self.scope(action, actor) is Scope.OWN and owner is not None:
            why = f"it may {action.value} only operations it submitted ({owner} submitted this one)"
        else:
            why = f"{_PLURAL[kind_of(actor)]} may not {action.value}"
        return (
            f"{actor} may not {action.value} {what}: {why} under {self.source}. Ask someone "
            "allowed to, or change the policy (JOBTRAIL_POLICY); the refusal is in the audit log"
        )

    @classmethod
    def default(cls) -> ActionPolicy:
        return parse_policy(DEFAULT_POLICY, "the default policy")


def _document(text: str, source: str) -> dict[str, object]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"policy {source} is not valid TOML: {exc}") from None
    unknown = set(document) - {"kinds", "actors", "notify"}
    if unknown:
        raise InvalidInput(
            f"policy {source} has unknown tables {sorted(unknown)}; use [kinds.KIND], "
            '[actors."NAME"] and [notify]'
        )
    if "notify" in document:  # a mistake there is said wherever the file is read
        parse_notify(document["notify"], source)
    return document


def parse_policy(text: str, source: str) -> ActionPolicy:
    document = _document(text, source)
    kinds: dict[Kind, Mapping[Action, Scope]] = {}
    for name, table in _tables(document.get("kinds", {}), source, "kinds").items():
        try:
            kind = Kind(name)
        except ValueError:
            raise InvalidInput(
                f"policy {source} names an unknown kind {name!r}; kinds are "
                f"{', '.join(k.value for k in Kind)}"
            ) from None
        kinds[kind] = _scopes(table, source, f"kinds.{name}")
    actors = {
        name: _scopes(table, source, f"actors.{name}")
        for name, table in _tables(document.get("actors", {}), source, "actors").items()
    }
    if source != "the default policy":
        default = ActionPolicy.default().kinds
        kinds = {
            **default,
            **{
                kind: _with_default_read(table, default.get(kind, {}))
                for kind, table in kinds.items()
            },
        }
    return ActionPolicy(kinds=kinds, actors=actors, source=source)


def _with_default_read(
    table: Mapping[Action, Scope], default: Mapping[Action, Scope]
) -> Mapping[Action, Scope]:
    if Action.READ in table or Action.READ not in default:
        return table
    return {**table, Action.READ: default[Action.READ]}


def load_policy(path: str | None) -> ActionPolicy:
    """The policy in the TOML file at `path`; the default when `path` is None or empty."""
    if not path:
        return ActionPolicy.default()
    return parse_policy(_read(path), path)


def load_notify(path: str | None) -> NotifyFile:
    """The `[notify]` table of the policy file at `path`; empty without a file or table."""
    if not path:
        return NotifyFile()
    document = _document(_read(path), path)
    return parse_notify(document["notify"], path) if "notify" in document else NotifyFile()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the policy file {path}: {exc}") from None


def _tables(value: object, source: str, where: str) -> dict[str, dict[str, object]]:
    if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
        raise InvalidInput(f"policy {source}: [{where}] must hold one table per name")
    return value


def _scopes(table: dict[str, object], source: str, where: str) -> dict[Action, Scope]:
    scopes = {}
    for name, scope in table.items():
        try:
            scopes[Action(name)] = Scope(str(scope))
        except ValueError:
            raise InvalidInput(
                f"policy {source}: [{where}] {name} = {scope!r} is not allowed; actions are "
                f"{', '.join(a.value for a in Action)} and scopes any, own, none"
            ) from None
    return scopes


def policy_from_env() -> ActionPolicy:
    """The policy JOBTRAIL_POLICY names (`--policy` sets it), or the default."""
    return load_policy(os.environ.get("JOBTRAIL_POLICY"))
