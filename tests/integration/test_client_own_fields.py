"""The Python Client refuses a body that holds a value where the provider file has jobtrail
write (the idempotency token, the client reference, at a dotted path too), naming the
field, with nothing written to the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail import Client
from jobtrail.errors import InvalidInput
from ownfields import REFUSED, write_providers


@pytest.mark.parametrize(("provider", "body", "field"), REFUSED)
async def test_the_client_refuses_a_value_where_jobtrail_writes(
    tmp_path: Path, provider: str, body: dict[str, Any], field: str
) -> None:
    """InvalidInput naming the field; the ledger holds no operation and no audit entry."""
    files = write_providers(tmp_path / "providers")
    async with Client(tmp_path / "ledger.db", data_dir=tmp_path / "data") as jt:
        with pytest.raises(InvalidInput, match=f"request body's {field} is where jobtrail"):
            await jt.submit(files[provider], body, key="k1")
        assert await jt.find("k1") is None
        assert await jt.list() == []


async def test_a_code_provider_declares_the_fields_it_writes(tmp_path: Path) -> None:
    """Bedrock batch writes the token at `clientRequestToken`: a body holding one is
    refused, naming it, through the Client, with nothing written."""
    pytest.importorskip("aiobotocore")
    from jobtrail.providers.aws import bedrock

    settings = {"region": "us-east-1", "role_arn": "arn:aws:iam::123456789012:role/r"}
    provider = bedrock.factory(settings)
    body = {"modelId": "m", "clientRequestToken": "mine-1"}
    try:
        async with Client(tmp_path / "ledger.db", providers=[provider]) as jt:
            with pytest.raises(InvalidInput, match="request body's clientRequestToken is where"):
                await jt.submit(bedrock.NAME, body, key="k1")
            assert await jt.list() == []
    finally:
        await provider.close()
