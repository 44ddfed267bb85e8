"""Attempt outcomes are stored under declared words, never under Python class names."""

from __future__ import annotations

import re
import typing

from jobtrail.core import outcomes as o


def _kinds() -> list[type]:
    return list(typing.get_args(o.Outcome))


def test_every_outcome_kind_declares_its_own_word() -> None:
    """Each kind has a distinct lower_snake word, so the stored value names one kind."""
    words = [kind.word for kind in _kinds()]
    assert len(words) == len(set(words)) == 16
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", word) for word in words)


def test_old_class_names_read_as_words() -> None:
    """A value an older ledger stored (the class name) is read as the kind's word; a word or
    an unknown value is kept, and no outcome stays no outcome."""
    for kind in _kinds():
        assert o.stored_word(kind.__name__) == kind.word
        assert o.stored_word(kind.word) == kind.word
    assert o.stored_word("StatusObserved") == "StatusObserved"
    assert o.stored_word(None) is None
