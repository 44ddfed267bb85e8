"""The operating system's randomness, read a few KiB at a time.

`secrets.SystemRandom` makes one `os.urandom` system call per number, and a poll asks for
three (an attempt id, a span id, the backoff's jitter): under load those calls cost more than
the arithmetic around them. `PooledSystemRandom` hands out the same kind of bytes (the
kernel's CSPRNG, so tokens stay unguessable) from a pool refilled by one call per 4 KiB.
A forked child starts with an empty pool, so parent and child never share bytes.
"""

from __future__ import annotations

import os
import random
import threading
import weakref

_POOL_BYTES = 4096
_RECIP_BPF = 2.0**-53
_pools: weakref.WeakSet[PooledSystemRandom] = weakref.WeakSet()


class PooledSystemRandom(random.SystemRandom):
    """`random.SystemRandom` (same methods, same source of bytes) with fewer system calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the store's writer thread may draw ids too
        self._pool = b""
        self._at = 0
        super().__init__()
        _pools.add(self)

    def _take(self, n: int) -> bytes:
        with self._lock:
            if self._at + n > len(self._pool):
                self._pool, self._at = os.urandom(max(_POOL_BYTES, n)), 0
            start = self._at
            self._at += n
            return self._pool[start : self._at]

    def _forget(self) -> None:
        self._pool, self._at = b"", 0

    def random(self) -> float:
        return (int.from_bytes(self._take(7)) >> 3) * _RECIP_BPF

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(self._take(size)) >> (size * 8 - k)

    def randbytes(self, n: int) -> bytes:
        return self._take(n)


def _after_fork_in_child() -> None:
    for pool in list(_pools):
        pool._lock = threading.Lock()
        pool._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)
