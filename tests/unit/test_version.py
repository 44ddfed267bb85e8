"""The version `jobtrail --version` prints without importlib.metadata is the installed one."""

from __future__ import annotations

from importlib.metadata import version

import jobtrail
from jobtrail._version import VERSION


def test_the_version_constant_is_the_packages_version() -> None:
    """jobtrail._version.VERSION, jobtrail.__version__ and the installed metadata agree."""
    assert VERSION == version("jobtrail") == jobtrail.__version__
