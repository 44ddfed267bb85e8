"""The provider file's one reader (providers/file/schema.py): every table refuses a key it
does not know, and every type error names the key, dotted, however deep it sits."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.config import parse_provider

ROOT = Path(__file__).resolve().parents[2]


def base() -> dict[str, Any]:
    text = (ROOT / "docs" / "providers.md").read_text()
    return tomllib.loads(re.findall(r"```toml\n(.*?)```", text, re.S)[0])


def _set(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *tables, last = dotted.split(".")
    node = doc
    for name in tables:
        node = node.setdefault(name, {})
    node[last] = value
    return doc


@pytest.mark.parametrize(
    ("dotted", "value", "message"),
    [
        ("timeout", "soon", "timeout: cannot read the duration 'soon'"),
        ("reconcile.list.visible_within", 60, "reconcile.list.visible_within must be"),
        ("reconcile.list.within", "fast", "reconcile.list.within: cannot read the duration"),
        ("webhooks.tolerance", "later", "webhooks.tolerance: cannot read the duration"),
        ("result.items", {"path": "data", "stauts": "x"}, "unknown key 'stauts' in result.items"),
        ("result.items.success", "ok", "result.items.success must be a list of text, got 'ok'"),
        ("result.max_bytes", "lots", "result.max_bytes: cannot read the size 'lots'"),
        ("redact.fields", "ssn", "redact.fields must be a list of text, got 'ssn'"),
        ("create.deadline.step", 1.5, "create.deadline.step must be a whole number of units"),
        ("poll.max_refused_reads", "5", "poll.max_refused_reads must be a whole number"),
    ],
)
def test_each_mistake_names_its_dotted_key(dotted: str, value: Any, message: str) -> None:
    """A wrong value or an unknown key anywhere in the file is refused, naming its key."""
    doc = _set(base(), dotted, value)
    if dotted.startswith("webhooks."):
        doc["webhooks"]["secret_env"] = "HOOK_SECRET"
    with pytest.raises(ProviderConfigError, match=re.escape(message)):
        parse_provider(doc)
