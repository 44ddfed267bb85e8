"""The dashboard's routes on jobtrail's aiohttp server (`serve` at `/`, or `dashboard`).

Every page and action answers 401 without a valid operator (a bearer token or a session
cookie); actions also need the operator role and the form's CSRF token. `/healthz`, the
webhook endpoint and the static assets (no data in them) are not behind this gate.

Actions answer by post/redirect/get: the browser is sent to the operation's page (or the
bulk action's), which says whether the action took effect (a notice sealed for the session
rides in the URL), so a reload reads the page again and never sends the action twice, and
the page's live refresh reads a page that exists.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from importlib import resources
from string import Template

from aiohttp import web

from jobtrail.core.ids import short_id
from jobtrail.core.states import State
from jobtrail.dashboard.access import (
    COOKIE,
    SESSION_FOR,
    Access,
    Principal,
    Role,
    same_site_path,
)
from jobtrail.dashboard.actions import ACTIONS, action_forms, perform
from jobtrail.dashboard.bulkpages import bulk_form
from jobtrail.dashboard.bulkweb import BulkRoutes
from jobtrail.dashboard.census import CensusRoutes, job_actions
from jobtrail.dashboard.filters import filters_of, query_of
from jobtrail.dashboard.html import Html, join, page, path, render
from jobtrail.dashboard.operation import facts, story_sections
from jobtrail.dashboard.pages import ATTENTION, Attention, attention_page, list_page
from jobtrail.errors import InvalidInput, JobtrailError, NotFound, ResultError
from jobtrail.ledger import Ledger, OperationQuery
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results import Results
from jobtrail.results.blobs import changed
from jobtrail.services.story import Story, read_story

log = logging.getLogger("jobtrail.dashboard")
LATE_AFTER = timedelta(seconds=30)  # a poll this late, or a lease expired this long, is shown
ASSETS = {
    "dashboard.css": "text/css",
    "dashboard.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}
# A result downloads under the extension of its content type (it is always served as an
# attachment of type application/octet-stream: never the provider's word, never a page).
_EXTENSIONS = {
    "application/json": "json",
    "application/jsonl": "jsonl",
    "application/x-ndjson": "jsonl",
    "application/x-jsonlines": "jsonl",
    "text/csv": "csv",
    "text/plain": "txt",
    "application/pdf": "pdf",
    "application/zip": "zip",
    "application/gzip": "gz",
    "application/x-parquet": "parquet",
}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
Handler = Callable[[web.Request, Principal], Awaitable[web.StreamResponse]]

_LOGIN = Template(
    '<h1>Sign in</h1><p class="notice bad">$why</p>'
    '<form class="login" method="post" action="/login"><input type="hidden" name="next" '
    'value="$next"><label>operator token <input type="password" name="token" '
    'autocomplete="current-password" required></label><button type="submit">Sign in</button>'
    "</form><p>Or send <code>Authorization: Bearer TOKEN</code>.</p>"
)


class Dashboard:
    def __init__(
        self, ledger: Ledger, results: Results, providers: ProviderRegistry, access: Access
    ) -> None:
        self.ledger, self.results, self.providers, self.access = ledger, results, providers, access

    def add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/", self._gate(self.attention))
        r.add_get("/operations", self._gate(self.operations))
        r.add_get("/operations/{id}", self._gate(self.operation))
        r.add_get("/operations/{id}/result", self._gate(self.result))
        r.add_get("/operations/{id}/escalation.json", self._gate(self.escalation))
        r.add_post("/operations/{id}/{action}", self._gate(self.act, act=True))
        bulk = BulkRoutes(self)
        r.add_post("/bulk", self._gate(bulk.post, act=True))
        r.add_get("/bulk/{id}", self._gate(bulk.show))
        CensusRoutes(self).add_routes(app)
        r.add_get("/favicon.ico", self.favicon)
        r.add_post("/login", self.login)
        r.add_post("/logout", self.logout)
        r.add_get("/assets/{name}", self.asset)
        if not self.access.operators:
            log.warning(
                "no dashboard operators configured: every page answers 401 (set "
                "JOBTRAIL_OPERATOR_TOKENS or JOBTRAIL_OPERATOR_FILE)"
            )

    # -- the gate -----------------------------------------------------------------------

    def principal(self, request: web.Request) -> Principal | None:
        header = request.headers.get("Authorization")
        if header is not None:  # a bad header is never rescued by a cookie
            scheme, _, token = header.partition(" ")
            return self.access.bearer(token.strip()) if scheme.lower() == "bearer" else None
        cookie = request.cookies.get(COOKIE)
        return self.access.from_cookie(cookie, self.now()) if cookie else None

    def _gate(
        self, handler: Handler, *, act: bool = False
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def gated(request: web.Request) -> web.StreamResponse:
            who = self.principal(request)
            if who is None:
                return self._unauthorized(request, "Sign in to see this page.")
            if act:
                form = await request.post()
                if not self.access.csrf_ok(who, str(form.get("csrf", ""))):
                    stale = "The form is stale or not ours (CSRF check failed); reload the page."
                    return self.respond(page("Refused", notice(stale, False)), 403)
                if who.operator.role is not Role.OPERATOR:
                    read_only = "Read-only access: actions need the operator role."
                    return self.respond(page("Refused", notice(read_only, False)), 403)
            try:
                response = await handler(request, who)
            except NotFound as exc:
                response = self.respond(page("Not found", notice(str(exc), False)), 404)
            response.headers.update(HEADERS)
            return response

        return gated

    def _unauthorized(self, request: web.Request, why: str) -> web.Response:
        body = render(_LOGIN, why=why, next=request.path_qs if request.method == "GET" else "/")
        response = self.respond(page("Sign in", body), 401)
        response.headers["WWW-Authenticate"] = 'Bearer realm="jobtrail"'
        return response

    async def login(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        operator = self.access.by_token(str(form.get("token", "")))
        if operator is None:
            log.warning("dashboard login refused", extra={"remote": request.remote})
            return self._unauthorized(request, "That token is not an operator's.")
        value, _ = self.access.new_session(operator, self.now())
        response = web.HTTPSeeOther(same_site_path(str(form.get("next", "/"))))
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(SESSION_FOR.total_seconds()),
            path="/",
            secure=True,
            httponly=True,
            samesite="Strict",
        )
        log.info("dashboard login", extra={"operator": operator.name})
        raise response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        """End the session here, on the server: the cookie is deleted in the browser, and a
        copy of it kept elsewhere no longer opens a page."""
        cookie = request.cookies.get(COOKIE)
        if cookie:
            self.access.end_session(cookie, self.now())
        response = web.HTTPSeeOther("/")
        response.del_cookie(COOKIE, path="/")
        raise response

    async def favicon(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPMovedPermanently("/assets/favicon.svg")

    async def asset(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in ASSETS:
            raise web.HTTPNotFound()
        data = (resources.files("jobtrail.dashboard") / "assets" / name).read_bytes()
        return web.Response(
            body=data, content_type=ASSETS[name], headers={"X-Content-Type-Options": "nosniff"}
        )

    # -- pages ---------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.ledger.now()

    def respond(self, body: Html, status: int = 200) -> web.Response:
        response = web.Response(text=body, status=status, content_type="text/html", charset="utf-8")
        response.headers.update(HEADERS)
        return response

    def who_line(self, who: Principal) -> Html:
        return render(
            Template(
                '$name ($role) <form class="logout" method="post" action="/logout">'
                '<button type="submit">sign out</button></form>'
            ),
            name=who.operator.name,
            role=who.operator.role.value,
        )

    async def attention(self, request: web.Request, who: Principal) -> web.StreamResponse:
        store, now = self.ledger, self.now()
        stuck = await store.find_operations(OperationQuery(states=ATTENTION, limit=200))
        late = await store.find_operations(
            OperationQuery(states=_MOVING, late_before=now - LATE_AFTER, limit=200)
        )
        seen = Attention(
            stuck=stuck.operations,
            overdue=[op for op in late.operations if not op.lease_owner],
            expired=[op for op in late.operations if op.lease_owner],
            counts=await store.count_by_state(),
        )
        return self.respond(page("Needs attention", attention_page(seen, now), self.who_line(who)))

    async def operations(self, request: web.Request, who: Principal) -> web.StreamResponse:
        form = filters_of(request.query)
        try:
            asked = query_of(form)
        except InvalidInput as exc:
            return self.respond(
                page("Operations", notice(str(exc), False), self.who_line(who)), 400
            )
        found = await self.ledger.find_operations(asked)
        may_act = who.operator.role is Role.OPERATOR
        bulk = (
            bulk_form(form, found.total, self.access.csrf(who), short_id("bulk_", self.ledger.rand))
            if may_act
            else None
        )
        body = list_page(found, asked, form, self.now(), bulk=bulk)
        told = Html(self.told(request, who) + body)
        return self.respond(page("Operations", told, self.who_line(who)))

    def told(self, request: web.Request, who: Principal) -> Html:
        """The notice an action sealed for this session into the URL it redirected to."""
        sealed = request.query.get("notice")
        said = self.access.unseal(who, sealed) if sealed else None
        if said is None:
            return Html("")
        return notice(str(said.get("m", "")), bool(said.get("ok")))

    def redirect(self, who: Principal, where: str, message: str, ok: bool) -> web.HTTPSeeOther:
        """See `where` next (post/redirect/get), which then says `message`."""
        sealed = self.access.seal(who, {"m": message[:1500], "ok": ok})
        joiner = "&" if "?" in where else "?"
        return web.HTTPSeeOther(f"{where}{joiner}notice={sealed}", headers=HEADERS)

    async def _story(self, operation_id: str) -> Story:
        return await read_story(self.ledger, await self.ledger.get(operation_id), audit=True)

    async def operation(self, request: web.Request, who: Principal) -> web.StreamResponse:
        story = await self._story(request.match_info["id"])
        now = self.now()
        may_act = who.operator.role is Role.OPERATOR
        body = render(
            Template(
                '<h1 class="opid">$id</h1>$notice<div id="facts" data-live>$facts</div>'
                '<h2>Actions</h2><div class="actions" id="actions" data-live>$forms</div>'
                '<div id="story" data-live>$story</div>'
            ),
            id=story.op.operation_id,
            notice=self.told(request, who),
            facts=facts(story, now),
            forms=join(
                [
                    action_forms(story.op, self.access.csrf(who), may_act, self.ledger.rand),
                    job_actions(story.op, self.access.csrf(who), may_act),
                ]
            ),
            story=story_sections(story, now),
        )
        return self.respond(page(story.op.operation_id, body, self.who_line(who)))

    async def result(self, request: web.Request, who: Principal) -> web.StreamResponse:
        op = await self.ledger.get(request.match_info["id"])
        if op.result is None or not op.result.location:
            raise web.HTTPNotFound(text=f"{op.operation_id} has no stored result")
        planted = await self.ledger.result_problem(op)  # not the result its collection audited
        if planted is not None:
            return web.Response(text=f"not served: {planted}", status=409)
        try:
            content = await self.results.read(op.result.location)  # re-checks the hash
        except ResultError as exc:
            return web.Response(text=f"not served: {exc}", status=409)
        if (problem := changed(op.result.sha256, hashlib.sha256(content).hexdigest())) is not None:
            return web.Response(text=f"not served: {problem}", status=409)
        kind = (op.result.content_type or "").split(";")[0].strip().lower()
        name = f"{op.operation_id}.{_EXTENSIONS.get(kind, 'result')}"
        return web.Response(
            body=content,
            content_type="application/octet-stream",  # never the provider's word: no HTML here
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    async def escalation(self, request: web.Request, who: Principal) -> web.StreamResponse:
        story = await self._story(request.match_info["id"])
        bundle = story.escalation()
        return web.json_response(bundle, dumps=lambda d: json.dumps(d, indent=2, default=str))

    async def act(self, request: web.Request, who: Principal) -> web.StreamResponse:
        action, operation_id = request.match_info["action"], request.match_info["id"]
        if action not in ACTIONS:
            raise web.HTTPNotFound()
        form = {k: str(v) for k, v in (await request.post()).items()}
        here = path("operations", operation_id)
        try:
            done = await perform(
                self.ledger, self.providers, action, operation_id, form, who.operator.actor
            )
        except NotFound:
            raise
        except JobtrailError as exc:
            log.info(
                "dashboard action refused", extra={"action": action, "operator": who.operator.name}
            )
            raise self.redirect(who, here, f"{action} refused: {exc}", False) from None
        log.info("dashboard action", extra={"action": action, "operator": who.operator.name})
        effect = "took effect" if done.took_effect else "changed nothing"
        raise self.redirect(who, here, f"{action} {effect}: {done.message}", done.took_effect)


# late, among those not already listed for their state
_MOVING = tuple(s for s in State if not s.ends_automation and s not in ATTENTION)


def notice(text: str, good: bool) -> Html:
    return render(
        Template('<p class="notice $kind" role="status">$text</p>'),
        kind="good" if good else "bad",
        text=text,
    )
