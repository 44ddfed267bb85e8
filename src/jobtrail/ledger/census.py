"""Recording a census: who took it, when, what the provider listed (each listing request as
its attempt, redacted) and what was found, in the audit log (DESIGN: looking from the
provider's side). A census changes no operation: it is a ledger-wide entry, as a refusal by
the action policy is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobtrail.core.redact import Redactor
from jobtrail.ledger.base import LedgerBase
from jobtrail.ledger.redaction import redacted_entries


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
