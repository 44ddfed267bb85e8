"""A change to src/ comes with a CHANGELOG.md line, or a commit message that says why not.

Run by `make lint` (and pre-commit). It compares the branch with where it left main
(`git merge-base HEAD main`, else `origin/main`): when the commits since then change a file
under src/ and none of them changes CHANGELOG.md, one of their messages must carry a line

    No-changelog: <why this change is not one a user sees>

Otherwise it fails, naming the files. It never fails for want of history: outside a git
work tree, without git, without a `main` to compare with (a fresh or shallow clone, a
detached CI checkout), or on main itself (nothing since the merge base), it says it skipped
and passes. So a clean clone of a correct commit always passes; only a branch checked out
beside its main is held to the rule.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence

BASES = ("main", "origin/main")
REASON = re.compile(r"^No-changelog:[ \t]*(\S.*)$", re.MULTILINE | re.IGNORECASE)


def git(*args: str) -> str | None:
    """git's output, or None when git is missing or refuses (no repository, unknown ref)."""
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def merge_base() -> str | None:
    for ref in BASES:
        if git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is None:
            continue
        found = git("merge-base", "HEAD", ref)
        if found:
            return found.strip()
    return None


def check() -> tuple[bool, str]:
    """(passes, what to say)."""
    if git("rev-parse", "--is-inside-work-tree") is None:
        return True, "changelog check skipped: not a git work tree (or no git)"
    base = merge_base()
    if base is None:
        return True, "changelog check skipped: no main branch to compare with (fresh clone)"
    changed = (git("diff", "--name-only", base, "HEAD") or "").split()
    source = [path for path in changed if path.startswith("src/")]
    if not source:
        return True, "changelog check: no change to src/ since main"
    if "CHANGELOG.md" in changed:
        return True, "changelog check: src/ changed, and so did CHANGELOG.md"
    messages = git("log", "--format=%B", f"{base}..HEAD") or ""
    reason = REASON.search(messages)
    if reason:
        return True, f"changelog check: no CHANGELOG.md line, because: {reason.group(1)}"
    shown = ", ".join(source[:5]) + (f" and {len(source) - 5} more" if len(source) > 5 else "")
    return False, (
        f"changelog check failed: this branch changes {shown} since main, but not "
        "CHANGELOG.md. Add a line under its Unreleased heading, or, when no user sees the "
        "change, say why in a commit message line `No-changelog: <reason>`."
    )


def main(argv: Sequence[str] = ()) -> int:
    passes, said = check()
    print(said, file=sys.stdout if passes else sys.stderr)
    return 0 if passes else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
