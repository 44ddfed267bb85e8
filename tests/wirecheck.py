"""The wire against the ledger: after each test, the requests that crossed the recording
proxies (tests/wire.py) are compared with the attempts the test's ledgers recorded.

The rule (CONTRIBUTING.md, "The wire check"):

* A request is jobtrail's when it carries a `traceparent`: jobtrail sends its operation's
  trace id on every call. A request without one is the test's own (setting a fault on the
  simulator, creating a bucket, reading the simulator's admin endpoints) and is not compared.
  Webhook deliveries go from the provider to jobtrail and never cross a proxy.
* An operation is checked when its provider file's base URL is a proxy's, or when a request
  on the wire carries its trace id.
* Its requests on the wire, in order, must be the ledger's: one per attempt that was sent
  (not an `unsendable` one, nor one whose detail says `sent: false`), plus the status reads
  folded into an observation run (a run seen N times holds N reads and one attempt), plus
  the hops an attempt records in its detail (a token refused and sent again, a result
  link followed). For each: the method, the URL (path and query), the idempotency token
  where it travels in a header, and the trace id. For a create and a cancel, the body too:
  it must be the recorded request's body with the token and the reference at the places the
  provider file declares, and the recorded body must not hold a value of its own there.
* A worker that dies (a crash test kills it) leaves its lease unreleased: an intent whose
  outcome never came may or may not have been sent, and as many GETs as the operation has
  unreleased leases may have been sent with nothing recorded (a safe read records only its
  outcome).
* A request on the wire with a trace id no ledger of the test knows is a mismatch too,
  unless the test pruned operations without an archive (their records are gone); pruned
  operations with an archive are compared from it, packed ones from their packed rows. A
  test that opened no ledger at all (a provider called directly, as test_http_provider.py
  does) has no record to compare with, and is not checked.

Ledgers read: every SQLite ledger file under the test's tmp_path, and each PostgreSQL ledger
schema the test made (tests/stores.py snapshots it here before dropping it).
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yarl import URL

from jobtrail.core.model import Attempt, Observation, Operation, ProviderKind
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.http.placement import place, uuid_of
from jobtrail.store.sqlite_peek import _CODEC, peek
from wire import WireRequest


@dataclass
class Record:
    """One operation as its ledger holds it."""

    operation: Operation
    attempts: list[Attempt]
    observations: list[Observation]
    forged: bool = False  # its ledger was rewritten with raw SQL: not compared
    lapsed: int = 0  # leases never released: an owner that died (or the test stopped it)


# Prunes seen in the test's SQLite ledgers, less the archives found: more prunes than
# archives means operations dropped unkept (`prune --no-archive`), whose traces no ledger holds
PRUNES: list[int] = []

# Ledgers a test rewrote with raw SQL (tests/stores.py, LedgerDb.raw_execute: the forgery
# tests): they no longer say what was sent, so their operations are not compared
FORGED: set[str] = set()


# PostgreSQL ledgers read before their schema is dropped, for the test running now
SNAPSHOTS: list[Record] = []


async def snapshot(url: str) -> None:
    """Read every operation of the ledger at `url` into SNAPSHOTS (tests/stores.py)."""
    from jobtrail.store import open_store

    if not url.startswith("postgres"):
        SNAPSHOTS.extend(sqlite_file_records(Path(url)))
        return

    store = await open_store(url, create=False)
    try:
        for op in await _all_operations(store):
            attempts = await store.attempts(op.operation_id)
            seen = await store.observations(op.operation_id)
            leases = await store.leases(op.operation_id)
            lapsed = sum(1 for lease in leases if lease.released_at is None)
            SNAPSHOTS.append(Record(op, attempts, seen, url in FORGED, lapsed))
        dictionaries = await store.pack_dictionaries()
        for _, dictionary_id, data in await store.packed():
            dictionary = dictionaries.get(dictionary_id) if dictionary_id is not None else None
            SNAPSHOTS.extend(_unpacked(data, dictionary, url in FORGED))
    finally:
        await store.close()


def _unpacked(data: bytes, dictionary: Any, forged: bool) -> list[Record]:
    """A packed operation (ledger/packing.py): its records as they were before packing
    (none when a forgery test left its packed row unreadable)."""
    from jobtrail.errors import StoreError
    from jobtrail.ledger.packing import unpack

    try:
        item = unpack(data, dictionary)
    except StoreError:
        if forged:
            return []
        raise
    lapsed = sum(1 for lease in item.leases if lease.released_at is None)
    return [Record(item.operation, list(item.attempts), list(item.observations), forged, lapsed)]


async def _all_operations(store: Any) -> list[Operation]:
    found: list[Operation] = await store.list_operations(limit=1_000_000)
    return found


def sqlite_records(root: Path) -> list[Record]:
    """Every operation of every SQLite ledger file under `root`, and of every archive
    `jobtrail prune` wrote there (pruned operations are compared from their archive)."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name.endswith(".gz"):
            found += archive_records(path)
        elif path.is_file() and path.suffix not in (".json", ".toml", ".log", ".txt", ".csv"):
            found += sqlite_file_records(path)
    return found


def archive_records(path: Path) -> list[Record]:
    """The operations of a prune archive (ledger/archive.py: SQLite column form)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as file:
            lines = [json.loads(line) for line in file]
    except (OSError, ValueError):
        return []
    if not lines or lines[0].get("format") != "jobtrail-archive":
        return []
    PRUNES.append(-1)  # a prune that kept its operations here
    records: dict[str, Record] = {}
    for line in lines:
        kind, row = line.pop("type", None), line
        if kind == "operation":
            op = _CODEC.operation(row)
            records[op.operation_id] = Record(op, [], [])
        elif kind in ("attempt", "observation", "lease") and row["operation_id"] in records:
            record = records[row["operation_id"]]
            if kind == "attempt":
                record.attempts.append(_CODEC.attempt(row))
            elif kind == "observation":
                record.observations.append(_CODEC.observation(row))
            else:
                record.lapsed += row.get("released_at") is None
    return list(records.values())


def sqlite_file_records(path: Path) -> list[Record]:
    """Every operation of the SQLite ledger at `path` (none: not a ledger)."""
    try:
        with path.open("rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                return []
        conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True)
        try:
            ids = [row[0] for row in conn.execute("SELECT operation_id FROM operations")]
            unreleased = "SELECT operation_id, count(*) FROM leases WHERE released_at IS NULL"
            lapsed = dict(conn.execute(unreleased + " GROUP BY operation_id").fetchall())
            checkpoints = (
                "SELECT count(*) FROM audit_log WHERE entry LIKE '%audit.checkpoint%' "
                "AND entry NOT LIKE '%\"pack\":{%'"  # packing keeps its operations here
            )
            PRUNES.append(conn.execute(checkpoints).fetchone()[0])
            packed = _packed_rows(conn)
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return []
    forged = str(path) in FORGED or str(path.resolve()) in FORGED
    records = [r for data, dictionary in packed for r in _unpacked(data, dictionary, forged)]
    for op_id in ids:
        peeked = peek(str(path), op_id)
        if peeked is not None and peeked.operation is not None:
            found = Record(peeked.operation, peeked.attempts, peeked.observations, forged)
            found.lapsed = int(lapsed.get(op_id, 0))
            records.append(found)
    return records


def _packed_rows(conn: sqlite3.Connection) -> list[tuple[bytes, Any]]:
    """The packed rows of a SQLite ledger with their dictionaries (none before 0023)."""
    from jobtrail.store.retention import PackDictionary

    try:
        stored = conn.execute(
            "SELECT p.data, d.dictionary_id, d.digest, d.data FROM packed_operations p "
            "LEFT JOIN pack_dictionaries d ON d.dictionary_id = p.dictionary_id"
        ).fetchall()
    except sqlite3.OperationalError:
        return []  # a ledger from before migration 0023
    return [
        (data, None if d_id is None else PackDictionary(dictionary_id=d_id, digest=dg, data=dd))
        for data, d_id, dg, dd in stored
    ]


# Mismatches that are real gaps, reported and not yet fixed: each shown in the run's summary
# (never silently passed), until its fix lands and its line here is removed.
# Requests the ledger is known not to record yet, each with its reason: none today (an
# adoption refused after reading an unseen job id now records that read: Ledger.record_read).
KNOWN_GAPS: dict[str, re.Pattern[str]] = {}
# Tests whose subject is requests made behind the ledger's back on purpose: not compared.
UNCHECKED = {
    "tests/integration/test_census_vendors.py": "plants jobs through the provider object, "
    "recorded nowhere, for the census to find",
    "tests/acceptance/test_census_restore.py": "restores an older backup: the operations "
    "made since are lost from the record on purpose, for the census to find",
}
GAPS_SEEN: list[str] = []  # "test id: gap" lines, for the run's summary


def known_gap(problem: str) -> str | None:
    return next((why for why, pattern in KNOWN_GAPS.items() if pattern.search(problem)), None)


@dataclass
class Expected:
    """A request the ledger says was sent."""

    what: str  # "create attempt att_...", "folded status read of att_..."
    method: str
    target: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # the JSON document expected, or None when not compared
    path_only: bool = False  # a hop the ledger records by its path (a page, a result link)
    optional: bool = False  # an intent whose outcome never came (the worker died): sent or not

    def matches(self, request: WireRequest) -> bool:
        method, target = key(request)
        if self.path_only:
            target = target.partition("?")[0]
        return (method, target) == (self.method, self.target)


AWS = "AWS"  # an AWS SDK call, known on the wire by its action, not by its URL
DESCRIBE = "DescribeExecution"
# The REST routes of the AWS actions jobtrail calls that carry no X-Amz-Target header
_REST = (
    ("POST", re.compile(r".*/model-invocation-job/[^/]+/stop$"), "StopModelInvocationJob"),
    ("POST", re.compile(r".*/model-invocation-job$"), "CreateModelInvocationJob"),
    ("GET", re.compile(r".*/model-invocation-job/[^/]+$"), "GetModelInvocationJob"),
    ("GET", re.compile(r".*-s3/.+"), "GetObject"),
)


def key(request: WireRequest) -> tuple[str, str]:
    """How a request on the wire is matched with the ledger's: method and target, or an AWS
    call's action (its X-Amz-Target, or its REST route)."""
    target = request.header("x-amz-target")
    if target:
        return AWS, target.rpartition(".")[2]
    path = request.target.partition("?")[0]
    for method, route, action in _REST:
        if request.method == method and route.match(path) and request.header("x-amz-date"):
            return AWS, action  # signed with SigV4
    return request.method, request.target


def _target(url: str) -> str:
    """The path and query as the HTTP client writes them (yarl requotes a URL given as
    text: a recorded `%3A` in a query goes out as `:`)."""
    return URL(url).raw_path_qs


def _expected(record: Record) -> list[Expected]:
    wanted: list[Expected] = []
    first_of: dict[str, Expected] = {}
    for attempt in sorted(record.attempts, key=lambda a: a.started_at):
        request = attempt.request if isinstance(attempt.request, dict) else {}
        detail = attempt.detail if isinstance(attempt.detail, dict) else {}
        what = f"{attempt.kind.value} attempt {attempt.attempt_id} ({attempt.outcome})"
        if "action" in request and detail.get("sent") not in (False, "not sent"):
            first = Expected(what, AWS, str(request["action"]))  # an AWS SDK call
        elif "method" in request and "url" in request and detail.get("sent") is not False:
            headers = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
            first = Expected(what, request["method"], _target(request["url"]), headers)
            first.body = _body(record, attempt.kind.value)
        else:
            continue  # not sent
        first.optional = attempt.outcome in (None, "interrupted")
        wanted += [first, *_hops(first, detail)]
        first_of[attempt.attempt_id] = first
    for seen in record.observations:
        if seen.source != "status" or seen.seen_count <= 1:
            continue
        # a folded read is sent as the read that opened its run was
        read = first_of.get(seen.ref or "")
        if read is None:
            read = next((e for e in wanted if e.what.startswith("status ")), None)
        method, target = (read.method, read.target) if read else ("GET", "?")
        for _ in range(seen.seen_count - 1):
            what = f"status read folded into the run of {seen.ref}"
            wanted.append(Expected(what, method, target, read.headers if read else {}))
    return wanted


def _hops(first: Expected, detail: dict[str, Any]) -> list[Expected]:
    """The further requests of one attempt, as its detail records them."""
    what, hops = first.what, []
    if "refused_token" in detail:
        hops.append(Expected(f"{what} (sent again with a fresh token)", *_same(first)))
    for n in range(1, _count(detail.get("scanned"))):
        page = Expected(f"{what} (listing page {n + 1})", "GET", first.target.partition("?")[0])
        hops.append(page)
        page.path_only = True
    linked = detail.get("merged") if isinstance(detail.get("merged"), list) else [detail]
    for one in linked:
        if isinstance(one, dict) and isinstance(one.get("fetched_from"), str):
            hop = Expected(f"{what} (the result link)", "GET", one["fetched_from"])
            hop.path_only = True
            hops.append(hop)
    return hops + (_aws_hops(first, detail) if first.method == AWS else [])


def _aws_hops(first: Expected, detail: dict[str, Any]) -> list[Expected]:
    """The further AWS calls of one attempt, as its detail records them."""
    what, hops = first.what, []
    if "start" in detail and "describe" in detail:  # our name taken: the execution read
        hops.append(Expected(f"{what} (the execution at our name)", AWS, DESCRIBE))
    if first.target == "GetObject":  # Bedrock's result: the job read, then its output
        first.target, first.what = "GetModelInvocationJob", f"{what} (the job read)"
        if "get_object" in detail:
            hops.append(Expected(f"{what} (its output file)", AWS, "GetObject"))
    pages = detail.get("pages")
    for n in range(1, len(pages) if isinstance(pages, list) else 0):
        hops.append(Expected(f"{what} (page {n + 1})", AWS, first.target))
    if "output_location_read" in detail:
        hops.append(Expected(f"{what} (its output location)", AWS, "GetQueryExecution"))
    return hops


def _count(scanned: Any) -> int:
    return int(scanned.get("pages") or 0) if isinstance(scanned, dict) else 0


def _same(first: Expected) -> tuple[str, str, dict[str, str]]:
    return first.method, first.target, first.headers


def _body(record: Record, kind: str) -> Any:
    """The JSON body a create or cancel must carry (None: not compared)."""
    op = record.operation
    if op.provider_kind is not ProviderKind.HTTP:
        return None
    spec = parse_provider(op.provider_config)
    if kind == "cancel":
        return spec.cancel_body
    if kind != "create":
        return None
    placed = place(spec, op, op.request.body, {})
    return None if isinstance(placed, str) else placed[0]


def compare(record: Record, wire: list[WireRequest]) -> list[str]:
    """What differs between an operation's record and its requests on the wire."""
    op = record.operation
    name = f"operation {op.operation_id} (trace {op.trace_id})"
    wanted = _expected(record)
    problems = _conflicts(record)
    pool = list(wire)
    missing: list[Expected] = []
    # the attempts surely sent first, exact ones before those matched by their path
    for expected in sorted(wanted, key=lambda e: (e.optional, e.path_only)):
        match = next((r for r in pool if expected.matches(r)), None)
        if match is None:
            missing.append(expected)
            continue
        pool.remove(match)
        where = f"{name}, {expected.what}, {match.shown()}"
        problems += [f"{where}: {p}" for p in _differ(op, expected, match)]
    for expected in (e for e in missing if not e.optional):
        problems.append(
            f"{name}: the ledger records {expected.what} ({expected.method} {expected.target}), "
            "which never crossed the wire"
        )
    # A safe read records its outcome only: one in flight when its worker died left nothing.
    died = [r for r in pool if r.method == "GET"][: record.lapsed]
    for request in (r for r in pool if r not in died):
        problems.append(f"{name}: {request.shown()} crossed the wire; the ledger has no attempt")
    return problems


def _conflicts(record: Record) -> list[str]:
    """A caller's own value where jobtrail writes the token or the reference."""
    op = record.operation
    if op.provider_kind is not ProviderKind.HTTP or not isinstance(op.request.body, dict):
        return []
    from jobtrail.core.lookup import find

    spec = parse_provider(op.provider_config)
    found = []
    ours = ((spec.idempotency, op.idempotency_token), (spec.client_reference, op.operation_id))
    for placement, value in ours:
        if placement is None or not placement.field:
            continue
        given = find(op.request.body, placement.field)
        sent = uuid_of(value) if placement.uuid else value
        if given is not None and given != sent:
            found.append(
                f"operation {op.operation_id}: the recorded request holds {given!r} at "
                f"`{placement.field}`, but the wire carries jobtrail's {sent!r} there"
            )
    return found


def _differ(op: Operation, expected: Expected, sent: WireRequest) -> Iterable[str]:
    if sent.trace_id != op.trace_id:
        yield f"trace id {sent.trace_id} on the wire, {op.trace_id} in the ledger"
    tokens = {op.idempotency_token, uuid_of(op.idempotency_token)}
    recorded = {k for k, v in expected.headers.items() if v in tokens}
    on_wire = {k for k, v in sent.headers.items() if v in tokens}
    if recorded != on_wire:
        yield f"the token travels in header(s) {sorted(on_wire)}, recorded in {sorted(recorded)}"
    for name, value in expected.headers.items():  # every recorded header as it was sent
        if "[redacted]" not in value and sent.headers.get(name) != value:
            yield f"header {name}: {sent.headers.get(name)!r} sent, {value!r} recorded"
    if expected.body is not None:
        try:
            document = json.loads(sent.body) if sent.body else None
        except ValueError:
            document = "(not JSON)"
        if document != expected.body:
            yield f"body {sent.digest[:19]} is not the recorded body with jobtrail's fields"


def check(requests: list[WireRequest], records: list[Record], proxies: list[str]) -> list[str]:
    """Every mismatch between the requests that crossed the proxies and the ledgers."""
    ours = [r for r in requests if r.trace_id is not None]
    by_trace: dict[str, list[WireRequest]] = {}
    for request in ours:
        by_trace.setdefault(str(request.trace_id), []).append(request)
    problems: list[str] = []
    known: set[str] = set()
    latest: dict[str, Record] = {}  # a ledger and its backup copy: the fuller record
    for record in records:
        had = latest.get(record.operation.operation_id)
        if had is None or _size(record) > _size(had):
            latest[record.operation.operation_id] = record
    for record in latest.values():
        op = record.operation
        config = op.provider_config if isinstance(op.provider_config, dict) else {}
        settings = config.get("settings") if isinstance(config.get("settings"), dict) else {}
        base = str(config.get("base_url") or settings.get("endpoint_url") or "")
        wire = by_trace.get(op.trace_id, [])
        proxied = any(base.startswith(p) for p in proxies)
        if op.trace_id in known or not (wire or proxied):
            continue
        known.add(op.trace_id)
        if record.forged:
            continue
        problems += compare(record, wire)
    for trace, wire in by_trace.items():
        if trace not in known and sum(PRUNES) <= 0:
            shown = "; ".join(r.shown() for r in wire)
            problems.append(f"trace {trace}: no ledger of this test holds its operation: {shown}")
    return problems


def _size(record: Record) -> int:
    return len(record.attempts) + sum(o.seen_count for o in record.observations)
