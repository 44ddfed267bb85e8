"""One AWS API call, and what it can mean for the record: the part both AWS providers share.

Every call goes through `AwsCalls.invoke`, which never raises for anything AWS or the network
does. Its answer is an `Answer` (the parsed response) or a `Failure`: whether the request
was sent at all, and what AWS said; core/classify.py judges what that means:

- not sent: no credentials or region found, or the TCP connection could not be opened
  (aiohttp's `ClientConnectorError` inside botocore's `EndpointConnectionError`; the same
  botocore error also wraps resets *after* sending, so the wrapped error is checked);
- sent, no answer: a read timeout, a connection closed mid-answer, a 5xx;
- sent, answered with an error: AWS's error code and message, with the HTTP status;
- sent, answered with something botocore cannot parse (its parser raises plain Python
  errors then): treated as no answer.

Errors botocore raises before a request leaves (credentials, region, profile, parameter
validation) are "not sent"; a connection that broke after it opened is "sent".

botocore's retries are off (`total_max_attempts=1`, set on the client, so AWS_MAX_ATTEMPTS or
a profile's max_attempts cannot turn them back on): a retry hidden inside the library is a
second create the ledger never recorded. The worker retries, under the same execution name or
client request token, with its intent committed first. Nor does the aiohttp session under
botocore re-send anything (a GET of Bedrock's REST protocol or of S3 included): aiobotocore
opens it through providers/transport.py, which turns aiohttp's own re-send off.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aiohttp import ClientConnectorError

from jobtrail.core.classify import Failed, Sent
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.tracing import call_span
from jobtrail.providers.transport import aws_session_class

# Settings that would put a credential in a provider file (and from there in the ledger).
_CREDENTIAL_KEYS = frozenset(
    {"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "access_key", "secret"}
)
COMMON_KEYS = frozenset({"region", "endpoint_url", "timeout"})
# Environment variables of the standard chain whose values must never be recorded, however
# a call echoes them (jobtrail redacts them: CodeProvider.secret_env).
SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")


# The `traceparent` of the call in progress in this task: one client serves every operation,
# so the header is added per request from here, after signing (it is not signed).
_TRACEPARENT: ContextVar[str | None] = ContextVar("jobtrail_aws_traceparent", default=None)


@dataclass(frozen=True, kw_only=True)
class Answer:
    body: dict[str, Any]
    request_id: str | None
    http_status: int | None
    detail: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Failure(Failed):
    """A call that did not go right: the facts core/classify.py judges, and the record's."""

    message: str | None = None
    detail: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class AwsSettings:
    """Where and how to call; never who is calling (credentials come from the AWS chain)."""

    region: str | None = None
    endpoint_url: str | None = None
    timeout: float = 30.0

    @property
    def connect_timeout(self) -> float:
        return min(5.0, self.timeout)

    @property
    def call_limit(self) -> timedelta:
        """How long jobtrail waits for one call (CodeProvider.timeout): botocore's own
        connect and read timeouts, and a margin, so that botocore's clearer error comes
        first."""
        return timedelta(seconds=self.connect_timeout + self.timeout + 2.0)

    @classmethod
    def read(cls, settings: Mapping[str, Any], allowed: frozenset[str]) -> AwsSettings:
        """The common settings, after refusing unknown keys and any credential."""
        secret = sorted(k for k in settings if k.lower() in _CREDENTIAL_KEYS)
        if secret:
            raise ProviderConfigError(
                f"setting {secret[0]!r} would store an AWS credential; jobtrail reads "
                "credentials only from the standard AWS chain (environment, ~/.aws, roles)"
            )
        known = allowed | COMMON_KEYS
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ProviderConfigError(
                f"unknown setting {unknown[0]!r}; known settings: {', '.join(sorted(known))}"
            )
        endpoint = settings.get("endpoint_url")
        if endpoint is not None and (
            not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://"))
        ):
            raise ProviderConfigError(f"endpoint_url must be an http(s) URL, not {endpoint!r}")
        region = settings.get("region")
        if region is not None and not isinstance(region, str):
            raise ProviderConfigError(f"region must be a string, not {region!r}")
        timeout = parse_duration(settings.get("timeout", "30s")).total_seconds()
        return cls(region=region, endpoint_url=endpoint, timeout=timeout)


def plugin_version() -> str:
    """The version recorded with every operation these providers drive: jobtrail's own,
    since they ship inside it."""
    from jobtrail._version import VERSION

    return VERSION


def text_setting(settings: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    value = settings.get(key, default)
    if value is not None and (not isinstance(value, str) or not value):
        raise ProviderConfigError(f"setting {key!r} must be a non-empty string, not {value!r}")
    return value


# What the AWS providers import when they call (lazily), and how to get it: the plug-in
# loader checks it before advertising them (providers/code/plugins.py).
REQUIRES = {"aiobotocore": "pip install 'jobtrail[aws]'"}


def _library() -> tuple[Any, Any]:
    """aiobotocore's (AioConfig, get_session), or a ProviderConfigError saying what to install."""
    try:
        from aiobotocore.config import AioConfig  # type: ignore[import-untyped]
        from aiobotocore.session import get_session  # type: ignore[import-untyped]
    except ImportError:
        raise ProviderConfigError(
            "the AWS providers need aiobotocore: pip install 'jobtrail[aws]'"
        ) from None
    return AioConfig, get_session


class AwsCalls:
    """An aiobotocore client for one service, opened on first use, on the running loop."""

    def __init__(self, service: str, settings: AwsSettings, **options: Any) -> None:
        """`options` are more botocore config options (`s3={"addressing_style": "path"}`)."""
        self.service, self.settings = service, settings
        config, self._get_session = _library()
        self.config = config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            http_session_cls=aws_session_class(),  # nor does aiohttp under it resend a GET
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.timeout,
            **options,
        )
        self._stack = AsyncExitStack()
        self._client: Any = None
        self._opening = asyncio.Lock()
        self._rand = secrets.SystemRandom()

    @contextmanager
    def traced(self, kind: AttemptKind, op: Operation) -> Iterator[None]:
        """Run one provider call in a span of the operation's trace: every AWS request it
        makes carries that trace's W3C `traceparent` (DESIGN: one trace per operation)."""
        attributes = {
            "jobtrail.operation_id": op.operation_id,
            "jobtrail.call": kind.value,
            "rpc.system": "aws-api",
            "rpc.service": self.service,
        }
        with call_span(f"jobtrail.{kind.value}", op.trace_id, attributes, self._rand) as parent:
            token = _TRACEPARENT.set(parent)
            try:
                yield
            finally:
                _TRACEPARENT.reset(token)

    async def invoke(self, action: str, params: dict[str, Any]) -> Answer | Failure:
        from botocore import exceptions as bx  # type: ignore[import-untyped]

        started = time.monotonic()
        try:
            client = await self._open()
            body: dict[str, Any] = await getattr(client, _snake(action))(**params)
        except bx.ClientError as exc:
            return _answered(action, exc, _elapsed(started))
        except bx.ParamValidationError as exc:
            reason = f"{action} not sent: botocore refused its parameters: {_line(exc)}"
            detail = _failed(reason, started, sent=False)
            return Failure(sent=Sent.INVALID, reason=reason, detail=detail)
        except (bx.ConnectionError, bx.HTTPClientError, bx.IncompleteReadError) as exc:
            # EndpointConnectionError wraps any aiohttp connection error, resets after
            # sending included: only a failed connect proves nothing left
            not_sent = isinstance(exc, bx.ConnectTimeoutError) or (
                isinstance(exc, bx.EndpointConnectionError)
                and isinstance(exc.kwargs.get("error"), ClientConnectorError)
            )
            if not_sent:
                reason = f"{action} not sent: cannot connect to {self.where()} ({_line(exc)})"
                detail = _failed(reason, started, sent=False)
                return Failure(sent=Sent.NO, reason=reason, detail=detail)
            return _no_answer(action, exc, started)
        except bx.BotoCoreError as exc:
            # credentials, region, profile, signing: all settled before a request leaves
            reason = f"{action} not sent: {_line(exc)}"
            return Failure(sent=Sent.NO, reason=reason, detail=_failed(reason, started, sent=False))
        except Exception as exc:  # botocore's parser on an answer it cannot read, say
            return _no_answer(action, exc, started, unreadable=True)
        meta = body.pop("ResponseMetadata", {})
        request_id, status = meta.get("RequestId"), meta.get("HTTPStatusCode")
        detail = {"action": action, "status": status, "elapsed_ms": _elapsed(started)}
        if request_id:
            detail["request_id"] = request_id
        return Answer(body=body, request_id=request_id, http_status=status, detail=detail)

    def where(self) -> str:
        return self.settings.endpoint_url or f"{self.service} (AWS endpoint of the region)"

    async def _open(self) -> Any:
        if self._client is not None:
            return self._client
        async with self._opening:  # many operations' first calls arrive together
            if self._client is None:
                self._client = await self._new_client()
        return self._client

    async def _new_client(self) -> Any:
        client = await self._stack.enter_async_context(
            self._get_session().create_client(
                self.service,
                region_name=self.settings.region,
                endpoint_url=self.settings.endpoint_url,
                config=self.config,
            )
        )
        client.meta.events.register("before-send", _add_traceparent)
        client.meta.events.register("before-call.s3", _no_region_redirect)
        return client

    async def close(self) -> None:
        await self._stack.aclose()
        self._client = None


def _no_region_redirect(context: dict[str, Any], **_: Any) -> None:
    """botocore re-sends an S3 request answered "wrong region" (301, 307, 400) to the region
    named; marked as already redirected, the answer stays the call's answer (one request)."""
    redirect = context.get("s3_redirect")
    if isinstance(redirect, dict):
        redirect["redirected"] = True
    context["s3_redirected"] = True


def _add_traceparent(request: Any, **_: Any) -> None:
    value = _TRACEPARENT.get()
    if value:
        request.headers["traceparent"] = value


def _answered(action: str, exc: Any, elapsed: float) -> Failure:
    error = exc.response.get("Error", {})
    meta = exc.response.get("ResponseMetadata", {})
    code, message = error.get("Code"), error.get("Message")
    status, request_id = meta.get("HTTPStatusCode"), meta.get("RequestId")
    reason = f"{action} refused: {code}" + (f": {message}" if message else "")
    detail: dict[str, Any] = {
        "action": action,
        "status": status,
        "elapsed_ms": elapsed,
        "error": reason,
        "provider_error": {"code": code, "message": message},
    }
    if request_id:
        detail["request_id"] = request_id
    sent = Sent.NO_ANSWER if (status or 0) >= 500 else Sent.ANSWERED
    return Failure(
        sent=sent,
        reason=reason,
        code=code,
        message=message,
        http_status=status,
        request_id=request_id,
        detail=detail,
    )


def _no_answer(action: str, exc: Exception, started: float, *, unreadable: bool = False) -> Failure:
    what = "an answer botocore could not read" if unreadable else "no answer"
    reason = f"{action} sent, {what} ({type(exc).__name__}: {_line(exc)})"
    sent = Sent.UNREADABLE if unreadable else Sent.NO_ANSWER
    return Failure(sent=sent, reason=reason, detail=_failed(reason, started))


def _line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


def _failed(reason: str, started: float, *, sent: bool = True) -> dict[str, Any]:
    detail: dict[str, Any] = {"error": reason, "elapsed_ms": _elapsed(started)}
    if not sent:
        detail["sent"] = False
    return detail


def _elapsed(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _snake(action: str) -> str:
    """botocore's method name for an API action: StartExecution -> start_execution."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in action).lstrip("_")
