"""Printing results people (and programs) can read.

    table  on a terminal: the first rows, sorted by window, group and first
           event, each trend shown as the chain of its events' attribute
           values (`acct23 → acct04 → acct15` for kiting), and a summary line
    csv    when not on a terminal (or asked): every row (unless --limit
           says otherwise), a header, lists joined with `;`, lines ending
           in `\n`
    json   JSON lines

The summary (trends, distinct trends across windows, by length) goes under
the table, or to standard error for csv/json so standard output stays data;
it says when rows were left out.  Rows are streamed, never collected whole.
One renderer for every engine: it reads a result through `Rows`, so a
printed result is the same whichever engine made it.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from cetql.planner.logical.plan import Detect
from cetql.planner.semantics import ir

# ---------------------------------------------------------------- chains


def default_chain(plan) -> tuple[str, tuple[str, ...]] | None:
    """How to show a trend by default, from its predicates: ("link", (L, H))
    for an `E+` whose step is next.L = prev.H (each event links the previous
    one's H to its own: show e0.L → e0.H → e1.H → …), else ("values", attrs)
    for the attributes the edge and cross predicates read."""
    root = plan.root
    if not isinstance(root, Detect):
        return None
    edges = [p for tp in root.transitions for p in tp.predicates]
    if root.template.single_kleene is not None:
        links = [p for p in edges if p.op == ir.Op.EQUAL and isinstance(p.lval, ir.Ref) and isinstance(p.h, ir.Ref)
                 and p.lval.attr != p.h.attr]  # fmt: skip
        if len(links) == 1:
            return ("link", (links[0].lval.attr, links[0].h.attr))
    attrs = [r.attr for p in (*edges, *root.cross) for r in ir.refs(p.expr)]
    attrs = tuple(dict.fromkeys(attrs))
    return ("values", attrs) if attrs else None


def chain_text(style: str, attrs: tuple[str, ...], rows: list[dict]) -> str:
    if style == "link":
        first, link = attrs
        values = [rows[0].get(first)] + [r.get(link) for r in rows] if rows else []
        return " → ".join(_short(v) for v in values)
    return " → ".join("/".join(_short(r.get(a)) for a in attrs) for r in rows)


def _short(v) -> str:
    if v is None:
        return "∅"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    return str(v)


# ---------------------------------------------------------------- rows


class Rows(Protocol):
    """A result as the renderer reads it, whichever engine made it
    (`backends.spark.results`, `backends.embedded.results`): rows as dicts
    of plain Python values (a timestamp a naive datetime in the zone the
    result is printed in, a struct a dict, a list a list)."""

    plan: object  # the physical plan that made it
    columns: list[str]

    def ordered(self, limit: int) -> Iterator[dict]:
        """Rows sorted by window, keys, then the trend's events (nulls
        first), the first `limit` (0: every row, streamed)."""

    def summary(self) -> tuple[int, int, list[tuple[int, int]]]:
        """(rows, distinct trends across windows, [(length, trends)]) —
        the last two for detection only."""

    def lookup(self, ids: list, attrs: tuple[str, ...]) -> dict:
        """{event id: {attr: value}} of the given events."""


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return ";".join(_cell(x) for x in v)
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dict):
        return json.dumps(_plain(v), default=str)
    return str(v)


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def _summary(rows: Rows, kind: str) -> tuple[str, int]:
    """(the summary line, the number of rows)."""
    total, distinct, by_length = rows.summary()
    if kind != "detection":
        return f"{total:,} row{'s' if total != 1 else ''}", total
    parts = ", ".join(f"{length}: {n:,}" for length, n in sorted(by_length))
    text = f"{total:,} trend{'s' if total != 1 else ''}"
    if total:
        text += f"; {distinct:,} distinct across windows; by length {parts}"
    return text, total


def sort_columns(columns: list[str], kind: str) -> list[str]:
    """The columns rows are printed in the order of: the window, the keys
    (every column but the trend's and the aggregates'); then, for
    detection, the trend's events (its first, then all: a total order)."""
    rest = ("events", "length", "rows")
    keys = [c for c in columns if c not in rest and not c.startswith(("COUNT(", "SUM(", "MIN(", "MAX(", "AVG("))]
    return keys if kind != "detection" else [*keys, "events"]


TABLE_BATCH = 1000  # rows per table when a terminal is asked for every row (--limit 0): never all in memory


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def print_result(rows: Rows, *, limit: int | None, fmt: str | None, show=None, stream=None) -> None:
    """Print the result on `stream` (standard output by default).

    On a terminal: a table (`fmt` None) of the first `limit` rows (None: 20;
    0: all), then the summary, which says how many were shown.  Elsewhere (a
    pipe, a file): CSV (`fmt` None) or JSON lines of every row (`limit`
    None or 0; a positive `limit` cuts, and the summary on standard error
    says so).  Rows are streamed, never collected whole; CSV lines end in `\n`."""
    stream = stream if stream is not None else sys.stdout
    kind = rows.plan.kind.value
    terminal = _isatty(stream)
    if fmt in (None, "parquet"):
        fmt = "table" if terminal else "csv"
    if limit is None:
        limit = 20 if terminal else 0
    if fmt == "table":
        chain = None
        if kind == "detection":
            chain = ("values", tuple(show)) if show else default_chain(rows.plan.logical)
        _print_tables(rows, limit, kind, chain, stream)
        return
    columns = rows.columns
    written = 0
    if fmt == "csv":
        w = csv.writer(stream, lineterminator="\n")
        w.writerow(columns)
        for r in rows.ordered(limit):
            w.writerow([_cell(r[c]) for c in columns])
            written += 1
    else:
        for r in rows.ordered(limit):
            stream.write(json.dumps({c: _plain(r[c]) for c in columns}, default=str) + "\n")
            written += 1
    stream.flush()
    line, total = _summary(rows, kind)
    print(line + (f" (first {written:,} written, as --limit {limit} asks)" if written < total else ""), file=sys.stderr)


def _print_tables(rows: Rows, limit: int, kind: str, chain, stream) -> None:
    from rich.console import Console

    console = Console(file=stream, soft_wrap=False, highlight=False)
    if limit:  # at most `limit` rows: one table
        chosen = list(rows.ordered(limit))
        line, total = _summary(rows, kind)
        chains = _chains(rows, chosen, chain) if chain is not None and chosen else {}
        console.print(_table(rows.columns, chosen, chains))
        console.print(line + (f" (first {len(chosen):,} shown)" if len(chosen) < total else ""))
        return
    batch: list = []
    printed = False
    for r in rows.ordered(0):
        batch.append(r)
        if len(batch) == TABLE_BATCH:
            console.print(_table(rows.columns, batch, _chains(rows, batch, chain) if chain is not None else {}))
            batch, printed = [], True
    if batch or not printed:  # the last rows, or the header of an empty result
        console.print(_table(rows.columns, batch, _chains(rows, batch, chain) if chain is not None and batch else {}))
    console.print(_summary(rows, kind)[0])


def _table(all_columns: list[str], rows: list[dict], chains: dict):
    from rich.table import Table

    table = Table(show_lines=False)
    columns = [c for c in all_columns if c != "rows"]
    if chains:
        columns = [c for c in columns if c != "events"] + ["trend"]
    for c in columns:
        table.add_column(c, overflow="fold", justify="right" if c == "length" else "left")
    if "rows" in all_columns:
        table.add_column("rows")
    for r in rows:
        cells = []
        for c in columns:
            if c == "trend":
                cells.append(chains.get(tuple(r["events"]), _cell(r["events"])))
            elif c == "events":
                cells.append("[" + ", ".join(str(x) for x in r[c]) + "]")
            else:
                cells.append(_cell(r[c]))
        if "rows" in all_columns:
            cells.append(_rows_table(r["rows"]))
        table.add_row(*cells)
    return table


def _rows_table(rows: list[dict]):
    from rich.table import Table

    t = Table(show_header=True, box=None, pad_edge=False)
    if not rows:
        return t
    names = list(rows[0].keys())
    for n in names:
        t.add_column(n)
    for r in rows:
        t.add_row(*(_cell(r[n]) for n in names))
    return t


def _chains(rows: Rows, shown: list[dict], chain) -> dict:
    """Chains of attribute values for the trends shown: their events looked
    up among the scanned events (or read from the rows given with them)."""
    style, attrs = chain
    if "rows" in shown[0]:
        return {tuple(r["events"]): chain_text(style, attrs, list(r["rows"])) for r in shown}
    ids = sorted({x for r in shown for x in r["events"]})
    found = rows.lookup(ids, attrs)
    return {tuple(r["events"]): chain_text(style, attrs, [found.get(i, {}) for i in r["events"]]) for r in shown}
