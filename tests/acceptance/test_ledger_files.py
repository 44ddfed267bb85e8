"""The ledger file itself, as a user meets it: reading commands never create one, a newer
schema is refused, a deleted or replaced file stops the worker."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cliutil import JOBTRAIL, Workspace
from waits import until_true

# Every command that reads or decides: none of them may leave a ledger behind.
READING = [
    ["status", "op_missing"],
    ["list"],
    ["history", "op_missing"],
    ["explain", "op_missing"],
    ["result", "op_missing"],
    ["escalation", "op_missing"],
    ["audit", "verify"],
    ["audit", "head"],
    ["cancel", "op_missing", "--reason", "r"],
    ["resolve", "op_missing", "--decision", "mark-failed", "--actor", "a", "--reason", "r"],
    ["extend", "op_missing", "--result-deadline", "1h", "--actor", "a", "--reason", "r"],
    ["run", "op_missing"],
]


def _jobtrail(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    return subprocess.run(
        [JOBTRAIL, *args],
        cwd=cwd,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_reading_commands_never_create_a_ledger(tmp_path: Path) -> None:
    """Every reading command in an empty folder fails naming the missing ledger's path and
    leaves no file behind, for the default ledger and for --db in a folder not made yet."""
    for args in READING:
        default = _jobtrail(tmp_path, *args)
        assert default.returncode != 0, args
        assert f"no ledger at {tmp_path / 'jobtrail.db'}" in default.stderr, (args, default)
        assert list(tmp_path.iterdir()) == [], args
    nested = tmp_path / "not-made" / "ledger.db"
    for args in (["list"], ["audit", "verify"]):
        explicit = _jobtrail(tmp_path, "--db", str(nested), *args)
        assert explicit.returncode != 0 and str(nested) in explicit.stderr, explicit.stderr
        assert list(tmp_path.iterdir()) == [], args


@pytest.mark.parametrize(
    "args", [["worker", "--until-idle"], ["submit", "simulator", "--body", "{}"]]
)
def test_a_db_in_a_folder_that_does_not_exist_is_refused(ws: Workspace, args: list[str]) -> None:
    """A writing command given --db in a missing folder (a typo) fails naming the folder,
    and makes neither the folder nor a new, empty ledger."""
    typo = ws.root / "ledgres" / "prod.db"
    done = ws.run("--db", str(typo), *args, check=False)
    assert done.returncode != 0
    assert f"no folder {typo.parent} for the ledger {typo}" in done.stderr, done.stderr
    assert not typo.parent.exists()


@pytest.mark.parametrize(
    "args",
    [["list"], ["audit", "verify"], ["worker", "--until-idle"], ["submit", "simulator"]],
)
def test_an_unknown_url_scheme_is_refused_by_every_command(ws: Workspace, args: list[str]) -> None:
    """A mysql:// ledger URL is an error naming the URL with its password masked, for
    reading and writing commands alike, and no file or folder is made from it."""
    before = sorted(ws.root.rglob("*"))
    url = "mysql://bob:hunter2@db.example/ledger"
    if args[0] == "submit":
        args = [*args, "--body", "{}"]
    done = ws.run("--db", url, *args, check=False)
    assert done.returncode != 0
    assert "mysql://bob:[redacted]@db.example/ledger" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr
    assert sorted(ws.root.rglob("*")) == before


def test_a_newer_ledger_is_refused_by_every_command(ws: Workspace) -> None:
    """A ledger whose schema is newer than this jobtrail's is refused, with the sentence that
    says to upgrade, by reading, deciding and writing commands alike."""
    op = ws.json("submit", "simulator", "--body", "{}")["operation_id"]
    conn = sqlite3.connect(ws.db)
    try:
        conn.execute("INSERT INTO schema_migrations VALUES (9999, '2030-01-01T00:00:00Z')")
        conn.commit()
    finally:
        conn.close()
    for args in (
        ["list"],
        ["status", op],
        ["audit", "verify"],
        ["cancel", op, "--reason", "r"],
        ["worker", "--until-idle"],
        ["submit", "simulator", "--body", '{"other": 1}'],
    ):
        done = ws.run(*args, check=False)
        assert done.returncode != 0, args
        assert "this ledger was migrated by a newer jobtrail (schema 9999" in done.stderr, args
        assert "upgrade jobtrail" in done.stderr


def _state(db: Path, operation_id: str) -> str:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT state FROM operations WHERE operation_id = ?", (operation_id,)
        ).fetchone()
    finally:
        conn.close()
    return str(row[0])


def _replace(db: Path) -> None:
    """Put another file at the ledger's path (a restore from a copy, say)."""
    copy = db.with_name("copy.db")
    copy.write_bytes(db.read_bytes())
    os.replace(copy, db)


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"], ids=["main", "wal", "shm"])
@pytest.mark.parametrize("swap", [Path.unlink, _replace], ids=["deleted", "replaced"])
def test_a_worker_stops_when_its_ledger_file_goes(ws: Workspace, swap: object, suffix: str) -> None:
    """A worker whose ledger file, or its -wal or -shm file, is deleted or replaced while it
    observes a job stops with a non-zero exit and an error naming the file, instead of
    writing on into the void (a deleted -wal once lost every write made after it)."""
    op = ws.json("submit", "simulator", "--body", '{"_sim": {"never_finish": true}}')
    worker = subprocess.Popen(
        [JOBTRAIL, "worker"],
        cwd=ws.root,
        env=ws.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    gone = ws.db.with_name(ws.db.name + suffix)
    try:
        until_true(  # the job is observed within a few polls
            lambda: _state(ws.db, op["operation_id"]) == "observing" or worker.poll() is not None,
            30,
            "the job observed",
        )
        assert _state(ws.db, op["operation_id"]) == "observing"
        assert callable(swap) and gone.exists()
        swap(gone)
        _, stderr = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode not in (0, None)
    assert f"the ledger file {gone} was" in stderr, stderr[-2000:]


def _count(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_backup_of_a_live_ledger_holds_what_is_only_in_the_wal(ws: Workspace) -> None:
    """`jobtrail backup` copies operations still only in the -wal file, which a plain copy
    of the ledger file misses, and the copy passes `audit verify`."""
    ws.json("submit", "simulator", "--body", '{"n": 0}')  # creates the ledger, checkpointed
    # A reader holding a snapshot, as a live worker would: what is committed after it stays
    # in the WAL (no checkpoint may copy it into the file past this reader).
    holder = sqlite3.connect(ws.db, isolation_level=None)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM operations").fetchone()
        for n in range(1, 4):
            ws.json("submit", "simulator", "--body", f'{{"n": {n}}}')
        plain = ws.root / "plain-copy.db"
        plain.write_bytes(ws.db.read_bytes())
        assert _count(plain, "operations") == 1  # stale: three operations live in the WAL
        done = ws.run("backup", "backup.db")
        assert "4 operations" in done.stdout
    finally:
        holder.close()
    copy = ws.root / "backup.db"
    assert _count(copy, "operations") == 4
    assert _count(copy, "audit_log") == _count(ws.db, "audit_log")
    assert ws.run("--db", str(copy), "audit", "verify").returncode == 0
    again = ws.run("backup", "backup.db", check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    assert not list(ws.root.glob(".*.tmp"))


def test_backup_of_a_postgres_ledger_points_to_pg_dump(tmp_path: Path) -> None:
    """`jobtrail backup` on a PostgreSQL ledger refuses, points to pg_dump, shows no
    password and writes nothing."""
    url = "postgresql://ana:s3cr3t-pw@127.0.0.1:1/ledger"
    done = _jobtrail(tmp_path, "--db", url, "backup", "out.db")
    assert done.returncode != 0 and "pg_dump" in done.stderr
    assert "s3cr3t" not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


def test_result_is_rechecked_and_found_from_any_directory(ws: Workspace) -> None:
    """A result stored by a worker started with a relative ledger path is found and
    re-hashed by `result` run from another directory; once the file is edited, `result`
    exits non-zero, says it changed since validation and no longer calls it valid."""
    op = ws.json("submit", "simulator", "--body", "{}")["operation_id"]
    ws.run("--db", "jobtrail.db", "worker", "--until-idle")
    elsewhere = ws.root / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in ws.env().items() if k != "JOBTRAIL_DB"}
    read = subprocess.run(
        [JOBTRAIL, "--db", str(ws.db), "result", op, "--json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert read.returncode == 0, read.stderr
    summary = json.loads(read.stdout)["result"]
    stored = Path(summary["location"])
    assert stored.is_absolute() and stored.is_file() and summary["valid"] is True
    stored.write_bytes(stored.read_bytes() + b"forged,row\n")
    found = hashlib.sha256(stored.read_bytes()).hexdigest()
    changed = ws.run("result", op, "--json", check=False)
    assert changed.returncode != 0
    summary = json.loads(changed.stdout)["result"]
    assert summary["valid"] is False
    assert summary["problems"][-1] == (
        f"stored result changed since it was validated: expected sha256:{summary['sha256']}, "
        f"found sha256:{found}"
    )
    text = ws.run("result", op, check=False)
    assert text.returncode != 0 and "stored result changed since it was validated" in text.stderr
