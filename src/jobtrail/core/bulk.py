"""Bulk actions: one person's cancel, extend or mark-failed of many operations at once (the
dashboard's filtered list), and the rules that say how many, what each item's outcome is,
and when the whole action has settled.

Each item goes through the same ledger verb and action policy as the single action; the
bulk record (written once, after every item was tried) keeps each item's outcome: done,
refused (the action policy, or the ledger, said no: why) or skipped (the action does not
apply to that operation in its state: why). A bulk action is settled once every item is:
refused and skipped items at once, done ones when what was asked has its final word (a
cancel: when the operation's automation ends, by the provider's confirmation or
otherwise; an extend or a mark-failed: at once)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from jobtrail.core.model import Operation

BULK_CAP = 100  # operations per bulk action (docs/dashboard.md)
BULK_PREFIX = "bulk_"


class BulkAction(StrEnum):
    CANCEL = "cancel"
    EXTEND_RESULT = "extend-result"  # the result deadline of result_timed_out operations
    EXTEND_CANCEL = "extend-cancel"  # the cancel deadline of cancellation_unconfirmed ones
    MARK_FAILED = "mark-failed"  # needs_human and result_validation_failed operations

    @property
    def words(self) -> str:
        """The action as a sentence says it: "extend the result deadline"."""
        return _WORDS[self]


_WORDS = {
    BulkAction.CANCEL: "cancel",
    BulkAction.EXTEND_RESULT: "extend the result deadline",
    BulkAction.EXTEND_CANCEL: "extend the cancel deadline",
    BulkAction.MARK_FAILED: "mark failed",
}


class ItemOutcome(StrEnum):
    DONE = "done"
    REFUSED = "refused"
    SKIPPED = "skipped"


@dataclass(frozen=True, kw_only=True)
class BulkItem:
    operation_id: str
    outcome: ItemOutcome
    why: str  # what was done, or why not, in words


@dataclass(frozen=True, kw_only=True)
class BulkRecord:
    """One bulk action as the ledger keeps it: written once, after every item was tried."""

    bulk_id: str
    actor: str
    action: BulkAction
    reason: str
    created_at: datetime
    items: tuple[BulkItem, ...]
    # What was asked: the filter (state, provider, actor, key, from, until) when "all that
    # match" was chosen, the duration of an extend.
    asked: dict[str, Any]

    def count(self, outcome: ItemOutcome) -> int:
        return sum(1 for item in self.items if item.outcome is outcome)


def item_settled(action: BulkAction, item: BulkItem, op: Operation | None) -> bool:
    """Whether `item` has its final word: `op` is its operation as it stands now (None:
    pruned since, so nothing more can happen to it)."""
    if item.outcome is not ItemOutcome.DONE or op is None:
        return True
    if action is BulkAction.CANCEL:
        return op.state.ends_automation
    return True


def too_many(count: int) -> str | None:
    """Why `count` operations are too many for one bulk action, or None."""
    if count <= BULK_CAP:
        return None
    return (
        f"{count} operations match; one bulk action takes at most {BULK_CAP}: narrow the "
        "filter (state, provider, actor, key, time) or select them one by one"
    )
