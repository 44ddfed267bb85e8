"""`jobtrail submit` refuses a body that holds a value where the provider file has jobtrail
write (the idempotency token, the client reference), in one line naming the field, and
writes nothing: the stored request would keep the caller's value while the wire carried
jobtrail's (Ray Jobs' `submission_id`, Airflow's `dag_run_id`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ownfields import REFUSED, write_providers

from cliutil import Workspace


@pytest.mark.parametrize(("provider", "body", "field"), REFUSED)
def test_submit_refuses_a_value_where_jobtrail_writes_and_writes_nothing(
    ws: Workspace, provider: str, body: dict[str, Any], field: str
) -> None:
    """One line naming the field; no ledger file is created."""
    write_providers(ws.root / "providers")
    done = ws.run("submit", provider, "--body", json.dumps(body), "--key", "k1", check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"request body's {field} is where jobtrail writes" in lines[0]
    assert not ws.db.exists()


def test_submit_without_the_field_is_recorded(ws: Workspace) -> None:
    """The same request without the value is accepted (jobtrail writes the token there)."""
    write_providers(ws.root / "providers")
    body = json.dumps({"entrypoint": "python report.py"})
    done = ws.run("submit", "ray", "--body", body, "--key", "k1", "--json")
    assert json.loads(done.stdout)["state"] == "create_pending"
