"""`jobtrail provider check` on every shipped profile (and the Bedrock code provider) states
its reconciliation tier and its limits in one sentence, and whether the remote work stops
by itself at the deadline: as a user runs it, from an empty directory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from jobtrail.profiles import profile_names

from cliutil import JOBTRAIL

# profile -> (tier, deadline pushed to the provider, words the tier's sentence must hold)
EXPECTED = {
    "airflow": ("token", False, "looks the job up by the token"),
    "anthropic-batch": ("none", False, "none (in doubt): nothing can find"),
    "azure-ai": ("token", False, "the provider documents no limit on how long it keeps"),
    "azure-arm-delete": ("token", False, "the provider's own token"),
    "azure-arm-patch": ("none", False, "needs_human"),
    "azure-arm-post": ("none", False, "needs_human"),
    "azure-arm-post-async": ("none", False, "needs_human"),
    "azure-arm-put": ("token", False, "the provider's own token"),
    "gemini-batch": ("scan", False, "at most 5 pages of the newest jobs"),
    "google-lro": ("token", False, "the provider keeps the token 1h"),
    "mistral-batch": ("filter", True, "lists only the jobs holding the operation id"),
    "openai-batch": ("scan", True, "at the cap the operation stops in doubt"),
    "openai-responses": ("none", False, "never resubmits it on its own"),
    "replicate": ("none", True, "never resubmits it on its own"),
    "simulator": ("token", False, "the provider's own token"),
    "vertex-batch": ("filter", False, "a server-side filter on our reference"),
    "aws-bedrock-batch": ("token", True, "the provider keeps the token 24h"),
}


def checks(cwd: Path, names: list[str]) -> dict[str, Any]:
    """`provider check NAME --json` for each name, side by side (fresh interpreters)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    running = {
        name: subprocess.Popen(
            [JOBTRAIL, "provider", "check", name, "--json"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in names
    }
    found = {}
    for name, process in running.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, (name, err)
        found[name] = json.loads(out)
    return found


@pytest.mark.slow  # a CLI run per shipped profile
def test_every_shipped_profile_states_its_tier_and_its_remote_deadline(tmp_path: Path) -> None:
    """Each profile's check names its tier in one sentence with its limits, and says
    whether remote work stops by itself; the profiles that can push their deadline do."""
    names = profile_names()
    assert set(names) | {"aws-bedrock-batch"} == set(EXPECTED), "a profile without a row here"
    for name, answer in checks(tmp_path, [*names, "aws-bedrock-batch"]).items():
        tier, pushed, words = EXPECTED[name]
        said = answer["guarantees"]
        assert answer["tier"] == tier, name
        assert answer["remote_deadline"] is pushed, name
        assert words in said["reconciliation tier"], (name, said["reconciliation tier"])
        assert "." not in said["reconciliation tier"].rstrip(".").replace("e.g.", ""), name
        stops = said["remote deadline"]
        if pushed:
            assert stops.startswith("remote work stops by itself: jobtrail writes"), name
        else:
            assert stops.startswith("remote work stops only when it is cancelled"), name
