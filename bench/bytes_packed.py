"""Stored bytes per operation of jobtrail before and after packing its finished operations
(`prune --pack-after`, issue 32), against DBOS, alternated in one run. Not one of the
`python -m bench` benchmarks: a before/after tool like bench.bytes_before_after.

    python -m bench.bytes_packed [--n 2000] [--rounds 2] [--first-round 1]
        [--stores sqlite,postgres]

Each side runs alone in a fresh process (bench.peerside: the fair peer's lifecycle against
the simulator, every job with a result of its own): "jobtrail" as it leaves its ledger,
"jobtrail packed" the same lifecycle and then every operation packed (its CPU per operation
printed; a SQLite ledger VACUUMed after), and DBOS (WAL); SQLite then PostgreSQL, the order
of the sides reversed on even rounds. Bytes are bench.peerbytes's, results included.
"""

from __future__ import annotations

import argparse

from bench.bytes_before_after import line, run_side
from bench.common import ROOT, simulator_process

SIDES = [("jobtrail", "jobtrail"), ("jobtrail packed", "jobtrail-packed"), ("DBOS", "dbos")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--first-round", type=int, default=1)
    parser.add_argument("--stores", default="sqlite,postgres")
    args = parser.parse_args()
    with simulator_process() as url:
        for r in range(args.first_round, args.first_round + args.rounds):
            print(f"# round {r}", flush=True)
            for store in args.stores.split(","):
                per_op = {}
                for label, side in SIDES if r % 2 else SIDES[::-1]:
                    db = "pack_bytes_" + side.replace("-", "_")
                    out = run_side(url, side, ROOT, store, args.n, db)
                    per_op[label] = out["bytes_per_op"]
                    print(line(label, store, out), flush=True)
                    if "pack_cpu_ms_per_op" in out:
                        print(
                            f"#   packing: {out['pack_cpu_ms_per_op']:.3f} ms CPU, "
                            f"{out['pack_wall_ms_per_op']:.3f} ms wall per operation; "
                            f"dictionary {out['dictionary_bytes']:,} B",
                            flush=True,
                        )
                dbos = per_op["DBOS"]
                print(
                    f"# {store}: jobtrail / DBOS {per_op['jobtrail'] / dbos:.2f}x, "
                    f"packed / DBOS {per_op['jobtrail packed'] / dbos:.2f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()
