"""Stored results are re-hashed when read, located independently of the working directory,
and written without leaving partial temporary files behind."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.core.states import State
from jobtrail.results.blobs import BlobStore, ResultChanged, is_file_location

from harness import Harness


async def test_get_result_reports_a_changed_file_and_never_serves_it(rig: Harness) -> None:
    """After the stored file is edited, MCP get_result says it changed since validation,
    names both digests, marks the result not valid and returns none of the content."""
    op = await rig.submit({"account": "a"})
    await rig.run()
    op = await rig.op(op)
    assert op.state is State.SUCCEEDED and op.result is not None and op.result.location
    tools = AgentTools(rig.rt.ledger, worker_running=False)
    before = await tools.get_result(op.operation_id, actor="cli:tester")
    assert before.valid is True and before.content
    stored = Path(op.result.location)
    stored.write_bytes(stored.read_bytes() + b"forged,row\n")
    found = hashlib.sha256(stored.read_bytes()).hexdigest()
    after = await tools.get_result(op.operation_id, actor="cli:tester")
    expected = (
        f"stored result changed since it was validated: expected sha256:{op.result.sha256}, "
        f"found sha256:{found}"
    )
    assert after.valid is False and expected in after.problems
    assert after.content is None and after.preview is None
    assert "forged" not in repr(after)


async def test_a_changed_synchronous_result_fails_collection(tmp_path: Path) -> None:
    """Reading a stored file back (as collecting a synchronous result does) raises
    ResultChanged, an OSError, when the content no longer hashes to its address."""
    blobs = BlobStore(tmp_path / "data")
    location = blobs.put_sync(b'{"ok": true}')
    assert blobs.read(location) == b'{"ok": true}'
    Path(location).write_bytes(b'{"ok": false}')
    with pytest.raises(ResultChanged, match="stored result changed since it was validated"):
        blobs.read(location)


def test_locations_are_absolute_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store opened with a relative folder records absolute locations, readable from any
    working directory; a relative location from an older ledger is found by its address."""
    monkeypatch.chdir(tmp_path)
    blobs = BlobStore("jobtrail-data")
    location = blobs.put_sync(b"content")
    assert Path(location).is_absolute() and is_file_location(location)
    assert not is_file_location("db:1234") and not is_file_location("s3://bucket/key")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert BlobStore.read(location) == b"content"
    legacy = os.path.relpath(location, tmp_path)  # as an older worker in tmp_path recorded it
    assert blobs.locate(legacy) == Path(location)


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A write that fails after its temporary file was made (here the final name is taken
    by a folder) raises and leaves no *.tmp behind."""
    blobs = BlobStore(tmp_path)
    content = b"result"
    final = blobs.path_for(hashlib.sha256(content).hexdigest())
    (final / "in-the-way").mkdir(parents=True)
    with pytest.raises(OSError):
        blobs.put_sync(content)
    assert list(tmp_path.rglob("*.tmp")) == []


def test_temporaries_of_killed_writers_are_removed_before_the_first_write(
    tmp_path: Path,
) -> None:
    """Leftover temporaries of a dead process on this host are removed when a store first
    writes; a live process's, and another host's, are left alone."""
    dead_pid = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()  # a process that has exited: its pid is (almost surely) free
    folder = tmp_path / "results" / "ab"
    folder.mkdir(parents=True)
    host, digest = socket.gethostname(), "ab" + "0" * 62
    stale = folder / f".{digest}.{host}.{dead_pid}.1.tmp"
    live = folder / f".{digest}.{host}.{os.getpid()}.2.tmp"
    foreign = folder / f".{digest}.some-other-host.{dead_pid}.1.tmp"
    for path in (stale, live, foreign):
        path.write_bytes(b"partial")
    BlobStore(tmp_path).put_sync(b"anything")
    assert not stale.exists()
    assert live.exists() and foreign.exists()
