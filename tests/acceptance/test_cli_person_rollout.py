"""What a new user and an operator trip on at the command line (issue 21), through the CLI
as a subprocess: cancellation_unconfirmed says a person is needed, `list` and `demo` fit
the terminal, a refused submit warns of nothing and leaves no ledger, `extend` and
`resolve` take a key and answer in the words typed, a result that failed validation can
be resolved, an adopt names the other job, `run` piped keeps its labels, the next `run`
after an abandon says what it waits for, `--help` points to pages that exist, "1
operation ended", and escalation bundles name the target without the provider's prefix."""

from __future__ import annotations

import json
import re
import signal
import sqlite3

import pytest
from test_cli_person_ctrlc import SLOW_CREATE, Started, _until_create_in_flight

from cliutil import Workspace
from waits import until_true

LONG = '{"account": "long", "_sim": {"duration_polls": 100000, "cancel": "ignore"}}'
CONFLICT = json.dumps(
    {"account": "c", "_sim": {"drop_create_answer": True, "different_id_on_retry": True}}
)


def _decided(ws: Workspace, op: str) -> list[tuple[str, str]]:
    with sqlite3.connect(ws.db) as db:
        rows = db.execute("SELECT entry FROM audit_log WHERE operation_id = ?", (op,))
        entries = [json.loads(row[0]) for row in rows]
    return [(e["actor"], e["data"]["decision"]) for e in entries if e["kind"] == "human.decision"]


def test_cancellation_unconfirmed_says_a_person_must_act(ws: Workspace) -> None:
    """status, explain and the JSON say the remote job may still run and to extend the
    cancel deadline; never "nothing: the operation ended"; extend takes the key."""
    submitted = ws.json(
        "submit", "simulator", "--body", LONG, "--key", "stuck-cancel", "--cancel-deadline", "2s"
    )
    op = submitted["operation_id"]
    run = Started(ws, "run", op)
    until_true(lambda: ws.json("status", op)["state"] == "observing", 30, "observing")
    ws.run("cancel", "stuck-cancel", "--reason", "wrong account")
    assert run.finish(60) == 5  # the cancel was never confirmed: a person is needed
    ended = ws.json("status", op)
    assert ended["state"] == "cancellation_unconfirmed"
    for text in (ws.run("status", op).stdout, ws.run("explain", op).stdout):
        assert "a person must act" in text and "may still be running" in text, text
        assert "extend --cancel-deadline" in text
        assert "nothing: the operation ended" not in text
    assert ended["needs_person"] is True and ended["cancellable"] is False
    moved = ws.json(
        "extend", "stuck-cancel", "--cancel-deadline", "1h", "--actor", "bob", "--reason", "wait"
    )
    assert moved["state"] == "cancelling"
    assert _decided(ws, op) == [("bob", "extend_cancel")]


@pytest.mark.slow  # the demo and list at several widths
def test_list_and_demo_fit_the_terminal(ws: Workspace) -> None:
    """At 80 and 120 columns no line is wider than the terminal and every id is whole on a
    line; `list` says "2 of 3" when it pages, and --json carries the total."""
    ids = [
        ws.json("submit", "simulator", "--body", f'{{"n": {n}}}')["operation_id"] for n in range(3)
    ]
    for columns in ("80", "120"):
        shown = ws.run("list", COLUMNS=columns).stdout
        lines = shown.splitlines()
        assert all(len(line) <= int(columns) for line in lines), shown
        assert all(any(i in line for line in lines) for i in ids), shown
        assert lines[-1] == "3 operations"
    paged = ws.run("list", "--limit", "2").stdout
    assert paged.splitlines()[-1].startswith("2 of 3 operations"), paged
    document = ws.json("list", "--limit", "2")
    assert document["total"] == 3 and document["shown"] == 2 and len(document["operations"]) == 2
    demo = ws.run("--db", str(ws.root / "demo.db"), "demo", COLUMNS="80")
    lines = demo.stdout.splitlines()
    ops = re.findall(r"op_[0-9A-Z]{26}", demo.stdout)
    table = [line for line in lines if not line.startswith(("explore:", "ledger:"))]
    assert ops and all(len(line) <= 80 for line in table)  # the command below is kept whole
    assert all(any(op in line for line in lines) for op in ops)
    assert re.search(r"^explore: jobtrail --db \S+ explain op_[0-9A-Z]{26}$", demo.stdout, re.M)


def test_a_refused_submit_warns_of_nothing_and_leaves_no_ledger(ws: Workspace) -> None:
    """Without the credential and with a bad body, submit says only what is wrong with the
    request (no credential warning first) and creates no ledger file."""
    bad = ("submit", "simulator", "--body", '{"a": 1}', "--header", "Bad")
    done = ws.run(*bad, check=False, REPORTS_API_TOKEN="")
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "warning" not in done.stderr, done.stderr
    assert not ws.db.exists()
    warned = ws.run("submit", "simulator", "--body", '{"a": 1}', REPORTS_API_TOKEN="")
    assert "warning: environment variable REPORTS_API_TOKEN is not set" in warned.stderr


def test_resolve_takes_a_key_answers_in_the_typed_words_and_keeps_the_job_id(
    ws: Workspace,
) -> None:
    """`resolve KEY`; a decision that does not apply says `mark-failed`; mark-failed with
    --job-id is refused (it would drop the id); adopting one job names the other."""
    op = ws.json("submit", "simulator", "--body", CONFLICT, "--key", "tied")["operation_id"]
    assert ws.drive(op)["state"] == "needs_human"
    first, second = ws.json("status", "tied")["conflicting_job_ids"]
    dropped = ws.run(
        "resolve", "tied", "--decision", "mark-failed", "--job-id", first,
        "--actor", "bob", "--reason", "r", check=False,
    )  # fmt: skip
    assert dropped.returncode == 1 and "'mark-failed' would drop" in dropped.stderr
    adopted = ws.json(
        "resolve", "tied", "--decision", "adopt", "--job-id", first, "--actor", "bob",
        "--reason", "support says the first",
    )  # fmt: skip
    assert adopted["other_jobs"] == [second]
    told = ws.run("explain", "tied").stdout
    assert f"other jobs: {second} may still be running at simulator" in told
    again = ws.run(
        "resolve", "tied", "--decision", "retry-as-new", "--actor", "bob", "--reason", "r",
        check=False,
    )  # fmt: skip
    assert "the decision 'retry-as-new' does not apply" in again.stderr
    assert "retry_as_new" not in again.stderr


@pytest.mark.slow  # three operations driven through the CLI
def test_a_result_that_failed_validation_can_be_accepted_collected_or_failed(
    ws: Workspace,
) -> None:
    """explain names the three ways on; each is recorded under the person's name."""
    body = '{"account": "v", "_sim": {"bad_checksum": true}}'
    ops = [
        ws.json("submit", "simulator", "--body", body, "--key", f"v{n}")["operation_id"]
        for n in range(3)
    ]
    for op in ops:
        assert ws.drive(op)["state"] == "result_validation_failed"
    told = ws.run("explain", ops[0]).stdout
    assert "accept-as-is" in told and "collect-again" in told and "mark-failed" in told
    ends = {}
    for op, decision in zip(ops, ("accept-as-is", "collect-again", "mark-failed"), strict=True):
        ends[decision] = ws.json(
            "resolve", op, "--decision", decision, "--actor", "carol", "--reason", "by hand"
        )["state"]
        assert _decided(ws, op) == [("carol", decision.replace("-", "_"))]
    assert ends == {
        "accept-as-is": "succeeded",
        "collect-again": "result_collecting",
        "mark-failed": "failed",
    }
    assert ws.json("result", ops[0])["result"]["valid"] is True
    assert ws.drive(ops[1])["state"] == "result_validation_failed"  # fetched, checked again


def test_run_piped_keeps_its_labels_and_ends_its_lines(ws: Workspace) -> None:
    """Piped at 60 columns beside a long next step, every label is whole at the start of
    its line and the output ends with a line break."""
    op = ws.json("submit", "simulator", "--body", CONFLICT)["operation_id"]
    done = ws.run("run", op, check=False, COLUMNS="60")
    assert done.returncode == 5  # needs a person
    out = done.stdout
    assert out.endswith("\n")
    for label in ("operation", "state", "remote job", "remote state", "progress", "next"):
        assert re.search(rf"^{label} +\S", out, re.M), (label, out)
    assert "a person must act" in out.replace("\n", " ")


def test_the_next_run_after_an_abandon_says_what_it_waits_for(ws: Workspace) -> None:
    """A run stopped with its step abandoned leaves its lease; the next run says that it
    waits for it, until when, and what happens then."""
    op = ws.json("submit", "simulator", "--body", SLOW_CREATE)["operation_id"]
    first = Started(ws, "run", op, "--json")
    _until_create_in_flight(ws, op)
    first.interrupt()
    first.until_said(f"waiting for the step in flight on {op}")
    first.interrupt()
    assert first.finish() == 130
    second = Started(ws, "run", op)
    second.until_said("waiting for the lease an earlier `run` left on")
    assert re.search(r"until \S+Z \(in \d+ s\)", second.stderr), second.stderr
    assert "settles that call as interrupted" in second.stderr
    second.proc.send_signal(signal.SIGINT)
    assert second.finish() == 130


@pytest.mark.slow  # `--help` of every command, a process each
def test_help_points_only_to_pages_that_exist(ws: Workspace) -> None:
    """Every `jobtrail docs PAGE` or docs/PAGE.md named in any command's --help is a page
    `jobtrail docs` prints, for someone who installed jobtrail with pip."""
    top = ws.run("--help").stdout
    commands = re.findall(r"^  ([a-z-]+)  ", top, re.M)
    assert "docs" in commands and "submit" in commands
    named = set()
    for text in [top, *(ws.run(c, "--help").stdout for c in commands)]:
        named |= set(re.findall(r"jobtrail docs ([a-z-]+)", text))
        named |= set(re.findall(r"docs/([a-z-]+)\.md", text))
    assert "dashboard" in named
    pages = ws.run("docs").stdout
    for page in named:
        assert re.search(rf"^{page} ", pages, re.M), page
        assert ws.run("docs", page).stdout.startswith("# ")
    assert ws.run("docs", "nonsense", check=False).returncode == 1
    # A page split in parts lists its index under its own name and each part beside it.
    assert re.search(r"^guarantees/leases +Leases and clocks$", pages, re.M), pages
    assert ws.run("docs", "guarantees").stdout.startswith("# What jobtrail guarantees")


def test_small_words_one_operation_and_the_bundles_target(ws: Workspace) -> None:
    """The worker says "1 operation ended"; an escalation bundle names the provider once."""
    op = ws.json("submit", "simulator", "--body", '{"account": "one"}')["operation_id"]
    done = ws.run("worker", "--until-idle")
    assert ", 1 operation ended," in done.stderr, done.stderr
    bundle = json.loads(ws.run("escalation", op).stdout)
    assert bundle["provider"] == "simulator"
    assert bundle["request"]["target"].startswith("http://")
    assert "simulator:" not in bundle["request"]["target"]
