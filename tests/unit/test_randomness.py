"""The pooled system randomness gives what `random.SystemRandom` gives, and a forked child
never repeats its parent's bytes."""

from __future__ import annotations

import os

from jobtrail.core.ids import idempotency_token, short_id, span_id
from jobtrail.randomness import PooledSystemRandom


def test_numbers_stay_in_their_ranges_and_ids_differ() -> None:
    """Bits, floats and bytes have the asked size; ids drawn across refills are all new."""
    rand = PooledSystemRandom()
    for k in (0, 1, 7, 8, 9, 64, 96, 160, 4096 * 8 + 3):
        assert 0 <= rand.getrandbits(k) < 2**k or k == 0
    assert all(0.0 <= rand.random() < 1.0 for _ in range(1000))
    assert len(rand.randbytes(5000)) == 5000
    ids = {short_id("at_", rand) for _ in range(2000)} | {span_id(rand) for _ in range(2000)}
    assert len(ids) == 4000
    assert 0 <= rand.randrange(10) < 10 and rand.choice("ab") in "ab"
    assert idempotency_token(rand) != idempotency_token(rand)


def test_a_forked_child_draws_other_bytes_than_its_parent() -> None:
    """The pool is emptied in the child: the same position yields different bytes."""
    rand = PooledSystemRandom()
    rand.getrandbits(8)  # fill the pool before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, rand.randbytes(32))
        os._exit(0)
    os.close(write)
    child = b""
    while len(child) < 32:
        chunk = os.read(read, 32 - len(child))
        if not chunk:
            break
        child += chunk
    os.waitpid(pid, 0)
    os.close(read)
    assert len(child) == 32 and child != rand.randbytes(32)
