"""The REPL's workload: queries held by name (`:add`), run together as one
workload on the shell's session (`:workload run`), each printed under its
name; `:workload` lists them, `:workload explain` shows what they share,
`:workload clear` lets them go."""

from __future__ import annotations

import time
from pathlib import Path

from cetql.backends.spark.failures import describe
from cetql.backends.spark.results import SparkRows
from cetql.base.errors import CetqlError, UsageError, spoken
from cetql.language.parser import parse
from cetql.planner.semantics.bind import parameters_read
from cetql.planner.workload.show import workload_text
from cetql.surfaces.api.workload import check_name, check_names, compile_many
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result, sort_columns

HELP = """\
  :add NAME [QUERY|FILE]
                       hold a query for a workload under NAME (default: the last query run)
  :workload [run|explain|clear]
                       list the held queries; run them as one workload (shared where the planner finds
                       it); show what they share; let them go"""


def add(shell, rest: str) -> None:
    name, _, given = rest.strip().partition(" ")
    if not name:
        raise UsageError(":add NAME [QUERY|FILE]: a name, then a query (default: the last query run)")
    check_name(name)
    check_names([*(n for n in shell.held if n != name), name])  # one output folder where case is not told apart
    given = given.strip().rstrip(";").strip()
    if given.endswith(".cet") and Path(given).expanduser().is_file():
        given = Path(given).expanduser().read_text(encoding="utf-8-sig").strip().rstrip(";")
    text = given or shell.last_query
    if text is None:
        raise UsageError(f":add {name}: give a query, or run one first")
    shell.compiled(text)  # refused now, as alone
    shell.held[name] = text
    shell.say(f"held {len(shell.held)}: {', '.join(shell.held)}")


def command(shell, rest: str) -> None:
    word = rest.strip().lower()
    if word == "":
        for name, text in shell.held.items():
            shell.say(f"{name}: {' '.join(text.split())}")
        if not shell.held:
            shell.say("no query held: :add NAME [QUERY]")
    elif word == "clear":
        shell.held.clear()
        shell.say("no query held")
    elif word == "explain":
        cw = _compiled(shell)
        shell.say(spoken(workload_text(cw.plan, tuple(c.ast for _, c in cw.queries)), "repl"))
    elif word == "run":
        run(shell)
    else:
        raise UsageError(f":workload {word}: expected run, explain or clear")


def _compiled(shell):
    if not shell.held:
        raise UsageError("no query held: :add NAME [QUERY] first")
    read = {p for text in shell.held.values() for p in parameters_read(parse(text))}
    params = {k: v for k, v in shell.params.items() if k in read}
    cw = compile_many(dict(shell.held), params, options=shell.options, strict_params=True)
    known = shell._known()
    return cw.planned(known, shell._resources(), strict_params=True)


def run(shell) -> None:
    cw = _compiled(shell)
    shell._require_input()
    started = time.monotonic()
    spark = shell.spark
    typed = dict(shell.typed)
    try:
        with progress(spark, "running", stream=shell.err) as shown:
            execution = cw.execution(shell.data, spark=spark, **typed)
            try:
                for k, (name, df) in enumerate(execution.frames.items()):
                    kind = execution.plan.plan(k).kind.value
                    shell.say(f"== {name} ==")
                    rows = SparkRows(execution.execution(name), sort_columns(df.columns, kind))
                    print_result(rows, limit=shell.limit, fmt="table", stream=shown.guard(shell.out))
            finally:
                execution.frames.unpersist()
    except (CetqlError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise describe(e) from None
    shell.say(f"answered {len(cw.queries)} queries in {time.monotonic() - started:.2f} s")
