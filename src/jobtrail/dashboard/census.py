"""The dashboard's census (docs/census.md): `GET /census` (the form), `POST /census` (take
one: the provider's jobs held against the ledger, each of ours with a box to tick) and
`POST /census/act` (adopt or cancel the ticked jobs, each through the same service, action
policy and audit log as the CLI's `--adopt` and `--cancel`; then back to the form, which
says what each came to). An operation ended here whose job still runs offers the same two
actions on its own page (`job_actions`)."""

from __future__ import annotations

import logging
from string import Template
from typing import TYPE_CHECKING, Any

from aiohttp import web

from jobtrail.core.census import Category, summary
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Operation
from jobtrail.core.words import relative
from jobtrail.dashboard.access import Principal
from jobtrail.dashboard.html import Html, join, page, query, render
from jobtrail.errors import InvalidInput, JobtrailError
from jobtrail.providers.resolve import resolve_named
from jobtrail.services.census import Census, take_census
from jobtrail.services.census_actions import adopt_job, cancel_job

if TYPE_CHECKING:
    from jobtrail.dashboard.web import Dashboard

log = logging.getLogger("jobtrail.dashboard")
MAX_JOBS = 100  # jobs one census action takes at most

_ASK = Template(
    "<h1>Census</h1>$notice<p>The provider's jobs, listed through the listing its file "
    "declares, each held against the ledger: followed, ended here (running there), unknown "
    "here, a second job (must be zero), not ours.</p>"
    '<form class="census" method="post" action="/census"><input type="hidden" name="csrf" '
    'value="$csrf"><label>provider <input name="provider" value="$provider" required '
    'maxlength="100"></label><label>since <input name="since" value="$since" size="6">'
    '</label><button type="submit">Take the census</button></form>'
)
_FOUND = Template(
    '<h1>Census of $provider</h1><p class="sees">It sees: $sees</p>'
    '<p class="reach" id="reach">Listing: $reach</p><p class="counts" id="census-counts">'
    "$counts</p>$loud"
    '<form class="census-act" method="post" action="/census/act">'
    '<input type="hidden" name="csrf" value="$csrf"><input type="hidden" name="provider" '
    'value="$provider"><table class="ops census-jobs"><thead><tr><th></th><th>job</th>'
    "<th>category</th><th>provider state</th><th>age</th><th>what jobtrail knows</th></tr>"
    '</thead><tbody id="census-jobs">$rows</tbody></table><fieldset><legend>Act on the '
    'ticked jobs</legend><label>action <select name="action"><option value="adopt">adopt'
    '</option><option value="cancel">cancel</option></select></label><label>reason <input '
    'name="reason" required maxlength="500"></label><button type="submit">Apply</button>'
    '<span class="cap">at most $cap jobs; each goes through the action policy</span>'
    "</fieldset></form>"
)
_ROW = Template(
    '<tr class="job c-$category"><td>$box</td><td class="jobid">$job</td><td>$words</td>'
    "<td>$state</td><td>$age</td><td>$knows</td></tr>"
)
_BOX = Template('<input type="checkbox" name="job" value="$job" aria-label="tick $job">')
_JOB_ACTIONS = Template(
    '<form class="census-act" method="post" action="/census/act"><input type="hidden" '
    'name="csrf" value="$csrf"><input type="hidden" name="provider" value="$provider">'
    '<input type="hidden" name="job" value="$job"><input type="hidden" name="back" '
    'value="$back"><fieldset><legend>Its job still runs at the provider (ended here, '
    'running there)</legend><label>action <select name="action"><option value="cancel">'
    'cancel the job</option><option value="adopt">adopt the job into a new operation'
    '</option></select></label><label>reason <input name="reason" required maxlength="500">'
    '</label><button type="submit">Act on the job</button></fieldset></form>'
)


def ended_here(op: Operation) -> bool:
    """The ledger's last word on `op`: it ended while its job was last seen running."""
    status = op.remote_status
    return (
        op.state.ends_automation
        and op.remote_job_id is not None
        and (status is None or not status.terminal)
    )


def job_actions(op: Operation, csrf: str, may_act: bool) -> Html:
    """Adopt or cancel the job of an operation ended here (empty for any other)."""
    if not may_act or not ended_here(op) or op.remote_job_id is None:
        return Html("")
    back = f"/operations/{op.operation_id}"
    return render(_JOB_ACTIONS, csrf=csrf, provider=op.provider, job=op.remote_job_id, back=back)


class CensusRoutes:
    def __init__(self, dashboard: Dashboard) -> None:
        self.dash = dashboard

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/census", self.dash._gate(self.ask))
        app.router.add_post("/census", self.dash._gate(self.take, act=True))
        app.router.add_post("/census/act", self.dash._gate(self.act, act=True))

    async def ask(self, request: web.Request, who: Principal) -> web.StreamResponse:
        body = render(
            _ASK,
            notice=self.dash.told(request, who),
            csrf=self.dash.access.csrf(who),
            provider=request.query.get("provider", ""),
            since=request.query.get("since", "7d"),
        )
        return self.dash.respond(page("Census", body, self.dash.who_line(who)))

    async def take(self, request: web.Request, who: Principal) -> web.StreamResponse:
        form = {k: str(v) for k, v in (await request.post()).items()}
        name = form.get("provider", "").strip()
        back = query("/census", provider=name, since=form.get("since", ""))
        try:
            since = parse_duration(form.get("since", "").strip() or "7d")
            spec = resolve_named(name, self.dash.providers.plugins)
            taken = await take_census(
                self.dash.ledger,
                self.dash.providers,
                spec,
                actor=who.operator.actor,
                since=since,
            )
        except JobtrailError as exc:
            raise self.dash.redirect(who, back, f"census refused: {exc}", False) from None
        log.info("dashboard census", extra={"provider": name, "operator": who.operator.name})
        body = self._found(taken, self.dash.access.csrf(who))
        return self.dash.respond(page(f"Census of {name}", body, self.dash.who_line(who)))

    def _found(self, census: Census, csrf: str) -> Html:
        now = self.dash.now()
        rows = []
        for finding in census.findings:
            if finding.category is Category.NOT_OURS:
                continue
            job = finding.job
            created = job.created
            rows.append(
                render(
                    _ROW,
                    category=finding.category.value,
                    box=render(_BOX, job=job.job_id),
                    job=job.job_id,
                    words=finding.category.words,
                    state=job.state or "—",
                    age=relative(created, now) if created else "not listed",
                    knows=finding.knows,
                )
            )
        second = len(census.of(Category.SECOND_JOB))
        loud = (
            render(
                Template(
                    '<p class="notice bad" role="alert">A SECOND JOB: $n job(s) whose marker '
                    "names an operation that follows another job. This is the evidence of a "
                    "duplicate create: cancel or adopt each, and report it.</p>"
                ),
                n=second,
            )
            if second
            else Html("")
        )
        return render(
            _FOUND,
            provider=census.provider,
            sees=census.sees,
            reach=census.reach.words(),
            counts=summary(census.tally),
            loud=loud,
            csrf=csrf,
            rows=join(rows),
            cap=MAX_JOBS,
        )

    async def act(self, request: web.Request, who: Principal) -> web.StreamResponse:
        posted = await request.post()
        form = {k: str(v) for k, v in posted.items()}
        jobs = list(dict.fromkeys(str(v) for v in posted.getall("job", [])))
        name = form.get("provider", "").strip()
        back = form.get("back", "")
        if not back.startswith("/operations/"):
            back = query("/census", provider=name)
        try:
            said = await self._act(form, name, jobs, who)
        except JobtrailError as exc:
            raise self.dash.redirect(who, back, f"census action refused: {exc}", False) from None
        good = all(not item.startswith("refused") for item in said)
        raise self.dash.redirect(who, back, "; ".join(said), good)

    async def _act(
        self, form: dict[str, str], name: str, jobs: list[str], who: Principal
    ) -> list[str]:
        action = form.get("action", "")
        act: Any = {"adopt": adopt_job, "cancel": cancel_job}.get(action)
        if act is None:
            raise InvalidInput(f"action: no census action {action!r} (adopt, cancel)")
        reason = form.get("reason", "").strip()
        if not reason:
            raise InvalidInput("reason: every action needs one; it goes into the audit log")
        if not jobs or len(jobs) > MAX_JOBS:
            raise InvalidInput(f"job: tick between 1 and {MAX_JOBS} jobs")
        spec = resolve_named(name, self.dash.providers.plugins)
        said = []
        for job_id in jobs:
            try:
                op = await act(
                    self.dash.ledger,
                    self.dash.providers,
                    spec,
                    job_id,
                    actor=who.operator.actor,
                    reason=reason,
                )
            except JobtrailError as exc:  # one refusal does not stop the others
                said.append(f"refused {job_id}: {exc}")
            else:
                said.append(f"{action} {job_id}: {op.operation_id} ({op.state})")
        log.info("dashboard census action", extra={"action": action, "items": len(jobs)})
        return said
