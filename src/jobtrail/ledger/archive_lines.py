"""Binding every line of an archive to its checkpoint, and finding the lines that differ.

The checkpoint entry `prune` appends to the chain holds, under "archive", the sha256 of the
archive's header line and, for each pruned operation, the sha256 of the list of its lines'
own sha256 digests. The archive closes each operation with a "digests" line listing those
digests. Checking an archive then needs nothing but the checkpoint, itself in the chain:

* the lines of an operation hash to what was bound: intact;
* else, when the digests line still hashes to what was bound, it is authentic, and each line
  whose digest it does not list is named (altered or inserted), as are the lines it lists
  that are missing (dropped);
* else the lines and their digests were both rewritten: the operation is named.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DIGESTS = "digests"  # the line closing an operation's lines with their digests


@dataclass(frozen=True, kw_only=True)
class Line:
    number: int  # 1-based, as a person counts the archive's lines
    text: str  # exactly as read, without its newline
    kind: str  # the record's "type"
    operation_id: str | None


def line_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest_of(digests: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(digests).encode("ascii")).hexdigest()


@dataclass
class _Group:
    operation_id: str | None
    lines: list[Line] = field(default_factory=list)
    digests: Line | None = None


# C901: each kind of archive line is checked against its checkpoint digest in turn
def check_lines(lines: Sequence[Line], bound: Mapping[str, Any], seq: int) -> list[str]:  # noqa: C901
    """Problems with `lines` (the whole archive) given what checkpoint #`seq` bound."""
    problems: list[str] = []
    if not lines or lines[0].kind != "header" or line_digest(lines[0].text) != bound.get("header"):
        number = lines[0].number if lines else 1
        problems.append(
            f"archive line {number} (the header) was altered: it is not what checkpoint "
            f"#{seq} bound"
        )
    groups: list[_Group] = []
    for line in lines[1:]:
        if line.kind == "checkpoint":
            continue  # the binding itself, checked by its hash (and --ledger)
        if line.kind == "operation":
            groups.append(_Group(operation_id=line.operation_id, lines=[line]))
        elif not groups:
            problems.append(f"archive line {line.number} ({line.kind}) is outside any operation")
        elif line.kind == DIGESTS and groups[-1].digests is None:
            groups[-1].digests = line
        else:
            groups[-1].lines.append(line)
    operations = bound.get("operations")
    expected: Mapping[str, Any] = operations if isinstance(operations, Mapping) else {}
    seen: set[str] = set()
    for group in groups:
        op_id = group.operation_id
        if op_id is None or op_id not in expected or op_id in seen:
            problems.append(
                f"archive line {group.lines[0].number} starts operation {op_id}, which "
                f"checkpoint #{seq} does not bind (inserted or repeated)"
            )
            continue
        seen.add(op_id)
        problems += _check_group(group, str(expected[op_id]), seq)
    for op_id in expected:
        if op_id not in seen:
            problems.append(
                f"operation {op_id}, bound by checkpoint #{seq}, is missing from the archive"
            )
    return problems


def _check_group(group: _Group, expected: str, seq: int) -> list[str]:
    op_id = group.operation_id
    found = [line_digest(line.text) for line in group.lines]
    if digest_of(found) == expected:
        return []
    listed = _listed(group.digests)
    if listed is None or digest_of(listed) != expected:
        first, last = group.lines[0].number, group.lines[-1].number
        return [
            f"archive lines {first}-{last} of operation {op_id} were rewritten with their "
            f"digests: they are not what checkpoint #{seq} bound"
        ]
    left = Counter(listed)
    unbound = []
    for line, digest in zip(group.lines, found, strict=True):
        if left[digest] > 0:
            left[digest] -= 1
        else:
            unbound.append(line)
    missing = sum(left.values())
    what = "altered" if missing >= len(unbound) else "altered or inserted"
    problems = [
        f"archive line {line.number} (a {line.kind} line of operation {op_id}) was {what}: "
        f"it is not what checkpoint #{seq} bound"
        for line in unbound
    ]
    if missing > len(unbound):
        problems.append(
            f"{missing - len(unbound)} line(s) of operation {op_id} that checkpoint #{seq} "
            "bound are missing from the archive (dropped)"
        )
    if not problems:  # the same lines, in another order
        problems.append(
            f"the lines of operation {op_id} (archive lines {group.lines[0].number}-"
            f"{group.lines[-1].number}) were reordered: checkpoint #{seq} bound another order"
        )
    return problems


def _listed(line: Line | None) -> list[str] | None:
    if line is None:
        return None
    try:
        doc = json.loads(line.text)
    except ValueError:
        return None
    digests = doc.get("lines") if isinstance(doc, dict) else None
    if isinstance(digests, list) and all(isinstance(d, str) for d in digests):
        return digests
    return None
