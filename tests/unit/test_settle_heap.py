"""`settle_heap`: what start-up made is moved out of the cyclic collector's reach (gc.freeze),
what comes after is collected as before."""

from __future__ import annotations

import gc

from jobtrail.services.runtime import settle_heap


def test_start_up_objects_are_frozen_and_later_garbage_still_collected() -> None:
    """After settle_heap the start-up heap is frozen; a cycle made later is still found."""
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
