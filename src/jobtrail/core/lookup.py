"""Reading a provider's documents: one contract for a dotted path into JSON and one for a
header by name, for every reader (provider files, code providers, webhooks, validation).

`find(document, "data.items.0.id")`: each dot-separated part names a member of an object
or, in a list, an index written in digits (`0` up to its length less one). A member named
by the whole path (`"response.status_code"` as one key of an item) is taken first. A path
that does not lead to a value gives `missing` (None unless asked otherwise: a JSON `null`
found at the path and a path that leads nowhere read alike unless `missing` tells them
apart). `placed` and `without` write along the same kind of path: objects only, each copied
on the way, never the caller's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()


def find(document: Any, path: str, missing: Any = None) -> Any:
    """The value at the dotted `path` in `document`, or `missing` (see the module's doc)."""
    if isinstance(document, Mapping) and path in document:
        return document[path]
    node = document
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return missing
    return node


def placed(document: Mapping[str, Any], path: str, value: Any) -> dict[str, Any] | None:
    """A copy of `document` with `value` at the dotted `path` (the objects on the way made
    where absent), or None where the path runs into something that is not an object."""
    head, _, rest = path.partition(".")
    if not rest:
        return {**document, head: value}
    inner = document.get(head, {})
    if not isinstance(inner, Mapping):
        return None
    changed = placed(inner, rest, value)
    return None if changed is None else {**document, head: changed}


def without(document: Any, path: str) -> Any:
    """A copy of `document` with nothing at the dotted `path` (as it is where nothing was)."""
    head, _, rest = path.partition(".")
    if not isinstance(document, Mapping) or head not in document:
        return document
    if not rest:
        return {k: v for k, v in document.items() if k != head}
    return {**document, head: without(document[head], rest)}


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of the header `name`, whatever the case of its name (RFC 9110: field names
    are case-insensitive), or None."""
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None
