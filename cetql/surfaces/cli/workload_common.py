"""What every workload command shares: the workload planned for the
command line (each query for the inputs of its own types), and what a run
says per query."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import replace

from cetql.backends.spark.resources import default_resources
from cetql.base.options import Engine, OutputFormat
from cetql.planner.logical.plan import Inputs
from cetql.surfaces.api.query import check_inputs
from cetql.surfaces.api.workload import compile_many
from cetql.surfaces.arguments import parse_inputs, parse_params
from cetql.surfaces.cli.flags import as_stream, known_inputs
from cetql.surfaces.cli.workload_file import read_workload


def planned(args, options, *, stream: bool = False, schema=None, strict: bool = True):
    """(the workload planned for the command line's inputs, untyped input, typed inputs)."""
    queries = read_workload(args)
    params = parse_params(args.param)
    data, typed = parse_inputs(args.input)
    sharing = getattr(args, "workload_sharing", None) or "auto"
    resources = default_resources() if getattr(args, "command", "run") == "compile" else None

    def known(mine: dict):
        found = known_inputs(data, mine, options.time_col, options.time_zone) if args.input else None
        if found is None and schema is not None:
            found = Inputs(schema=schema)
        return as_stream(found, args.watermark) if stream else found

    if typed:  # each query reads the inputs of its own types: learnt from a plan without them (on any engine: an
        # engine insisted on is weighed with the inputs, below)
        probe = compile_many(queries, params, options=replace(options, engine=Engine.AUTO), sharing=sharing,
                             strict_params=bool(args.param))  # fmt: skip
        probe.check_typed(typed, "--input {}=PATH")
        each = {n: known({t: p for t, p in typed.items() if t in c.types}) for n, c in probe.queries}
        cw = compile_many(queries, params, options=options, sharing=sharing, strict_params=strict, inputs=each,
                          resources=resources)  # fmt: skip
    else:
        cw = compile_many(queries, params, options=options, sharing=sharing, strict_params=strict, inputs=known({}),
                          resources=resources)  # fmt: skip
    check_inputs(data if data is not None else typed, tuple(sorted({t for _, c in cw.queries for t in c.types})))
    return cw, data, typed


def say_query_written(name: str, rows: int | None, kind: str, target, fmt: OutputFormat, started: float) -> None:
    noun = "trends" if kind == "detection" else "rows"
    if rows is None:
        print(f"{name}: '{target.given}' exists; nothing written (--mode ignore)")
    else:
        print(f"{name}: wrote {rows:,} {noun} to {target.given} ({fmt.value}) in {time.monotonic() - started:.1f} s")


class Outcomes(list):
    """The queries written, in order; `kept`: those whose existing output
    --mode ignore left as it was."""

    def __init__(self):
        super().__init__()
        self.kept: list[str] = []

    def add(self, name: str, rows: int | None) -> None:
        (self.kept if rows is None else self).append(name)


@contextmanager
def accounted(names, chosen: dict | None):
    """Each query's result is written whole, one after another: a run that
    stops part-way (a query's failure, Ctrl-C) says, before its error, which
    queries' results are in place, which were left as they were (--mode
    ignore) and which were not written.  Yields the `Outcomes` the caller
    adds each query to as it is written (or left)."""
    done = Outcomes()
    try:
        yield done
    except BaseException:
        if chosen is not None and (done or done.kept):
            rest = [n for n in names if n not in done and n not in done.kept]
            said = [f"{', '.join(done)} written ({', '.join(str(chosen[n].given) for n in done)})"] if done else []
            said += [f"{', '.join(done.kept)} left as it was (--mode ignore)"] if done.kept else []
            said += [f"{', '.join(rest)} not written"] if rest else []
            print(f"the workload stopped: {'; '.join(said)}", file=sys.stderr)
        raise


def title(name: str, first: bool) -> None:
    print(("" if first else "\n") + f"== {name} ==", flush=True)
