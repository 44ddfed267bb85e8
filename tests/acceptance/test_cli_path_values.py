"""`jobtrail submit --path NAME=VALUE`: the resource a create names, chosen at submit."""

from __future__ import annotations

import json

from jobtrail.profiles import shipped_profile

from cliutil import Workspace
from harness import SECRET

PATH = (
    "/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Sim/widgets/"
    "{name}?api-version=2024-01-01"
)
BODY = json.dumps({"location": "westus", "properties": {"size": 1}})


def _arm_file(ws: Workspace) -> dict[str, str]:
    profile = shipped_profile("azure-arm-put")
    assert profile is not None
    text = profile.text.replace('path = ""', f'path = "{PATH}"')
    (ws.root / "providers" / "arm.toml").write_text(
        text.replace('name = "azure-arm-put"', 'name = "arm"').replace(
            'initial = "5s"', 'initial = "100ms"'
        )
    )
    return {"AZURE_ACCESS_TOKEN": SECRET, "JOBTRAIL_AZURE_ARM_URL": f"{ws.base_url}/azure-arm"}


def test_submit_fills_the_create_path_and_refuses_an_unsafe_value(ws: Workspace) -> None:
    """Good values make the resource at its URL; a value with `/` is refused, nothing kept."""
    env = _arm_file(ws)
    values = ["--path", "subscription=s1", "--path", "group=rg1"]
    done = ws.run(
        "submit", "arm", "--body", BODY, *values, "--path", "name=a/b", check=False, **env
    )
    assert done.returncode != 0 and "splits a URL path" in done.stderr, done.stderr
    op = json.loads(
        ws.run(
            "submit", "arm", "--body", BODY, *values, "--path", "name=w9", "--json", **env
        ).stdout
    )["operation_id"]
    document = ws.drive(op, **env)
    assert document["state"] == "succeeded", document
    assert document["remote_job_id"].endswith("/widgets/w9?api-version=2024-01-01")
