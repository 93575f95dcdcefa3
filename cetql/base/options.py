"""Run options: enums for every choice a user can make, and one frozen
`RunOptions` value, validated once where the CLI or the Python API hands
options in.  Every later stage takes the enums and never re-validates.

This module is the base of the compiler: it imports nothing from cetql but
the errors, so every stage (semantics, logical, Spark, kernels) may import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from cetql.base.errors import ArgumentTypeError, UsageError, flag
from cetql.base.words import did_you_mean


class TrendSet(StrEnum):
    """Which trends a query returns or aggregates over (SEMANTICS.md)."""

    ALL = "ALL"
    COMPLETE = "COMPLETE"
    MAXIMAL = "MAXIMAL"


class Strategy(StrEnum):
    """How detection extracts trends."""

    LOCAL = "local"  # one worker's kernel per (window, partition) group
    DISTRIBUTED = "distributed"  # ABI Algorithm 2: join-based path expansion


class Sharing(StrEnum):
    """How sliding windows reach the kernels."""

    COPY = "copy"  # each event copied into every window it falls in; one group per window
    BLOCKS = "blocks"  # events copied into (at most two) blocks of consecutive windows; each window a slice


# Blocks of windows: COUNT(*) of E+ propagates one count per window of a
# block while its index (distinct values × windows) stays under this many
# cells; above, each window of the block is evaluated on its own.
MAX_SHARED_CELLS = 1 << 22


class Kernel(StrEnum):
    """How aggregation finds an event's predecessors."""

    INDEX = "index"  # the ABI attribute index (hash / Fenwick), O(n log n)
    SCAN = "scan"  # GRETA's own predecessor scan, O(n^2): for comparisons


class Compiled(StrEnum):
    """Where the kernels' compiled loops (numba) run, for the shapes they
    cover (`kernels.select`)."""

    AUTO = "auto"  # on a task's table of `select.MIN_ROWS` rows or more (a compile or cache load costs more below)
    ALWAYS = "always"  # on every table (tests, comparisons)
    NEVER = "never"  # nowhere: the reference kernels (pure Python)


class Exact(StrEnum):
    """How exact counts and sums leave Spark."""

    DECIMAL = "decimal"  # DECIMAL(38, s); a larger value is an error
    STRING = "string"  # every digit, as text


class OutputMode(StrEnum):
    """What writing does when the output path exists (Spark's own words)."""

    ERROR = "error"
    OVERWRITE = "overwrite"
    APPEND = "append"
    IGNORE = "ignore"


class OutputFormat(StrEnum):
    PARQUET = "parquet"
    CSV = "csv"
    JSON = "json"


class Engine(StrEnum):
    """Where a query runs (`cetql run --engine`)."""

    AUTO = "auto"  # the first engine whose declared capabilities cover the plan (`planner.physical.engine`)
    EMBEDDED = "embedded"  # in this process (DuckDB, then the kernels), no Spark: refused where it cannot
    SPARK = "spark"  # on a Spark session


class Sink(StrEnum):
    """What the caller does with the result (set by the surface, not a user
    keyword): each engine declares the sinks it makes."""

    DATAFRAME = "a Spark DataFrame"  # the Python API, the REPL
    PARQUET = "Parquet files"  # `cetql run --output DIR` (--format parquet)
    PRINTED = "printed"  # `cetql run` without --output: a table, CSV or JSON lines on standard output
    TEXT_FILES = "CSV or JSON files"  # `cetql run --output DIR --format csv|json`
    URI = "files at a URI"  # --output hdfs://…, s3a://…: Spark's own writers


class Index(StrEnum):
    """How a step along one template transition finds the next events."""

    HASH = "hash"  # an equal predicate: a hash from value to events (ABI attribute vertex)
    RANGE = "range"  # a range predicate: events sorted by value (ABI range index)
    SCAN = "scan"  # every later event (candidate pairs)


class Algorithm(StrEnum):
    """How an aggregation is computed."""

    GRETA = "greta"  # propagate along the template from predecessors
    ASEQ = "aseq"  # A-Seq prefix counters: COUNT(*) of a fixed-length SEQ
    KLEENE_COUNT = "kleene-count"  # COUNT(*) of E+ with at most one equal or range predicate: plain numbers


class Completeness(StrEnum):
    """How COMPLETE trends are told apart when aggregating."""

    PER_STATE = "per-state"  # every event can take at most one state
    DETERMINIZED = "determinized"  # events may take several states: sets of runs per event sequence


DEFAULT_MAX_TRENDS = 10_000_000
DEFAULT_MAX_WINDOWS = 100_000  # windows one event may fall in (WITHIN / SLIDE)

# Memory of one detection group beyond its events (--memory-budget): half
# for the graph's stored edges, half for the output batch being filled.
DEFAULT_MEMORY_BUDGET = 512 << 20  # half of Spark's default executor memory (1g)
NODE_BYTES = 200  # one event of a group in the local kernel (its columns as Python lists): the planner's estimate
EDGE_BYTES = 48  # one stored edge: a list slot (over-allocated) and an int object (test_kernels measures it)
BATCH_EVENT_BYTES = 96  # one event id of an output batch: the Python lists, then the Arrow arrays
MAX_BATCH_EVENTS = 1_000_000  # event ids in one output batch, whatever the budget

_SIZE_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_SIZE_UNITS.update({f"{u}b": v for u, v in _SIZE_UNITS.items() if u != "b"})
_SIZE_UNITS.update({f"{u}ib": v for u, v in _SIZE_UNITS.items() if len(u) == 1 and u != "b"})


def parse_size(value, what: str = "memory budget", bare: str = "b") -> int:
    """Bytes from `512m`, `2g`, `1.5g`, `65536` (Spark's spelling: k, m, g,
    t, p; binary units).  A bare number is in `bare` units: bytes for
    --memory-budget, MiB for Spark's memory settings (as Spark reads them)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArgumentTypeError(f"{what} must be a size such as 512m or 2g, not {value!r}")
    if isinstance(value, int):
        size = value
    else:
        text = str(value).strip().lower()
        number = text.rstrip("kmgtpib")
        unit = text[len(number):] or bare
        try:
            amount = float(number)
        except ValueError:
            amount = math.nan
        if unit not in _SIZE_UNITS or not math.isfinite(amount):
            raise UsageError(f"{what} must be a size such as 512m or 2g, not {value!r}")
        if unit == "b" and amount != int(amount):
            raise UsageError(f"{what} must be a whole number of bytes or have a unit (512m, 1.5g), not {value!r}")
        size = int(amount * _SIZE_UNITS[unit])
    if size <= 0:
        raise UsageError(f"{what} must be positive, not {value!r}")
    return size


def format_size(size: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            amount = size / scale
            return f"{amount:.0f} {unit}" if amount == int(amount) else f"{amount:.1f} {unit}"
    return f"{size} B"

# Units of a numeric time column, in units per second.
TIME_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


_NOT_ZONES = {"localtime", "posixrules", "Factory"}  # files of the zone database that name no zone


def time_zone(value) -> str:
    """A time zone name (`Europe/Berlin`, `UTC`) or a fixed offset (`+05:30`),
    as given; anything else is a `UsageError` with what to give."""
    import re
    import zoneinfo

    text = value.strip() if isinstance(value, str) else None
    if text and re.fullmatch(r"[+-](0\d|1[0-8]):[0-5]\d", text):
        return text
    if text and text not in _NOT_ZONES and text in zoneinfo.available_timezones():
        return text
    raise UsageError(f"{flag('time_zone')} {value!r}: unknown time zone; give a zone name such as UTC or "
                     "Europe/Berlin, or an offset such as +05:30")  # fmt: skip


def _enum(cls, value, keyword: str, what: str):
    if value is None or isinstance(value, cls):
        return value
    choices = ", ".join(m.value.lower() for m in cls)
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{keyword} must be a string ({choices}), not {value!r}")
    for member in cls:
        if value.strip().lower() == member.value.lower():
            return member
    raise UsageError(f"{flag(keyword)} {value!r}: unknown {what}; expected one of {choices}")


MAX_LONG = 2**63 - 1  # a whole-number option Spark or the kernels hold as a 64-bit number
MAX_INT = 2**31 - 1  # … as a 32-bit one (partitions)


def count(value, keyword: str, *, allow_zero: bool, most: int = MAX_LONG) -> int | None:
    """A whole-number option (a Python int, or text as the command line
    gives it): positive, or zero where `allow_zero`, and at most `most`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArgumentTypeError(f"{keyword} must be a whole number, not {value!r}")
    if not isinstance(value, int):
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            number = Decimal("NaN")
        if not number.is_finite() or number != number.to_integral_value():
            raise UsageError(f"{flag(keyword)} {value!r}: must be a whole number")
        value = int(number)
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{flag(keyword)} {value}: must be {'zero or ' if allow_zero else ''}positive")
    if value > most:
        raise UsageError(f"{flag(keyword)} {value}: must be at most {most:,}")
    return value


@dataclass(frozen=True)
class RunOptions:
    """Everything that changes how a query runs, beside its text.

    `trends` and `strategy` are None when the query (or the planner) decides;
    the plan records which was used and why."""

    trends: TrendSet | None = None
    strategy: Strategy | None = None
    sharing: Sharing | None = None  # sliding windows: None lets the planner choose
    approx: bool = False
    exact: Exact = Exact.DECIMAL
    kernel: Kernel = Kernel.INDEX
    compiled: Compiled = Compiled.AUTO  # where the kernels' compiled loops run (`kernels.select`)
    with_rows: bool = False
    partitions: int | None = None
    max_trends: int = DEFAULT_MAX_TRENDS  # per (window, group); 0: no limit
    max_windows: int = DEFAULT_MAX_WINDOWS  # windows an event may fall in; 0: no limit
    time_col: str = "ts"
    time_unit: str = "s"  # what one unit of a numeric time column is: s, ms, us or ns
    id_col: str | None = None
    drop_invalid: bool = False
    memory_budget: int | None = None  # bytes a detection group may add beyond its events; None: the default
    time_zone: str = "UTC"  # the zone of times written without one (an IANA name or ±hh:mm)
    engine: Engine = Engine.SPARK  # where it runs: `cetql run` asks for AUTO
    spark_asked: str | None = None  # a Spark session asked for, by this flag (--master, --remote, --partitions)
    sink: Sink = Sink.DATAFRAME  # what the result becomes (set by the surface, not a keyword)

    @classmethod
    def of(cls, options: RunOptions | None = None, **keywords) -> RunOptions:
        """Validate keywords (Python values or the CLI's strings) into
        options, on top of `options`.  An unknown keyword is an
        `ArgumentTypeError` (a TypeError) naming the closest option; a value
        of the wrong type one too; a bad value a `UsageError` (a ValueError)."""
        if options is not None and not isinstance(options, RunOptions):
            raise ArgumentTypeError(f"options must be a cetql.RunOptions, not {type(options).__name__}")
        base = options or cls()
        names = option_names()
        for k in keywords:
            if k not in names:
                raise ArgumentTypeError(unknown_keyword(k, names))
        given = {k: v for k, v in keywords.items() if v is not None or k in ("trends", "strategy", "sharing", "id_col")}
        for k, what in (("trends", "trend set"), ("strategy", "strategy"), ("sharing", "window sharing"),
                        ("exact", "exact mode"), ("kernel", "kernel"), ("compiled", "compiled kernels"),
                        ("engine", "engine")):  # fmt: skip
            if k in given:
                given[k] = _enum(_ENUM_OF[k], given[k], k, what)
        for k in ("approx", "with_rows", "drop_invalid"):
            if k in given and not isinstance(given[k], bool):
                raise ArgumentTypeError(f"{k} must be True or False, not {given[k]!r}")
        if "partitions" in given:
            given["partitions"] = count(given["partitions"], "partitions", allow_zero=False, most=MAX_INT)
        if "max_trends" in given:
            given["max_trends"] = count(given["max_trends"], "max_trends", allow_zero=True)
        if "max_windows" in given:
            given["max_windows"] = count(given["max_windows"], "max_windows", allow_zero=True)
        if "memory_budget" in given:
            given["memory_budget"] = parse_size(given["memory_budget"])
        if "time_unit" in given:
            if not isinstance(given["time_unit"], str):
                raise ArgumentTypeError(f"time_unit must be a string ({', '.join(TIME_UNITS)}), not {given['time_unit']!r}")
            unit = given["time_unit"].strip().lower()
            if unit not in TIME_UNITS:
                raise UsageError(f"--time-unit {given['time_unit']!r}: expected one of {', '.join(TIME_UNITS)}")
            given["time_unit"] = unit
        if "time_zone" in given:
            given["time_zone"] = time_zone(given["time_zone"])
        for col in ("time_col", "id_col"):
            if col in given and given[col] is not None:
                if not isinstance(given[col], str):
                    raise ArgumentTypeError(f"{col} must be a column name (a string), not {given[col]!r}")
                if not given[col].strip():
                    raise UsageError(f"{flag(col)} must name a column, not {given[col]!r}")
        return replace(base, **given)


_ENUM_OF = {"trends": TrendSet, "strategy": Strategy, "sharing": Sharing, "exact": Exact, "kernel": Kernel,
            "compiled": Compiled, "engine": Engine}
_SURFACE_ONLY = ("sink", "spark_asked")  # fields the surfaces set, never a user's keyword


def option_names() -> tuple[str, ...]:
    """The keywords `RunOptions.of` takes, in the order they are declared."""
    return tuple(f.name for f in fields(RunOptions) if f.name not in _SURFACE_ONLY)


def unknown_keyword(name: str, options, types=()) -> str:
    """'unknown keyword …' with the closest valid one (`base.words`) and
    every valid one: the run options, and the pattern's types where typed
    inputs may be keywords too."""
    text = f"unknown keyword '{name}'" + did_you_mean(name, [*options, *types])
    text += f"; run options: {', '.join(options)}"
    if types:
        text += f"; typed inputs, by the pattern's types: {', '.join(types)}"
    return text
