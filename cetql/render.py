"""Printing results people (and programs) can read.

    table  on a terminal: the first rows, sorted by window, group and first
           event, each trend shown as the chain of its events' attribute
           values (`acct23 → acct04 → acct15` for kiting), and a summary line
    csv    when piped (or asked): every row, a header, lists joined with `;`
    json   JSON lines

The summary (trends, distinct trends across windows, by length) goes under
the table, or to standard error for csv/json so standard output stays data.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from decimal import Decimal

from .errors import UsageError
from .planner.logical.plan import Detect
from .planner.semantics import ir

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


def _sort_columns(df, kind: str) -> list:
    from pyspark.sql import functions as F

    cols = [F.col(c) for c in df.columns if c not in ("events", "length", "rows") and not c.startswith(("COUNT(", "SUM(", "MIN(", "MAX(", "AVG("))]  # noqa: E501
    if kind == "detection":
        cols = [F.col(c) for c in df.columns if c not in ("events", "length", "rows")]
        cols.append(F.element_at("events", 1))
    return cols


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return ";".join(_cell(x) for x in v)
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, Decimal):
        return format(v, "f")
    if hasattr(v, "asDict"):
        return json.dumps(_plain(v), default=str)
    return str(v)


def _plain(v):
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def summary(df, kind: str) -> str:
    """One line: how many rows/trends, distinct across windows, by length."""
    from pyspark.sql import functions as F

    if kind != "detection":
        n = df.count()
        return f"{n:,} row{'s' if n != 1 else ''}"
    by_length = df.groupBy("length").agg(F.count(F.lit(1)).alias("n"), F.countDistinct("events").alias("d")).collect()
    total = sum(r["n"] for r in by_length)
    distinct = sum(r["d"] for r in by_length)
    parts = ", ".join(f"{r['length']}: {r['n']:,}" for r in sorted(by_length, key=lambda r: r["length"]))
    text = f"{total:,} trend{'s' if total != 1 else ''}"
    if total:
        text += f"; {distinct:,} distinct across windows; by length {parts}"
    return text


def print_result(execution, *, limit: int | None, fmt: str | None, show=None, stream=sys.stdout) -> None:
    df = execution.dataframe
    kind = execution.plan.kind.value
    if fmt in (None, "parquet"):
        fmt = "table" if stream.isatty() else "csv"
    ordered = df.orderBy(*_sort_columns(df, kind))
    if fmt == "table":
        n = 20 if limit is None else limit
        rows = (ordered.limit(n) if n else ordered).collect()
        chain = None
        if kind == "detection":
            chain = ("values", tuple(show)) if show else default_chain(execution.plan.logical)
        _table(execution, df, rows, chain, summary(df, kind), stream)
        return
    rows_iter = (ordered.limit(limit) if limit else ordered).toLocalIterator()
    if fmt == "csv":
        w = csv.writer(stream)
        w.writerow(df.columns)
        for r in rows_iter:
            w.writerow([_cell(r[c]) for c in df.columns])
    else:
        for r in rows_iter:
            stream.write(json.dumps({c: _plain(r[c]) for c in df.columns}, default=str) + "\n")
    stream.flush()
    print(summary(df, kind), file=sys.stderr)


def _table(execution, df, rows, chain, summary_line: str, stream) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream, soft_wrap=False, highlight=False)
    chains: dict = {}
    if chain is not None and rows:
        chains = _chains(execution, rows, chain)
    table = Table(show_lines=False)
    columns = [c for c in df.columns if c != "rows"]
    if chains:
        columns = [c for c in columns if c != "events"] + ["trend"]
    for c in columns:
        table.add_column(c, overflow="fold", justify="right" if c == "length" else "left")
    if "rows" in df.columns:
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
        if "rows" in df.columns:
            cells.append(_rows_table(r["rows"]))
        table.add_row(*cells)
    console.print(table)
    console.print(summary_line + (f" (first {len(rows):,} shown)" if rows and len(rows) < _count_hint(summary_line) else ""))


def _count_hint(line: str) -> int:
    try:
        return int(line.split(" ", 1)[0].replace(",", ""))
    except ValueError:
        return 0


def _rows_table(rows):
    from rich.table import Table

    t = Table(show_header=True, box=None, pad_edge=False)
    if not rows:
        return t
    names = list(rows[0].asDict().keys())
    for n in names:
        t.add_column(n)
    for r in rows:
        t.add_row(*(_cell(r[n]) for n in names))
    return t


def _chains(execution, rows, chain) -> dict:
    """Chains of attribute values for the trends shown: their events are
    looked up among the scanned events (one small job)."""
    style, attrs = chain
    ids = sorted({x for r in rows for x in r["events"]})
    if "rows" in rows[0].asDict():
        by_trend = {}
        for r in rows:
            by_trend[tuple(r["events"])] = chain_text(style, attrs, [x.asDict() for x in r["rows"]])
        return by_trend
    events, id_col = execution.events()
    missing = [a for a in attrs if a not in events.columns]
    if missing:
        raise UsageError(f"--show: no column {missing[0]} in the input (columns: {', '.join(c for c in events.columns if c != id_col)})")
    found = {r[id_col]: r.asDict() for r in events.filter(events[id_col].isin(ids)).select(id_col, *attrs).collect()}
    return {
        tuple(r["events"]): chain_text(style, attrs, [found.get(i, {}) for i in r["events"]]) for r in rows
    }
