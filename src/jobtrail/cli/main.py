"""`jobtrail`: the console script's entry point.

`jobtrail --version` answers before click, the command group or anything else is imported
(it is what scripts and installers call most, and should cost about what Python's own
start-up costs; bench/startup.py measures it); every other command goes to the command
group in jobtrail.cli.group, which imports only the module of the command asked for."""

from __future__ import annotations

import sys

from jobtrail._version import VERSION

TYPE_CHECKING = False  # not typing's: `jobtrail --version` imports nothing it does not use
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        sys.stdout.write(f"jobtrail, version {VERSION}\n")  # as click's version_option says it
        return
    from jobtrail.cli.group import run

    run()


def __getattr__(name: str) -> Any:  # `from jobtrail.cli.main import cli` still works
    if name.startswith("__"):  # the import system asks for __path__ and the like
        raise AttributeError(name)
    from jobtrail.cli import group

    return getattr(group, name)


if __name__ == "__main__":
    main()
