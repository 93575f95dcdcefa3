"""`cetql repl`: an interactive shell on one warm Spark session.

A query ends with `;` or a blank line; it is compiled first (a syntax error
shows its caret and nothing runs), then run on the session, which started in
the background when the shell did: the second query pays only its own work.
Results print as a table (first rows and the total) with the time the query
took.  Commands start with `:` (`:help` lists them).  Ctrl-C while a query
runs cancels its Spark jobs and returns to the prompt; Ctrl-D or `:quit`
leaves.

On a terminal the prompt is prompt_toolkit's (history across sessions in
`~/.cetql_history` or $CETQL_HISTORY, completion of keywords, the query's
types and variables, and the input's columns); with standard input piped,
lines are read as they come, with the same rules, so a script of queries
and commands runs as typed.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from cetql.backends.inputs.facts import describe_paths
from cetql.backends.spark.compiler import diagnose_invalid
from cetql.backends.spark.connect import is_connect
from cetql.backends.spark.failures import describe
from cetql.backends.spark.resources import default_resources, session_resources
from cetql.backends.spark.results import SparkRows
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError, QueryError, UsageError, spoken
from cetql.base.options import OutputFormat, OutputMode, RunOptions
from cetql.base.words import closest
from cetql.language.parser import parse
from cetql.planner.explain import explain_text
from cetql.planner.semantics.bind import parameters_read
from cetql.planner.semantics.parameters import parse_param
from cetql.surfaces.api.query import compile
from cetql.surfaces.api.runtime import read_input
from cetql.surfaces.cli.numbers import RULES
from cetql.surfaces.output import FILE, FOLDER, resolve_output, write
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result, sort_columns
from cetql.surfaces.serve.state import token_for

KEYWORDS = (
    "PATTERN", "SEQ", "WHERE", "AND", "OR", "NOT", "NEXT", "WITHIN", "SLIDE", "RETURN", "AGG", "GROUP-BY",
    "TRENDS", "ALL", "COMPLETE", "MAXIMAL", "APPROX", "COUNT", "SUM", "MIN", "MAX", "AVG", "TRUE", "FALSE",
    "seconds", "minutes", "hours", "days", "week", "ms",
)  # fmt: skip


HELP = """\
A query ends with ';' or a blank line.  Commands:
  :input [TYPE=]PATH   read events from PATH (CSV, Parquet, JSON lines, a folder, or a table/view);
                       TYPE=PATH binds an input to one event type; ':input' alone lists the inputs
  :param NAME=VALUE    bind a query parameter, for the queries that read it; ':param' alone lists them
  :schema              the inputs' columns and types
  :explain [QUERY]     the plan of QUERY (default: the last query), as `cetql compile --explain`
  :load FILE           run the query in FILE
  :save PATH [overwrite]
                       write the last result to PATH: one CSV or JSON-lines file for .csv or .json,
                       else a Parquet folder; an existing PATH is kept unless 'overwrite' is given
  :limit N             rows to print (default 20; 0: all)
  :help                this text
  :quit                leave (also Ctrl-D)
Ctrl-C cancels a running query."""


_TYPE_VAR = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\s*[+*?]?\s+([a-z_][A-Za-z0-9_]*)\s*(?:\[\])?")


def history_path() -> Path:
    return Path(os.environ.get("CETQL_HISTORY") or Path.home() / ".cetql_history")


def is_complete(text: str) -> bool:
    """Whether the text typed so far is a whole entry: a command, a query
    ending with ';', or anything followed by a blank line."""
    stripped = text.strip()
    if not stripped:
        return True
    if stripped.startswith(":"):
        return True
    if stripped.endswith(";"):
        return True
    return text.endswith("\n") or text.endswith("\n ")


@dataclass
class Shell:
    """The shell's state and what each entry does; `out` and `err` are the
    streams it prints to."""

    master: str | None = None
    remote: str | None = None
    options: RunOptions = field(default_factory=RunOptions)
    data: str | None = None
    typed: dict[str, str] = field(default_factory=dict)
    params: dict[str, object] = field(default_factory=dict)
    limit: int = 20
    out: object = sys.stdout
    err: object = sys.stderr
    last_query: str | None = None
    last_execution: object = None
    last_file: str | None = None  # the query file last :load-ed: never a :save target
    _spark: object = None
    _starting: Future | None = None
    _columns: tuple[str, ...] = ()

    # ------------------------------------------------------------ Spark

    def start(self) -> None:
        """Start the Spark session in the background."""
        started: Future = Future()

        def run():
            try:
                started.set_result(get_spark(self.master, remote=self.remote, token_for=token_for))
            except BaseException as e:  # reported when a query needs the session
                started.set_exception(e)

        self._starting = started
        threading.Thread(target=run, name="cetql-spark-start", daemon=True).start()

    @property
    def spark(self):
        """The session, once started (a Ctrl-C while waiting leaves the start going)."""
        if self._spark is None:
            if self._starting is None:
                self.start()
            try:
                self._spark = self._starting.result()
            except BaseException as e:
                if not isinstance(e, KeyboardInterrupt):
                    self._starting = None  # the next query tries again
                raise
        return self._spark

    def cancel(self) -> None:
        spark = self._spark
        if spark is None:
            return
        try:
            if is_connect(spark):
                spark.interruptAll()
            else:
                spark.sparkContext.cancelAllJobs()
        except Exception:
            pass

    # ------------------------------------------------------------ entries

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def complain(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def handle(self, entry: str) -> bool:
        """Do one entry; False when the shell should end."""
        text = entry.strip()
        if not text:
            return True
        try:
            if text.startswith(":"):
                return self.command(text)
            self.run_query(text.rstrip(";").rstrip())
        except QueryError as e:
            self.complain(e.render(surface="repl"))
        except CetqlError as e:
            self.complain(e.render(surface="repl"))
        except RecursionError:
            self.complain("syntax error: the query nests too deeply (parentheses or patterns); simplify it")
        except KeyboardInterrupt:
            self.cancel()
            self.complain("cancelled")
        return True

    def command(self, text: str) -> bool:
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        name = name.lower()
        if name in ("q", "quit", "exit"):
            return False
        if name in ("h", "help", "?"):
            self.say(HELP)
        elif name == "input":
            self.set_input(rest)
        elif name == "param":
            self.set_param(rest)
        elif name == "schema":
            self.show_schema()
        elif name == "explain":
            self.explain(rest.rstrip(";").strip() or None)
        elif name == "load":
            self.load(rest)
        elif name == "save":
            self.save(rest)
        elif name == "limit":
            self.set_limit(rest)
        else:
            raise UsageError(f"unknown command ':{name}'; :help lists the commands")
        return True

    def set_input(self, rest: str) -> None:
        if not rest:
            if self.data is None and not self.typed:
                self.say("no input yet: :input PATH or :input TYPE=PATH")
            for line in ([self.data] if self.data else []) + [f"{t}={p}" for t, p in self.typed.items()]:
                self.say(f"input {line}")
            return
        (item,) = shlex.split(rest) or [""]
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", item)
        if m and not Path(item).exists():
            self.typed[m.group(1)] = m.group(2)
            self.data = None
        else:
            self.data, self.typed = item, {}
        known = self._known()
        self._columns = tuple(known.schema.names()) if known is not None and known.schema is not None else ()
        what = f"{len(self._columns)} columns" if self._columns else "columns known when a query runs"
        self.say(f"input {item} ({what})")

    def set_param(self, rest: str) -> None:
        if not rest:
            if not self.params:
                self.say("no parameters: :param NAME=VALUE")
            for k, v in self.params.items():
                self.say(f"{k}={v}")
            return
        k, v = parse_param(rest)
        self.params[k] = v
        self.say(f"{k}={v}")

    def set_limit(self, rest: str) -> None:
        n = RULES["limit"](rest)  # the command line's --limit rule (its message says :limit here)
        self.limit = n
        self.say(f"limit {n}")

    def _known(self):
        if self.data is None and not self.typed:
            return None
        return describe_paths({None: self.data} if self.data is not None else dict(self.typed), self.options.time_col,
                              self.options.time_zone)

    def _require_input(self) -> None:
        if self.data is None and not self.typed:
            raise UsageError("no input: give one with :input PATH (or :input TYPE=PATH), or start with --input")

    def show_schema(self) -> None:
        self._require_input()
        known = self._known()
        if known is not None and known.schema is not None:
            for name, _, written in known.schema.columns:
                self.say(f"  {name}: {written}")
            return
        for name, value in ([(None, self.data)] if self.data is not None else list(self.typed.items())):
            df = self._frame(value)
            self.say(f"{name or 'input'}:")
            for f in df.schema.fields:
                self.say(f"  {f.name}: {f.dataType.simpleString()}")
            self._columns = tuple(dict.fromkeys([*self._columns, *df.columns]))

    def _frame(self, value: str):
        return read_input(self.spark, value).df

    def compiled(self, text: str):
        """The query planned for the REPL's inputs (as far as known without
        Spark) and its session's resources — what :explain shows; running it
        plans again, through the same function, with the inputs as read."""
        return compile(text, self._params_for(text), options=self.options, inputs=self._known(),
                       resources=self._resources(), strict_params=True)  # fmt: skip

    def _params_for(self, text: str) -> dict[str, object]:
        """The shell's parameters a query is given: those it reads — one it
        does not read may be for another query, and is not refused (`cetql
        run --param` refuses it) — and one near a name it reads without a
        value, refused by name as the misspelling of it."""
        read = parameters_read(parse(text))
        lacking = [n for n in read if n not in self.params]
        return {k: v for k, v in self.params.items() if k in read or closest(k, lacking) is not None}

    def _resources(self):
        return session_resources(self._spark) if self._spark is not None else default_resources()

    def explain(self, text: str | None) -> None:
        text = text or self.last_query
        if text is None:
            raise UsageError(":explain needs a query, or a query run before it")
        self.say(spoken(explain_text(self.compiled(text)), "repl"))

    def load(self, rest: str) -> None:
        if not rest:
            raise UsageError(":load needs a query file")
        path = Path(os.path.expanduser(rest))
        if not path.is_file():
            raise UsageError(f"query file '{rest}' does not exist")
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise UsageError(f"query file '{rest}' is not UTF-8 text; save it as UTF-8") from None
        self.last_file = str(path)
        self.run_query(text.strip().rstrip(";"))

    def run_query(self, text: str) -> None:
        compiled = self.compiled(text)  # syntax and semantic errors before anything runs
        self.last_query = text
        self._require_input()
        started = time.monotonic()
        spark = self.spark
        execution = None
        try:
            with progress(spark, "running", stream=self.err) as shown:
                execution = compiled.execution(self.data if self.data is not None else self.typed, spark=spark,
                                               options=self.options)
                rows = SparkRows(execution, sort_columns(execution.dataframe.columns, compiled.kind))
                print_result(rows, limit=self.limit, fmt="table", stream=shown.guard(self.out))
        except (CetqlError, KeyboardInterrupt):
            raise
        except Exception as e:
            raise describe(e, execution and (lambda: diagnose_invalid(execution.plan, execution.inputs))) from None
        self.last_execution = execution
        self.say(f"answered in {time.monotonic() - started:.2f} s")

    def save(self, rest: str) -> None:
        """`:save PATH [overwrite]`: the last result as one CSV or JSON-lines
        file (PATH ending in .csv or .json) or a Parquet folder."""
        if self.last_execution is None:
            raise UsageError(":save writes the last result: run a query first")
        try:
            words = shlex.split(rest)
        except ValueError as e:
            raise UsageError(f":save: {e}; quote a path with spaces") from None
        if not words or len(words) > 2 or (len(words) == 2 and words[1].lower() != "overwrite"):
            raise UsageError(":save PATH [overwrite]: PATH ending in .csv or .json (one file) or a folder for Parquet; "
                             "'overwrite' replaces what is there")  # fmt: skip
        path = words[0]
        suffix = Path(path).suffix.lower().lstrip(".")
        fmt = OutputFormat(suffix) if suffix in ("csv", "json", "parquet") else OutputFormat.PARQUET
        inputs = [v for v in ([self.data] if self.data else self.typed.values())]
        target = resolve_output(path, OutputMode.OVERWRITE if len(words) == 2 else OutputMode.ERROR, inputs=inputs,
                                query_file=self.last_file, kind=FOLDER if fmt == OutputFormat.PARQUET else FILE,
                                fmt=fmt, writer="save", notify=self.complain)  # fmt: skip
        try:
            rows = write(self.last_execution.dataframe, target, fmt)
        except (CetqlError, KeyboardInterrupt):
            raise
        except Exception as e:
            raise describe(e) from None
        self.say(f"wrote {rows:,} rows to {path} ({fmt.value}{' folder' if target.kind == FOLDER else ''})")

    # ------------------------------------------------------------ completion

    def words(self, text_before: str) -> list[str]:
        """Completions for the word before the cursor."""
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z0-9_]*)$", text_before)
        if m:
            return [c for c in self._columns if c.startswith(m.group(2))]
        word = re.search(r"[A-Za-z_:-][A-Za-z0-9_-]*$", text_before)
        prefix = word.group(0) if word else ""
        if prefix.startswith(":"):
            return [c for c in (":input", ":param", ":schema", ":explain", ":load", ":save", ":limit", ":help",
                                ":quit") if c.startswith(prefix)]  # fmt: skip
        found = _TYPE_VAR.findall(text_before)
        names = [*KEYWORDS, *self.typed, *(t for t, _ in found), *(v for _, v in found), *self._columns]
        seen = dict.fromkeys(n for n in names if n.lower().startswith(prefix.lower()) and n != prefix)
        return list(seen)
