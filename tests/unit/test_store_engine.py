"""The store's algorithms are written once (store/engine.py, conn.py, notices.py, commit.py,
prune.py): each dialect class defines only the abstract hooks and verbs of `Store` and its
own plumbing, and the queries the algorithms run have the same names in both dialects."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from jobtrail.store.engine import Store
from jobtrail.store.postgres import PostgresStore
from jobtrail.store.sqlite import SqliteStore

# What a dialect class defines of `Store` (abstract there): how it runs work, passes arrays
# and lease clocks, reads the ledger's clock, guards one change's update, leases (claim,
# renew, release) and closes. Everything else is Store's, written once.
HOOKS = frozenset(
    {
        "_read",
        "_write",
        "array",
        "lease_clock",
        "ledger_now",
        "update_statement",
        "claim_due",
        "renew",
        "release",
        "close",
    }
)
# A dialect's own plumbing: how it opens, runs work on its thread or pool, migrates.
PLUMBING = {
    SqliteStore: {"open", "__init__", "_call", "_transaction", "_migrate", "backup"},
    PostgresStore: {"open", "__init__", "_run", "_explain", "_agree", "_rows", "_read_clock"},
}
# Queries only one dialect has, each a part of a hook whose statements differ in shape:
# SQLite has no data-modifying CTE (its claim is four statements, PostgreSQL's one) and
# builds each change's update from the columns it moves; PostgreSQL's chain head is a row
# of its own and its relaxed commit a SET LOCAL (SQLite's is a PRAGMA outside the BEGIN).
ONLY = {
    SqliteStore: {
        "claim",
        "claimable",
        "claimable_drives",
        "claimable_only",
        "extend_tenure",
        "new_tenure",
        "renew_lease_row",
        "owner_guard",
        "poll_on_release",
        "poll_unless_leased",
        "poll_while_leased",
        "release_columns",
        "request_poll",
    },
    PostgresStore: {
        "claim_due",
        "claim_due_drives",
        "claim_one",
        "claim_one_drives",
        "bound_session",  # each session's liveness bound (dead_after), set on connecting
        "move_audit_head",
        "relax_commit",
        "ledger_clock",  # the server's clock, read on its own when no claim brought it
    },
}


def defined(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if callable(value) or isinstance(value, classmethod | staticmethod | property)
    }


def not_hooks(cls: type) -> set[str]:
    """What a dialect class defines beyond the hooks and its plumbing: an algorithm of its
    own, or one of Store's written again."""
    return defined(cls) - HOOKS - PLUMBING.get(cls, set())


def test_the_hooks_are_what_store_leaves_abstract() -> None:
    """`Store` cannot run without a dialect: its abstract members are exactly the hooks."""
    assert Store.__abstractmethods__ == HOOKS


def test_each_dialect_defines_only_the_named_hooks() -> None:
    for dialect in (SqliteStore, PostgresStore):
        assert issubclass(dialect, Store)
        assert not_hooks(dialect) == set(), dialect.__name__
        # and none of its plumbing replaces an algorithm of the store
        assert not (PLUMBING[dialect] - {"__init__"}) & defined(Store), dialect.__name__
        assert defined(dialect) >= HOOKS, dialect.__name__  # every hook supplied
        assert not dialect.__abstractmethods__, dialect.__name__


def test_the_check_refuses_an_algorithm_written_again() -> None:
    """A dialect that writes `commit` (or any verb) itself is caught."""

    class Again(SqliteStore):
        async def commit(self, changes: Any) -> Any:
            return []

        def _close_runs(self) -> None: ...

    PLUMBING[Again] = PLUMBING[SqliteStore]
    try:
        assert not_hooks(Again) == {"commit", "_close_runs"}
    finally:
        del PLUMBING[Again]


def test_query_names_are_the_same_in_both_dialects() -> None:
    sqlite, postgres = set(SqliteStore.Q), set(PostgresStore.Q)
    shared = sqlite & postgres
    assert sqlite - shared == ONLY[SqliteStore]
    assert postgres - shared == ONLY[PostgresStore]
    assert set(SqliteStore.Q_PRUNE) == set(PostgresStore.Q_PRUNE)


def test_the_algorithms_run_only_shared_queries() -> None:
    """Every query the store's shared modules name exists in both dialects."""
    shared = set(SqliteStore.Q) & set(PostgresStore.Q)
    folder = resources.files("jobtrail.store")
    named: set[str] = set()
    for module in ("engine.py", "conn.py", "notices.py", "commit.py", "prune.py"):
        text = (folder / module).read_text(encoding="utf-8")
        named |= set(re.findall(r'Q(?:_PRUNE)?\["(\w+)"\]', text))
        named |= set(re.findall(r'self\._(?:select|operation)\(\s*"(\w+)"', text))
    commit_appends = {"insert_attempt", "finish_attempt", "insert_transition"}
    commit_appends |= {"insert_observation", "release_lease_row"}
    named |= commit_appends
    assert "update_operation" not in named  # a hook: update_statement
    assert named, "no query names found: the pattern no longer matches the modules"
    prune_names = set(SqliteStore.Q_PRUNE) & set(PostgresStore.Q_PRUNE)
    assert named - shared - prune_names == set()
