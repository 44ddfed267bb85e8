"""The docs' pointers lead somewhere: every relative link of the README and docs/ names a file
that exists (and, with `#anchor`, a heading of it), and every docs page the source names (in a
comment, an error or a `--help`: `docs/NAME.md`, `jobtrail docs NAME`) is one that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slugs(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in slugs(where):
            broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_relative_link_of_the_docs_resolves() -> None:
    """A link to a page that moved (docs/guarantees.md split into docs/guarantees/) or to a
    heading renamed since is named here."""
    assert len(PAGES) > 10
    broken = [line for page in PAGES for line in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    """The check above can fail: a missing page and a missing heading are both named."""
    (tmp_path / "a.md").write_text("# A\n\n[b](b.md) [self](#nowhere) [ok](#a)\n")
    assert [line.split(" (")[-1] for line in broken_links(tmp_path / "a.md", tmp_path)] == [
        "no such file)",
        "no such heading)",
    ]


def test_every_docs_page_the_source_names_exists() -> None:
    """`docs/NAME.md` in a comment or message and `jobtrail docs NAME` in a help text name a
    page of docs/ (`jobtrail docs guarantees` is docs/guarantees/index.md)."""
    missing = []
    for source in sorted((ROOT / "src" / "jobtrail").rglob("*.py")):
        text = source.read_text(encoding="utf-8")
        named = set(re.findall(r"docs/([a-z][a-z/-]*\.md)", text))
        named |= {f"{n}.md" for n in re.findall(r"jobtrail docs ([a-z][a-z/-]*)", text)}
        for name in named:
            page = ROOT / "docs" / name
            if not page.exists() and not (page.with_suffix("") / "index.md").exists():
                missing.append(f"{source.relative_to(ROOT)}: docs/{name}")
    assert not missing, "\n".join(missing)
