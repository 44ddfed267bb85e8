"""`python -m bench.simserver`: the provider simulator as a process of its own, printing its
base URL on the first line. Unlike `jobtrail simulator`, it can skip the calls log, which
throughput benchmarks do not read."""

from __future__ import annotations

import argparse
import asyncio
import os

from jobtrail.simulator import serve_forever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token-env", default="REPORTS_API_TOKEN")
    parser.add_argument("--record-calls", action="store_true")
    args = parser.parse_args()
    asyncio.run(
        serve_forever(
            args.host,
            args.port,
            token=os.environ.get(args.token_env) or None,
            record_calls=args.record_calls,
        )
    )


if __name__ == "__main__":
    main()
