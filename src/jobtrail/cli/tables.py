"""Tables for people at any terminal width (COLUMNS), piped or not. An id is never cut or
wrapped (a cut id cannot be pasted back); what gives way is everything else: words wrap,
and when even that cannot fit the terminal, each row becomes a block of `label value`
lines."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

console = Console(highlight=False)
_NARROWEST = 8  # characters a wrapping column needs to stay readable


def id_table(*headers: str) -> Table:
    """A table of ids and words, none of them ever cut (a cut id cannot be pasted back)."""
    table = Table(*headers)
    for column in table.columns:
        column.no_wrap = True
    return table


def print_table(table: Table, *, on: Console | None = None) -> None:
    """Print `table` whole at any terminal width, piped or not: narrower than the table,
    the lines are left to the terminal to wrap instead of cutting what is in them."""
    out = on or console
    needed = Measurement.get(out, out.options.update_width(100_000), table).maximum
    wide = out if needed <= out.width else Console(highlight=False, width=needed)
    wide.print(table)


@dataclass(frozen=True, kw_only=True)
class Col:
    header: str
    is_id: bool = False  # never cut nor wrapped


def print_rows(
    columns: Sequence[Col],
    rows: Sequence[Sequence[Text]],
    *,
    title: str | None = None,
    on: Console | None = None,
) -> None:
    """`rows` under `columns`, as wide as the terminal: a table whose words wrap where it
    must, or, when the ids and the words cannot share a line at this width, one block per
    row (`label value` lines, the first value its heading)."""
    out = on or console
    widths = _widths(columns, rows, out.width - (len(columns) - 1))  # a space between each
    if widths is not None:
        out.print(_table(columns, rows, title, widths))
        return
    if title:
        out.print(Text(title, style="bold"))
    label = max(len(c.header) for c in columns[1:])
    for row in rows:
        out.print(row[0], soft_wrap=True)  # the heading (an id): never folded
        for column, value in zip(columns[1:], row[1:], strict=True):
            head = f"  {column.header.ljust(label)}  "
            if column.is_id:  # whole, on one line, whatever the width
                out.print(Text(head + value.plain), soft_wrap=True)
                continue
            lines = textwrap.wrap(value.plain, max(_NARROWEST, out.width - len(head))) or [""]
            for n, line in enumerate(lines):
                out.print(Text((head if n == 0 else " " * len(head)) + line), soft_wrap=True)
        out.print()


def _natural(column: Col, values: list[str]) -> int:
    """The width a column's values need on one line (its header may wrap at spaces)."""
    words = max(map(len, column.header.split()))
    return max(words, *(len(v) for v in values)) if values else max(words, len(column.header))


def _widths(columns: Sequence[Col], rows: Sequence[Sequence[Text]], room: int) -> list[int] | None:
    """Each column's width within `room`: ids at their natural width; the others give way,
    the widest first, down to what stays readable; None when even that does not fit."""
    natural = [_natural(c, [row[n].plain for row in rows]) for n, c in enumerate(columns)]
    widths = list(natural)
    while sum(widths) > room:
        flexible = [
            n
            for n, c in enumerate(columns)
            if not c.is_id and widths[n] > min(natural[n], _NARROWEST)
        ]
        if not flexible:
            return None
        widest = max(flexible, key=lambda n: widths[n])
        widths[widest] -= 1
    return widths


def _table(
    columns: Sequence[Col], rows: Sequence[Sequence[Text]], title: str | None, widths: list[int]
) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0))
    for n, column in enumerate(columns):
        if column.is_id:
            table.add_column(column.header, no_wrap=True, min_width=widths[n], width=widths[n])
        else:
            table.add_column(column.header, width=widths[n], overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table
