"""Bulk actions (core/bulk.py): cancel, extend or mark failed many operations at once, each
through the same verb and action policy as the single action (Ledger.cancel, the decisions
of jobtrail.services.decisions), recorded once with every item's outcome.

A bulk action is named by the id its form carried: sent again (a reload, a double click, a
retry after a crash mid-way), an action already recorded is answered as it stands, and one
interrupted half-way is tried again without doing anything twice, because every item's
request is named after it (`BULK_ID-N`) and the ledger answers a request it recorded before
as it stands."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from jobtrail.core.allows import cancellability
from jobtrail.core.bulk import (
    BULK_PREFIX,
    BulkAction,
    BulkItem,
    BulkRecord,
    ItemOutcome,
    too_many,
)
from jobtrail.core.model import Operation
from jobtrail.errors import ActionRefused, InvalidInput, JobtrailError, NotFound, NotPermitted
from jobtrail.ledger import Ledger
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services import decisions


def check_bulk_id(bulk_id: str) -> str:
    if not (
        bulk_id.startswith(BULK_PREFIX)
        and 8 < len(bulk_id) <= 64
        and all(c.isascii() and (c.isalnum() or c == "_") for c in bulk_id)
    ):
        raise InvalidInput("the form's bulk id is missing or malformed; reload the page")
    return bulk_id


async def run_bulk(
    ledger: Ledger,
    providers: ProviderRegistry,
    *,
    bulk_id: str,
    action: BulkAction,
    operation_ids: Sequence[str],
    reason: str,
    actor: str,
    asked: dict[str, Any],
    by: timedelta | None = None,
) -> BulkRecord:
    """Try `action` on each operation of `operation_ids` for `actor`, and record the whole;
    the record already kept under `bulk_id` if there is one."""
    check_bulk_id(bulk_id)
    if (done := await ledger.bulk(bulk_id)) is not None:
        return done
    if not reason.strip():
        raise InvalidInput("a bulk action needs a reason: say why, it goes into the audit log")
    ids = list(dict.fromkeys(operation_ids))
    if not ids:
        raise InvalidInput("no operation was selected: tick some, or choose all that match")
    if (why := too_many(len(ids))) is not None:
        raise InvalidInput(why)
    items = []
    for n, operation_id in enumerate(ids):
        request = f"{bulk_id}-{n}"
        items.append(
            await _one(ledger, providers, action, operation_id, reason, actor, request, by)
        )
    record = BulkRecord(
        bulk_id=bulk_id,
        actor=actor,
        action=action,
        reason=reason,
        created_at=ledger.now(),
        items=tuple(items),
        asked=asked | ({"by": str(by)} if by is not None else {}),
    )
    await ledger.record_bulk(record)
    return record


async def _one(
    ledger: Ledger,
    providers: ProviderRegistry,
    action: BulkAction,
    operation_id: str,
    reason: str,
    actor: str,
    request: str,
    by: timedelta | None,
) -> BulkItem:
    def item(outcome: ItemOutcome, why: str) -> BulkItem:
        return BulkItem(operation_id=operation_id, outcome=outcome, why=why)

    try:
        before = await ledger.get(operation_id)
        repeat = await ledger.was_requested(before, request)
        after = await _act(ledger, providers, action, operation_id, reason, actor, request, by)
    except NotPermitted as exc:
        return item(ItemOutcome.REFUSED, str(exc))
    except NotFound:
        return item(ItemOutcome.SKIPPED, "no longer in this ledger")
    except ActionRefused as exc:
        return item(ItemOutcome.SKIPPED, str(exc))
    except JobtrailError as exc:
        return item(ItemOutcome.REFUSED, str(exc))
    if not repeat and after.version == before.version:  # asked before, by someone else
        why = cancellability(before).why if action is BulkAction.CANCEL else "nothing changed"
        return item(ItemOutcome.SKIPPED, why)
    return item(ItemOutcome.DONE, f"{action.words}: recorded; state now {after.state}")


async def _act(
    ledger: Ledger,
    providers: ProviderRegistry,
    action: BulkAction,
    operation_id: str,
    reason: str,
    actor: str,
    request: str,
    by: timedelta | None,
) -> Operation:
    if action is BulkAction.CANCEL:
        return await ledger.cancel(operation_id, actor=actor, reason=reason, request_id=request)
    if action is BulkAction.MARK_FAILED:
        done = await decisions.resolve(
            ledger,
            providers,
            operation_id,
            "mark-failed",
            actor=actor,
            reason=reason,
            request_id=request,
        )
        return done.op
    which: decisions.Deadline = "cancel" if action is BulkAction.EXTEND_CANCEL else "result"
    return await decisions.extend(
        ledger,
        operation_id,
        deadline=which,
        by=by or timedelta(hours=1),
        actor=actor,
        reason=reason,
        request_id=request,
    )
