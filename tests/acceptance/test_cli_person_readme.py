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


def test_the_readme_table_shows_every_required_option() -> None:
    """Each command row of the README table names the options the command requires."""
    import click

    from jobtrail.cli.main import cli

    rows = [
        line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `")
    ]
    context = click.Context(cli)
    checked = 0
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        commands = {name: command}
        if isinstance(command, click.Group):
            commands = {f"{name} {sub}": command.commands[sub] for sub in command.commands}
        for full, found in commands.items():
            required = [
                p.opts[0] for p in found.params if p.required and p.opts[0].startswith("--")
            ]
            row = next((r for r in rows if f"`{full} " in r or f"`{full}`" in r), None)
            if row is None or not required:
                continue
            checked += 1
            for option in required:
                assert option in row, f"README row for {full} lacks {option}: {row}"
    assert checked >= 3  # cancel, resolve, extend at least (prune has no required option)
