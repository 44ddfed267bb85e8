"""The provider file: the documented examples load, mistakes get clear errors."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import Idempotency, ResultMode
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.config import load_provider_file, parse_provider

ROOT = Path(__file__).resolve().parents[2]


def doc_examples() -> list[str]:
    text = (ROOT / "docs" / "providers.md").read_text()
    return re.findall(r"```toml\n(.*?)```", text, re.S)


def test_the_articles_example_loads_as_written() -> None:
    """The provider file of the issue and docs loads unchanged, with full capabilities."""
    example = doc_examples()[0]
    spec = parse_provider(tomllib.loads(example))
    caps = spec.capabilities
    assert spec.name == "reports" and caps.idempotency is Idempotency.HEADER
    assert caps.same_token_retry and caps.list_by_reference and caps.cancel
    assert caps.result is ResultMode.ENDPOINT and caps.at_most_once_provable
    assert spec.deadlines["create"].total_seconds() == 120


def test_shipped_provider_files_load() -> None:
    """Every file in providers/ is valid."""
    for file in (ROOT / "providers").glob("*.toml"):
        assert load_provider_file(file).name


def base() -> dict[str, Any]:
    return tomllib.loads(doc_examples()[0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("name"), "name is required"),
        (lambda d: d.update(base_url="ftp://x"), "base_url must start"),
        (
            lambda d: d.update(auth={"header": "Authorization", "value": "Bearer abc"}),
            "environment variable",
        ),
        (lambda d: d.update(headers={"X-Api-Key": "abc"}), "carries a credential"),
        (lambda d: d["states"].update(done="finished"), "map each provider word"),
        (lambda d: d["create"].pop("idempotency"), "same_token needs create.idempotency"),
        (lambda d: d["create"].pop("client_reference"), "list needs create.client_reference"),
        (lambda d: d["deadlines"].update(create="soon"), "cannot read the duration"),
        (lambda d: d.pop("create"), "[create] table is required"),
        (lambda d: d["reconcile"].update(same_tokn=True), "unknown key 'same_tokn' in [reconcile]"),
        (lambda d: d.update(timout="5s"), "unknown key 'timout' in the top level"),
    ],
)
def test_mistakes_are_explained(change: Any, message: str) -> None:
    """Each mistake in a provider file is named in one clear sentence."""
    doc = base()
    change(doc)
    with pytest.raises(ProviderConfigError, match=re.escape(message)):
        parse_provider(doc)


def test_missing_and_broken_files(tmp_path: Path) -> None:
    """A missing file or broken TOML is a clear error, not a traceback."""
    with pytest.raises(ProviderConfigError, match="no provider file"):
        load_provider_file(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = ")
    with pytest.raises(ProviderConfigError, match="not valid TOML"):
        load_provider_file(broken)
