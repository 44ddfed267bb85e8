"""The poll lateness histogram's arithmetic (core/lateness.py, core/metrics.py): which
bucket a lateness falls in, what a worker's tally hands over, and the cumulative buckets,
sum and count `/metrics` shows for counts several workers added."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from jobtrail.core.lateness import LABELS, LatenessCount, Tally, cumulative, le_of
from jobtrail.core.metrics import LedgerCounts, poll_lateness, render
from jobtrail.core.model import AttemptKind

from factories import make_op

T0 = datetime(2026, 12, 5, 12, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def test_a_lateness_falls_in_the_first_bucket_whose_bound_it_does_not_pass() -> None:
    assert LABELS == ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")
    assert le_of(0.0) == "0.05"
    assert le_of(0.05) == "0.05"  # a bound is inclusive (Prometheus' `le`)
    assert le_of(0.0500001) == "0.1"
    assert le_of(1.0) == "1"
    assert le_of(2.6) == "5"
    assert le_of(60.0) == "60"
    assert le_of(60.5) == "+Inf"
    assert le_of(86400.0) == "+Inf"


def test_a_tally_counts_status_reads_only_late_by_their_next_poll_time() -> None:
    op = make_op(provider="sim", next_poll_at=T0)
    tally = Tally()
    tally.read(op, AttemptKind.STATUS, T0 + timedelta(seconds=7))
    tally.read(op, AttemptKind.STATUS, T0 + timedelta(seconds=3))
    tally.read(op, AttemptKind.STATUS, T0 - timedelta(seconds=2))  # early (asked for): 0
    tally.read(op, AttemptKind.CREATE, T0 + timedelta(seconds=7))  # not a status read
    tally.read(op, AttemptKind.RESULT, T0 + timedelta(seconds=7))
    counts = tally.take()
    assert counts == [
        LatenessCount(provider="sim", le="0.05", n=1, seconds=0.0),
        LatenessCount(provider="sim", le="10", n=1, seconds=7.0),
        LatenessCount(provider="sim", le="5", n=1, seconds=3.0),
    ]
    assert tally.take() == []  # taken: the next flush starts from nothing


def test_counts_given_back_after_a_failed_flush_join_the_new_ones() -> None:
    tally = Tally()
    tally.observe("sim", 0.3)
    taken = tally.take()
    tally.observe("sim", 0.4)
    tally.add(taken)
    assert tally.take() == [LatenessCount(provider="sim", le="0.5", n=2, seconds=0.7)]


def test_cumulative_buckets_count_every_read_at_or_below_their_bound() -> None:
    shown = dict(cumulative({"0.05": 2, "5": 3, "+Inf": 1}))
    assert list(shown) == list(LABELS)
    assert [shown[le] for le in LABELS] == [2, 2, 2, 2, 2, 2, 5, 5, 5, 5, 6]
    # a bound no longer standard (stored by another version) keeps its place
    assert cumulative({"0.75": 4})[4:6] == [("0.75", 4), ("1", 4)]


def test_the_histogram_sums_what_several_workers_added() -> None:
    counts = LedgerCounts(
        now=T0,
        lateness={("sim", "0.05"): (10, 0.1), ("sim", "10"): (2, 15.5), ("aws", "+Inf"): (1, 90.0)},
    )
    found = poll_lateness(counts)
    assert list(found) == ["aws", "sim"]
    assert (found["sim"].count, found["sim"].sum) == (12, 15.6)
    assert dict(found["sim"].buckets)["5"] == 10 and dict(found["sim"].buckets)["+Inf"] == 12
    assert dict(found["aws"].buckets)["60"] == 0 and dict(found["aws"].buckets)["+Inf"] == 1
    text = render(counts)
    assert "# TYPE jobtrail_poll_lateness_seconds histogram" in text
    assert 'jobtrail_poll_lateness_seconds_bucket{provider="sim",le="10"} 12' in text
    assert 'jobtrail_poll_lateness_seconds_sum{provider="sim"} 15.6' in text
    assert 'jobtrail_poll_lateness_seconds_count{provider="aws"} 1' in text


def test_the_docs_metrics_table_names_every_family_rendered() -> None:
    """docs/dashboard.md's table of `/metrics` lists exactly the families render emits."""
    rendered = {
        line.split()[2]: line.split()[3]
        for line in render(LedgerCounts(now=T0)).splitlines()
        if line.startswith("# TYPE ")
    }
    section = (ROOT / "docs" / "dashboard.md").read_text().split("## Metrics")[1]
    documented = {
        cells[1].strip("` "): cells[2].strip()
        for cells in (line.split("|") for line in section.split("\n## ")[0].splitlines())
        if len(cells) > 3 and cells[1].strip().startswith("`jobtrail_")
    }
    assert documented == rendered
