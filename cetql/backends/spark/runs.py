"""The distributed strategy for every pattern: template runs extended by one
join a round (one `WITH RECURSIVE` query over the run graph's edges,
`nodes`), and the trend set decided by one aggregation over the runs.

A path row is a *run*: a sequence of events (`__seq`), the state of its
last event (`__q`), its kind, the events bound so far with their states
(`__b`, only for cross predicates: each is checked against every bound
event of the other states as the run binds, as `kernels.runs.Cross` does)
and the key each keyed state `[b.k]` took (`__pk<i>`: a later event of
that state must have the same key; the kernel's parts, as joins).  Kinds
are the local kernel's (`kernels.runs`), so a sequence means what it means
there:

- START: a run from a node that may begin a trend;
- POISON (COMPLETE, MAXIMAL): a run that began one event earlier, at a
  start node with an edge into the sequence's first event; the sequence
  follows without that event — if the run ends it, the event can be
  prepended and the sequence is not complete;
- PENDING, INSERTED (MAXIMAL): a START run that took one event more between
  two of the sequence's events (PENDING: that event taken, the sequence
  unchanged; INSERTED: the sequence's next event taken after it); if an
  INSERTED run ends the sequence, an event can be inserted.

Every kind is extended by the same join (`__kind` → the kinds it becomes).
Then, grouping the runs by sequence: a trend has a START run at an end
node; COMPLETE: no POISON run at an end node, and no START run of the
sequence with one event appended ends at an end node (an event can be
appended); MAXIMAL: also no INSERTED run at an end node.  A START root
that a POISON run at the same node with the same keys shadows is never
followed (without cross predicates its runs are the poison's: every
sequence from it is vetoed), as the kernel prunes it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cetql.backends.spark import nodes as N
from cetql.backends.spark.exprs import quote
from cetql.backends.spark.kept import keep
from cetql.backends.sql.dialects import SPARK
from cetql.backends.sql.expressions import condition
from cetql.base.options import TrendSet
from cetql.kernels import spec as K

START, POISON, PENDING, INSERTED = 0, 1, 2, 3
KINDS = {TrendSet.ALL: ((START, START),), TrendSet.COMPLETE: ((START, START), (POISON, POISON)),
         TrendSet.MAXIMAL: ((START, START), (POISON, POISON), (START, PENDING), (PENDING, INSERTED),
                            (INSERTED, INSERTED))}  # fmt: skip
MAX_ROUNDS = 2**31 - 1  # a run is at most a group's events long; the rounds end when no run grows


class Runs:
    """The columns a run carries and the SQL that extends it (see the module)."""

    def __init__(self, spec: K.DetectSpec):
        self.spec, self.c, self.t = spec, spec.columns, spec.template
        self.idx = N.state_index(self.t)
        self.group = list(self.c.group)
        self.bound = list(K.columns(*[x.expr for x in self.t.cross]))  # what a cross predicate reads of a bound event
        self.keys = [(self.idx[k.state], k.column) for k in spec.state_keys]

    def carried(self) -> list[str]:
        """The source node's columns an edge keeps (POISON roots read them)."""
        return [N.START, *dict.fromkeys([col for _, col in self.keys] + self.bound)]

    # ------------------------------------------------------------ SQL pieces

    def struct(self, q: str, alias: str = "", prefix: str = "") -> str:
        """A bound event: its state and what cross predicates read of it."""
        fields = [f"'q', {alias}{q}"] + [f"'{name}', {alias}{quote(prefix + name)}" for name in self.bound]
        return f"named_struct({', '.join(fields)})"

    def cross_ok(self, bound: str, e: str) -> str:
        """Every cross predicate binding event `e` (alias) holds against the
        events bound in `bound` (an array of structs), as `Cross.ok`."""
        parts = []
        for cr in self.t.cross:
            for x in cr.states:
                others = [o for o in cr.states if o != x]
                names = {o: f"b{i}" for i, o in enumerate(others)}

                def resolve(slot, name, x=x, names=names):
                    return f"{e}.{quote(name)}" if slot == x else f"{names[slot]}.{quote(name)}"

                check = condition(cr.expr, SPARK, resolve)
                for o in reversed(others):
                    check = f"forall(filter({bound}, b -> b.q = {self.idx[o]}), {names[o]} -> {check})"
                unbound = " OR ".join(f"NOT exists({bound}, b -> b.q = {self.idx[o]})" for o in others)
                parts.append(f"({e}.{N.Q} <> {self.idx[x]} OR {unbound} OR {check})")
        return " AND ".join(parts) or "TRUE"

    def keys_ok(self, p: str, e: str, e_q: str) -> str:
        """A keyed state's event has the key the run bound for that state."""
        parts = [f"NOT ({e_q} = {q} AND {p}__pk{i} IS NOT NULL AND NOT ({p}__pk{i} = {e}.{quote(col)}))"
                 for i, (q, col) in enumerate(self.keys)]  # fmt: skip
        return " AND ".join(parts) or "TRUE"

    def bind_keys(self, p: str, e: str) -> list[str]:
        return [f"CASE WHEN {e}.{N.Q} = {q} THEN coalesce({p}__pk{i}, {e}.{quote(col)}) ELSE {p}__pk{i} END AS __pk{i}"
                for i, (q, col) in enumerate(self.keys)]  # fmt: skip

    # ------------------------------------------------------------ the anchors

    def starts(self, graph_nodes: DataFrame) -> DataFrame:
        c = self.c
        cols = [*self.group, f"array({quote(c.id)}) AS __seq"]
        cols += [f"array({quote(c.row)}) AS __rows"] if c.row else []
        cols += [f"{START} AS __kind", N.Q, f"{quote(c.id)} AS __last", N.END]
        cols += [f"array({self.struct(N.Q)}) AS __b"] if self.bound else []
        cols += [f"CASE WHEN {N.Q} = {q} THEN {quote(col)} END AS __pk{i}" for i, (q, col) in enumerate(self.keys)]
        return graph_nodes.filter(F.col(N.START)).selectExpr(*cols)

    def poisons(self, graph_edges: DataFrame) -> DataFrame:
        """The POISON roots: an edge from a start node u to v, the run at v
        with u bound (its key, its cross attributes)."""
        c = self.c
        cols = [*self.group, f"array({quote(c.id)}) AS __seq"]
        cols += [f"array({quote(c.row)}) AS __rows"] if c.row else []
        cols += [f"{POISON} AS __kind", N.Q, f"{quote(c.id)} AS __last", N.END]
        if self.bound:
            cols.append(f"array({self.struct('__sq', prefix='p_')}, {self.struct(N.Q)}) AS __b")
        cols += [f"CASE WHEN {N.Q} = {q} THEN {quote(col)} WHEN __sq = {q} THEN {quote('p_' + col)} END AS __pk{i}"
                 for i, (q, col) in enumerate(self.keys)]  # fmt: skip
        ok = [f"NOT (__sq = {q} AND {N.Q} = {q} AND NOT ({quote('p_' + col)} = {quote(col)}))" for q, col in self.keys]
        bound_u = f"array({self.struct('__sq', alias='e.', prefix='p_')})"
        roots = graph_edges.filter(F.col("p_" + N.START)).alias("e")
        roots = roots.filter(" AND ".join([*ok, self.cross_ok(bound_u, "e")]))
        out = roots.selectExpr(*cols)
        return out if self.bound else out.dropDuplicates()

    def anchors(self, graph_nodes: DataFrame, graph_edges: DataFrame | None, trend_set: TrendSet) -> DataFrame:
        starts = self.starts(graph_nodes)
        if trend_set == TrendSet.ALL or graph_edges is None:
            return starts
        poisons = self.poisons(graph_edges)
        if not self.bound:  # a START root shadowed by a POISON run at the same node, same keys: never a trend
            same = [*self.group, "__seq", N.Q, *(f"__pk{i}" for i in range(len(self.keys)))]
            shadow = poisons.select(*same).alias("x")
            cond = [F.col(f"s.{k}").eqNullSafe(F.col(f"x.{k}")) for k in same]
            starts = starts.alias("s").join(shadow, cond, "left_anti")
        return starts.unionByName(poisons)

    # ------------------------------------------------------------ rounds and the trend set

    def step_sql(self, kinds: tuple[tuple[int, int], ...]) -> str:
        """One round: every run joined with the edges from its last node."""
        c, pend = self.c, f"kt.to = {PENDING}"
        values = ", ".join(f"({a}, {b})" for a, b in kinds)
        cols = [f"p.{quote(g)}" for g in self.group]
        cols.append(f"CASE WHEN {pend} THEN p.__seq ELSE concat(p.__seq, array(e.{quote(c.id)})) END")
        if c.row:
            cols.append(f"CASE WHEN {pend} THEN p.__rows ELSE concat(p.__rows, array(e.{quote(c.row)})) END")
        cols += ["kt.to", f"e.{N.Q}", f"e.{quote(c.id)}", f"e.{N.END}"]
        cols += [f"concat(p.__b, array({self.struct(N.Q, alias='e.')}))"] if self.bound else []
        cols += self.bind_keys("p.", "e")
        on = [f"e.{quote(g)} = p.{quote(g)}" for g in self.group]
        on += [f"e.{N.SRC} = p.__last", f"e.__sq = p.{N.Q}"]
        on += [self.keys_ok("p.", "e", f"e.{N.Q}"), self.cross_ok("p.__b", "e")]
        return (f"SELECT {', '.join(cols)} FROM paths p JOIN {{edges}} e ON {' AND '.join(on)}"
                f" JOIN (VALUES {values}) AS kt(frm, to) ON kt.frm = p.__kind")  # fmt: skip

    def result_sql(self, trend_set: TrendSet) -> str:
        """The trends among the runs, in the kernel's output layout."""
        c = self.c
        group = ", ".join(quote(g) for g in self.group)
        rows = ", __rows AS rows" if c.row else ""
        if trend_set == TrendSet.ALL:
            return (f"SELECT {group}, __seq AS events, CAST(size(__seq) AS INT) AS length{rows}"
                    f" FROM paths WHERE __kind = {START} AND {N.END}")  # fmt: skip
        own = "named_struct('s', __seq, 'k', __kind, 'e', __end, 'a', false" + (", 'r', __rows)" if c.row else ")")
        parent = (f"named_struct('s', slice(__seq, 1, size(__seq) - 1), 'k', {START}, 'e', false, 'a', true"
                  + (", 'r', CASE WHEN false THEN __rows END)" if c.row else ")"))  # fmt: skip
        appended = f"__kind = {START} AND {N.END} AND size(__seq) > 1"
        keep = [f"bool_or(x.k = {START} AND x.e)", f"NOT bool_or(x.k = {POISON} AND x.e)", "NOT bool_or(x.a)"]
        keep += [f"NOT bool_or(x.k = {INSERTED} AND x.e)"] if trend_set == TrendSet.MAXIMAL else []
        return (f"SELECT {group}, x.s AS events, CAST(size(x.s) AS INT) AS length"
                + (", first(x.r, true) AS rows" if c.row else "")
                + f" FROM paths LATERAL VIEW explode(CASE WHEN {appended} THEN array({own}, {parent})"
                f" ELSE array({own}) END) t AS x GROUP BY {group}, x.s HAVING {' AND '.join(keep)}")  # fmt: skip


def extract(spec: K.DetectSpec, ev: DataFrame, spans: DataFrame | None, guard) -> DataFrame:
    """The trends of every group, as one lazy DataFrame (`guard(anchors)`:
    the anchors once every group's trends were counted within the limit)."""
    r = Runs(spec)
    graph_nodes = N.nodes(spec, ev, spans)
    graph_edges = N.edges(spec, graph_nodes, spans, r.carried())
    anchors = guard(r.anchors(graph_nodes, graph_edges, spec.trend_set))
    if graph_edges is None:  # no transition: every trend is one event
        graph_edges = graph_nodes.withColumn(N.SRC, F.col(quote(spec.columns.id))).withColumn("__sq", F.lit(-1))
        graph_edges = graph_edges.filter(F.lit(False))
    text = (f"WITH RECURSIVE paths MAX RECURSION LEVEL {MAX_ROUNDS} AS (SELECT * FROM {{anchors}} UNION ALL "
            f"{r.step_sql(KINDS[spec.trend_set])}) {r.result_sql(spec.trend_set)}")  # fmt: skip
    # every round reads the edges: built once when the first round runs (lazy), not again a round
    graph_edges = keep(graph_edges)
    out = ev.sparkSession.sql(text, anchors=anchors, edges=graph_edges)
    return out.dropDuplicates([*r.group, "events"]) if spec.trend_set == TrendSet.ALL else out
