"""Text a terminal cannot act on, for every surface that prints a provider's words: the
readable form (`shown`) and the exact JSON form (`json_text`)."""

from __future__ import annotations

import json
from typing import Any


def shown(value: object) -> str:
    """`value` as text a terminal cannot act on. A provider's words reach people's screens
    (states, progress, error messages, request ids), and a terminal obeys escape sequences
    in them: clearing the screen, hiding text, OSC 8 links, a carriage return that
    overwrites a line, a right-to-left override that reorders it. Every character that is
    not printable (C0 and C1 controls, DEL, bidi and other format characters, line
    separators) is shown as a visible escape instead: `\\x1b`, `\\u202e`."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def shown_lines(text: str) -> str:
    """`shown` for text whose line breaks are ours: each line is neutralized on its own."""
    return "\n".join(shown(line) for line in text.split("\n"))


def _escaped(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_text(document: Any) -> str:
    """Exact JSON for agents, safe on a terminal too: `json` escapes C0 controls; the other
    unprintable characters (DEL, C1 controls, bidi overrides) get `\\uXXXX` escapes as well,
    which JSON readers decode to the very same string."""
    text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    if text.replace("\n", "").isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else _json_escaped(c) for c in text)


def _json_escaped(c: str) -> str:
    code = ord(c)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
