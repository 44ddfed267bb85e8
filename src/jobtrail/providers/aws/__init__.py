"""AWS code providers (`pip install 'jobtrail[aws]'`): Step Functions and Athena.

APIs that a provider file cannot describe (AWS's SigV4-signed JSON protocol) are driven by
code here; each provider follows `jobtrail.providers.protocol.Provider`, has a `version` and
is built by a `factory(settings)` from a provider file's free-form `[settings]` table. They
are registered under the entry point group `jobtrail.providers` as `aws-stepfunctions` and
`aws-athena` (see docs/aws.md).

Why aiobotocore, not boto3 in threads: aiobotocore is botocore (the code under boto3 and the
AWS CLI: the same service models, SigV4 signing, error parsing and credential chain) with
its HTTP layer on aiohttp, which jobtrail already uses for every other call and which is
already the library behind the S3 result store (`jobtrail[s3]`). A call is a coroutine on
the worker's loop, like an HTTP provider's call: a worker polling thousands of executions
needs no thread pool sized for it, and cancelling a worker task cancels the call. boto3 in
`asyncio.to_thread` would offer the same API at the cost of one thread per concurrent call,
a client shared across threads, and calls that cannot be cancelled once started (a thread
keeps running after its awaiting task is gone, and may still send a create). Both libraries
retry on their own by default; here that is switched off (calls.py).

Credentials come only from the standard AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE,
~/.aws/config, instance and task roles), read by botocore at call time; settings that would
hold one are refused, and nothing recorded names one.
"""
