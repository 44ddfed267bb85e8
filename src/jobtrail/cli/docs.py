"""`jobtrail docs [PAGE]`: the documentation pages shipped in the package (the wheel holds
docs/ as `jobtrail/docs`; a checkout's editable install reads the source tree's docs/), so
that a pointer in `--help` leads somewhere for someone who installed jobtrail with pip."""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import click

from jobtrail.cli.context import fail, say


def pages() -> dict[str, Traversable]:
    """The shipped pages by name (`dashboard` for dashboard.md, `guarantees` for
    guarantees/index.md, `guarantees/leases` for guarantees/leases.md)."""
    packaged = resources.files("jobtrail") / "docs"
    folder: Traversable = packaged
    if not packaged.is_dir():  # an editable install: the checkout's docs/
        folder = Path(str(resources.files("jobtrail"))).parents[1] / "docs"
    if not folder.is_dir():
        return {}
    found: dict[str, Traversable] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".md"):
            found[entry.name.removesuffix(".md")] = entry
        elif entry.is_dir():  # a page split in parts: `guarantees` (its index), `guarantees/leases`
            for part in entry.iterdir():
                if part.name.endswith(".md"):
                    name = part.name.removesuffix(".md")
                    found[entry.name if name == "index" else f"{entry.name}/{name}"] = part
    return dict(sorted(found.items()))


@click.command("docs")
@click.argument("page", required=False)
def docs(page: str | None) -> None:
    """Print a documentation page shipped with jobtrail (PAGE: dashboard, states,
    providers, guarantees, guarantees/leases...); without PAGE, list them."""
    found = pages()
    if not found:
        fail("no documentation pages are installed with this jobtrail")
    if page is None:
        for name, entry in found.items():
            title = entry.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
            say(f"{name:24} {title}")
        say("\n`jobtrail docs NAME` prints one.")
        return
    name = page.removesuffix(".md").removeprefix("docs/").removesuffix("/index")
    if name not in found:
        fail(f"no page {page!r}; pages are: {', '.join(found)}")
    click.echo(found[name].read_text(encoding="utf-8"))


COMMANDS = [docs]
