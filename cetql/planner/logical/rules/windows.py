"""Sliding windows: each event copied into every window it falls in (one
kernel group per window), or into blocks of `copies` consecutive windows (at
most two blocks per event; the kernel evaluates each window of a block on
its own slice of the block's sorted events).  Either way each window's
result is exactly its own."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.errors import UsageError
from cetql.base.options import MAX_SHARED_CELLS, Algorithm, Kernel, Sharing, Strategy
from cetql.planner.logical.plan import Decision, KeyMethod
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir

READS = ("query", "options", "inputs", "strategy", "algorithm", "variable_keys", "stream")
SETS = ("sharing", "block", "propagate", "shared_graph")


def apply(d: Draft) -> Draft:
    w, o = d.query.window, d.options
    unit = "" if w.unitless else " s"
    if o.max_windows and w.copies > o.max_windows:
        raise UsageError(
            f"WITHIN {_plain(w.length)}{unit} SLIDE {_plain(w.slide)}{unit} puts each event in {w.copies:,} windows, "
            f"more than "
            f"--max-windows {o.max_windows:,}; use a longer SLIDE (or a shorter WITHIN), or raise --max-windows "
            "(0: no limit)"
        )
    none = dict(block=0, propagate=False, shared_graph=False)
    if d.stream.choice is not None and d.stream.choice.block.choice:
        return _stream_blocks(d, d.stream.choice.block)
    if w.tumbling:
        why = "tumbling windows: each event falls in one window"
        if o.sharing is not None:
            why += f" (--sharing {o.sharing.value} has nothing to share)"
        return replace(d, sharing=Decision(None, why), **none)
    n = w.copies
    copy = f"each event is copied into each of the (up to) {n} windows it falls in, evaluated apart"
    distributed = d.strategy is not None and d.strategy.choice == Strategy.DISTRIBUTED
    if o.sharing == Sharing.BLOCKS and distributed:
        raise UsageError("--sharing blocks runs with the local strategy; the distributed strategy copies windows: "
                         "drop --sharing blocks, or use --strategy local")  # fmt: skip
    if o.sharing == Sharing.COPY:
        return replace(d, sharing=Decision(Sharing.COPY, "forced by --sharing copy: " + copy), **none)
    if distributed:
        return replace(d, sharing=Decision(Sharing.COPY, copy + " (the distributed strategy joins per window)"), **none)
    if n <= 2 and o.sharing is None:
        return replace(d, sharing=Decision(Sharing.COPY, copy + " (at most 2 copies: blocks would not save any)"),
                       **none)  # fmt: skip
    propagate = _propagate(d)
    shared, why_not = _shared_graph(d) if d.detection else (False, "")
    blocks = (f"each event is copied into at most 2 blocks of {n} consecutive windows, not into each of the (up to) "
              f"{n} windows it falls in; ")  # fmt: skip
    if propagate:
        blocks += (f"COUNT(*) propagates a count per window of the block in one pass (GRETA §4.2), each window's "
                   f"count its own (window by window when the block's index would pass {MAX_SHARED_CELLS:,} cells)")
    elif shared:
        blocks += ("each block's graph is built once and each window walked on its nodes (CET §5: the windows share "
                   "the graphlets they hold), each window's trends its own")  # fmt: skip
    else:
        blocks += "each window is evaluated apart, on its slice of the block"
        if d.detection:
            blocks += f"; its graph built on its own ({why_not})"
    if o.sharing == Sharing.BLOCKS:
        why = "forced by --sharing blocks: " + blocks + (" (at most 2 windows an event: nothing saved)" if n <= 2 else "")
    else:
        why = "default: " + blocks
    return replace(d, sharing=Decision(Sharing.BLOCKS, why), block=n, propagate=propagate, shared_graph=shared)


def _stream_blocks(d: Draft, block: Decision[int]) -> Draft:
    """A stream's keys: blocks of the stream rule's width.  A block the
    batch plan would choose keeps its one pass (aggregation) or shared graph
    (detection), both valid for any width; otherwise each window of a block
    is evaluated on its own slice."""
    w, o = d.query.window, d.options
    batch_blocks = not w.tumbling and (w.copies > 2 or o.sharing == Sharing.BLOCKS)
    propagate = batch_blocks and _propagate(d)
    shared = batch_blocks and d.detection and _shared_graph(d)[0]
    how = ("COUNT(*) propagates a count per window of the block in one pass" if propagate else
           "each block's graph built once and each window walked on it" if shared else
           "each window evaluated apart, on its slice of the block")  # fmt: skip
    why = f"a stream's keys: blocks of {block.choice} windows ({how}; see Stream)"
    return replace(d, sharing=Decision(Sharing.BLOCKS, why), block=block.choice, propagate=propagate,
                   shared_graph=shared)  # fmt: skip


def _plain(d) -> str:
    return format(d.normalize(), "f")


def _propagate(d: Draft) -> bool:
    """COUNT(*) of E+ counts every window of a block in one pass, unless a
    variable's key splits its events inside the kernel (its parts are per
    window); a key of every event splits the block into independent parts."""
    return (not d.detection and d.algorithm.choice == Algorithm.KLEENE_COUNT and d.options.kernel == Kernel.INDEX
            and not _parts(d))  # fmt: skip


def _parts(d: Draft) -> bool:
    return any(k.method.choice == KeyMethod.PARTS for k in d.variable_keys)


def _shared_graph(d: Draft) -> tuple[bool, str]:
    """Can the windows of a block share one graph?  When the walk is over
    single nodes and nothing of a trend depends on where its window starts
    or ends: every event takes at most one state (one positive variable, or
    typed inputs and a type per variable), no cross predicate, no negation
    before or after the pattern.  Then a window's graph is the block's
    restricted to the window's events (a negation between two events lies
    between them, so in every window holding both), and where a window's
    trends start and end is read from the block's graph.  Else ("why not")
    each window's graph is built on its own slice."""
    q = d.query
    positive = [p for p in q.template.all_positions.values() if not p.negated]
    if len(positive) > 1:
        if not d.inputs.typed:
            return False, "inputs not bound to types: an event may take two variables"
        if len({p.type for p in positive}) < len(positive):
            return False, "two variables of one type: an event may take either"
    if q.of_kind(ir.CrossPredicate):
        return False, "cross predicates: a trend carries the events they need"
    if any(n.starts or n.ends for n in q.template.negatives):
        return False, "a negation before or after the pattern: where a trend may start depends on the window"
    if _parts(d):
        return False, "a variable's equivalence splits each group into parts in the kernel"
    return True, ""
