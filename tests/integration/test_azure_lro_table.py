"""Azure long-running operations, scenario by scenario, over loopback HTTP with a real
ledger and the real worker: every combination of create status code, header set,
provisioning state and final-state-via that the guidelines allow (see tests/azure_lro.py
for the service, written from the published conventions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from azure_lro import CODES, FINAL, HEADER_SETS, STATES, AzureService, scenarios
from azure_lro_run import run_scenarios
from azure_lro_run import serving as azure_service


@pytest.fixture
async def service() -> AsyncIterator[AzureService]:
    async with azure_service() as azure:
        yield azure


def test_the_table_covers_every_dimension() -> None:
    """Every create code, header set, provisioning state and final-state-via occurs."""
    table = scenarios()
    assert {s.code for s in table} == set(CODES)
    assert {s.headers for s in table} == set(HEADER_SETS)
    assert {s.state for s in table} == set(STATES)
    assert {s.final for s in table} >= set(FINAL)
    assert len(table) >= 50


async def test_every_azure_scenario_ends_as_the_guidelines_say(
    service: AzureService, tmp_path: Path
) -> None:
    """For each scenario the operation ends in the provisioning state's outcome, with the
    result the final-state-via names (the resource, the Location answer or the monitor's
    final answer), and the provider's error code recorded when it failed."""
    failures = await run_scenarios(service, scenarios(), tmp_path)
    assert not failures, "\n".join(failures)
