"""`.ci/changelog.py` (run by `make lint`): a branch that changes src/ needs a CHANGELOG.md
line or a `No-changelog:` reason, and a clone without history or on main always passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "changelog.py"
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    who = {"NAME": "Ana", "EMAIL": "ana@example.org"}
    env.update({f"GIT_{role}_{k}": v for role in ("AUTHOR", "COMMITTER") for k, v in who.items()})
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    return env


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=_env(), check=True, capture_output=True)


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def run(where: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=where,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose main has one commit, checked out on a new branch."""
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path, {"src/a.py": "A = 1\n", "CHANGELOG.md": "# Changelog\n"}, "start")
    git(tmp_path, "checkout", "-q", "-b", "topic")
    return tmp_path


@needs_git
def test_a_src_change_without_a_changelog_line_fails_naming_the_file(repo: Path) -> None:
    """The branch changes src/a.py and not CHANGELOG.md: exit 1, the file named."""
    commit(repo, {"src/a.py": "A = 2\n"}, "change A")
    done = run(repo)
    assert done.returncode == 1
    assert "src/a.py" in done.stderr and "No-changelog:" in done.stderr


@needs_git
def test_a_changelog_line_anywhere_on_the_branch_passes(repo: Path) -> None:
    """A CHANGELOG.md change in another commit of the branch is enough."""
    commit(repo, {"src/a.py": "A = 2\n"}, "change A")
    commit(repo, {"CHANGELOG.md": "# Changelog\n- A is 2\n"}, "changelog")
    assert run(repo).returncode == 0


@needs_git
def test_a_commit_message_saying_why_passes(repo: Path) -> None:
    """`No-changelog: <reason>` in a message passes; the marker without a reason does not."""
    commit(repo, {"src/a.py": "A = 2\n"}, "rename\n\nNo-changelog:\n")
    assert run(repo).returncode == 1
    commit(repo, {"src/a.py": "A = 3\n"}, "tidy\n\nNo-changelog: internal rename only\n")
    done = run(repo)
    assert done.returncode == 0 and "internal rename only" in done.stdout


@needs_git
def test_changes_outside_src_need_no_line(repo: Path) -> None:
    """Tests and docs alone need no CHANGELOG.md line."""
    commit(repo, {"tests/test_a.py": "def test_a() -> None: ...\n"}, "a test")
    assert run(repo).returncode == 0


@needs_git
def test_main_itself_and_a_clone_without_main_pass(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """On main after a merge there is nothing since the merge base; a detached checkout
    with no `main` ref (a CI clone of one commit) has nothing to compare with: both pass."""
    commit(repo, {"src/a.py": "A = 2\n"}, "change A")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "topic")
    assert run(repo).returncode == 0
    clone = tmp_path_factory.mktemp("clone")
    git(clone, "clone", "-q", "--depth", "1", "--branch", "topic", f"file://{repo}", "c")
    git(clone / "c", "checkout", "-q", "--detach")
    git(clone / "c", "branch", "-q", "-D", "topic")
    done = run(clone / "c")
    assert done.returncode == 0 and "skipped" in done.stdout


def test_outside_a_repository_or_without_git_it_skips(tmp_path: Path) -> None:
    """No repository (a source tarball), or no git at all: skipped, exit 0."""
    done = run(tmp_path)
    assert done.returncode == 0 and "skipped" in done.stdout
    no_git = {**_env(), "PATH": str(tmp_path)}
    done = run(tmp_path, env=no_git)
    assert done.returncode == 0 and "skipped" in done.stdout
