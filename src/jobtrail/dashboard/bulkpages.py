"""The dashboard's bulk actions as HTML: the form on the operations list (the ticked
operations, or all that match the filter) and the page of one bulk action, each operation
with its outcome and its state now, followed until every item has settled."""

from __future__ import annotations

from datetime import datetime
from string import Template

from jobtrail.core.bulk import BULK_CAP, BulkAction, BulkRecord, ItemOutcome, item_settled
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import next_step
from jobtrail.dashboard.html import Html, join, path, query, render, when

_FORM = Template(
    '<form id="bulk" class="bulk" method="post" action="/bulk">'
    '<input type="hidden" name="csrf" value="$csrf"><input type="hidden" name="bulk" '
    'value="$bulk">$hidden<fieldset><legend>Act on several</legend>'
    '<label>which <select name="which"><option value="selected">the ticked operations'
    '</option><option value="matching">all $total that match the filter</option></select>'
    '</label><label>action <select name="action">$actions</select></label>'
    '<label>by (extend) <input name="duration" value="1h" size="6"></label>'
    '<label>reason <input name="reason" required maxlength="500"></label>'
    '<button type="submit">Apply</button><span class="cap">at most $cap operations per '
    "action; each goes through the same checks as on its own page</span></fieldset></form>"
)


def bulk_form(filters: dict[str, str], total: int, csrf: str, bulk_id: str) -> Html:
    """The bulk form for a list filtered by `filters` (`total` match)."""
    hidden = join(
        render(Template('<input type="hidden" name="$k" value="$v">'), k=k, v=v)
        for k, v in filters.items()
        if k != "page"
    )
    actions = join(
        render(Template('<option value="$v">$label</option>'), v=a.value, label=a.words)
        for a in BulkAction
    )
    return render(
        _FORM, csrf=csrf, bulk=bulk_id, hidden=hidden, total=total, actions=actions, cap=BULK_CAP
    )


_ITEM = Template(
    '<tr class="item $outcome"><td><a class="opid" href="$href">$id</a></td>'
    '<td><span class="outcome o-$outcome">$outcome</span></td><td>$why</td>'
    '<td><span class="state s-$state">$state</span></td><td>$next</td></tr>'
)


def bulk_page(record: BulkRecord, ops: dict[str, Operation | None], now: datetime) -> Html:
    """One bulk action: what was asked, and each operation's outcome and state now."""
    settled = sum(
        item_settled(record.action, item, ops.get(item.operation_id)) for item in record.items
    )
    rows = []
    for item in record.items:
        op = ops.get(item.operation_id)
        rows.append(
            render(
                _ITEM,
                href=path("operations", item.operation_id),
                id=item.operation_id,
                outcome=item.outcome.value,
                why=item.why,
                state=op.state.value if op else "pruned",
                next=next_step(op, now) if op else "—",
            )
        )
    total = len(record.items)
    watching = (
        Html('<p class="settled" id="settled">Settled: every item has its final word.</p>')
        if settled == total
        else render(
            Template(
                '<p class="watching" id="settled">Watching: $left of $total still waiting '
                "(cancels are confirmed by the provider, later); this page follows them.</p>"
            ),
            left=total - settled,
            total=total,
        )
    )
    counts = ", ".join(f"{record.count(o)} {o.value}" for o in ItemOutcome)
    asked = record.asked.get("filter")
    scope = (
        render(
            Template('all that matched <a href="$href">this filter</a>'),
            href=query("/operations", **asked),
        )
        if isinstance(asked, dict)
        else Html("the ticked operations")
    )
    return render(
        Template(
            '<h1>Bulk action <span class="opid">$id</span></h1>'
            '<p class="asked">$action of $scope, asked by $actor $ago: “$reason”</p>'
            '<div id="bulk-summary" data-live><p class="counts">$total operations: $counts; '
            "settled $settled of $total.</p>$watching</div>"
            '<table class="ops bulk-items"><thead><tr><th>operation</th><th>outcome</th>'
            "<th>why</th><th>state now</th><th>next</th></tr></thead>"
            '<tbody id="bulk-items" data-live>$rows</tbody></table>'
        ),
        id=record.bulk_id,
        action=record.action.words,
        scope=scope,
        actor=record.actor,
        ago=when(record.created_at, now),
        reason=record.reason,
        total=total,
        counts=counts,
        settled=settled,
        watching=watching,
        rows=join(rows),
    )
