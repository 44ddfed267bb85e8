"""Recording a census: who took it, when, what the provider listed (each listing request as
its attempt, redacted) and what was found, in the audit log (DESIGN: looking from the
provider's side). A census changes no operation: it is a ledger-wide entry, as a refusal by
the action policy is. A job it found is adopted into an operation recorded for it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from jobtrail.core.canonical import fingerprint
from jobtrail.core.model import JobRequest, Operation
from jobtrail.core.redact import Redactor
from jobtrail.errors import InvalidInput
from jobtrail.ledger.asking import new_operation
from jobtrail.ledger.common import LedgerBase
from jobtrail.ledger.policy import Action
from jobtrail.ledger.redaction import redacted_entries

if TYPE_CHECKING:  # a census needs a provider file; reading the ledger does not
    from jobtrail.providers.code.contract import CodeSpec
    from jobtrail.providers.file.config import ProviderSpec


class Censuses(LedgerBase):
    async def record_census(
        self, actor: str, entries: Sequence[tuple[str, dict[str, Any]]], redactor: Redactor
    ) -> None:
        """Append a census's entries (`census.call` per listing request, `census.taken` for
        its findings) in one write, through the redaction chokepoint with `redactor` (the
        provider's sensitive names and the secrets it uses now)."""
        now = self.now()
        rows = [self._entry_for(None, now, kind, actor, data) for kind, data in entries]
        await self.store.append_audit(redacted_entries(rows, redactor))

    async def record_adoption(
        self,
        provider: ProviderSpec | CodeSpec,
        job_id: str,
        *,
        actor: str,
        reason: str,
        path: dict[str, str] | None = None,
    ) -> Operation:
        """An operation recorded to adopt `job_id`, a job the census found at `provider`
        (its `candidate_job_id`): never due, nothing is ever sent for its create; a person's
        adopt decision then makes the job its remote job (core/allows.py,
        `awaiting_adoption`). The same job recorded again returns the same operation (its
        key is `census:PROVIDER:JOB_ID`). `path`: the values its paths need (Airflow's
        `dag_id`), checked by the caller as at submit."""
        await self.permit(Action.RESOLVE, actor, None, subject=job_id)
        if not reason.strip():
            raise InvalidInput("reason: say why the job is adopted (it is recorded)")
        key = f"census:{provider.name}:{job_id}"
        if len(key) > 200 or not key.isprintable():
            raise InvalidInput(f"job_id: {job_id!r} is not a job id jobtrail can record")
        values = dict(path or {})
        target = provider.target_with(values) if values else provider.target
        request = JobRequest(method=provider.create_method, target=target, body=None, path=values)
        op = new_operation(
            self,
            provider,
            request,
            fingerprint(request.method, request.target, None, {}),
            key=key,
            actor=actor,
            authorized_by=actor,
            reason=reason,
            create_deadline=timedelta(0),  # nothing is ever created for it
            result_deadline=provider.deadlines["result"],
            cancel_timeout=provider.deadlines["cancel"],
            candidate_job_id=job_id,
        )
        entry = self._entry(
            op,
            op.created_at,
            "operation.adopting",
            actor,
            {"key": key, "provider": provider.name, "job_id": job_id, "reason": reason},
        )
        redactor = self._redactors.for_operation(op)
        return await self.store.create_operation(op, redacted_entries([entry], redactor))
