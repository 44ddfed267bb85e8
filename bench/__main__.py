"""`python -m bench`: placeholder until the benchmark suite lands."""

from __future__ import annotations

if __name__ == "__main__":
    raise SystemExit("benchmarks are not written yet")
