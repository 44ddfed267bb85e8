"""The census from Python (docs/census.md): `Client.census`, `Client.adopt_job`,
`Client.cancel_job`, the same services the CLI's `jobtrail census` calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta

from jobtrail.client.providers import ProviderRef, resolve_provider
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Operation
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.services.census import MAX_REQUESTS, Census, take_census
from jobtrail.services.census_actions import adopt_job, cancel_job
from jobtrail.services.runtime import Runtime


class CensusMethods:
    """The census's methods of `jobtrail.Client` (the client supplies `_opened`, `actor`)."""

    actor: str

    @property
    def _opened(self) -> Runtime:  # pragma: no cover - the client's own wins
        raise NotImplementedError

    async def census(
        self,
        provider: ProviderRef,
        *,
        since: timedelta | str | None = "7d",
        max_requests: int = MAX_REQUESTS,
        actor: str | None = None,
    ) -> Census:
        """List `provider`'s jobs and hold each against the ledger (followed, ended here,
        unknown here, a second job, not ours); recorded in the audit log."""
        rt = self._opened
        window = parse_duration(since) if isinstance(since, str) else since
        return await take_census(
            rt.ledger,
            rt.providers,
            resolve_provider(provider, rt.providers.plugins),
            actor=actor or self.actor,
            since=window,
            max_requests=max_requests,
        )

    async def adopt_job(
        self,
        provider: ProviderRef,
        job_id: str,
        *,
        reason: str,
        actor: str | None = None,
        path: Mapping[str, str] | None = None,
    ) -> Operation:
        """Adopt a job the census found into a new operation (its status read first); the
        worker then observes and collects it like any other. `path`: the values the
        provider's paths need for it (Airflow: the finding's `job.path` and a `task_id`)."""
        return await self._act(adopt_job, provider, job_id, reason, actor, path)

    async def cancel_job(
        self,
        provider: ProviderRef,
        job_id: str,
        *,
        reason: str,
        actor: str | None = None,
        path: Mapping[str, str] | None = None,
    ) -> Operation:
        """Record the intent to cancel a job the census found (through the operation that
        follows it, adopted first when none does); the job stops only on the provider's
        word."""
        return await self._act(cancel_job, provider, job_id, reason, actor, path)

    async def _act(
        self,
        action: Callable[..., Awaitable[Operation]],
        provider: ProviderRef,
        job_id: str,
        reason: str,
        actor: str | None,
        path: Mapping[str, str] | None,
    ) -> Operation:
        """Adopt or cancel `job_id` through the census service `action`, then wake the
        worker to drive what it recorded."""
        rt = self._opened
        op = await action(
            rt.ledger,
            rt.providers,
            self._file(provider),
            job_id,
            actor=actor or self.actor,
            reason=reason,
            path=path,
        )
        rt.worker.wake()
        return op

    def _file(self, provider: ProviderRef) -> ProviderSpec | CodeSpec:
        return resolve_provider(provider, self._opened.providers.plugins)
