"""Every ```python example in docs/python.md runs, unchanged, against the real simulator over
loopback: on a SQLite ledger in an empty folder, and on PostgreSQL (the ledger path swapped
for a fresh schema's URL). The `simulator` profile they name is the one shipped in the
package, pointed at the test's simulator through JOBTRAIL_PROVIDERS."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

import jobtrail
from jobtrail.client.providers import resolve_provider, shipped_profiles
from jobtrail.simulator.thread import SimulatorThread

from stores import migrated_ledger

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "docs-test-token-not-a-real-one"
SHIPPED = resources.files("jobtrail") / "profiles" / "simulator.toml"


def examples(page: str = "docs/python.md") -> list[tuple[str, str]]:
    """(where, source) of each ```python block of `page`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        found.append((f"{page}:{text[: match.start()].count(chr(10)) + 2}", match.group(1)))
    return found


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working folder, the simulator, and the shipped profile pointed at it."""
    for name in ("JOBTRAIL_DB", "JOBTRAIL_DATA", "JOBTRAIL_RESULTS", "JOBTRAIL_AUDIT_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with SimulatorThread(token=TOKEN) as sim:
        providers = tmp_path / "providers"
        providers.mkdir()
        profile = SHIPPED.read_text(encoding="utf-8")
        (providers / "simulator.toml").write_text(
            profile.replace('"http://127.0.0.1:8700"', f'"{sim.base_url}"'), encoding="utf-8"
        )
        monkeypatch.setenv("JOBTRAIL_PROVIDERS", str(providers))
        yield work


def run_examples(db: str | None = None, page: str = "docs/python.md") -> None:
    for where, source in examples(page):
        if db is not None:
            source = source.replace('"jobtrail.db"', repr(db))
        code = compile(source, where, "exec")
        exec(code, {"__name__": "__main__"})


def test_the_examples_run_on_sqlite(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each example of docs/python.md runs as written; the first prints a valid result."""
    assert len(examples()) >= 6
    run_examples()
    out = capsys.readouterr().out
    assert out.startswith("succeeded True ")
    assert "refused:" in out and "cancelled" in out and "result_timed_out" in out
    assert "\nsucceeded 3\n" in out  # the scripted provider, three reads in virtual time
    assert (folder / "jobtrail.db").is_file()


def test_the_readme_example_runs(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's "From Python" example runs as written."""
    assert len(examples("README.md")) == 1
    run_examples(page="README.md")
    assert capsys.readouterr().out == "succeeded 3\n"


@pytest.mark.slow  # every docs/python.md example in real time
@pytest.mark.postgres
def test_the_examples_run_on_postgres(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same examples run with the Client opened on a PostgreSQL ledger."""
    import asyncio

    async def schema_url() -> None:
        async with migrated_ledger("postgres", folder) as db:
            await asyncio.to_thread(run_examples, db.url)

    asyncio.run(schema_url())
    out = capsys.readouterr().out
    assert out.startswith("succeeded True ") and "cancelled" in out
    assert "\nsucceeded 3\n" in out
    assert not (folder / "jobtrail.db").exists()


def test_the_simulator_profile_ships_in_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From an empty folder, "simulator" names the shipped profile; a broken local file of
    that name is reported rather than replaced by it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBTRAIL_PROVIDERS", raising=False)
    assert "simulator" in shipped_profiles()
    spec = resolve_provider("simulator")
    assert spec.name == "simulator" and spec.base_url == "http://127.0.0.1:8700"
    with pytest.raises(jobtrail.ProviderConfigError, match="no provider named 'nowhere'"):
        resolve_provider("nowhere")
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "simulator.toml").write_text("name = ", encoding="utf-8")
    with pytest.raises(jobtrail.ProviderConfigError, match="not valid TOML"):
        resolve_provider("simulator")
