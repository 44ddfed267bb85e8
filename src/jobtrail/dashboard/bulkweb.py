"""The dashboard's bulk action routes: `POST /bulk` (the form on the operations list) and
`GET /bulk/ID` (what each operation's outcome was, and its state now, followed live until
every item has settled). Each item goes through jobtrail.services.bulk, so through the same ledger
verb and action policy as the single action; the form's bulk id makes a form sent twice
find its action instead of acting again."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from jobtrail.core.bulk import BULK_CAP, BulkAction, too_many
from jobtrail.core.durations import parse_duration
from jobtrail.dashboard.access import Principal
from jobtrail.dashboard.bulkpages import bulk_page
from jobtrail.dashboard.filters import filters_of, query_of
from jobtrail.dashboard.html import page, path, query
from jobtrail.errors import InvalidInput, JobtrailError, NotFound
from jobtrail.services.bulk import check_bulk_id, run_bulk

if TYPE_CHECKING:
    from jobtrail.dashboard.web import Dashboard

log = logging.getLogger("jobtrail.dashboard")


class BulkRoutes:
    def __init__(self, dashboard: Dashboard) -> None:
        self.dash = dashboard

    async def post(self, request: web.Request, who: Principal) -> web.StreamResponse:
        form = await request.post()
        fields = {k: str(v) for k, v in form.items()}
        filters = filters_of(fields, paged=False)
        back = query("/operations", **filters)
        ledger = self.dash.ledger
        try:
            bulk_id = check_bulk_id(fields.get("bulk", ""))
            if await ledger.bulk(bulk_id) is None:  # a form sent again is not tried again
                await self._run(
                    bulk_id, fields, filters, [str(v) for v in form.getall("id", [])], who
                )
        except JobtrailError as exc:
            raise self.dash.redirect(who, back, f"bulk action refused: {exc}", False) from None
        raise web.HTTPSeeOther(path("bulk", bulk_id))

    async def _run(
        self,
        bulk_id: str,
        fields: dict[str, str],
        filters: dict[str, str],
        ticked: list[str],
        who: Principal,
    ) -> None:
        try:
            action = BulkAction(fields.get("action", ""))
        except ValueError:
            raise InvalidInput(f"no bulk action {fields.get('action', '')!r}") from None
        by = None
        if action in (BulkAction.EXTEND_RESULT, BulkAction.EXTEND_CANCEL):
            by = parse_duration(fields.get("duration", "").strip() or "1h")
        asked: dict[str, object] = {"which": fields.get("which", "selected")}
        if fields.get("which") == "matching":
            found = await self.dash.ledger.find_operations(query_of(filters, limit=BULK_CAP + 1))
            if (why := too_many(found.total)) is not None:
                raise InvalidInput(why)
            ids = [op.operation_id for op in found.operations]
            asked["filter"] = filters
        else:
            ids = ticked
        record = await run_bulk(
            self.dash.ledger,
            self.dash.providers,
            bulk_id=bulk_id,
            action=action,
            operation_ids=ids,
            reason=fields.get("reason", ""),
            actor=who.operator.actor,
            asked=asked,
            by=by,
        )
        log.info(
            "dashboard bulk action",
            extra={"action": action.value, "operator": who.operator.name, "items": len(ids)},
        )
        del record

    async def show(self, request: web.Request, who: Principal) -> web.StreamResponse:
        bulk_id = request.match_info["id"]
        record = await self.dash.ledger.bulk(bulk_id)
        if record is None:
            raise NotFound(f"no bulk action {bulk_id!r} in this ledger")
        ops = {
            item.operation_id: await self.dash.ledger.find(item.operation_id)
            for item in record.items
        }
        body = bulk_page(record, ops, self.dash.now())
        return self.dash.respond(page(f"Bulk action {bulk_id}", body, self.dash.who_line(who)))
