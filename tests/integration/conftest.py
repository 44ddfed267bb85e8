"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import suppress
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from airflow_rig import VERSION, Airflow
from airflow_rig import airflow_server as airflow_server_started

from harness import Harness, harness


@pytest.fixture
async def rig(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    """The end-to-end rig (tests/harness.py), once per store kind: a test that takes it
    runs on SQLite and on PostgreSQL (skipped, or failed in CI, without a server)."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind) as h:
        yield h


@pytest.fixture(scope="session")
def airflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Airflow]:
    """A real Airflow 3 server for the session (tests/airflow_rig.py): installed once into
    .cache/, started on a free loopback port, stopped at the end."""
    with airflow_server_started(tmp_path_factory.mktemp("airflow-home")) as server:
        print(
            f"\nAirflow {VERSION} ready at {server.base_url} in {server.started_in:.1f}s "
            f"({server.warm_up_runs} warm-up run(s))"
        )
        yield server


BUCKET = "jobtrail-results"  # the bucket s3_env makes on the module's S3 server


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """A real S3-compatible server (moto's) on a free loopback port, for this module."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The standard AWS settings pointing at the local server, and an empty bucket."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3")
    with suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=BUCKET)
    return s3_server
