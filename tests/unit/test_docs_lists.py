"""The lists the README and the docs give are the code's: the shipped profiles, the AWS
providers, the CLI's commands, the CI's flags, and the pre-commit hooks against the
Makefile. A list that drifts from what it names fails here, naming the difference."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import click

from jobtrail.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PROFILES = {path.stem for path in (ROOT / "src" / "jobtrail" / "profiles").glob("*.toml")}
TICKED = re.compile(r"`([^`]+)`")


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _rows(text: str) -> list[list[str]]:
    """Each Markdown table row's cells (an escaped `\\|` stays inside its cell)."""
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_the_readme_lists_every_shipped_profile() -> None:
    """The README's `provider list` row names exactly src/jobtrail/profiles/*.toml."""
    (row,) = [
        cells for cells in _rows(_read("README.md")) if cells[0].startswith("`provider list`")
    ]
    named = set(TICKED.findall(row[1]))
    assert named == PROFILES, (sorted(PROFILES - named), sorted(named - PROFILES))


def test_the_profiles_table_of_docs_providers_lists_every_shipped_profile() -> None:
    """docs/providers.md's table of shipped profiles has a row for each, and no other."""
    section = _section(_read("docs/providers.md"), "## Profiles shipped with jobtrail")
    named = {name for cells in _rows(section)[1:] for name in TICKED.findall(cells[0])}
    assert named == PROFILES, (sorted(PROFILES - named), sorted(named - PROFILES))


def _aws_providers() -> set[str]:
    points = tomllib.loads(_read("pyproject.toml"))["project"]["entry-points"]
    return {
        name
        for name, target in points["jobtrail.providers"].items()
        if target.startswith("jobtrail.providers.aws.")
    }


def test_the_readme_and_docs_aws_name_every_aws_provider() -> None:
    """The README's sentence on the `aws` extra and docs/aws.md's table name each AWS code
    provider the package declares as an entry point, and no other."""
    aws = _aws_providers()
    readme = _read("README.md")
    sentence = readme.split("The AWS providers (", 1)[1].split(")", 1)[0]
    assert set(TICKED.findall(sentence)) == aws
    table = {cells[0].strip("`") for cells in _rows(_read("docs/aws.md"))[1:]}
    assert table == aws


def _commands() -> set[str]:
    """Every command of the `jobtrail` group, a group's subcommands as `group sub`."""
    context = click.Context(cli)
    found: set[str] = set()
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        if command.hidden:
            continue
        if isinstance(command, click.Group):
            found |= {f"{name} {sub}" for sub, each in command.commands.items() if not each.hidden}
        else:
            found.add(name)
    return found


def test_the_readme_command_table_names_every_command_and_no_other() -> None:
    """Each command (and each subcommand of `audit`, `provider`, `archive`) has its place in
    the README's command table, and the table names no command that does not exist."""
    commands = _commands()
    groups = {name.split()[0] for name in commands if " " in name}
    named: set[str] = set()
    for cells in _rows(_read("README.md")):
        if not cells[0].startswith("`"):
            continue
        for span in TICKED.findall(cells[0]):
            words = span.split()
            if words and re.fullmatch(r"[a-z][a-z-]*", words[0]):  # not OPERATION_ID|KEY
                grouped = words[0] in groups and len(words) > 1
                named.add(" ".join(words[:2]) if grouped else words[0])
    stale = named - commands - groups
    assert not stale, f"the README's command table names commands that do not exist: {stale}"
    missing = commands - named
    assert not missing, f"commands missing from the README's command table: {sorted(missing)}"


def test_contributing_lists_exactly_the_flags_ci_sets() -> None:
    """CONTRIBUTING.md's table of environment flags is the JOBTRAIL_* variables .ci/run
    exports."""
    exported = set(re.findall(r"^export (JOBTRAIL_[A-Z_]+)=", _read(".ci/run"), re.M))
    table = {
        TICKED.findall(cells[0])[0].split("=")[0]
        for cells in _rows(_read("CONTRIBUTING.md"))
        if cells[0].startswith("`JOBTRAIL_")
    }
    assert table == exported, (sorted(exported - table), sorted(table - exported))


def _recipe(makefile: str, target: str) -> list[str]:
    body = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
    return [
        line.strip().replace("$(BIN)/", ".venv/bin/")
        for line in body.splitlines()[1:]
        if line.startswith("\t")
    ]


def test_pre_commit_runs_what_make_lint_and_typecheck_run() -> None:
    """.pre-commit-config.yaml's hooks are the commands of `make lint` and `make typecheck`,
    in the same order: a commit is checked as CI checks it."""
    makefile = _read("Makefile")
    wanted = _recipe(makefile, "lint") + _recipe(makefile, "typecheck")
    entries = re.findall(r"^\s+entry: (.+)$", _read(".pre-commit-config.yaml"), re.M)
    assert entries == wanted
