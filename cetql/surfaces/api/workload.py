"""`cetql.compile_many({name: text, …})`: a workload — several named
queries planned together — and what it returns.

    compile_many ─each query: parse, plan(compiled, its inputs, resources)─▶
        planner.workload.share.workload (what the queries share) ─▶ CompiledWorkload
    CompiledWorkload.run(data) ─▶ {name: lazy DataFrame}  (Spark)

Each query is planned exactly as `cetql.compile` plans it alone (for the
inputs of its own types), so each gives the rows it gives alone; the
workload plan only says what runs once for several of them.  A name is
also its output folder (`cetql run --output DIR` writes `DIR/<name>/`): a
letter or digit first, then letters, digits, `_`, `-` or `.`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, replace

from cetql.base.errors import ArgumentTypeError, CetqlError, ParameterError, QueryError, UsageError, said_of, spoken
from cetql.base.options import RunOptions
from cetql.language.parser import parse
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.semantics.bind import parameters_read
from cetql.planner.semantics.parameters import check_params
from cetql.planner.semantics.schema import Schema
from cetql.planner.workload.plan import WorkloadPlan, WorkloadSharing
from cetql.planner.workload.share import workload
from cetql.planner.workload.show import workload_text
from cetql.surfaces.api.query import CompiledQuery, _param_dict
from cetql.surfaces.arguments import query_text

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME = 200  # characters: a folder's name (most file systems take 255 bytes)


def check_name(name) -> str:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a query's name must be a string, not {name!r}")
    if not NAME.fullmatch(name):
        raise UsageError(f"query name {name!r}: a name is its output folder — a letter or digit, then letters, "
                         "digits, _, - or .")  # fmt: skip
    if len(name) > MAX_NAME:
        raise UsageError(f"query name {name[:20]!r}… is {len(name)} characters: a name is its output folder, at most "
                         f"{MAX_NAME}")  # fmt: skip
    return name


def check_names(names) -> None:
    """Names whose output folders would be one on a file system that does
    not tell case apart (macOS's, Windows') are refused."""
    seen: dict[str, str] = {}
    for n in names:
        other = seen.setdefault(n.casefold(), n)
        if other != n:
            raise UsageError(f"queries {other!r} and {n!r}: their output folders are one where case is not told "
                             "apart; name them apart")  # fmt: skip


@contextmanager
def named(name: str):
    """A query's error, saying which query of the workload it is (and, as
    `query`, naming it: the command line shows its place in its own file)."""
    try:
        yield
    except QueryError as e:
        out = type(e)(f"query {name}: {e.message}", e.pos, e.source)
        out.query = name
        raise out from None
    except CetqlError as e:  # its inputs' errors (a column not there): said of the query too
        said_of(e, name)
        raise


def sharing_of(value) -> WorkloadSharing:
    if isinstance(value, WorkloadSharing):
        return value
    for s in WorkloadSharing:
        if isinstance(value, str) and value.strip().lower() == s.value:
            return s
    raise UsageError(f"workload sharing {value!r}: expected auto or none")


def compile_many(queries: dict, params: dict | None = None, schema: Schema | None = None, *,
                 options: RunOptions | None = None, sharing="auto", strict_params: bool = False,
                 inputs: Inputs | dict | None = None, resources: Resources | None = None,
                 **keywords) -> CompiledWorkload:  # fmt: skip
    """Compile several named queries as one workload.  `params` go to the
    queries that read them (one no query reads is refused by name);
    `inputs`: one `Inputs` for every query or {name: Inputs}; `sharing`
    "auto" (the planner shares where it keeps every answer and costs less)
    or "none" (every query alone).  Keywords are run options, as for
    `cetql.compile`, for every query."""
    if not isinstance(queries, dict) or not queries:
        raise ArgumentTypeError("compile_many takes a dict {name: query text} of at least one query")
    options = RunOptions.of(options, **keywords)
    given = check_params(_param_dict(params))
    asts, read = {}, {}
    for n, t in queries.items():
        with named(check_name(n)):  # its parse and binding errors (an unknown variable) are said of it, at its place
            asts[n] = parse(query_text(t))
            read[n] = parameters_read(asts[n])
    check_names(queries)
    unread = [k for k in given if not any(k in r for r in read.values())]
    if unread:
        raise ParameterError(f"--param {unread[0]}: no query of the workload has a parameter {unread[0]}")
    if inputs is None and schema is not None:
        inputs = Inputs(schema=schema)
    compiled = tuple((n, CompiledQuery(queries[n], a, tuple(sorted((k, v) for k, v in given.items() if k in read[n])),
                                       options)) for n, a in asts.items())  # fmt: skip
    return CompiledWorkload(compiled, sharing_of(sharing)).planned(inputs, resources, strict_params=strict_params)


@dataclass(frozen=True)
class CompiledWorkload:
    queries: tuple[tuple[str, CompiledQuery], ...]
    sharing: WorkloadSharing = WorkloadSharing.AUTO
    plan: WorkloadPlan | None = None

    def __getitem__(self, name: str) -> CompiledQuery:
        return dict(self.queries)[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.queries)

    def planned(self, inputs: Inputs | dict | None = None, resources: Resources | None = None, *,
                strict_params: bool = True) -> CompiledWorkload:  # fmt: skip
        """Every query planned for its inputs (one `Inputs` for all, or
        {name: Inputs}), then the workload plan over them."""
        each = []
        for n, c in self.queries:
            with named(n):
                each.append((n, c.planned(inputs.get(n) if isinstance(inputs, dict) else inputs, resources,
                                          strict_params=strict_params)))  # fmt: skip
        return replace(self, queries=tuple(each), plan=workload([(n, c.plan) for n, c in each], self.sharing))

    def check_typed(self, typed: dict, bind: str) -> None:
        """Refuse a query none of whose types is given an input (inputs bound
        to types): alone it would be refused too. `bind`: how to give one."""
        for n, c in self.queries if typed else ():
            if not any(t in typed for t in c.types):
                raise UsageError(f"query {n} has no input: none of its types ({', '.join(c.types)}) is bound to one "
                                 f"(given: {', '.join(sorted(typed))}); add {bind.format(c.types[0])}, or leave {n} "
                                 "out of the workload")  # fmt: skip

    def explain(self, *, as_string: bool = False) -> str | None:
        """The workload plan (what is shared and why), then each query."""
        text = spoken(workload_text(self.plan, tuple(c.ast for _, c in self.queries)), "python")
        if as_string:
            return text
        print(text)
        return None

    def run(self, data=None, *, spark=None, watermark=None, **keywords):
        """Every query's result: a `WorkloadFrames` {name: lazy DataFrame}
        on Spark (see `execution`)."""
        return self.execution(data, spark=spark, watermark=watermark, **keywords).frames

    def execution(self, data=None, *, spark=None, watermark=None, **keywords):
        """Bind the workload to its inputs and plan it: nothing runs yet.
        `data` and typed keywords as for `CompiledQuery.execution` (each
        query reads the inputs of its own types); other keywords are run
        options for every query."""
        from cetql.surfaces.api.runtime_workload import execute_workload  # start-up cost: pyspark, only for Spark

        return execute_workload(self, data, keywords, spark=spark, watermark=watermark)
