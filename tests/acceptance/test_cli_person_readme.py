"""The README as a newcomer reads it: every link stays inside the repository, and it says
how `make demo` users get `jobtrail` on their PATH."""

from __future__ import annotations

import re

from harness import ROOT

README = ROOT / "README.md"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_relative_readme_link_resolves_inside_the_repository() -> None:
    """Each non-web link in README.md names an existing file (or heading) in the repo."""
    text = README.read_text(encoding="utf-8")
    targets = LINK.findall(text)
    assert targets
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    for target in targets:
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in headings, f"README links to a missing heading: {target}"
            continue
        resolved = (ROOT / path).resolve()
        assert resolved.is_relative_to(ROOT.resolve()), f"README links outside: {target}"
        assert resolved.exists(), f"README links to a missing file: {target}"
    assert "../shared" not in text


def test_readme_says_how_to_get_jobtrail_on_the_path() -> None:
    """`make demo` leaves jobtrail in .venv/bin; the README names the two ways to reach it."""
    text = README.read_text(encoding="utf-8")
    assert ". .venv/bin/activate" in text and ".venv/bin/jobtrail" in text
