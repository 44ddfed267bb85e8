"""Leases: claiming due operations, renewing, releasing, and fencing between workers."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from jobtrail.store import Store

from contract_records import LEASE, SHORT, at, operation, outlive
from stores import LedgerDb


async def _create_due(store: Store, polls: dict[int, float | None]) -> dict[int, str]:
    """Operation n, due at second polls[n] (None: not scheduled); returns n -> id."""
    ids = {}
    for n, second in polls.items():
        op = operation(n, next_poll_at=None if second is None else at(second))
        await store.create_operation(op, [])
        ids[n] = op.operation_id
    return ids


async def test_claim_takes_only_due_operations_oldest_first(store: Store) -> None:
    """claim_due leases operations with next_poll_at <= now, oldest due first, up to limit;
    unscheduled and future ones are left alone."""
    ids = await _create_due(store, {0: 30, 1: 10, 2: 20, 3: None, 4: 99, 5: 5})
    claims = await store.claim_due("worker:a", at(30), 3, LEASE)
    assert [c.operation.operation_id for c in claims] == [ids[5], ids[1], ids[2]]
    assert [c.was_due for c in claims] == [at(5), at(10), at(20)]
    rest = await store.claim_due("worker:a", at(30), 10, LEASE)
    assert [c.operation.operation_id for c in rest] == [ids[0]]
    assert await store.claim_due("worker:a", at(30), 10, LEASE) == []


async def test_claim_raises_the_fence_and_keeps_the_poll_time(store: Store) -> None:
    """A claim raises the fence by one and records owner and expiry in the lease columns,
    leaving next_poll_at as it was; the stored record matches the claimed one."""
    ids = await _create_due(store, {1: 0})
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    op = claim.operation
    assert (op.fence, op.lease_owner) == (1, "worker:a")
    assert op.lease_expires_at == at(1) + LEASE
    assert op.next_poll_at == at(0)
    assert claim.was_due == at(0)
    assert await store.get(ids[1]) == op
    assert op.version == 0  # a claim is not a change of the record's content


async def test_a_claimed_operation_is_claimable_again_only_at_expiry(store: Store) -> None:
    """Until its lease expires a claimed operation is not due; at expiry another worker
    takes it over with the next fence, and was_due is the old lease's expiry."""
    await _create_due(store, {1: 0})
    (first,) = await store.claim_due("worker:a", at(1), 5, SHORT)
    expiry = at(1) + SHORT
    await outlive()
    assert await store.claim_due("worker:b", expiry - timedelta(microseconds=1), 5, LEASE) == []
    (second,) = await store.claim_due("worker:b", expiry, 5, LEASE)
    assert second.operation.fence == first.operation.fence + 1
    assert second.operation.lease_owner == "worker:b"
    assert second.was_due == expiry


async def test_claims_write_lease_rows(store: Store) -> None:
    """Every claim writes a lease row: operation, fence, owner, acquired and expiry times,
    by the claimer's reckoning and on the ledger's one clock, where tenures never overlap."""
    ids = await _create_due(store, {1: 0, 2: 0})
    await store.claim_due("worker:a", at(1), 5, SHORT)
    await outlive()
    await store.claim_due("worker:b", at(1) + SHORT, 1, LEASE, only=ids[1])
    leases = await store.leases()
    assert [(lease.operation_id, lease.fence, lease.owner) for lease in leases] == sorted(
        [(ids[1], 1, "worker:a"), (ids[1], 2, "worker:b"), (ids[2], 1, "worker:a")]
    )
    one, two = await store.leases(ids[1])
    assert (one.acquired_at, one.expires_at, one.released_at) == (at(1), at(1) + SHORT, None)
    assert (two.acquired_at, two.expires_at) == (at(1) + SHORT, at(1) + SHORT + LEASE)
    assert one.clock == two.clock and one.clock is not None
    assert one.clock_acquired is not None and one.clock_expires is not None
    assert two.clock_acquired is not None and two.clock_expires is not None
    assert one.clock_expires - one.clock_acquired == pytest.approx(SHORT.total_seconds())
    assert two.clock_acquired >= one.clock_expires  # the ledger's clock says: one at a time
    assert two.clock_expires - two.clock_acquired == pytest.approx(LEASE.total_seconds())


async def test_one_claim_of_many_keeps_one_lease_row_per_tenure(store: Store) -> None:
    """One claim taking several operations at once: the one this owner released last moves
    its row to the new fence, the one another owner released and the one never leased get a
    row each; none gets two."""
    ids = await _create_due(store, {1: 0, 2: 0, 3: 5})
    for owner, n in (("a", 1), ("b", 2)):
        (claim,) = await store.claim_due(owner, at(1), 1, LEASE, only=ids[n])
        assert await store.release(ids[n], claim.operation.fence, at(2), at(2))
    taken = await store.claim_due("a", at(6), 5, LEASE)
    assert sorted(cl.operation.operation_id for cl in taken) == sorted(ids.values())
    leases = await store.leases()
    assert sorted((lease.operation_id, lease.fence, lease.owner) for lease in leases) == sorted(
        [(ids[1], 2, "a"), (ids[2], 1, "b"), (ids[2], 2, "a"), (ids[3], 1, "a")]
    )
    released = {(lease.operation_id, lease.fence): lease.released_at for lease in leases}
    assert released == {(ids[1], 2): None, (ids[2], 1): at(2), (ids[2], 2): None, (ids[3], 1): None}
    (moved,) = await store.leases(ids[1])
    assert moved.acquired_at == at(1)


async def test_claim_only_one_operation(store: Store) -> None:
    """claim_due with `only` claims that operation if due, and no other."""
    ids = await _create_due(store, {1: 0, 2: 5, 3: 50})
    assert await store.claim_due("worker:a", at(10), 5, LEASE, only=ids[3]) == []
    (claim,) = await store.claim_due("worker:a", at(10), 5, LEASE, only=ids[2])
    assert claim.operation.operation_id == ids[2]
    assert [c.operation.operation_id for c in await store.claim_due("w", at(10), 5, LEASE)] == [
        ids[1]
    ]


async def test_renew_extends_a_held_lease(store: Store) -> None:
    """renew moves the lease expiry forward for the current fence only; the poll time
    stays."""
    ids = await _create_due(store, {1: 0})
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    fence = claim.operation.fence
    assert await store.renew(ids[1], fence, at(20), LEASE) is True
    renewed = await store.get(ids[1])
    assert renewed is not None
    assert renewed.lease_expires_at == at(20) + LEASE
    assert renewed.next_poll_at == at(0)
    (lease,) = await store.leases(ids[1])
    assert lease.expires_at == at(20) + LEASE
    assert await store.renew(ids[1], fence + 1, at(25), LEASE) is False
    assert await store.renew("op_missing", 1, at(25), LEASE) is False
    assert await store.get(ids[1]) == renewed


async def test_renew_fails_after_a_takeover(store: Store) -> None:
    """Once another worker took the operation over, the old fence can neither renew nor
    release it."""
    ids = await _create_due(store, {1: 0})
    (old,) = await store.claim_due("worker:a", at(1), 1, SHORT)
    await outlive()
    (new,) = await store.claim_due("worker:b", at(1) + SHORT, 1, LEASE)
    assert await store.renew(ids[1], old.operation.fence, at(40), LEASE) is False
    assert await store.release(ids[1], old.operation.fence, at(40), at(40)) is False
    assert await store.get(ids[1]) == new.operation


async def test_release_makes_the_operation_due_now(store: Store) -> None:
    """release drops the lease, makes the operation due at `now` and stamps the lease row;
    it is refused for a fence that is not the current one, or twice."""
    ids = await _create_due(store, {1: 0})
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    assert await store.release(ids[1], claim.operation.fence, at(5), at(5)) is True
    released = await store.get(ids[1])
    assert released is not None
    assert (released.lease_owner, released.lease_expires_at) == (None, None)
    assert released.next_poll_at == at(5) and released.fence == claim.operation.fence
    assert released.version == claim.operation.version + 1  # a stale writer sees the change
    (lease,) = await store.leases(ids[1])
    assert lease.released_at == at(5)
    assert await store.release(ids[1], claim.operation.fence, at(6), at(6)) is False
    assert await store.next_due() == at(5)
    (again,) = await store.claim_due("worker:b", at(5), 1, LEASE)
    assert again.was_due == at(5) and again.operation.fence == claim.operation.fence + 1


async def test_release_with_nothing_left_to_do_is_never_due(store: Store) -> None:
    """An operation released with no next time is never claimed again."""
    ids = await _create_due(store, {1: 0})
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    assert await store.release(ids[1], claim.operation.fence, at(2), None) is True
    assert await store.claim_due("worker:b", at(10_000), 10, LEASE) == []


async def test_a_claimer_whose_clock_runs_ahead_cannot_take_a_live_lease(store: Store) -> None:
    """A lease ends on the ledger's clock: a claimer whose `now` is an hour past the
    lease's expiry by the holder's reckoning still cannot take it while it runs, nor after
    the holder renewed it; once it ran out for real, the same claimer takes it over."""
    ids = await _create_due(store, {1: 0})
    (held,) = await store.claim_due("worker:a", at(1), 1, SHORT)
    ahead = at(1) + timedelta(hours=1)
    assert await store.claim_due("worker:b", ahead, 5, LEASE) == []
    assert await store.renew(ids[1], held.operation.fence, at(1), LEASE)
    await outlive()  # the first lease would have run out: the renewal holds it
    assert await store.claim_due("worker:b", ahead, 5, LEASE) == []
    assert await store.renew(ids[1], held.operation.fence, at(1), SHORT)
    await outlive()
    (taken,) = await store.claim_due("worker:b", ahead, 5, LEASE)
    assert taken.operation.fence == held.operation.fence + 1


async def test_a_claimer_whose_clock_runs_behind_takes_over_late_never_early(
    store: Store,
) -> None:
    """A claimer whose `now` is before the lease's expiry by the holder's reckoning waits
    for it, even once the lease ran out on the ledger's clock: late, never early."""
    await _create_due(store, {1: 0})
    await store.claim_due("worker:a", at(1), 1, SHORT)
    await outlive()
    assert await store.claim_due("worker:b", at(1), 5, LEASE) == []
    (taken,) = await store.claim_due("worker:b", at(1) + SHORT, 5, LEASE)
    assert taken.operation.lease_owner == "worker:b"


async def test_concurrent_claimers_never_share_an_operation(ledger_db: LedgerDb) -> None:
    """Two store instances on one database, claiming at the same time, never get the same
    operation, and together get every due one."""
    async with ledger_db.opened() as one, ledger_db.opened() as two:
        ids = await _create_due(one, {n: n % 7 for n in range(60)})

        async def worker(store: Store, name: str) -> list[str]:
            got: list[str] = []
            for _ in range(20):
                claims = await store.claim_due(name, at(10), 4, LEASE)
                got += [c.operation.operation_id for c in claims]
                await asyncio.sleep(0)  # a yield, not a wait: lets the two claimers interleave
            return got

        a, b = await asyncio.gather(worker(one, "worker:a"), worker(two, "worker:b"))
    assert not set(a) & set(b)
    assert sorted(a + b) == sorted(ids.values())
