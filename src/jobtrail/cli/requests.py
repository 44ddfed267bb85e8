"""What `submit` reads from a person: the body (JSON text, @FILE, @- for stdin), headers
(`Name: value`) and path values (`NAME=VALUE`), each refused in one sentence when malformed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jobtrail.errors import InvalidInput


def parse_body(text: str) -> Any:
    if text.startswith("@"):
        name = text[1:]
        if not name:
            raise InvalidInput("--body @ needs a file name after the @ (or @- for stdin)")
        where = "stdin" if name == "-" else f"the body file {name}"
        try:
            raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {where}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                f"{exc.start}); save it as UTF-8 JSON"
            ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"the body is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def parse_headers(values: tuple[str, ...]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise InvalidInput(f"write headers as 'Name: value', got {value.split(':')[0]!r}…")
        headers[name.strip()] = content.strip()
    return headers


def parse_path_values(values: tuple[str, ...]) -> dict[str, str]:
    """`--path group=rg1 --path name=w1`; each value is checked by the ledger."""
    found = {}
    for value in values:
        name, sep, content = value.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(f"write path values as NAME=VALUE, got {value[:40]!r}")
        found[name.strip()] = content
    return found
