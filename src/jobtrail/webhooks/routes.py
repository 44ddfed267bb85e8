"""`POST /webhooks/{provider}`: parse the request, call verify_delivery / read_event and the
ledger's `observe_event`, answer. No rule lives here; refusals are logged (never the
signature or the secret) and leave the ledger, audit log included, untouched.

    200 {"status": "accepted"}      recorded; a status read is scheduled
    200 {"status": "duplicate"}     this event id was recorded before; nothing changed
    400 malformed                   signed, but not an event we can read
    401 unsigned / bad_signature / stale_timestamp
    404 unknown_provider / no_webhooks / unknown_job
    413                             larger than MAX_EVENT_BYTES (refused by aiohttp)
    503 not_configured / busy       our side: secret not set, or the operation kept changing
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from jobtrail.errors import ConcurrentUpdate, NotFound, ProviderConfigError
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, find_provider_named
from jobtrail.webhooks.event import read_event
from jobtrail.webhooks.verify import Refusal, WebhookRefused, verify_delivery

log = logging.getLogger("jobtrail.webhooks")

MAX_EVENT_BYTES = 256 * 1024
# A provider name is a file name in the providers folder: no dots, no slashes, no way out.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_HTTP_STATUS = {
    Refusal.UNSIGNED: 401,
    Refusal.BAD_SIGNATURE: 401,
    Refusal.STALE: 401,
    Refusal.MALFORMED: 400,
    Refusal.NOT_CONFIGURED: 503,
}


def providers_folder() -> Path:
    """Where provider files are looked up by name: JOBTRAIL_PROVIDERS, else ./providers."""
    return Path(os.environ.get("JOBTRAIL_PROVIDERS") or "providers")


class WebhookReceiver:
    """`on_recorded` is called after an event was recorded: `serve` passes the in-process
    worker's `wake`, so the status read the event asked for starts at once."""

    def __init__(
        self,
        ledger: Ledger,
        folder: Path | None = None,
        on_recorded: Callable[[], None] | None = None,
    ) -> None:
        self.ledger, self.on_recorded = ledger, on_recorded
        self.folder = folder if folder is not None else providers_folder()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/webhooks/{provider}", self.receive)

    def _provider(self, name: str) -> ProviderSpec | None:
        if not _NAME.fullmatch(name) or not (self.folder / f"{name}.toml").is_file():
            return None
        try:  # by name only: never a path, never a file outside the providers folder
            return find_provider_named(name, str(self.folder))
        except ProviderConfigError as exc:
            log.warning("webhook for an unusable provider file: %s", exc, extra={"provider": name})
            return None

    async def receive(self, request: web.Request) -> web.Response:
        name = request.match_info["provider"]
        spec = self._provider(name)
        if spec is None:
            return _refuse(request, 404, "unknown_provider", f"no provider named {name!r} here")
        hooks = spec.webhooks
        if hooks is None:
            return _refuse(request, 404, "no_webhooks", f"{name} declares no [webhooks]")
        body = await request.read()
        try:
            delivery = verify_delivery(
                hooks, os.environ.get(hooks.secret_env), request.headers, body, self.ledger.now()
            )
            event = read_event(spec, delivery)
            observed = await self.ledger.observe_event(spec.name, event)
        except WebhookRefused as exc:
            return _refuse(request, _HTTP_STATUS[exc.refusal], exc.refusal.value, str(exc))
        except NotFound as exc:
            return _refuse(request, 404, "unknown_job", str(exc))
        except ConcurrentUpdate as exc:
            return _refuse(request, 503, "busy", str(exc))
        op = observed.operation
        fields = {
            "operation_id": op.operation_id,
            "trace_id": op.trace_id,
            "remote_job_id": op.remote_job_id,
            "state": op.state.value,
            "provider": spec.name,
            "event_id": event.event_id,
            "remote_state": event.remote_state,
        }
        if observed.duplicate:
            log.info("webhook event seen before", extra=fields)
            return web.json_response({"status": "duplicate"})
        log.info("webhook event recorded: %s", observed.read.value, extra=fields)
        if self.on_recorded is not None:
            self.on_recorded()
        return web.json_response({"status": "accepted"})


def _refuse(request: web.Request, status: int, error: str, message: str) -> web.Response:
    level = logging.ERROR if status >= 500 else logging.WARNING
    log.log(
        level,
        "webhook refused (%d %s): %s",
        status,
        error,
        message,
        extra={
            "provider": request.match_info["provider"],
            "http_status": status,
            "remote": request.remote,
        },
    )
    return web.json_response({"error": error, "message": message}, status=status)
