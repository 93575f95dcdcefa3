"""The `cetql` command.

    cetql compile QUERY [--explain] …      check a query and show its plan (no Spark)
    cetql run QUERY --input … [--output …]  run it (on Spark, or in process: --engine)
    cetql repl [--input …]                 an interactive shell on one warm session
    cetql gen SCENARIO --events N -o PATH  example data
    cetql draw QUERY --input … -o FILE     the relevance graph of one window
    cetql serve [--port 15002]             a warm Spark Connect server for `run --remote`

Everything that can be refused without data is refused before Spark
starts.  Exit status: 0 ok; 2 a query, schema, parameter or usage error; 1 a
failed Spark job; 130 cancelled (Ctrl-C).  Every error is one line (a query
error also shows its line and a caret), never a traceback; a misspelt
option, keyword or name is answered with the one meant (`parsing`,
`base.words`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path

from cetql.backends.spark.session import log_path
from cetql.base.errors import CetqlError, QueryError, QuerySyntaxError, SchemaError, UsageError
from cetql.base.options import OutputMode
from cetql.base.streams import unfailing_stderr
from cetql.base.version import VERSION as __version__
from cetql.surfaces.cli.compile import cmd_compile
from cetql.surfaces.cli.flags import _common
from cetql.surfaces.cli.numbers import check_numbers
from cetql.surfaces.cli.parsing import Parser, parse
from cetql.surfaces.cli.run import EXIT_CANCELLED, cmd_run
from cetql.surfaces.cli.said import cancel as _cancel
from cetql.surfaces.draw import command as draw
from cetql.surfaces.gen import command as gen
from cetql.surfaces.repl import command as repl
from cetql.surfaces.serve import server as serve

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`


def build_parser() -> Parser:
    """The command line of every command: one `Parser` (`parsing`), the commands' made by its subparsers."""
    parser = Parser(prog="cetql", description="Complete Event Trend queries on Apache Spark.")
    parser.add_argument("--version", action="version", version=f"cetql {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="check a query and show how it will run (no Spark)")
    _common(c)
    _workload(c)
    c.add_argument("--explain", action="store_true", help="show the plan, the predicates and the template")
    c.add_argument("--ast", action="store_true", help="also show the syntax tree")
    c.add_argument("--schema", help="input columns, e.g. 'ts timestamp, src string, dst string'")
    c.add_argument("--input", action="append", metavar="[TYPE=]PATH",
                   help="plan for these inputs: their columns and types are read (no Spark)")
    c.add_argument("--format", choices=["text", "json"], default="text", help="text (default) or json")
    c.add_argument("--stream", action="store_true", help="plan the inputs as streams, as `run --stream` runs them")
    c.add_argument("--watermark", metavar="DELAY", help="with --stream: the watermark's delay, as for run")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("run", help="run a query (on Spark, or in this process where the plan can: --engine)")
    _common(r)
    _workload(r)
    r.add_argument("--input", action="append", required=True, metavar="[TYPE=]PATH",
                   help="CSV (with a header), Parquet or JSON-lines file or folder, or a table/view name; "
                        "Type=PATH binds an input to one event type (repeatable)")  # fmt: skip
    r.add_argument("--output", help="write the result here (a folder) instead of printing it")
    r.add_argument("--format", choices=["parquet", "csv", "json", "table"],
                   help="with --output: parquet (default), csv or json; without: table (on a terminal), "
                        "csv (when piped) or json")  # fmt: skip
    r.add_argument("--mode", choices=[m.value for m in OutputMode], default=OutputMode.ERROR.value,
                   help="if --output exists: error (default), overwrite, append or ignore")
    r.add_argument("--limit",
                   help="rows to print without --output (default: 20 on a terminal, all otherwise; 0: all)")
    r.add_argument("--show", metavar="ATTR,…", help="print each trend as the chain of these attributes' values")
    r.add_argument("--master", help="Spark master URL (default: the active session, else local[*])")
    r.add_argument("--remote", help="a Spark Connect server, sc://host:port (also: SPARK_REMOTE)")
    r.add_argument("--no-serve", action="store_true",
                   help="start a local Spark even where a `cetql serve` of this Python and cetql runs on this "
                        "machine (by default the query is sent to it)")  # fmt: skip
    r.add_argument("--partitions", help="Spark partitions for the kernels (default: shuffle partitions)")
    r.add_argument("--verbose", action="store_true", help="let Spark's own log reach the terminal")
    s = r.add_argument_group("streams (--stream)")
    s.add_argument("--stream", action="store_true",
                   help="read --input as a stream (a folder that receives files, or a table): each window is written "
                        "or printed once, when the watermark passes its end; runs until Ctrl-C or --until-idle")
    s.add_argument("--checkpoint", metavar="PATH",
                   help="the stream's progress and open windows; the same path resumes it (needed with --output)")
    s.add_argument("--watermark", metavar="DELAY",
                   help="how far behind the latest event time a window still takes events, e.g. '10 minutes' "
                        "(a bare number: the time column's units; default 0); later events are counted and dropped")
    s.add_argument("--trigger", metavar="INTERVAL",
                   help="start a micro-batch every INTERVAL, e.g. '10 seconds' (default: as soon as files arrive)")
    s.add_argument("--until-idle", metavar="SECONDS", help="stop after SECONDS without new input")
    r.set_defaults(func=cmd_run)

    repl.add_parser(sub)
    gen.add_parser(sub)
    draw.add_parser(sub)
    serve.add_parser(sub, main)
    return parser


def _workload(p) -> None:
    """Several queries at once: more query files, or one workload file (.cetw)."""
    p.add_argument("more_queries", nargs="*", metavar="QUERY_FILE",
                   help="more query files: a workload, each query named by its file (or give one .cetw workload "
                        "file of 'name: query file or query' lines); --output DIR writes DIR/<name>/ each")  # fmt: skip
    p.add_argument("--workload-sharing", choices=["auto", "none"],
                   help="a workload: share scans, exchanges and A-Seq prefix counters where the planner finds them "
                        "and its estimate says so (auto, default), or run every query alone (none)")  # fmt: skip


def _json_error(kind: str, message: str, pos=None) -> str:
    import json

    error = {"kind": kind, "message": message}
    if pos is not None:
        error.update(line=pos.line, column=pos.column)
    return json.dumps({"error": error})


def _quiet_python_logging(verbose: bool) -> None:
    """py4j and pyspark log through Python's logging (a Ctrl-C makes py4j log
    a traceback): to the log file, not the terminal, unless verbose."""
    if verbose:
        return
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) in (sys.stderr, sys.stdout):
            root.removeHandler(h)
    if not any(isinstance(h, logging.FileHandler) for h in root.handlers):
        root.addHandler(logging.FileHandler(log_path()))
    for name in ("py4j", "pyspark"):
        logging.getLogger(name).propagate = True


def main(argv: list[str] | None = None, *, only_in_process: bool = False) -> int:
    """The command; `only_in_process` (a serve's child): a run whose plan is
    Spark's and would not run on the found serve's Connect server returns
    `serve.state.NOT_HERE` at once, having said and written nothing (`surfaces.serve.runner`)."""
    try:
        args = parse(build_parser(), sys.argv[1:] if argv is None else list(argv))
        check_numbers(args)  # every numeric flag, before anything runs
    except UsageError as e:  # before anything is read or started: one line, status 2
        print(e.render(), file=sys.stderr)
        return e.exit_code
    args.only_in_process = only_in_process
    if sys.stderr is sys.__stderr__ and sys.stderr is not None:  # the process's own (not a test's capture)
        sys.stderr = unfailing_stderr(sys.stderr)
    _quiet_python_logging(getattr(args, "verbose", False))
    as_json = getattr(args, "format", None) == "json" and args.command == "compile"
    interrupted = _noting_interrupts()
    try:
        return args.func(args)
    except QueryError as e:
        name = getattr(args, "query_file", None)
        if e.query is not None:  # a workload's query: its own file, the place there
            from cetql.surfaces.cli.workload_file import locate  # noqa: PLC0415 - start-up cost: a workload's error

            name, e.pos, source = locate(args, e.query, e.pos)
            e.source = source or e.source
        if as_json:
            print(_json_error(e.kind, e.message, e.pos), file=sys.stderr)
        else:
            print(e.render(name if name and name != "-" else None), file=sys.stderr)
        return e.exit_code
    except CetqlError as e:
        if isinstance(e, SchemaError) and e.query is not None and e.pos is not None:  # a workload's query: its place
            from cetql.surfaces.cli.workload_file import locate  # noqa: PLC0415 - start-up cost: a workload's error

            name, pos, _ = locate(args, e.query, e.pos)
            if name is not None and pos is not None:
                e.placed(pos, "stdin" if name == "-" else Path(name).name)
        print(_json_error("error", e.text("cli")) if as_json else e.render(), file=sys.stderr)
        return e.exit_code
    except RecursionError:
        err = QuerySyntaxError("the query nests too deeply (parentheses or patterns); simplify it")
        print(err.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _cancel()
        print("cancelled", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CANCELLED)  # py4j threads would print their own tracebacks on a normal exit
    except BrokenPipeError:
        return _closed_pipe()
    except Exception:
        if not interrupted:  # a failure of cetql's own: the caller's traceback
            raise
        _cancel()  # Ctrl-C that a library turned into an error of its own (DuckDB's "Query interrupted",
        print("cancelled", file=sys.stderr)  # an import the interrupt cut short in another thread)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CANCELLED)


_SEEN_INTERRUPTS: list = []


def _note_interrupt(signum, frame):
    _SEEN_INTERRUPTS.append(signum)
    signal.default_int_handler(signum, frame)


def _noting_interrupts() -> list:
    """A list that gets an item when SIGINT arrives during this command
    (which then raises KeyboardInterrupt as Python's own handler does);
    left alone where SIGINT is ignored or handled by someone else, or off
    the main thread."""
    _SEEN_INTERRUPTS.clear()
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # fmt: skip
        signal.signal(signal.SIGINT, _note_interrupt)
    return _SEEN_INTERRUPTS


def _closed_pipe() -> int:
    """Standard output was closed by its reader (`cetql run … | head`): stop
    the Spark job and end without a word, as a POSIX tool killed by SIGPIPE
    ends (status 141 = 128 + 13).  In a real process nothing may be flushed
    to the closed pipe at exit (Python would complain on standard error)."""
    _cancel()
    if sys.stdout is sys.__stdout__:
        sys.stderr.flush()
        os._exit(EXIT_CLOSED_PIPE)
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
