"""A real browser for the dashboard tests: Debian's headless Chromium driven by Playwright.

When Chromium (/usr/bin/chromium, or JOBTRAIL_CHROMIUM) or Playwright is missing, browser
tests are skipped with a loud reason, or fail when JOBTRAIL_REQUIRE_BROWSER=1 (as in CI).
Playwright's own browser download (`playwright install`) is never used.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

import pytest

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    return os.environ.get("JOBTRAIL_CHROMIUM", "/usr/bin/chromium")


@functools.cache
def browser_problem() -> str | None:
    """Why no browser test can run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    if not Path(chromium_path()).is_file():
        return f"no Chromium at {chromium_path()} (apt-get install chromium)"
    return None


def require_browser() -> None:
    """Skip the calling test (fail it, under JOBTRAIL_REQUIRE_BROWSER=1) without a browser."""
    problem = browser_problem()
    if problem is None:
        return
    message = f"browser tests cannot run: {problem}"
    if os.environ.get("JOBTRAIL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_BROWSER=1 makes this a failure", pytrace=False)
    pytest.skip(message)
