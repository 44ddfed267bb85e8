"""docs/simulator.md lists every fault the simulator takes, and nothing it does not, so that a
provider author can test a file of their own against the faults the docs promise."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from jobtrail.simulator.faults import FAULT_NAMES
from jobtrail.simulator.vendors.shared import VendorFaults

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def table(heading: str) -> set[str]:
    """The fault names in the first column of the table under `heading`."""
    section = DOC.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ")[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


def test_the_article_api_faults_are_documented_both_ways() -> None:
    """Every fault of the article API has a row, and every row is a fault."""
    assert table("Faults of the article API") == set(FAULT_NAMES)


def test_the_vendor_mode_faults_are_documented_both_ways() -> None:
    """Every vendor-mode fault has a row, and every row is a fault."""
    assert table("Faults of the vendor modes") == {f.name for f in fields(VendorFaults)}
