"""Hostile answers, pure helpers: job ids that are not one URL path segment are malformed;
text from a provider is neutralized for terminals and stays exact in JSON."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from jobtrail.core import outcomes as o
from jobtrail.errors import ProviderConfigError
from jobtrail.presentation.text import json_text, shown, shown_lines
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.file.spec import Cookies
from jobtrail.providers.http import lookup, parse

ROOT = Path(__file__).resolve().parents[2]
SPEC = parse_provider(tomllib.loads((ROOT / "providers" / "simulator.toml").read_text()))
assert SPEC.listing is not None
LISTING = SPEC.listing

UNSAFE_IDS = [
    ".",
    "..",
    "a/b",
    "../job_1",
    "a\\b",
    "a?b",
    "a#b",
    "%2e%2e",
    "%2E%2e",
    ".%2e",
    "%2e",
    "job%2Fother",
    "%252e%252e",
    "%25252e",
    "job\x1b[31m",
    "job\u202e",
    "job\x9b",
    "",
    "   ",
]
SAFE_IDS = ["job_5b5c76c7", "a.b", "...", "v1.2", "job 7", "job%20seven", "日本-7"]


def _create(job_id: object) -> o.CallOutcome:
    body = json.dumps({"job_id": job_id, "state": "queued"}).encode()
    return parse.parse_create(SPEC, 202, {}, body)


@pytest.mark.parametrize("job_id", UNSAFE_IDS)
def test_an_id_that_is_not_one_path_segment_makes_the_create_ambiguous(job_id: str) -> None:
    """A create answer whose job id would change a URL path is malformed: ambiguous."""
    outcome = _create(job_id)
    assert isinstance(outcome, o.Ambiguous), outcome
    assert "job id" in outcome.reason


@pytest.mark.parametrize("job_id", SAFE_IDS)
def test_ordinary_ids_are_accepted(job_id: str) -> None:
    """Dots inside an id, spaces and percent escapes of harmless characters are fine."""
    outcome = _create(job_id)
    assert isinstance(outcome, o.Accepted) and outcome.job_id == job_id


@pytest.mark.parametrize("job_id", UNSAFE_IDS)
def test_a_listed_id_that_is_not_one_path_segment_is_unreadable(job_id: str) -> None:
    """The reconciliation lookup refuses the same ids: it cannot adopt `..` either."""
    body = json.dumps({"data": [{"job_id": job_id}]}).encode()
    outcome = lookup.parse_list(LISTING, SPEC, 200, {}, body)
    assert isinstance(outcome, o.Ambiguous), outcome


@pytest.mark.parametrize("job_id", UNSAFE_IDS)
def test_unsafe_segment_says_why(job_id: str) -> None:
    """The helper names the problem for every unsafe id and nothing for safe ones."""
    assert parse.unsafe_segment(job_id)


@pytest.mark.parametrize("job_id", SAFE_IDS)
def test_unsafe_segment_passes_safe_ids(job_id: str) -> None:
    """Safe ids have no objection."""
    assert parse.unsafe_segment(job_id) is None


CONTROLS = {
    "\x1b": "\\x1b",
    "\x07": "\\x07",
    "\r": "\\x0d",
    "\x08": "\\x08",
    "\n": "\\x0a",
    "\x7f": "\\x7f",
    "\x9b": "\\x9b",
    "\u202e": "\\u202e",
    "\u2066": "\\u2066",
    "\u200f": "\\u200f",
    "\u2028": "\\u2028",
    "\U000e0041": "\\U000e0041",
}


@pytest.mark.parametrize(("raw", "visible"), CONTROLS.items())
def test_shown_turns_each_control_into_a_visible_escape(raw: str, visible: str) -> None:
    """Controls, C1, DEL, bidi and separators become visible escapes, nothing is dropped."""
    assert shown(f"run{raw}ning") == f"run{visible}ning"


def test_shown_keeps_printable_text_and_is_idempotent() -> None:
    """Accents, CJK, emoji and brackets are untouched; showing twice changes nothing."""
    plain = "café 日本 🚀 [bold]x[/bold] \\x1b"
    assert shown(plain) == plain
    hostile = "ok\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\r\u202e"
    assert shown(shown(hostile)) == shown(hostile)
    assert shown(hostile).isprintable()


def test_shown_lines_keeps_our_line_breaks_only() -> None:
    """Line breaks of a multi-line text stay; escapes inside each line are shown."""
    assert shown_lines("a\x1b[2J\nb\r") == "a\\x1b[2J\nb\\x0d"


def test_json_text_is_exact_json_with_nothing_raw() -> None:
    """JSON output decodes to the same strings, but carries no raw C1, DEL or bidi."""
    document = {"state": "done\x1b[2J\x9b0m\u202e\x7f\U000e0041", "name": "café 日本"}
    text = json_text(document)
    assert json.loads(text) == document
    assert all(c.isprintable() or c == "\n" for c in text)
    assert "café 日本" in text


def test_the_provider_file_chooses_cookies_ignored_or_per_operation() -> None:
    """`cookies` defaults to ignore, accepts "per-operation", and refuses anything else
    (a shared jar is not on offer)."""
    document = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text())
    assert parse_provider(document).cookies is Cookies.IGNORE
    chosen = parse_provider(document | {"cookies": "per-operation"})
    assert chosen.cookies is Cookies.PER_OPERATION
    for wrong in ("shared", True, "keep"):
        with pytest.raises(ProviderConfigError, match="cookies must be"):
            parse_provider(document | {"cookies": wrong})
