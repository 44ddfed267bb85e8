"""One operation's page as HTML: its facts, its story (timeline, attempts, audit entries)
and its result. Pure functions of what the routes read; every value is escaped by `render`."""

from __future__ import annotations

import json
from datetime import datetime
from string import Template
from typing import Any

from jobtrail.core.model import Attempt, Operation
from jobtrail.core.nextstep import deadlines_shown, other_jobs_text
from jobtrail.core.order import cancel_order
from jobtrail.core.words import progress_text
from jobtrail.dashboard.html import Html, join, path, render, when
from jobtrail.presentation.facts import fact_rows
from jobtrail.presentation.views import operation_view, timeline
from jobtrail.services.story import Story


def facts(story: Story, now: datetime) -> Html:
    op = story.op
    view = operation_view(op, now, attempts=story.attempts, observations=story.observations)
    rows: list[tuple[str, object]] = [
        ("state", render(Template('<span class="state s-$s">$s</span>'), s=op.state.value)),
        ("key", op.key),
        ("provider", op.provider),
        ("remote job", op.remote_job_id or "none known"),
        ("remote state", op.remote_state or "—"),
        ("progress", progress_text(op.progress)),
        ("next", render(Template('<span id="next">$t</span>'), t=view.next_step)),
        ("cancel", render(Template('<span id="cancellable">$t</span>'), t=view.cancel_note)),
    ]
    if view.failure_reason is not None:
        failure = render(Template('<span id="failure">$t</span>'), t=view.failure_reason)
        rows.append(("provider's reason", failure))
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
        ended = cancel_order(op, story.history, story.attempts, story.observations)
        if ended is not None:
            rows.append(("cancel outcome", ended))
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
            else "no outcome recorded"
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
        for at, text in timeline(op, story.history, story.attempts, story.observations, now)
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
