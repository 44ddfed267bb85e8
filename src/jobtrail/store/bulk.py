"""Bulk actions in both stores (migration 0016; queries in sql/<dialect>/bulk.sql): one row
per action, its items as JSON text, converted here with the store's own time codec."""

from __future__ import annotations

import json
from typing import Any

from jobtrail.core.bulk import BulkAction, BulkItem, BulkRecord, ItemOutcome
from jobtrail.store.codec import Codec


def bulk_row(codec: Codec, record: BulkRecord) -> dict[str, Any]:
    document = {
        "reason": record.reason,
        "asked": record.asked,
        "items": [
            {"operation_id": i.operation_id, "outcome": i.outcome.value, "why": i.why}
            for i in record.items
        ],
    }
    return {
        "bulk_id": record.bulk_id,
        "actor": record.actor,
        "action": record.action.value,
        "created_at": codec.t_out(record.created_at),
        "document": json.dumps(document, ensure_ascii=False, sort_keys=True),
    }


def bulk_record(codec: Codec, row: Any) -> BulkRecord:
    created = codec.t_in(row["created_at"])
    assert created is not None
    document = json.loads(row["document"])
    return BulkRecord(
        bulk_id=row["bulk_id"],
        actor=row["actor"],
        action=BulkAction(row["action"]),
        reason=document["reason"],
        created_at=created,
        asked=document["asked"],
        items=tuple(
            BulkItem(
                operation_id=item["operation_id"],
                outcome=ItemOutcome(item["outcome"]),
                why=item["why"],
            )
            for item in document["items"]
        ),
    )
