"""`jobtrail census` as a user runs it against the simulator: a duplicate under one
operation's reference is said loudly (exit 3), the twins of a contract violation are never
a second job, and `--json` carries the counts and one line per job."""

from __future__ import annotations

from census_rig import plant_at

from cliutil import Workspace

VIOLATION = '{"account": "v", "_sim": {"drop_create_answer": true, "different_id_on_retry": true}}'


def plant(ws: Workspace, marker: str) -> str:
    """A report made behind jobtrail's back under `marker`."""
    return plant_at(ws.base_url, marker)


def test_a_second_job_is_said_loudly_and_exits_3(ws: Workspace) -> None:
    """One operation run to its end, then a duplicate under its reference: the census names
    the followed job and the duplicate, warns on stderr, and exits 3."""
    op = ws.json("submit", "simulator", "--body", '{"account": "a"}')["operation_id"]
    done = ws.drive(op)
    duplicate = plant(ws, op)
    found = ws.run("census", "simulator", "--actor", "person:alice", check=False)
    assert found.returncode == 3, found.stderr
    assert "A SECOND JOB: 1" in found.stderr
    assert "a second job: 1" in found.stdout and "followed: 1" in found.stdout
    assert f"{duplicate}  " in found.stdout and f"{done['remote_job_id']}  " in found.stdout
    assert "never a job this ledger holds no operation for" in found.stdout
    audit = ws.run("audit", "verify")
    assert audit.returncode == 0


def test_the_twins_of_a_contract_violation_are_never_a_second_job(ws: Workspace) -> None:
    """A retry the provider answered with another job id: both jobs are the operation's
    known twins (ended here, running there while it waits for a person), never a duplicate
    the ledger did not see."""
    op = ws.json("submit", "simulator", "--body", VIOLATION)["operation_id"]
    stuck = ws.drive(op)
    assert stuck["state"] == "needs_human"
    document = ws.json("census", "simulator")
    assert document["counts"]["second_job"] == 0, document
    twins = {j["job_id"] for j in document["jobs"] if j["category"] == "ended_here"}
    assert twins == set(stuck["conflicting_job_ids"])
    assert all(j["line"].startswith(j["job_id"]) for j in document["jobs"])


def test_a_second_job_is_cancelled_by_a_person_never_by_an_agent(ws: Workspace) -> None:
    """An agent's cancel is refused by the default policy (and audited); a person's is
    recorded, sent once by the worker, and confirmed by the provider."""
    op = ws.json("submit", "simulator", "--body", '{"account": "a"}')["operation_id"]
    ws.drive(op)
    duplicate = plant(ws, op)
    refused = ws.run(
        "census", "simulator", "--cancel", duplicate, "--reason", "dup", "--actor", "agent:x",
        check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and "refused" in refused.stdout
    asked = ws.json("census", "simulator", "--cancel", duplicate, "--reason", "duplicate")
    assert asked[0]["state"] == "cancel_requested", asked
    ws.run("worker", "--until-idle")
    assert ws.json("status", asked[0]["operation_id"])["state"] == "cancelled"
    after = ws.json("census", "simulator")
    assert after["counts"]["second_job"] == 0 and after["counts"]["followed"] == 2
    ws.run("audit", "verify")


def test_the_running_twins_of_an_operation_waiting_for_a_person_are_cancelled(
    ws: Workspace,
) -> None:
    """Both jobs of a contract violation run on while the operation waits for a person:
    each cancelled from the census is adopted by a new operation, the cancel sent once and
    confirmed; the next census finds them followed, ended both sides."""
    op = ws.json("submit", "simulator", "--body", VIOLATION)["operation_id"]
    twins = ws.drive(op)["conflicting_job_ids"]
    cancels = [a for job in twins for a in ("--cancel", job)]
    asked = ws.json("census", "simulator", *cancels, "--reason", "nobody waits for them")
    assert [a["state"] for a in asked] == ["cancel_requested", "cancel_requested"], asked
    ws.run("worker", "--until-idle")
    assert {ws.json("status", a["operation_id"])["state"] for a in asked} == {"cancelled"}
    after = ws.json("census", "simulator")
    assert after["counts"] | {"not_ours": 0} == {
        "followed": 2, "ended_here": 0, "unknown_here": 0, "second_job": 0, "not_ours": 0,
    }  # fmt: skip
