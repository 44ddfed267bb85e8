"""`serve --census PROVIDER`: the scheduled census, as a user starts it. At start it takes
a census of the provider, records it in the audit log under `worker:census` and logs what
it found (a second job as an error)."""

from __future__ import annotations

import json

from census_rig import plant_at

from cliutil import Workspace, census_entries, serving
from waits import until_true


def test_serve_takes_a_census_at_start_and_logs_a_second_job(ws: Workspace) -> None:
    """One operation run to its end and a duplicate under its reference: the census serve
    takes is recorded under worker:census, and the duplicate is logged as an error."""
    op = ws.json("submit", "simulator", "--body", '{"account": "a"}')["operation_id"]
    ws.drive(op)
    plant_at(ws.base_url, op)
    with serving(ws, "--census", "simulator", "--census-every", "1h") as served:
        log = served.log
        until_true(lambda: bool(census_entries(ws.db)), 30, "a census recorded by serve")
        (taken,) = census_entries(ws.db)
        assert taken["actor"] == "worker:census"
        assert isinstance(taken["data"], dict) and taken["data"]["counts"]["second_job"] == 1
        until_true(lambda: "A SECOND JOB" in log.read_text(), 30, "the duplicate logged")
        line = next(json.loads(x) for x in log.read_text().splitlines() if "A SECOND JOB" in x)
        assert line["level"] in ("ERROR", "error"), line
