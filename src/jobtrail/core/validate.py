"""Result validation: pure checks of fetched bytes against the provider file's rules.

A 200 is not a validation. We check what the provider file lets us check: content type,
checksum (a header, or a field of a JSON body), record counts stated by the provider or
implied by the request, the JSON schema, and per-item outcomes of batches. Failed items do
not make a result invalid: they are counted and named, so the next reader need not dig.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jobtrail.core.canonical import canonical_json
from jobtrail.core.evidence import is_nothing
from jobtrail.core.lookup import find
from jobtrail.core.model import ItemCounts, ResultSummary
from jobtrail.core.words import cut_middle

MAX_FAILED_REFS = 1000


@dataclass(frozen=True, kw_only=True)
class Rules:
    content_type: str | None = None
    checksum_field: str | None = None
    schema: Any = None
    items_path: str | None = None
    item_status: str | None = None
    item_ref: str | tuple[str, ...] = "id"  # several: the first an item holds names it
    item_success: Sequence[str] = ("succeeded",)
    expected_items: int | None = None
    jsonl: bool = False  # JSON Lines: one record per line, whatever the media type says
    allow_empty: bool = False  # a result of nothing (no bytes, JSON null) may be valid


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """What was fetched, and what the provider said about it."""

    content: bytes
    content_type: str | None
    stated_checksum: str | None = None
    stated_records: int | None = None


@dataclass
class _Report:
    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def validate(candidate: Candidate, rules: Rules, location: str | None) -> ResultSummary:
    report = _Report()
    content, digest = candidate.content, hashlib.sha256(candidate.content).hexdigest()
    report.checks.append("not_empty")
    if is_nothing(content) and not rules.allow_empty:
        what = "JSON null" if content.strip() else "empty (no bytes)"
        report.problems.append(
            f"the result is {what}, and the provider does not declare that a result may be "
            "empty ([result] allow_empty)"
        )
    media = (candidate.content_type or "").split(";")[0].strip().lower() or None
    if rules.content_type:
        report.checks.append("content_type")
        if media != rules.content_type.lower():
            report.problems.append(
                f"content type is {media or 'missing'}, expected {rules.content_type}"
            )
    if candidate.stated_checksum is not None:
        report.checks.append("checksum")
        stated = candidate.stated_checksum.strip().lower().removeprefix("sha256:")
        stated = stated.removeprefix("sha256=")
        if not hmac.compare_digest(stated, digest):
            report.problems.append(
                f"checksum mismatch: provider stated {stated[:16]}…, "
                f"content hashes to {digest[:16]}…"
            )
    known = len(report.problems)
    rows, items = _records(content, media, rules, report)
    if candidate.stated_records is not None:
        _stated_count(candidate.stated_records, rows, media, report, unread=known)
    if rows is not None and rules.expected_items is not None:
        report.checks.append("expected_items")
        if rows != rules.expected_items:
            report.problems.append(
                f"{rows} records, but the request asked for {rules.expected_items}"
            )
    return ResultSummary(
        valid=not report.problems,
        content_type=media,
        sha256=digest,
        size=len(content),
        location=location,
        records=rows,
        items=items,
        checks=tuple(report.checks),
        problems=tuple(report.problems),
    )


def _stated_count(
    stated: int, rows: int | None, media: str | None, report: _Report, *, unread: int
) -> None:
    """The provider's record count against the records read. A declared check is applied or
    it fails, never silently skipped: a result that cannot be counted fails it (unless its
    reading already failed, `unread` being the number of problems before it)."""
    report.checks.append("record_count")
    if rows is None and len(report.problems) == unread:
        report.problems.append(
            f"the provider stated {stated} records, but a {media or 'untyped'} result cannot "
            "be counted (a JSON array, CSV or JSON Lines can)"
        )
    elif rows is not None and rows != stated:
        report.problems.append(f"{rows} records, but the provider stated {stated}")


def _records(
    content: bytes, media: str | None, rules: Rules, report: _Report
) -> tuple[int | None, ItemCounts | None]:
    """Count records (and item outcomes) of CSV and JSON results."""
    is_json = media is not None and (media == "application/json" or media.endswith("+json"))
    is_csv = media in ("text/csv", "application/csv")
    if not (is_json or is_csv or rules.jsonl or rules.schema is not None):
        return None, None
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        report.problems.append("the result is not UTF-8 text")
        return None, None
    if rules.jsonl:
        return _jsonl_records(text, rules, report)
    if is_csv:
        return _csv_records(text, rules, report)
    return _json_records(text, rules, report)


def _jsonl_records(
    text: str, rules: Rules, report: _Report
) -> tuple[int | None, ItemCounts | None]:
    """JSON Lines (batch results): each non-blank line one JSON object, one item."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            report.problems.append(f"line {number} of the JSON Lines result is not JSON")
            return None, None
        if not isinstance(row, dict):
            report.problems.append(f"line {number} of the JSON Lines result is not an object")
            return None, None
        rows.append(row)
    report.checks.append("jsonl")
    return len(rows), _items(rows, rules, report)


def _csv_records(text: str, rules: Rules, report: _Report) -> tuple[int | None, ItemCounts | None]:
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:
        report.problems.append(f"the CSV result cannot be read: {exc}")
        return None, None
    report.checks.append("csv")
    return len(rows), _items(rows, rules, report)


def _json_records(text: str, rules: Rules, report: _Report) -> tuple[int | None, ItemCounts | None]:
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        report.problems.append("the result is not valid JSON")
        return None, None
    report.checks.append("json")
    if rules.checksum_field and isinstance(document, dict):
        _body_checksum(document, rules.checksum_field, report)
    if rules.schema is not None:
        _schema(document, rules.schema, report)
    listed: Any = find(document, rules.items_path) if rules.items_path else document
    if not isinstance(listed, list):
        return None, None
    rows = [item for item in listed if isinstance(item, dict)]
    return len(listed), _items(rows, rules, report)


def _body_checksum(document: dict[str, Any], name: str, report: _Report) -> None:
    """A checksum field covers the canonical JSON of the rest of the document."""
    report.checks.append("checksum")
    stated = document.get(name)
    rest = {k: v for k, v in document.items() if k != name}
    digest = hashlib.sha256(canonical_json(rest).encode()).hexdigest()
    if not isinstance(stated, str) or stated.lower().removeprefix("sha256:") != digest:
        report.problems.append(f"checksum field `{name}` does not match the content")


_SCHEMA_SHOWN = 300  # characters of a schema error kept (its beginning and its reason)
_PATH_SHOWN = 120  # characters of the path to the failing value


def _schema(document: Any, schema: Any, report: _Report) -> None:
    import jsonschema  # imported on use: only results with a schema pay for it

    report.checks.append("schema")
    try:
        jsonschema.validate(document, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        # the reason ends the message ("'…' is not of type 'integer'"): cut the middle
        why = cut_middle(exc.message, _SCHEMA_SHOWN)
        report.problems.append(f"schema: at {cut_middle(where, _PATH_SHOWN)}: {why}")
    except jsonschema.SchemaError as exc:
        report.problems.append(f"the provider file's schema is itself invalid: {exc.message}")


def _items(rows: Sequence[dict[str, Any]], rules: Rules, report: _Report) -> ItemCounts | None:
    if rules.item_status is None:
        return None
    report.checks.append("items")
    outcomes = Counter[str]()
    failed_refs: list[str] = []
    succeeded = 0
    for index, row in enumerate(rows, 1):
        found = find(row, rules.item_status)
        status = "" if found is None else str(found).strip()
        outcomes[status] += 1
        if status in rules.item_success:
            succeeded += 1
        elif len(failed_refs) < MAX_FAILED_REFS:
            failed_refs.append(str(_ref(row, rules.item_ref) or f"#{index}"))
    return ItemCounts(
        total=len(rows),
        succeeded=succeeded,
        failed=len(rows) - succeeded,
        failed_refs=tuple(failed_refs),
    )


def _ref(row: Any, paths: str | tuple[str, ...]) -> Any:
    for path in (paths,) if isinstance(paths, str) else paths:
        found = find(row, path)
        if found is not None:
            return found
    return None
