"""Azure long-running operations, scenario by scenario, over loopback HTTP with a real
ledger and the real worker (used by tests/integration/test_azure_lro_*.py).

The server below is written from the published conventions (Microsoft REST API
guidelines, "Long-running operations"; ARM RPC, "Asynchronous operations"), not from
jobtrail's parser:

- PUT answers 201 with the resource (a non-terminal `provisioningState`) or 200 with the
  finished resource, or 202; DELETE answers 202, 200 or 204; POST (an action) answers 202
  or 200 with its result.
- A 202 names its status monitor in `Location`, `Azure-AsyncOperation` or
  `Operation-Location` (one, or `Location` with `Azure-AsyncOperation`).
- The `Azure-AsyncOperation`/`Operation-Location` monitor answers 200 with
  `{"status": "InProgress" | "Succeeded" | "Failed" | "Canceled", "error": {...}}`.
- The `Location` monitor answers 202 while running, naming in its own `Location` where
  to ask next, then 200 with the result (204 for a DELETE), or an error status with an
  error body when the operation failed. It has no
  word for "cancelled", so Canceled is not a scenario for a Location-only operation.
- Without any header, a 201 PUT is followed by reading the resource's
  `properties.provisioningState` (a resource without one has succeeded).
- `final-state-via`: `original-uri` (PUT: a final GET of the resource), `location` (POST:
  a final GET of the `Location` URL), `azure-async-operation` and `operation-location`
  (POST: the monitor's final answer).

Combinations the guidelines do not allow (a 202 naming no monitor, a 201 to a POST, a
200 or 204 that is still running, a failed 204) are left out: the table below lists the
ones a conforming service can produce. A POST answered 204 is an action done with no
content: its result is recorded as JSON null.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOTH = "Location+Azure-AsyncOperation"
HEADER_SETS = ("none", "Location", "Azure-AsyncOperation", "Operation-Location", BOTH)
STATES = ("Succeeded", "Failed", "Canceled")
FINAL = ("original-uri", "location", "azure-async-operation", "operation-location")
CODES = (200, 201, 202, 204)


@dataclass(frozen=True)
class Scenario:
    method: str
    code: int
    headers: str
    state: str
    final: str  # final-state-via; "none" for a DELETE
    # a published shape beyond the table's (see VARIANTS), "" for the plain one
    variant: str = ""
    # the local state a broken service leaves, when it is not the provisioning state's own
    expect: str = ""

    @property
    def name(self) -> str:
        name = f"{self.method}-{self.code}-{self.headers}-{self.state}-{self.final}"
        return (name + (f"-{self.variant}" if self.variant else "")).replace("+", "_")


# Shapes a conforming service also produces, seen in the published Azure LRO test server:
VARIANTS = {
    # a 200 whose body is still running (provisioningState Accepted) and names a monitor
    "accepted-200": "PUT 200 + headers + a non-terminal body: the monitor decides",
    # the Location monitor ends with 200 and the resource's provisioningState, even
    # Failed or Canceled, instead of an error status
    "location-body": "the Location monitor's final 200 carries provisioningState",
    # the Location monitor ends with 200 and no body at all (LRODelete200,
    # LRORetryErrorDeleteAsyncRetrySucceeded's Location, CustomHeaderPostSucceeded)
    "location-empty": "the Location monitor's final 200 has no body",
    # the Location monitor's 202 names no next Location: ask the same URL again
    "quiet-202": "a Location monitor 202 without its own Location header",
    # Azure-AsyncOperation with a Location that is not a usable URL: never followed
    "bad-location": "Azure-AsyncOperation with Location: somethingBadWhichShouldNotBeUsed",
    # a 200 with a terminal body and a monitor header that must not be called
    "ignore-headers": "a 200 done in its body, with an Azure-AsyncOperation to ignore",
    # a 200 PUT whose body has no provisioningState at all: done
    "no-state": "a 200 PUT without provisioningState",
    # the Azure-AsyncOperation monitor answers 202 {"status": "Accepted"} while running
    "monitor-202": "a status monitor that answers 202 while running",
    # a transient 500 to the create (PUT, DELETE: retried) and to the first poll
    "retry-error": "a 500 to the create and to the first status read",
    "poll-error": "a 500 to the first status read",
    # broken services (LROError*, LRONonRetry*): never read as a success
    "monitor-400": "the status monitor answers 400 with an error",
    "monitor-empty": "the status monitor answers 200 {} (no status)",
    "monitor-invalid-json": "the status monitor answers JSON cut short",
    "create-invalid-json": "the create answer is JSON cut short",
    "no-monitor": "a 202 that names no monitor",
    "invalid-header": "monitor headers /foo (nothing there) and Retry-After /bar",
    # LROPut202Retry200, LROPutNonResourceInRetry: the Location monitor's final 200 body is
    # the result, and the resource URL itself has nothing to GET
    "location-result": "the Location monitor's final body is the result; no GET of the URI",
    # LROPutInlineComplete, LROPutInlineComplete201: done at create, nothing to GET after
    "inline-only": "done at create; the resource URL has no GET",
    # LROPutNoHeaderInRetry, LROPutAsync*, LRODeleteAsync*, LROPostAsync*: a monitor keeps
    # its progress in a `scenario` cookie (set while running, cleared with the final answer:
    # asked again, it starts over)
    "cookie": "a monitor whose progress lives in a cookie, cleared by its final answer",
    # CustomHeader*: every call must carry x-ms-client-request-id with one agreed value
    "custom-header": "every call carries x-ms-client-request-id 9C4D50EE-...",
    # LROPostAndGetList: the final GET on Location answers a JSON array
    "list-result": "the final GET on Location answers a list",
    # LROErrorPutAsyncNoPollingStatusPayload, LROErrorPostAsyncNoPollingPayload
    "monitor-no-body": "the status monitor answers 200 with no body",
    # LROErrorPut201NoProvisioningStatePayload: 201 with no body, then GET 200 with none
    "create-empty-201": "a PUT answered 201 with no body; the resource GET is empty too",
    # LRONonRetryPut400, LRONonRetryDelete400, LRONonRetryPost400
    "create-400": "the create is refused with 400",
    # LRONonRetryPut201Creating400InvalidJson: the poll answers 400 with a body cut short
    "monitor-400-invalid": "the status read answers 400 with a body that is not JSON",
    # LROPostSuccededNoBody: the Location monitor of an action ends 204
    "location-204": "the Location monitor of a POST ends 204 (no content)",
}
CLIENT_REQUEST_ID = "9C4D50EE-2D56-4CD3-8152-34347DC9F2B0"


def _valid(method: str, code: int, headers: str, state: str, final: str) -> bool:
    """Whether the guidelines let a service answer this way."""
    location_only = headers == "Location"
    if location_only and state == "Canceled":
        return False
    if method == "PUT":
        if final != "original-uri":
            return False
        if code == 202:
            return headers != "none"
        if code == 201:
            return True
        return code == 200 and headers == "none"
    if method == "POST":
        if final in ("original-uri", "none"):
            return False
        if code in (200, 204):
            return headers == "none" and state == "Succeeded"
        if code != 202:
            return False
        named = {
            "location": ("Location", BOTH),
            "azure-async-operation": ("Azure-AsyncOperation", BOTH),
            "operation-location": ("Operation-Location",),
        }
        return headers in named[final]
    # DELETE
    if final != "none":
        return False
    if code in (200, 204):
        return headers == "none" and state == "Succeeded"
    return code == 202 and headers != "none"


def scenarios() -> list[Scenario]:
    table = [
        Scenario(method=m, code=c, headers=h, state=s, final=f)
        for m, c, h, s, f in itertools.product(
            ("PUT", "POST", "DELETE"), CODES, HEADER_SETS, STATES, (*FINAL, "none")
        )
        if _valid(m, c, h, s, f)
    ]
    return table


# -- the service, from the guidelines ------------------------------------------------------


@dataclass
class Lro:
    scenario: Scenario
    polls: int = 0
    finished: bool = False


@dataclass
class AzureService:
    ops: dict[str, Lro] = field(default_factory=dict)
    origin: str = ""
    crashed: int = 0  # calls to a URL no client may follow (ignore-headers)
    errored: set[tuple[str, str]] = field(default_factory=set)  # transient 500s given

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/crash", self.crash)
        app.router.add_route("*", "/things/{name}", self.resource)
        app.router.add_get("/monitors/{name}", self.monitor)
        app.router.add_get("/locations/{name}", self.location)
        return app

    def _advance(self, lro: Lro) -> None:
        lro.polls += 1
        if lro.polls >= 2:
            lro.finished = True

    def _by_cookie(self, request: web.Request, lro: Lro) -> bool:
        """lros.js's cookie scenarios: running until the client sends back the cookie the
        first answer set; the final answer clears it, so a later read starts over."""
        lro.finished = "scenario" in request.cookies
        return lro.finished

    @staticmethod
    def _cookie(response: web.Response, lro: Lro) -> web.Response:
        if lro.scenario.variant == "cookie":
            if lro.finished:
                response.del_cookie("scenario")
            else:
                response.set_cookie("scenario", lro.scenario.name.replace("-", ""))
        return response

    def _unknown_client(self, request: web.Request, name: str) -> web.Response | None:
        """CustomHeader*: a call without the agreed x-ms-client-request-id is refused."""
        scenario = SCENARIOS.get(name)
        if scenario is None or scenario.variant != "custom-header":
            return None
        sent = request.headers.get("x-ms-client-request-id", "")
        if sent.lower() == CLIENT_REQUEST_ID.lower():
            return None
        return _error(400, "BadRequest", "Did not receive the correct x-ms-client-request-id")

    def _headers(self, name: str, lro: Lro) -> dict[str, str]:
        wanted = lro.scenario.headers
        headers = {"Retry-After": "1"}
        if wanted in ("Location", BOTH):
            headers["Location"] = f"{self.origin}/locations/{name}"
        if wanted in ("Azure-AsyncOperation", BOTH):
            headers["Azure-AsyncOperation"] = f"{self.origin}/monitors/{name}"
        if wanted == "Operation-Location":
            headers["Operation-Location"] = f"{self.origin}/monitors/{name}"
        if lro.scenario.variant == "bad-location":
            headers["Location"] = "somethingBadWhichShouldNotBeUsed"
        if lro.scenario.variant == "ignore-headers":
            headers["Azure-AsyncOperation"] = f"{self.origin}/crash"
        if lro.scenario.variant == "invalid-header":
            headers = {k: "/foo" for k in headers} | {"Retry-After": "/bar"}
        if lro.scenario.variant == "no-monitor":
            headers = {}
        return headers

    def _transient(self, name: str, lro: Lro | None, kind: str) -> bool:
        """Whether this call gets the scenario's one transient 500 of its kind."""
        variant = lro.scenario.variant if lro else SCENARIOS[name].variant
        wanted = {"retry-error": ("create", "poll"), "poll-error": ("poll",)}.get(variant, ())
        if kind not in wanted or (name, kind) in self.errored:
            return False
        self.errored.add((name, kind))
        return True

    async def crash(self, request: web.Request) -> web.Response:
        self.crashed += 1
        return _error(404, "NotFound", "a done operation's monitor must not be called")

    def _resource(self, name: str, state: str) -> dict[str, Any]:
        return {
            "id": f"/things/{name}",
            "name": name,
            "properties": {"provisioningState": state},
        }

    async def resource(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        refused = self._unknown_client(request, name)
        if refused is not None:
            return refused
        if request.method == "GET":
            lro = self.ops.get(name)
            if lro is None or (lro.scenario.method == "DELETE" and lro.finished):
                return _error(404, "ResourceNotFound", "no such thing")
            if lro.scenario.variant in ("location-result", "inline-only"):
                return _error(404, "NotFound", "this scenario has no GET of the resource")
            if lro.scenario.variant == "create-empty-201":
                return web.Response(status=200)
            if lro.scenario.variant == "monitor-400" and lro.scenario.headers == "none":
                return web.json_response({"message": "Error from the server"}, status=400)
            if lro.scenario.variant == "monitor-400-invalid":
                return web.Response(status=400, text='<{ "message" : "Error from the server" }')
            if lro.scenario.method == "POST":  # an action's URL is not a resource to read
                return _error(405, "MethodNotAllowed", "an action cannot be read")
            if lro.scenario.headers == "none":
                if self._transient(name, lro, "poll"):
                    return _error(500, "InternalServerError", "try again")
                self._advance(lro)  # the resource itself is the status monitor
            state = lro.scenario.state if lro.finished else "Updating"
            return web.json_response(self._resource(name, state))
        scenario = SCENARIOS[name]
        if self._transient(name, None, "create"):
            return _error(500, "InternalServerError", "try again")  # nothing was made
        if scenario.variant == "create-400":
            return _error(400, "BadRequest", "Expected bad request message")
        if scenario.variant == "create-invalid-json":
            return web.Response(
                status=200, text='{"properties": {', content_type="application/json"
            )
        lro = self.ops[name] = Lro(scenario=scenario)
        code, headers = scenario.code, self._headers(name, lro)
        if scenario.variant == "create-empty-201":
            return web.Response(status=201)
        if code == 204:
            lro.finished = True
            return web.Response(status=204)
        if scenario.variant == "accepted-200" or (
            scenario.variant == "invalid-header" and code == 200
        ):
            return web.json_response(self._resource(name, "Accepted"), headers=headers)
        if scenario.variant == "no-state":
            lro.finished = True
            return web.json_response({"id": f"/things/{name}", "name": name})
        if scenario.variant == "ignore-headers":
            lro.finished = True
            return web.json_response(self._resource(name, scenario.state), headers=headers)
        if code == 200 or scenario.variant == "inline-only":
            lro.finished = True
            if scenario.variant == "inline-only":
                body = self._resource(name, scenario.state)
                return web.json_response(body, status=code)
            if scenario.method in ("PUT", "PATCH"):
                return web.json_response(self._resource(name, scenario.state))
            return web.json_response({"result": name})
        if code == 201:
            return web.json_response(self._resource(name, "Creating"), status=201, headers=headers)
        if scenario.variant == "location-body":
            word = "Deleting" if scenario.method == "DELETE" else "Accepted"
            return web.json_response(self._resource(name, word), status=202, headers=headers)
        return web.Response(status=202, headers=headers)

    async def monitor(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        refused = self._unknown_client(request, name)
        if refused is not None:
            return refused
        lro = self.ops[name]
        variant = lro.scenario.variant
        if self._transient(name, lro, "poll"):
            return _error(500, "InternalServerError", "try again")
        if variant == "monitor-400":
            return _error(400, "BadRequest", "Expected bad request message")
        if variant == "monitor-400-invalid":
            return web.Response(status=400, text='<{ "message" : "Error from the server" }')
        if variant == "monitor-empty":
            return web.json_response({})
        if variant == "monitor-no-body":
            return web.Response(status=200)
        if variant == "monitor-invalid-json":
            return web.Response(text='{ "status": "Accepted"', content_type="application/json")
        if variant == "cookie":
            self._by_cookie(request, lro)
        else:
            self._advance(lro)
        if variant in ("monitor-202", "cookie") and not lro.finished:
            # as lros.js's monitors do: the 202 names the monitor itself in both headers
            # (its Location is not a Location monitor: it says {"status": ...})
            here = f"{self.origin}/monitors/{name}"
            again = {"Azure-AsyncOperation": here, "Location": here, "Retry-After": "1"}
            answer = web.json_response({"status": "Accepted"}, status=202, headers=again)
            return self._cookie(answer, lro)
        document: dict[str, Any] = {"id": f"/monitors/{name}", "status": "InProgress"}
        if lro.finished:
            document["status"] = lro.scenario.state
            if lro.scenario.state != "Succeeded":
                document["error"] = {"code": lro.scenario.state, "message": f"{name} stopped"}
        answer = web.json_response(document, headers={"Retry-After": "1"})
        return self._cookie(answer, lro)

    async def location(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        refused = self._unknown_client(request, name)
        if refused is not None:
            return refused
        lro = self.ops[name]
        if self._transient(name, lro, "poll"):
            return _error(500, "InternalServerError", "try again")
        if lro.scenario.variant == "cookie":
            return self._cookie(
                self._location_answer(name, lro, self._by_cookie(request, lro)), lro
            )
        quiet = lro.scenario.variant == "quiet-202"
        if not lro.finished and ("moved" in request.query or quiet):
            self._advance(lro)
        if not lro.finished and quiet:
            return web.Response(status=202)  # no Location: ask here again
        if not lro.finished:
            # each 202 names where to ask next; only that monitor moves the operation on
            moved = f"{self.origin}/locations/{name}?moved={lro.polls}"
            return web.Response(status=202, headers={"Location": moved, "Retry-After": "1"})
        return self._location_answer(name, lro, True)

    def _location_answer(self, name: str, lro: Lro, done: bool) -> web.Response:
        """The Location monitor's answer: 202 while running, then the operation's end."""
        if not done:
            return web.Response(status=202, headers={"Retry-After": "1"})
        if lro.scenario.variant == "list-result":
            return web.json_response([{"id": "100", "name": name}])
        if lro.scenario.variant == "location-result":
            return web.json_response({"id": "100", "name": name})  # no provisioningState
        if lro.scenario.variant == "location-204":
            return web.Response(status=204)
        if lro.scenario.variant == "location-body":
            return web.json_response(self._resource(name, lro.scenario.state))
        if lro.scenario.variant == "location-empty":
            return web.Response(status=200)  # done, with nothing to say
        if lro.scenario.state == "Failed":
            return _error(400, "OperationFailed", f"{name} failed")
        if lro.scenario.method == "DELETE":
            return web.Response(status=204)
        if lro.scenario.method in ("PUT", "PATCH"):
            return web.json_response(self._resource(name, "Succeeded"))
        return web.json_response({"result": name})


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


SCENARIOS = {s.name: s for s in scenarios()}
