"""The one SQL loader: named sections, comments dropped, placeholders filled or kept."""

from __future__ import annotations

import re

import pytest

from jobtrail.store import queries as q
from jobtrail.store.postgres import Q as POSTGRES
from jobtrail.store.sqlite import Q as SQLITE


def test_sections_are_read_without_comments_or_final_semicolon() -> None:
    """Every section of both dialects loads with its SQL only: no `--` line, no last `;`."""
    for dialect in ("sqlite", "postgres"):
        for file in ("queries.sql", "prune.sql"):
            for name, sql in q.load_queries(dialect, file).items():
                assert sql and not sql.endswith(";"), (dialect, file, name)
                assert not any(line.startswith("--") for line in sql.splitlines())


def test_fill_sets_named_placeholders_and_keeps_the_others() -> None:
    """Placeholders named in `fill` are set when loaded; the rest stay for each call."""
    update = SQLITE["update_operation"]
    assert "{store_decided}" not in update and "RETURNING version" in update
    assert set(re.findall(r"\{(\w+)\}", update)) == {"assigned", "poll", "release", "guard"}
    assert "{" not in SQLITE["get"] and "{" not in POSTGRES["claim_one"]


def test_a_repeated_section_name_is_refused() -> None:
    """Two sections of one name would let the second silently replace the first."""
    text = "-- name: get\nSELECT 1;\n-- name: get\nSELECT 2;\n"
    with pytest.raises(ValueError, match="two sections 'get'"):
        q.sections(text, "sql/sqlite/queries.sql")
