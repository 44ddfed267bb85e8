"""The AWS providers' listings, as a census reads them (providers/code.py: `list_jobs`): one
page of a List action, each item read as a `Listed` job with the marker jobtrail placed on
it, the page's request described as an attempt records it (never a credential)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.census import Listed
from jobtrail.core.classify import classify
from jobtrail.core.model import AttemptKind
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.aws.calls import AwsCalls, Failure
from jobtrail.providers.code.contract import Listing

# The shape of an execution name jobtrail gives (the token: `idem_` + 32 base32 characters)
TOKEN_NAME = re.compile(r"idem_[A-Za-z0-9]{32}")
# A Bedrock job name built from an operation id (`op_` + ULID -> `jobtrail-op-` + ULID)
BEDROCK_NAME = re.compile(r"jobtrail-op-([0-9A-Za-z]{26})")

Read = Callable[[dict[str, Any]], Listed | None]


async def listed_page(
    calls: AwsCalls, action: str, params: dict[str, Any], cursor: str | None, read: Read
) -> Listing:
    """One page of `action` (its items under the answer's one list), from `cursor`."""
    sent = dict(params, **({"nextToken": cursor} if cursor is not None else {}))
    request = {"service": calls.service, "endpoint": calls.where(), "action": action, **params}
    answer = await calls.invoke(action, sent)
    if isinstance(answer, Failure):
        outcome = classify(AttemptKind.RECONCILE, answer)
        return Listing(outcome=outcome, request=request, detail=answer.detail)
    items = next((v for v in answer.body.values() if isinstance(v, list)), [])
    jobs = [read(item) for item in items if isinstance(item, dict)]
    following = answer.body.get("nextToken")
    return Listing(
        outcome=o.Found(job_ids=(), request_id=answer.request_id),
        jobs=tuple(job for job in jobs if job is not None),
        cursor=following if isinstance(following, str) and following else None,
        request=request,
        detail=answer.detail,
    )


def token_marker(name: Any) -> str | None:
    """An execution name that has our token's shape is our marker (the token itself)."""
    return name if isinstance(name, str) and TOKEN_NAME.fullmatch(name) else None


def operation_marker(name: Any) -> str | None:
    """A job name jobtrail built from an operation id names that operation."""
    built = BEDROCK_NAME.fullmatch(name) if isinstance(name, str) else None
    return f"op_{built.group(1)}" if built else None


def listed(
    item: dict[str, Any],
    *,
    arn_key: str,
    marker: str | None,
    created_key: str,
    states: Mapping[str, RemoteStatus],
) -> Listed | None:
    """A listed item (its `status` read through `states`); None: one without an ARN."""
    arn, state, created = item.get(arn_key), item.get("status"), item.get(created_key)
    if not isinstance(arn, str) or not arn:
        return None
    word = state if isinstance(state, str) else None
    return Listed(
        job_id=arn,
        marker=marker,
        state=word,
        status=states.get(word, RemoteStatus.UNKNOWN) if word else RemoteStatus.UNKNOWN,
        created=created if isinstance(created, datetime) else None,
    )
