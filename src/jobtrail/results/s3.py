"""Results in an S3-compatible object store (`--results s3://BUCKET/PREFIX`): AWS S3, MinIO,
Ceph, R2, or anything else that speaks the S3 API.

The library is aiobotocore (install `jobtrail[s3]`). It is botocore, the code behind the AWS
CLI and boto3, driven over aiohttp, which jobtrail already uses for every other HTTP call:
calls run on the event loop like the rest of the worker, with no thread pool to size, and
the endpoint, region and credentials come from the standard AWS sources (AWS_ENDPOINT_URL,
AWS_REGION, AWS_ACCESS_KEY_ID, ~/.aws/config, instance roles), never from jobtrail's own
settings or records. boto3 in a thread would give the same API at the cost of a thread per
concurrent transfer, and a pure-asyncio client without botocore would lose its credential
chain and its retry rules.

botocore retries on its own; the store pins the "standard" mode with three attempts, so a
throttled or briefly unreachable store costs at most a few seconds, inside the worker's
lease, before the failure reaches the operation as `result_unavailable`. Retrying is safe
here: an object's key is its content's digest, so writing it twice writes the same bytes,
and the upload carries its SHA-256 for the server to check.

The location is `s3://BUCKET/PREFIX/<aa>/<digest>`: it names the bucket, not an endpoint
or a credential, so every machine configured for that store can read it."""

from __future__ import annotations

import base64
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

from aiobotocore.config import AioConfig  # type: ignore[import-untyped]
from aiobotocore.session import get_session  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from jobtrail.errors import InvalidInput, ResultError
from jobtrail.results.interface import checked, digest_in, digest_of

CLIENT_CONFIG = AioConfig(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=5,
    read_timeout=60,
)
MISSING = {"404", "NoSuchKey", "NotFound"}


class S3Results:
    def __init__(self, url: str) -> None:
        self.bucket, self.prefix = split(url)
        self._stack = AsyncExitStack()
        self._client: Any = None

    async def put(self, content: bytes) -> str:
        digest = digest_of(content)
        key = "/".join(part for part in (self.prefix, digest[:2], digest) if part)
        location = f"s3://{self.bucket}/{key}"
        if await self.exists(location):
            return location
        client = await self._s3()
        try:
            await client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=content,
                ContentType="application/octet-stream",
                ChecksumSHA256=base64.b64encode(bytes.fromhex(digest)).decode(),
            )
        except (BotoCoreError, ClientError) as exc:
            raise ResultError(
                f"the object store refused to store {location}: {_why(exc)}"
            ) from None
        return location

    async def read(self, location: str) -> bytes:
        bucket, key = split(location)
        digest_in(key)
        client = await self._s3()
        try:
            answer = await client.get_object(Bucket=bucket, Key=key)
            async with answer["Body"] as body:
                content: bytes = await body.read()
        except (BotoCoreError, ClientError) as exc:
            raise ResultError(
                f"the stored result cannot be read at {location}: {_why(exc)}; check that this "
                "machine's AWS configuration (AWS_ENDPOINT_URL, credentials) reaches that bucket"
            ) from None
        return checked(location, content)

    async def exists(self, location: str) -> bool:
        bucket, key = split(location)
        client = await self._s3()
        try:
            await client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in MISSING:
                return False
            raise ResultError(
                f"the object store cannot be asked about {location}: {_why(exc)}"
            ) from None
        except BotoCoreError as exc:
            raise ResultError(
                f"the object store cannot be asked about {location}: {_why(exc)}"
            ) from None
        return True

    async def close(self) -> None:
        await self._stack.aclose()
        self._client = None

    async def _s3(self) -> Any:
        if self._client is None:
            session = get_session()
            self._client = await self._stack.enter_async_context(
                session.create_client("s3", config=CLIENT_CONFIG)
            )
        return self._client


def split(url: str) -> tuple[str, str]:
    """(bucket, key or prefix) of an s3:// URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise InvalidInput(f"{url!r} is not an s3://BUCKET/PREFIX URL")
    return parts.netloc, parts.path.strip("/")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _why(exc: Exception) -> str:
    # botocore's messages name the operation and the error code, never a credential.
    return str(exc)
