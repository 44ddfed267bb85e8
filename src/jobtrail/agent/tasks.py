"""The MCP Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`), served from the
ledger, on the official SDK's extension seam (`mcp.server.extension.Extension`).

A client that declares the extension on its request (2026-07-28 protocol) and calls
`submit_job` or `wait_job` on an operation that is still running gets a `CreateTaskResult`
instead of the tool's answer: a task handle recorded in the ledger (core/tasks.py) before
the answer leaves, so `tasks/get` resolves it from any process on the same ledger, after any
restart. The task follows its operation: `working` while jobtrail drives it,
`input_required` while a person must decide, `completed` with the tool's final answer
inlined (`isError` when the job failed at the provider or its result did not hold),
`cancelled` only once the provider confirmed a cancel. `tasks/cancel` records the
operation's cancel intent and acknowledges at once. The tool body runs once: submit_job's
record is the one the plain tool makes (call_next), and the task only reads it afterwards.

Everyone else (no declaration, a 2025 protocol, any other tool) gets the plain tools; a
`tasks/*` request from them is refused with -32021. Task ids are checked against the
caller's identity (agent/identity.py): someone else's id reads as unknown (-32602)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pydantic_core
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    RequestParams,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, TypeAdapter

from jobtrail.agent.identity import Identity
from jobtrail.agent.tools import AgentTools
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import next_step
from jobtrail.core.states import REMOTE_MAY_RUN
from jobtrail.core.tasks import TaskHandle, TaskStatus, ended_in_error, poll_interval, task_status
from jobtrail.core.words import iso
from jobtrail.errors import ActionRefused, JobtrailError, NotFound, NotPermitted

TASKS = "io.modelcontextprotocol/tasks"
TASK_TOOLS = frozenset({"submit_job", "wait_job"})
DEFAULT_TTL = timedelta(days=7)
log = logging.getLogger("jobtrail.agent")


class TaskParams(RequestParams):
    task_id: str = Field(max_length=200)


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


class LedgerTasks(Extension):
    """Tasks backed by the ledger's task handles. `ttl` is each task's time to live (None:
    unlimited); an expired handle is refused, and `jobtrail prune` removes it."""

    identifier = TASKS

    def __init__(
        self, tools: AgentTools, identity: Identity, *, ttl: timedelta | None = DEFAULT_TTL
    ) -> None:
        self.agent, self.identity, self.ttl = tools, identity, ttl

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding(method="tasks/get", params_type=TaskParams, handler=self.get),
            MethodBinding(method="tasks/update", params_type=UpdateParams, handler=self.update),
            MethodBinding(method="tasks/cancel", params_type=TaskParams, handler=self.cancel),
        )

    # -- creation ------------------------------------------------------------------------

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        if params.name not in TASK_TOOLS or not _declared(ctx):
            return await call_next(ctx)
        owner = self.identity.of(ctx.request)
        if params.name == "wait_job":
            op = await self._running((params.arguments or {}).get("operation_id"))
            # not an operation id, unknown, ended, or not the caller's to read: the plain
            # tool answers (and refuses, audited, what the policy does not let it read)
            if op is None or not self.agent.ledger.may_read(owner, op):
                return await call_next(ctx)
            existing = True
        else:
            answer = await call_next(ctx)  # the one run of submit_job's body: it records
            found = _submitted(answer)
            op = await self._running(found[0]) if found else None
            if found is None or op is None:  # refused, or the operation already ended
                return answer
            existing = found[1]
        task_id, handle = await self.agent.ledger.open_task(
            op, owner=owner, tool=params.name, existing=existing, ttl=self.ttl
        )
        # Recorded (synced) before this answer leaves: a tasks/get anywhere resolves it.
        return {"resultType": "task", **self._task(task_id, handle, op)}

    async def _running(self, operation_id: Any) -> Operation | None:
        if not isinstance(operation_id, str):
            return None
        try:
            op = await self.agent.ledger.get(operation_id)
        except NotFound:
            return None
        return None if op.state.ends_automation and op.state not in _STILL_OPEN else op

    # -- tasks/get, tasks/update, tasks/cancel -------------------------------------------

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        handle, op = await self._find(ctx, params)
        if op is None:
            doc = self._gone(params.task_id, handle)
        else:
            doc = self._task(params.task_id, handle, op)
            if doc["status"] == TaskStatus.COMPLETED:
                doc["result"] = await self._outcome(handle, op)
            elif doc["status"] == TaskStatus.INPUT_REQUIRED:
                doc["inputRequests"] = _person_needed(op, doc["statusMessage"])
        return {"resultType": "complete", **doc}

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateParams
    ) -> dict[str, Any]:
        # No task of jobtrail asks its client for input, so every response key is unknown
        # and is ignored (the extension's rule); the ack still needs a task the caller holds.
        await self._find(ctx, params)
        return {"resultType": "complete"}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        handle, op = await self._find(ctx, params)
        if op is None or task_status(op.state) in (TaskStatus.COMPLETED, TaskStatus.CANCELLED):
            return {"resultType": "complete"}  # it ended first: the task shows how
        actor = self.identity.of(ctx.request)
        reason = f"tasks/cancel of the task {handle.tool} opened (MCP Tasks)"
        try:
            await self.agent.ledger.cancel(op.operation_id, actor=actor, reason=reason)
        except NotPermitted as exc:
            raise MCPError(code=INVALID_REQUEST, message=str(exc)) from None
        except ActionRefused as exc:
            now = await self.agent.ledger.get(op.operation_id)
            if task_status(now.state) not in (TaskStatus.COMPLETED, TaskStatus.CANCELLED):
                raise MCPError(code=INVALID_REQUEST, message=str(exc)) from None
        self.agent.wake()
        return {"resultType": "complete"}

    # -- reading a task --------------------------------------------------------------------

    async def _find(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> tuple[TaskHandle, Operation | None]:
        """The caller's task and its operation (None: gone), or the extension's errors."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            _refuse_undeclared()  # the extension is not defined on the handshake protocols
        require_client_extension(ctx, TASKS)
        _check_routing(ctx, params.task_id)
        owner = self.identity.of(ctx.request)
        handle = await self.agent.ledger.task(params.task_id, owner=owner)
        if handle is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        if handle.expired(self.agent.ledger.now()):
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task has expired")
        try:
            return handle, await self.agent.ledger.get(handle.operation_id)
        except NotFound:
            return handle, None

    def _task(self, task_id: str, handle: TaskHandle, op: Operation) -> dict[str, Any]:
        now = self.agent.ledger.now()
        updated = max(op.updated_at or handle.created_at, handle.created_at)
        doc: dict[str, Any] = {
            "taskId": task_id,
            "status": task_status(op.state).value,
            "statusMessage": f"the operation is {op.state}; next: {next_step(op, now)}",
            "createdAt": iso(handle.created_at),
            "lastUpdatedAt": iso(updated),
            "ttlMs": _ms(handle.ttl),
        }
        if (every := poll_interval(op, now)) is not None:
            doc["pollIntervalMs"] = _ms(every)
        return doc

    def _gone(self, task_id: str, handle: TaskHandle) -> dict[str, Any]:
        """A handle whose operation left the ledger: a failure of jobtrail, not of the job."""
        message = f"the operation {handle.operation_id} is no longer in this ledger"
        return {
            "taskId": task_id,
            "status": TaskStatus.FAILED.value,
            "statusMessage": message,
            "createdAt": iso(handle.created_at),
            "lastUpdatedAt": iso(handle.created_at),
            "ttlMs": _ms(handle.ttl),
            "error": {"code": INTERNAL_ERROR, "message": message},
        }

    async def _outcome(self, handle: TaskHandle, op: Operation) -> dict[str, Any]:
        """The tool's CallToolResult, as the plain tool would have returned it at the end."""
        try:
            if handle.tool == "wait_job":
                value: Any = await self.agent.waited_outcome(
                    op, since=handle.created_at, actor=handle.owner
                )
            else:
                value = await self.agent.submitted_outcome(
                    op, existing=handle.existing, actor=handle.owner
                )
        except JobtrailError as exc:
            return _tool_error(str(exc))
        structured = TypeAdapter(type(value)).dump_python(value, mode="json")
        text = pydantic_core.to_json(value, indent=2).decode()
        result = CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=ended_in_error(op.state),
        )
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def listen_guard(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a `subscriptions/listen` asking for task notifications from a
    client that did not declare the extension is refused with -32021, as the extension
    requires. Task notifications are not sent (they are optional): the acknowledgement of
    a declaring client lists no task ids, and it polls `tasks/get`."""
    params = ctx.params or {}
    wanted = params.get("notifications") if isinstance(params, dict) else None
    asks_for_tasks = isinstance(wanted, dict) and "taskIds" in wanted
    if ctx.method == "subscriptions/listen" and asks_for_tasks and not _declared(ctx):
        _refuse_undeclared()
    return await call_next(ctx)


# An operation whose automation ended but that a person may still move on: a task on it
# stays open (input_required) rather than being answered by the plain tool at once.
_STILL_OPEN = REMOTE_MAY_RUN


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request declares the extension, on a protocol that defines it."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS in capabilities.extensions)


def _refuse_undeclared() -> None:
    raise MCPError(
        code=-32021,
        message=f"Missing required client capability: the {TASKS} extension",
        data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


def _check_routing(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """Over Streamable HTTP the client must route tasks/* by `Mcp-Name: <taskId>`: a
    request whose header names another task (or none) is refused, as the SDK refuses a
    tools/call whose header disagrees with its body."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return  # stdio: no headers to route by
    if decode_header_value(headers.get(MCP_NAME_HEADER)) != task_id:
        raise MCPError(
            code=HEADER_MISMATCH,
            message=f"{MCP_NAME_HEADER} header does not match the request's taskId",
        )


def _submitted(answer: HandlerResult) -> tuple[str, bool] | None:
    """(operation id, existing) of a successful submit_job answer, else None."""
    if not isinstance(answer, CallToolResult) or answer.is_error:
        return None
    content = answer.structured_content or {}
    op_id, existing = content.get("operation_id"), content.get("existing")
    return (op_id, bool(existing)) if isinstance(op_id, str) else None


def _tool_error(message: str) -> dict[str, Any]:
    result = CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _ms(span: timedelta | None) -> int | None:
    return None if span is None else int(span / timedelta(milliseconds=1))


def _person_needed(op: Operation, message: str) -> dict[str, Any]:
    """The task's one outstanding request while a person must decide: an elicitation that
    tells the client's user what is needed and how to give it (`jobtrail resolve`, `extend`,
    or the dashboard), keyed by the record it was asked about, so a later stall asks anew.
    Its answer, whatever it is, decides nothing: only the action policy's people do."""
    key = f"jobtrail-decision-{op.operation_id}-{op.version}"
    how = (
        f"A person with the operator role decides through jobtrail: `jobtrail explain "
        f"{op.operation_id}` says what happened and what can be done (resolve, extend, "
        "cancel); the dashboard offers the same."
    )
    return {
        key: {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": f"{message}. {how}",
                "requestedSchema": {"type": "object", "properties": {}},
            },
        }
    }
