"""The docs say what a pip user must install, where the commands that need it are: the
`mcp`, `aws` and `s3` extras beside their commands in the README, the `mcp` extra where
docs/agents.md starts, and what docs/python.md's pytest example needs."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2]


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_readme_names_each_extra_beside_its_command() -> None:
    """The `mcp` row names `jobtrail[mcp]`; the result stores and AWS providers name theirs."""
    readme = _read("README.md")
    (mcp_row,) = re.findall(r"^\| `mcp .*$", readme, re.M)
    assert "pip install 'jobtrail[mcp]'" in mcp_row
    assert "pip install 'jobtrail[s3]'" in readme and "pip install 'jobtrail[aws]'" in readme


def test_agents_md_and_python_md_say_what_to_install() -> None:
    """docs/agents.md names the `mcp` extra in its first section; docs/python.md says the
    pytest example needs pytest-asyncio."""
    agents = _read("docs/agents.md")
    first = agents.split("\n## ", 2)[1]
    assert "pip install 'jobtrail[mcp]'" in first
    python = _read("docs/python.md")
    example = python.split("With pytest,", 1)[1].split("```", 1)[0]
    assert "pytest-asyncio" in example and "asyncio_mode" in example
