"""Each external call runs in an OpenTelemetry span whose trace id is the operation's.

Only `opentelemetry-api` is used: without an SDK installed the spans cost next to nothing
and export nowhere; with one, they join the operation's trace. Either way the call carries
a W3C `traceparent` with the operation's trace id, so the provider sees one trace per
operation, never one per poll.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import (
    NonRecordingSpan,
    NoOpTracerProvider,
    ProxyTracerProvider,
    SpanContext,
    SpanKind,
    TraceFlags,
)

from jobtrail.core.ids import span_id

_tracer = trace.get_tracer("jobtrail")


@contextmanager
def call_span(
    name: str, trace_id: str, attributes: dict[str, str], rand: random.Random
) -> Iterator[str]:
    """Run the body inside a client span; yields the `traceparent` header value."""
    if isinstance(trace.get_tracer_provider(), ProxyTracerProvider | NoOpTracerProvider):
        # No SDK configured: the span would record nothing and carry the parent's ids, so
        # the header is written directly (checked per call: an SDK set up later is used).
        yield f"00-{int(trace_id, 16):032x}-{span_id(rand)}-01"
        return
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id(rand), 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    context = trace.set_span_in_context(NonRecordingSpan(parent))
    with _tracer.start_as_current_span(
        name, context=context, kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        current = span.get_span_context()
        used = current if current.is_valid else parent
        yield f"00-{used.trace_id:032x}-{used.span_id:016x}-01"
