"""The kernel spec: what a Spark Python worker needs to run a kernel over its
partition, as plain frozen values — strings, numbers, tuples, frozensets and
the enums of `cetql.options`.  No AST, no Spark objects, no closures: a spec
pickles small and means the same on every worker.

The physical plan derives the spec on the driver (`planner.physical.kernel`,
its expressions built in `planner.physical.exprs` alone); the kernels read
it (`process` is where they start).

Expressions
-----------
An `Expr` is a tree of the frozen values below, evaluated with SQL
three-valued logic and Spark SQL's comparisons (`compare`): a null operand
makes a comparison or an arithmetic result null; a null predicate is false;
division or modulo by zero is null; NaN equals NaN and is larger than every
number.  `kernels.expr` evaluates them in Python, `spark.exprs` spells them
as Spark columns, `spark.sql` as Spark SQL text, `physical.show` as the text
`--explain` prints.

Slots: "self" for an expression over one event (column definitions),
"prev" and "next" for an edge predicate (the earlier and the later event of
a step), and state names for a cross predicate.

Input tables
------------
A kernel's input is an Arrow table sorted by `Columns.group` then time then
id; every distinct value of the group columns is one (window, partition)
group, and a group is processed on its own.  The other columns are named in
the spec (state masks, the `lval`/`h` sides of indexed edge predicates,
attribute columns read by `others`/`cross` expressions, aggregate values).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from cetql.base.options import MAX_SHARED_CELLS, Algorithm, Compiled, Completeness, Exact, Index, Kernel, TrendSet

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Lit:
    """A constant: int, float, Decimal, str, bool or None."""

    value: int | float | Decimal | str | bool | None


@dataclass(frozen=True, slots=True)
class Col:
    """The value of `column` for the event in `slot`."""

    slot: str
    column: str


@dataclass(frozen=True, slots=True)
class Param:
    """A query parameter no value was given for: `--explain` shows it, and
    evaluating or spelling it is refused (`ParameterError`)."""

    name: str


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr


@dataclass(frozen=True, slots=True)
class Arith:
    op: str  # "+", "-", "*", "/", "%"
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Cmp:
    op: str  # "=", "!=", "<", "<=", ">", ">="
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr


@dataclass(frozen=True, slots=True)
class IsNotNull:
    """True iff the value is not null (NaN is not null); never null itself."""

    operand: Expr


Expr = Lit | Col | Param | Neg | Arith | Cmp | And | Or | Not | IsNotNull


def columns(*exprs: Expr | None) -> tuple[str, ...]:
    """Every column the expressions read, in order, each once."""
    found: dict[str, None] = {}
    todo = [e for e in reversed(exprs) if e is not None]
    while todo:
        e = todo.pop()
        match e:
            case Col(column=c):
                found[c] = None
            case Lit() | Param():
                pass
            case Neg(operand=x) | Not(operand=x) | IsNotNull(operand=x):
                todo.append(x)
            case Arith(left=a, right=b) | Cmp(left=a, right=b):
                todo += (b, a)
            case And(items=xs) | Or(items=xs):
                todo += reversed(xs)
            case _:
                raise TypeError(f"not a kernel expression: {e!r}")
    return tuple(found)


def identity(e: Expr | None) -> object:
    """A hashable value two expressions share exactly when they compute the
    same values: the expression with each literal's type beside its value
    (`Lit(2)`, `Lit(2.0)`, `Lit(True)` and `Lit(Decimal(2))` are equal as
    Python values, but `x * 2` may overflow 64 bits where `x * 2.0` gives a
    double).  Work shared by definition (a workload's shared columns and
    edges) is keyed by it."""
    match e:
        case None:
            return None
        case Lit(value=v):
            return ("lit", type(v).__name__, repr(v))
        case Col() | Param():
            return e
        case Neg(operand=x) | Not(operand=x) | IsNotNull(operand=x):
            return (type(e).__name__, identity(x))
        case Arith(op=op, left=a, right=b) | Cmp(op=op, left=a, right=b):
            return (type(e).__name__, op, identity(a), identity(b))
        case And(items=xs) | Or(items=xs):
            return (type(e).__name__, *(identity(x) for x in xs))
    raise TypeError(f"not a kernel expression: {e!r}")


# Comparators an indexed edge predicate may use, written `next.lval OP h(prev)`.

# How a transition finds the successors of an event (decided by the plan):
HASH = Index.HASH  # equal[0]: a hash from value to the events with that lval (ABI attribute vertex)
RANGE = Index.RANGE  # ranges[0]: events sorted by lval, the range that satisfies OP h(prev)
SCAN = Index.SCAN  # every later event that may take the target state (candidate pairs)


@dataclass(frozen=True)
class State:
    """One position of the pattern's template."""

    name: str  # the variable, or the type when it has none
    mask: str  # boolean column: the event may take this state (type and vertex predicates hold)
    repeated: bool = False  # under `+`/`*`: binds several events


@dataclass(frozen=True)
class Transition:
    """Template transition source → target and the edge predicates that must
    hold between an event at `source` and the next event of the trend at
    `target` (which is strictly later in time)."""

    source: str
    target: str
    equal: tuple[tuple[str, str], ...] = ()  # (lval column, h column): next.lval = h(prev)
    ranges: tuple[tuple[str, str, str], ...] = ()  # (lval column, op, h column): next.lval OP h(prev)
    others: tuple[Expr, ...] = ()  # any other predicate, slots "prev" and "next"
    index: str = SCAN  # HASH (uses equal[0]), RANGE (ranges[0]) or SCAN; the rest is checked per pair


@dataclass(frozen=True)
class Cross:
    """A predicate between variables that are not consecutive in a trend
    (CET Q2's `a.rate * 2 < b.rate`).  It applies once every state it names
    is bound, and then holds for every element of a repeated state."""

    states: tuple[str, ...]
    expr: Expr  # slots: the state names


@dataclass(frozen=True)
class Negation:
    """A negated sub-pattern (GRETA §5).  A trend of `template` may not lie
    strictly between the two events of a step in `pairs` (source, target);
    may not end before the trend's first event when that event is at a state
    in `starts` (the negation is anchored to the window's start); may not
    start after the trend's last event when that event is at a state in
    `ends` (anchored to the window's end)."""

    template: TemplateSpec
    pairs: frozenset[tuple[str, str]]
    starts: frozenset[str] = frozenset()
    ends: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TemplateSpec:
    """GRETA's template (the Glushkov automaton of the positive pattern):
    a trend is a sequence of events, strictly increasing in time, that walks
    from a `start` state to an `end` state along `transitions`, each event
    taking a state its mask allows, with every predicate holding."""

    states: tuple[State, ...]
    start: frozenset[str]
    end: frozenset[str]
    transitions: tuple[Transition, ...]
    cross: tuple[Cross, ...] = ()
    negations: tuple[Negation, ...] = ()

    def state(self, name: str) -> State:
        return next(s for s in self.states if s.name == name)


@dataclass(frozen=True)
class Columns:
    """Column names of a kernel's input table (chosen by the plan so that they
    cannot clash with the user's columns)."""

    group: tuple[str, ...]  # the window index (or block index) first, then the partition keys
    time: str
    id: str
    row: str | None = None  # a struct of the input row, carried into `rows` (detection with rows)
    # Blocks of windows (`block` > 0): the first group column is a block index
    # b, the group holds the events of windows b*block … (b+1)*block - 1, and
    # `window_lo`/`window_hi` give each event's first and last window.  Both
    # grow with time, so each window's events are a slice of the group.
    block: int = 0
    window_lo: str | None = None
    window_hi: str | None = None


@dataclass(frozen=True)
class Context:
    """What a worker needs to name a window and a group in an error."""

    time_kind: str  # "numeric" or "timestamp" (window bounds in microseconds since the epoch)
    window_length: int | float
    window_slide: int | float
    key_names: tuple[str, ...] = ()  # the partition keys, as the user wrote them


@dataclass(frozen=True)
class StateKey:
    """An equivalence attribute of one state's events (`[b.k]`): `column`
    holds each event's key.  A spec's state keys split each group into
    parts, one per combination of the keyed states' key values; in a part, a
    keyed state's mask holds only for events whose key is the part's value
    (a null key: never), the other states' masks are unchanged, and each
    part is evaluated on its own (`parts`).  The plan keys only states that
    every trend has an event at, so each trend lies in exactly one part."""

    state: str
    column: str


def unbound(name: str) -> str:
    """The one message for a parameter left without a value."""
    return f"unbound parameter '{name}': give it a value with --param {name}=<value>"


def _enum_trend_set(spec) -> None:
    object.__setattr__(spec, "trend_set", TrendSet(spec.trend_set))


@dataclass(frozen=True)
class DetectSpec:
    columns: Columns
    template: TemplateSpec
    trend_set: TrendSet
    context: Context
    max_trends: int = 0  # refuse a group that would return more trends (0: no limit)
    batch_rows: int = 65536  # trends per output Arrow batch
    batch_events: int = 1_000_000  # event ids per output Arrow batch, whatever the number of trends
    max_edges: int | None = None  # a group's graph stores at most this many edges, else none (None: no bound)
    shared_graph: bool = False  # blocks of windows: one graph a block, each window walked on its nodes
    state_keys: tuple[StateKey, ...] = ()  # per-variable equivalence attributes (see StateKey)
    compiled: Compiled = Compiled.AUTO  # where the compiled loops run (`select`)

    def __post_init__(self):
        _enum_trend_set(self)


# Aggregation algorithms and how COMPLETE trends are aggregated (decided by the plan):
GRETA, ASEQ, KLEENE_COUNT = Algorithm.GRETA, Algorithm.ASEQ, Algorithm.KLEENE_COUNT
PER_STATE, DETERMINIZED = Completeness.PER_STATE, Completeness.DETERMINIZED


@dataclass(frozen=True)
class Target:
    """One aggregate: COUNT(*) (`state` None), COUNT(E), SUM/MIN/MAX/AVG(E.x)."""

    func: str  # "COUNT", "SUM", "MIN", "MAX", "AVG"
    state: str | None  # the state of E
    value: str | None  # the column of E.x
    kind: str  # the value's type: "int", "decimal:<scale>" or "double"
    name: str  # the output column, as written (`SUM(M.cpu)`)


@dataclass(frozen=True)
class AggregateSpec:
    columns: Columns
    template: TemplateSpec
    targets: tuple[Target, ...]
    trend_set: TrendSet  # ALL or COMPLETE
    context: Context
    algorithm: str = GRETA
    complete: str = PER_STATE  # for TrendSet.COMPLETE
    kernel: Kernel = Kernel.INDEX
    approx: bool = False
    exact: Exact = Exact.DECIMAL
    output_keys: tuple[str, ...] = ()  # group columns after the window that are output (GROUP-BY)
    output_names: tuple[str, ...] = ()  # their names as the user wrote them
    # Equivalence attributes that split a group into independent parts:
    shared_subkeys: tuple[str, ...] = ()  # of every event (a null value: the event is in no trend)
    state_keys: tuple[StateKey, ...] = ()  # of one state's events (see StateKey)
    propagate: bool = False  # blocks of windows, KLEENE_COUNT: every window of a block in one pass
    max_shared_cells: int = MAX_SHARED_CELLS  # … while its index stays under this many cells
    compiled: Compiled = Compiled.AUTO  # where the compiled loops run (`select`)

    def __post_init__(self):
        _enum_trend_set(self)
