"""The dashboard's pages as HTML: needs attention and the operations list (one operation's
page is in dashboard/operation.py). Pure functions of what the routes read; every value is
escaped by `render`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from string import Template

from jobtrail.core.model import Operation
from jobtrail.core.nextstep import attention_reason, next_step
from jobtrail.core.states import State
from jobtrail.core.words import relative
from jobtrail.dashboard.html import Html, join, path, query, render, when
from jobtrail.ledger import OperationPage, OperationQuery

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
