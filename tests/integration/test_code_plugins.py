"""Finding code providers: entry points and --provider-module, through the one loader."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from jobtrail import Client
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.code.plugins import installed_names, load_plugins
from jobtrail.providers.resolve import resolve_provider
from jobtrail.services.runtime import runtime
from jobtrail.testing import ScriptedProvider
from jobtrail.testing import outcomes as o

from plugins import forget, install, on_path

PROVIDER = """
from jobtrail.core.model import Capabilities

class Echo:
    name = "echo"
    version = "2.1"
    capabilities = Capabilities(cancel=True)
    deadlines = {"result": "3h"}
    poll = {"min": "5s", "initial": "5s"}

    def __init__(self, settings):
        self.settings = dict(settings)

    def describe(self, kind, op):
        return {"call": kind.value}

    async def call(self, kind, op):
        raise NotImplementedError

def make(settings):
    return Echo(settings)

PROVIDERS = {"echo": make}
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    forget("echo_provider", "broken_provider")
    install(
        folder,
        "echo-provider",
        {"echo_provider": PROVIDER, "broken_provider": "raise ImportError('no SDK here')\n"},
        {"echo": "echo_provider:make"},
    )
    on_path(monkeypatch, folder)
    yield folder
    forget("echo_provider", "broken_provider")


def test_an_entry_point_is_found_by_name_and_declares_its_contract(site: Path) -> None:
    """An installed entry point is a provider by its name; what it declares is checked and
    completed with the provider file's defaults."""
    assert "echo" in installed_names()
    assert "echo_provider" not in sys.modules  # listing names imports nothing
    plugin = load_plugins()["echo"]
    assert plugin.origin == "entry point echo = echo_provider:make"
    provider, spec = plugin.build({"region": "eu"})
    assert provider.settings == {"region": "eu"}  # type: ignore[attr-defined]
    assert (spec.name, spec.version) == ("echo", "2.1")
    assert spec.deadlines == {
        "create": timedelta(minutes=2),
        "result": timedelta(hours=3),
        "cancel": timedelta(minutes=10),
    }
    assert spec.document["settings"] == {"region": "eu"}
    assert spec.document["code"] == "echo"


def test_a_module_given_by_name_provides_its_PROVIDERS(site: Path) -> None:
    """--provider-module: the module's PROVIDERS mapping, over entry points of that name."""
    plugin = load_plugins(["echo_provider"])["echo"]
    assert plugin.origin == "--provider-module echo_provider"


@pytest.mark.parametrize(
    ("module", "words"),
    [
        ("no_such_module_xyz", "--provider-module no_such_module_xyz: cannot import it"),
        ("broken_provider", "ImportError: no SDK here"),
        ("json", "--provider-module json: the module has no PROVIDERS mapping"),
    ],
)
def test_a_bad_module_is_one_clear_line(site: Path, module: str, words: str) -> None:
    """A module that cannot be imported, or has no PROVIDERS, is named in one line."""
    with pytest.raises(ProviderConfigError) as caught:
        load_plugins([module])
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_broken_entry_point_is_left_missing_with_one_clear_line(site: Path) -> None:
    """An installed entry point whose module fails to import does not stop the loader (one
    broken package must not stop every worker): it is missing, with one line naming it and
    its error, raised when someone submits to it."""
    install(site, "broken-provider", {}, {"broken": "broken_provider:make"})
    plugins = load_plugins()
    assert "echo" in plugins and "broken" not in plugins
    message = plugins.broken["broken"]
    assert "entry point broken = broken_provider:make" in message
    assert "ImportError: no SDK here" in message and "\n" not in message
    with pytest.raises(ProviderConfigError) as caught:
        resolve_provider("broken", plugins)
    assert str(caught.value) == message


def test_a_provider_without_a_version_is_refused(site: Path) -> None:
    """A code provider must declare its version: it is recorded on every operation."""
    plugin = load_plugins(["echo_provider"])["echo"]
    sys.modules["echo_provider"].Echo.version = ""  # type: ignore[attr-defined]
    with pytest.raises(ProviderConfigError, match="declares no version"):
        plugin.build({})


def test_a_bad_poll_table_is_refused_by_the_provider_file_rules(site: Path) -> None:
    """The poll policy is checked by the same rules as a provider file's [poll]."""
    plugin = load_plugins(["echo_provider"])["echo"]
    sys.modules["echo_provider"].Echo.poll = {"min": "0s"}  # type: ignore[attr-defined]
    with pytest.raises(ProviderConfigError, match=r"poll\.min"):
        plugin.build({})


async def test_an_unusable_provider_is_named_at_start_only_when_an_operation_needs_it(
    site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A driver starting beside an installed provider it cannot use (the AWS providers
    without the `aws` extra) says nothing of it while no open operation needs it, and names
    it, with its reason and how many operations wait, once one does."""
    install(site, "broken-provider", {}, {"broken": "broken_provider:make"})
    db, data = str(tmp_path / "l.db"), tmp_path / "data"
    with caplog.at_level(logging.WARNING, logger="jobtrail.providers"):
        async with runtime(db, data):
            pass
    assert "broken" not in caplog.text
    fake = ScriptedProvider(lambda call: o.Throttled(), name="broken")
    async with Client(db, data_dir=data, providers=[fake], worker=False) as jt:
        await jt.submit("broken", {"n": 1}, key="needs-it")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jobtrail.providers"):
        async with runtime(db, data):
            pass
    assert "ImportError: no SDK here" in caplog.text
    assert "1 open operation(s) of 'broken' are left to workers that have it" in caplog.text
