"""The `/metrics` figures as OpenTelemetry metrics (dashboard/otel.py): with an SDK meter
provider (an in-memory reader) they agree with the Prometheus scrape of the same ledger;
with the API's own providers nothing is registered."""

from __future__ import annotations

from typing import Any

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from jobtrail.core.metrics import render
from jobtrail.dashboard.otel import otel_metrics

from harness import SECRET, Harness


def points(reader: InMemoryMetricReader) -> dict[str, float]:
    """Each data point as `name{k="v",...}` -> value, as the scrape names them."""
    found: dict[str, float] = {}
    data: Any = reader.get_metrics_data()
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    attrs = ",".join(f'{k}="{v}"' for k, v in point.attributes.items())
                    name = metric.name.replace(".", "_")
                    found[name + (f"{{{attrs}}}" if attrs else "")] = point.value
    return found


async def test_otel_figures_agree_with_the_scrape(rig: Harness) -> None:
    await rig.submit({"account": "a", "_sim": {"never_finish": True}})
    await rig.tick()
    await rig.tick()  # a status read of a
    await rig.submit({"account": "b", "_sim": {"drop_create_answer": True}})
    await rig.tick()
    await rig.rt.flush_lateness()
    reader = InMemoryMetricReader()
    async with otel_metrics(rig.rt.ledger, MeterProvider(metric_readers=[reader])) as found:
        assert found is not None
        await found.refresh()
        shown = points(reader)
        text = render(await rig.rt.ledger.metric_counts())
    assert SECRET not in str(shown)
    scraped = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            scraped[name.replace("jobtrail_calls_total", "jobtrail_calls")] = float(value)
    renamed = {"jobtrail_oldest_due_lateness": "jobtrail_oldest_due_lateness_seconds"}
    for part in ("bucket", "sum", "count"):
        renamed[f"jobtrail_poll_lateness_{part}"] = f"jobtrail_poll_lateness_seconds_{part}"
    for name, value in shown.items():
        base = name.split("{")[0]
        key = name.replace(base, renamed.get(base, base), 1)
        assert scraped[key] == value, name
    ops = sum(v for k, v in shown.items() if k.startswith("jobtrail_operations{"))
    assert ops == 2 and any(k.startswith("jobtrail_calls{") for k in shown)
    assert any(k.startswith("jobtrail_create_unsettled_by_tier{") for k in shown)
    reads = sum(1 for call in rig.sim.calls if call.kind == "status")
    assert shown['jobtrail_poll_lateness_count{provider="simulator"}'] == reads > 0
    assert shown['jobtrail_poll_lateness_bucket{provider="simulator",le="+Inf"}'] == reads


async def test_nothing_is_registered_without_an_sdk(rig: Harness) -> None:
    async with otel_metrics(rig.rt.ledger, NoOpMeterProvider()) as found:
        assert found is None
    async with otel_metrics(rig.rt.ledger) as default:  # the API's proxy: no SDK set
        assert default is None
