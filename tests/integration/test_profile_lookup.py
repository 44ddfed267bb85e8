"""Shipped profiles are found by name after the user's own folder, and base_url_env works."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from jobtrail.errors import ProviderConfigError
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import find_provider, find_provider_named

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_simulator_profile_is_the_repository_file() -> None:
    """The simulator profile in the package says what providers/simulator.toml says, but
    polls sooner (the simulator runs on this machine) and takes its URL from a variable."""
    profile = shipped_profile("simulator")
    assert profile is not None
    shipped = tomllib.loads(profile.text)
    repository = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text("utf-8"))
    assert shipped.pop("base_url_env") == "JOBTRAIL_SIMULATOR_BASE_URL"
    repository.pop("base_url_env", None)
    shipped.pop("poll")
    repository.pop("poll", None)
    assert shipped == repository


def test_a_shipped_profile_is_found_by_name_without_a_providers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no ./providers folder, a name resolves to the shipped profile."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBTRAIL_PROVIDERS", raising=False)
    monkeypatch.delenv("JOBTRAIL_OPENAI_BASE_URL", raising=False)
    spec = find_provider("openai-batch")
    assert spec.name == "openai-batch" and spec.base_url == "https://api.openai.com"


def test_base_url_env_replaces_the_base_url_in_the_stored_document(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The variable named by base_url_env wins, and the document stored with operations says so."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JOBTRAIL_ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic")
    spec = find_provider_named("anthropic-batch")
    assert spec.base_url == "http://127.0.0.1:9/anthropic"
    assert spec.document["base_url"] == "http://127.0.0.1:9/anthropic"


def test_a_local_file_of_the_same_name_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A providers/NAME.toml in the user's folder overrides the shipped profile."""
    profile = shipped_profile("gemini-batch")
    assert profile is not None
    folder = tmp_path / "providers"
    folder.mkdir()
    (folder / "gemini-batch.toml").write_text(
        profile.text.replace("gemini-2.5-flash:", "gemini-2.5-pro:")
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBTRAIL_PROVIDERS", raising=False)
    assert "gemini-2.5-pro" in find_provider_named("gemini-batch").create_path


def test_an_unknown_name_lists_the_shipped_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is neither local nor shipped is refused with the shipped names."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProviderConfigError, match="openai-batch"):
        find_provider_named("no-such-api")
