"""The dashboard's pages as HTML: needs attention, the operations list, one operation.
Pure functions of what the routes read; every value is escaped by `render`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from string import Template
from typing import Any

from jobtrail.core.allows import cancellability
from jobtrail.core.failure import failure_reason
from jobtrail.core.model import Attempt, Operation
from jobtrail.core.nextstep import attention_reason, deadlines_shown, next_step, other_jobs_text
from jobtrail.core.states import State
from jobtrail.core.words import progress_text, relative
from jobtrail.dashboard.html import Html, join, path, query, render, when
from jobtrail.ledger import OperationPage, OperationQuery
from jobtrail.presentation.facts import fact_rows
from jobtrail.presentation.views import timeline
from jobtrail.services.story import Story

ATTENTION = (
    State.CREATE_UNKNOWN,
    State.RECONCILIATION,
    State.NEEDS_HUMAN,
    State.CANCELLATION_UNCONFIRMED,
    State.RESULT_TIMED_OUT,
    State.RESULT_UNAVAILABLE,
    State.RESULT_VALIDATION_FAILED,
)
_ROW = Template(
    '<tr>$tick<td><a class="opid" href="$href">$id</a></td><td><span class="state s-$state">'
    "$state</span></td><td>$provider</td><td>$key</td><td>$actor</td><td>$created</td>"
    "<td>$why</td></tr>"
)
_TABLE = Template(
    '<table class="ops"><thead><tr>$tick<th>operation</th><th>state</th><th>provider</th>'
    "<th>key</th><th>actor</th><th>created</th><th>$last</th></tr></thead>"
    "<tbody>$rows</tbody></table>"
)
# A row's box belongs to the bulk form above the table (the `form` attribute).
_TICK = Template(
    '<td class="tick"><input type="checkbox" name="id" value="$id" form="bulk" '
    'aria-label="select $id"></td>'
)


def op_rows(
    ops: Sequence[Operation],
    now: datetime,
    why: dict[str, str] | None = None,
    *,
    select: bool = False,
) -> Html:
    if not ops:
        return Html('<p class="empty">None.</p>')
    rows = join(
        render(
            _ROW,
            tick=render(_TICK, id=op.operation_id) if select else Html(""),
            href=path("operations", op.operation_id),
            id=op.operation_id,
            state=op.state.value,
            provider=op.provider,
            key=op.key,
            actor=op.actor,
            created=when(op.created_at, now),
            why=(why or {}).get(op.operation_id) or next_step(op, now),
        )
        for op in ops
    )
    tick = Html('<th class="tick"><span class="hint">bulk</span></th>') if select else Html("")
    return render(_TABLE, rows=rows, last="why" if why else "next", tick=tick)


@dataclass(frozen=True, kw_only=True)
class Attention:
    stuck: list[Operation]  # in a state that waits for a person
    overdue: list[Operation]  # due for a poll long ago, and no worker took it
    expired: list[Operation]  # leased, the lease past its time
    counts: dict[State, int]


def attention_page(seen: Attention, now: datetime) -> Html:
    why = {op.operation_id: attention_reason(op) for op in seen.stuck}
    why |= {
        op.operation_id: f"poll overdue since {_rel(op.next_poll_at, now)}; no worker took it"
        for op in seen.overdue
    }
    why |= {
        op.operation_id: f"lease of {op.lease_owner} (fence {op.fence}) expired "
        f"{_rel(op.lease_expires_at or op.next_poll_at, now)}"
        for op in seen.expired
    }
    ops = [*seen.stuck, *seen.overdue, *seen.expired]
    counts = join(
        render(
            Template('<li><a href="$href">$state</a> <b>$n</b></li>'),
            href=query("/operations", state=state.value),
            state=state.value,
            n=n,
        )
        for state, n in sorted(seen.counts.items())
    )
    return render(
        Template(
            '<h1>Needs attention <span class="count">$n</span></h1>'
            '<section id="attention" data-live>$table</section>'
            '<h2>All operations by state</h2><ul class="counts" id="counts" data-live>'
            "$counts</ul>"
        ),
        n=len(ops),
        table=op_rows(ops, now, why),
        counts=counts,
    )


def _rel(value: datetime | None, now: datetime) -> str:
    return relative(value, now) if value else "?"


_FILTERS = Template(
    '<form class="filters" method="get" action="/operations">'
    '<label>state <select name="state"><option value="">any</option>$states</select></label>'
    '<label>provider <input name="provider" value="$provider"></label>'
    '<label>actor <input name="actor" value="$actor"></label>'
    '<label>key <input name="key" value="$key"></label>'
    '<label>from <input name="from" value="$from_" placeholder="2026-12-01T09:00"></label>'
    '<label>until <input name="until" value="$until" placeholder="2026-12-02"></label>'
    '<button type="submit">Filter</button> <a href="/operations">clear</a></form>'
)


def list_page(
    found: OperationPage,
    asked: OperationQuery,
    form: dict[str, str],
    now: datetime,
    *,
    bulk: Html | None = None,
) -> Html:
    """The filtered list; with `bulk` (the bulk action form, for an operator) a box on each
    row to tick."""
    chosen = asked.states[0].value if asked.states else ""
    states = join(
        render(
            Template('<option value="$v"$sel>$v</option>'),
            v=s.value,
            sel=Html(" selected") if s.value == chosen else Html(""),
        )
        for s in State
    )
    filters = render(
        _FILTERS,
        states=states,
        provider=form.get("provider", ""),
        actor=form.get("actor", ""),
        key=form.get("key", ""),
        from_=form.get("from", ""),
        until=form.get("until", ""),
    )
    first = asked.offset + 1 if found.operations else 0
    last = asked.offset + len(found.operations)
    links = []
    if asked.offset > 0:
        links.append(_page_link(form, asked.offset // asked.limit, "← newer"))
    if last < found.total:
        links.append(_page_link(form, asked.offset // asked.limit + 2, "older →"))
    table = op_rows(found.operations, now, select=bulk is not None)
    if not found.operations and asked.offset > 0:
        pages = max(1, -(-found.total // asked.limit))
        table = render(
            Template(
                '<p class="empty past-end">Page $page is past the end: $total match, on '
                "$pages page(s).</p>"
            ),
            page=asked.offset // asked.limit + 1,
            total=found.total,
            pages=pages,
        )
        links = [_page_link(form, pages, "← last page")]
    return render(
        Template(
            "<h1>Operations</h1>$filters$bulk"
            '<div id="listing" data-live><p class="shown">$shown of $total'
            '<span class="range"> (showing $first–$last)</span></p>$table'
            '<nav class="pages">$links</nav></div>'
        ),
        filters=filters,
        bulk=bulk or Html(""),
        shown=len(found.operations),
        total=found.total,
        first=first,
        last=last,
        table=table,
        links=join(links, " "),
    )


def _page_link(form: dict[str, str], number: int, label: str) -> Html:
    return render(
        Template('<a href="$href">$label</a>'),
        href=query("/operations", **{**form, "page": str(number)}),
        label=label,
    )


def facts(story: Story, now: datetime) -> Html:
    op = story.op
    cancel = cancellability(op)
    rows: list[tuple[str, object]] = [
        ("state", render(Template('<span class="state s-$s">$s</span>'), s=op.state.value)),
        ("key", op.key),
        ("provider", op.provider),
        ("remote job", op.remote_job_id or "none known"),
        ("remote state", op.remote_state or "—"),
        ("progress", progress_text(op.progress)),
        ("next", render(Template('<span id="next">$t</span>'), t=next_step(op, now))),
        ("cancel", render(Template('<span id="cancellable">$t</span>'), t=cancel.why)),
    ]
    if (why := failure_reason(op, story.attempts, story.observations)) is not None:
        rows.append(("provider's reason", render(Template('<span id="failure">$t</span>'), t=why)))
    if (others := other_jobs_text(op)) is not None:
        rows.append(("other jobs", others))
    rows += [
        ("next poll", when(op.next_poll_at, now) if not op.lease_owner else "—"),
        (
            "lease",
            f"{op.lease_owner}, fence {op.fence}" if op.lease_owner else f"none (fence {op.fence})",
        ),
    ]
    if op.lease_owner:
        rows.append(("lease expires", when(op.lease_expires_at, now)))
    rows += [
        (
            "asked by",
            op.actor + (f", authorized by {op.authorized_by}" if op.authorized_by else ""),
        ),
        ("reason", op.reason or "—"),
        ("created", when(op.created_at, now)),
    ]
    rows += [(f"{name} deadline", when(at, now)) for name, at in deadlines_shown(op)]
    rows += [
        ("fingerprint", op.fingerprint),
        ("idempotency token", op.idempotency_token),
        ("trace id", op.trace_id),
    ]
    if op.cancel_intent:
        ci = op.cancel_intent
        rows.append(
            ("cancel asked", f"by {ci.actor}: {ci.reason} (expected: {ci.expected_effect})")
        )
    if op.conflicting_job_ids:
        rows.append(("conflicting jobs", ", ".join(op.conflicting_job_ids)))
    if op.result:
        rows.append(("result", result_section(op)))
    rows += [(label, text) for label, text in fact_rows(op, story.history)]
    return render(
        Template('<dl class="facts">$rows</dl>'),
        rows=join(render(Template("<dt>$k</dt><dd>$v</dd>"), k=k, v=v) for k, v in rows),
    )


def attempts_table(attempts: list[Attempt], now: datetime) -> Html:
    rows = []
    previous: datetime | None = None
    for at in attempts:
        waited = f"{(at.started_at - previous).total_seconds():.1f} s" if previous else "—"
        took = (
            f"{(at.finished_at - at.started_at).total_seconds() * 1000:.0f} ms"
            if at.finished_at
            else "no outcome (interrupted)"
        )
        previous = at.finished_at or at.started_at
        rows.append(
            render(
                Template(
                    "<tr><td>$id</td><td>$kind</td><td>$at</td><td>$waited</td><td>$took</td>"
                    "<td>$outcome</td><td>$status</td><td>$req</td></tr>"
                ),
                id=at.attempt_id,
                kind=at.kind.value,
                at=when(at.started_at, now),
                waited=waited,
                took=took,
                outcome=at.outcome or "—",
                status=at.http_status or "—",
                req=at.provider_request_id or "—",
            )
        )
    return render(
        Template(
            '<table class="attempts"><thead><tr><th>attempt</th><th>kind</th><th>started</th>'
            "<th>waited</th><th>call</th><th>outcome</th><th>HTTP</th><th>provider request</th>"
            "</tr></thead><tbody>$rows</tbody></table>"
        ),
        rows=join(rows),
    )


def story_sections(story: Story, now: datetime) -> Html:
    op = story.op
    lines = join(
        render(Template("<li>$at <span>$text</span></li>"), at=when(at, now), text=text)
        for at, text in timeline(op, story.history, story.attempts, story.observations)
    )
    audit = join(_audit_row(entry) for entry in story.audit)
    request = op.request
    body = json.dumps(request.body, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    bundle = json.dumps(story.escalation(), indent=2, ensure_ascii=False)
    return render(
        Template(
            '<h2>Timeline</h2><ol class="timeline">$lines</ol>'
            "<h2>Attempts</h2>$attempts"
            "<h2>Request <small>(redacted)</small></h2><p><code>$target</code></p>"
            "<pre>$body</pre>"
            "<h2>Result</h2>$result"
            '<h2>Audit log</h2><table class="audit"><thead><tr><th>at</th><th>kind</th>'
            "<th>actor</th><th>data</th></tr></thead><tbody>$audit</tbody></table>"
            '<h2>Escalation bundle</h2><p><a href="$bundle_href">download JSON</a></p>'
            "<details><summary>show</summary><pre>$bundle</pre></details>"
        ),
        lines=lines,
        attempts=attempts_table(story.attempts, now),
        target=request.target,
        body=body,
        result=result_section(op),
        audit=audit,
        bundle_href=path("operations", op.operation_id, "escalation.json"),
        bundle=bundle,
    )


def _audit_row(entry: dict[str, Any]) -> Html:
    """One audit entry; long data folds away behind its first words."""
    data = json.dumps(entry.get("data"), ensure_ascii=False, sort_keys=True)
    shown = (
        render(Template("<code>$data</code>"), data=data)
        if len(data) <= 160
        else render(
            Template("<details><summary><code>$head…</code></summary><code>$data</code></details>"),
            head=data[:120],
            data=data,
        )
    )
    return render(
        Template("<tr><td>$at</td><td>$kind</td><td>$actor</td><td>$data</td></tr>"),
        at=entry.get("at", ""),
        kind=entry.get("kind", ""),
        actor=entry.get("actor", ""),
        data=shown,
    )


def result_section(op: Operation) -> Html:
    result = op.result
    if result is None:
        if op.state.ends_automation:
            return render(
                Template('<p class="empty">No result: the operation ended $state.</p>'),
                state=op.state.value,
            )
        return Html('<p class="empty">No result yet.</p>')
    parts = [
        "valid" if result.valid else "INVALID",
        f"partial: what the job finished before it ended {op.state}" if result.partial else None,
        f"{result.size} bytes" if result.size is not None else None,
        f"{result.records} records" if result.records is not None else None,
        f"items: {result.items.succeeded} succeeded, {result.items.failed} failed"
        if result.items
        else None,
        result.content_type,
        f"sha256 {result.sha256}" if result.sha256 else None,
    ]
    link = (
        render(
            Template('<a href="$href">download</a> (the content hash is checked again)'),
            href=path("operations", op.operation_id, "result"),
        )
        if result.location
        else Html("")
    )
    problems = join(render(Template("<li>$p</li>"), p=p) for p in result.problems)
    failed = Html("")
    if result.items and result.items.failed_refs:
        refs = result.items.failed_refs
        failed = render(
            Template('<p class="failed-items">failed items: $refs$more</p>'),
            refs=", ".join(refs),  # as many as validation kept
            more=f" and {result.items.failed - len(refs)} more"
            if result.items.failed > len(refs)
            else "",
        )
    return render(
        Template('<p>$summary $link</p>$failed<ul class="problems">$problems</ul>'),
        summary=", ".join(p for p in parts if p),
        link=link,
        failed=failed,
        problems=problems,
    )
