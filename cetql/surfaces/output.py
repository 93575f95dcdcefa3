"""Writing results without destroying anything: every writer (`cetql run
--output`, `cetql gen`, `cetql draw -o`, the REPL's `:save`) goes through here.

- `resolve_output`, before Spark starts, reads the path as a local path
  (`file:` in any case stripped, `~` expanded, made absolute, symlinks
  followed) and refuses — a UsageError naming the path and why — an empty
  path, the root, the home folder or a folder above it, the working folder
  or a folder above it, an input or the query file, a folder holding one,
  a path inside an input folder, and anything that is not what the writer
  writes (a folder of results, or one regular file) or absent.  An existing
  target is refused unless the mode says otherwise ("error" — the default —,
  "overwrite", "append", "ignore": Spark's words); `append` refuses a folder
  holding files of another format.  A URI of another scheme (`hdfs://`,
  `s3a://`) is handed to Spark's own writer, in mode error or ignore only:
  cetql cannot set old content aside there.
- `staged` gives a fresh path beside the target to write into (its name says
  which process made it and when it started) and moves the result into
  place with a rename that cannot replace (Linux `renameat2`): a target that
  appeared while the query ran is never replaced.  `overwrite` swaps the new
  content in (`RENAME_EXCHANGE`, else the old set aside first) and removes
  the old only once the new is in place.  On failure, Ctrl-C or SIGTERM the
  staged result is removed; one left by a killed process is removed by the
  next resolution of a path beside it, once its owner is gone.
- `write` writes a DataFrame through both; `append` compares the result's
  columns and types with the files already there before the job runs.
  CSV gets a header row; a trend's `events` are joined with `;` and its
  `rows` written as JSON text.
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import errno
import json
import os
import re
import shlex
import shutil
import signal
import stat
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cetql.base.errors import CetqlError, UsageError
from cetql.base.options import OutputFormat, OutputMode
from cetql.base.processes import alive, start_time

FOLDER, FILE = "folder", "file"

# how each writer says "replace it": its messages speak its own words
_REPLACE = {
    "run": "give --mode overwrite to replace it, --mode append to add to it, or another path",
    "gen": "pass --mode overwrite (mode='overwrite') to replace it, or choose another path",
    "draw": "pass --mode overwrite to replace it, or choose another path",
    "save": "':save {given} overwrite' replaces it; or choose another path",
}


@dataclass(frozen=True)
class Target:
    """Where a writer may write, as `resolve_output` decided."""

    given: str  # as the user wrote it, for messages
    mode: OutputMode
    kind: str = FOLDER  # FOLDER: a folder of results; FILE: one regular file
    path: Path | None = None  # local: absolute, symlinks followed
    uri: str | None = None  # another scheme: Spark's own writer
    existed: bool = False
    writer: str = "run"

    @property
    def skip(self) -> bool:
        """Mode ignore and the target is there: nothing to write."""
        return self.mode == OutputMode.IGNORE and self.existed

    def replace_hint(self) -> str:
        return _replace_hint(self.writer, self.given)


def _replace_hint(writer: str, given: str) -> str:
    return _REPLACE.get(writer, _REPLACE["run"]).format(given=shlex.quote(given))


# ---------------------------------------------------------------- resolving


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(.*)$", re.S)


def _refuse(given: str, why: str) -> UsageError:
    return UsageError(f"output '{given}' {why}")


def _split_scheme(given: str) -> tuple[str | None, str]:
    """('file', local path) | (scheme, the URI) | (None, a local path)."""
    m = _SCHEME.match(given)
    if m is None:
        return None, given
    scheme, rest = m.group(1).lower(), m.group(2)
    if scheme != "file":
        return (scheme, f"{scheme}:{rest}") if rest.startswith("/") else (None, given)
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise _refuse(given, f"names the host '{host}'; give a path on this machine")
        rest = slash + path
    return "file", rest


def local_path(text: str) -> Path:
    """A path as the user wrote it, `file:` stripped, `~` expanded, absolute,
    symlinks followed (what it names now, existing or not)."""
    _, rest = _split_scheme(text)
    return Path(os.path.expanduser(rest)).resolve()  # `..` after symlinks, as the system reads it


def _what(mode_bits: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):  # fmt: skip
        if test(mode_bits):
            return name
    return "not a file or folder"


def resolve_output(
    path,
    mode: OutputMode | str = OutputMode.ERROR,
    *,
    inputs=(),
    query_file=None,
    kind: str = FOLDER,
    fmt: OutputFormat | None = None,
    writer: str = "run",
    make_parents: bool = False,
    notify=None,
) -> Target:
    """Where `writer` may write `path`, or a UsageError saying why not.

    `inputs`: the query's inputs as given (paths; table names are skipped);
    `query_file`: the query's file (or None, "-"); `kind`: FOLDER or FILE;
    `fmt`: what `append` adds; `make_parents`: missing parent folders will be
    made (gen).  `notify(line)` hears about staging left by killed processes
    (default: standard error)."""
    mode = OutputMode(mode)
    given = "" if path is None else str(path)
    if not given.strip():
        raise _refuse(given, "is empty (an unset variable?); give the path to write to")
    if "\0" in given:
        raise _refuse(given.replace("\0", "\\0"), "contains a NUL character")
    scheme, rest = _split_scheme(given)
    if scheme not in (None, "file"):
        return _uri_target(given, rest, mode, kind, writer)
    if not rest.strip():
        raise _refuse(given, "names no file; give the path to write to")
    try:
        target = local_path(given)
        cwd = Path.cwd().resolve()
    except RuntimeError:
        raise _refuse(given, "is a loop of symbolic links") from None
    except OSError as e:
        raise _refuse(given, f"cannot be read as a path: {e.strerror or e}") from None
    _refuse_protected(given, target, cwd, inputs, query_file)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _refuse(given, f"cannot be examined: {e.strerror or e}") from None
    if st is not None:
        _refuse_kind(given, st.st_mode, kind)
    parent = _existing_parent(given, target, make_parents)
    if parent == target.parent:
        recover(parent, notify=notify)
    existed = st is not None
    if existed and mode == OutputMode.ERROR:
        raise _refuse(given, f"already exists; {_replace_hint(writer, given)}")
    if existed and mode == OutputMode.APPEND:
        check_append_format(given, target, fmt or OutputFormat.PARQUET)
    return Target(given, mode, kind, path=target, existed=existed, writer=writer)


def _uri_target(given: str, uri: str, mode: OutputMode, kind: str, writer: str) -> Target:
    if writer != "run" or kind != FOLDER:
        raise _refuse(given, "is not a local path; give a path on this machine")
    if mode not in (OutputMode.ERROR, OutputMode.IGNORE):
        raise _refuse(given, f"is not a local path: cetql writes there only in --mode error or ignore (it cannot set "
                             f"the old content aside there); --mode {mode.value} needs a local path")  # fmt: skip
    return Target(given, mode, kind, uri=uri.rstrip("/") or uri, writer=writer)


def _refuse_protected(given: str, target: Path, cwd: Path, inputs, query_file) -> None:
    if target == target.parent:
        raise _refuse(given, "is the root folder; give a new folder to write to")
    home = _home()
    if home is not None and target == home:
        raise _refuse(given, f"is your home folder ({home}); give a new folder inside it")
    if home is not None and home.is_relative_to(target):
        raise _refuse(given, f"({target}) holds your home folder; give a new folder to write to")
    if target == cwd:
        raise _refuse(given, f"is the working folder ({cwd}); give a new folder inside it")
    if cwd.is_relative_to(target):
        raise _refuse(given, f"({target}) holds the working folder; give a new folder to write to")
    protected = [("input", str(v)) for v in inputs or ()]
    if query_file not in (None, "-"):
        protected.append(("query file", str(query_file)))
    for what, spec in protected:
        try:
            src = local_path(spec)
            link = Path(os.path.abspath(os.path.expanduser(_split_scheme(spec)[1])))  # as named, links not followed
        except (RuntimeError, OSError):
            continue
        if not os.path.lexists(src):  # a table name, or nothing there to lose
            continue
        if link != src and link.is_relative_to(target) and target != link:
            raise _refuse(given, f"contains the {what} '{spec}'; write the results somewhere else")
        if target == src:
            raise _refuse(given, "is an input of the query; write the results somewhere else" if what == "input"
                          else "is the query file; write the results somewhere else")  # fmt: skip
        if src.is_relative_to(target):
            raise _refuse(given, f"contains the {what} '{spec}'; write the results somewhere else")
        if src.is_dir() and target.is_relative_to(src):
            raise _refuse(given, f"is inside the input folder '{spec}'; write the results somewhere else")


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError, KeyError):
        return None


def _refuse_kind(given: str, mode_bits: int, kind: str) -> None:
    what = _what(mode_bits)
    if kind == FOLDER and not stat.S_ISDIR(mode_bits):
        if stat.S_ISREG(mode_bits):
            raise _refuse(given, "already exists as a file; results are a folder of files — give another path")
        raise _refuse(given, f"is {what}, not a folder; give a new path")
    if kind == FILE and not stat.S_ISREG(mode_bits):
        raise _refuse(given, f"is {what}, not a regular file; give a file name")


def _existing_parent(given: str, target: Path, make_parents: bool) -> Path:
    """The nearest existing folder at or above the target's parent."""
    parent = target.parent
    while make_parents and not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    if not parent.exists():
        raise UsageError(f"the folder of output '{given}' ({parent}) does not exist")
    if not parent.is_dir():
        raise UsageError(f"the folder of output '{given}' ({parent}) is not a folder")
    return parent


# ---------------------------------------------------------------- append


_CODECS = (".gz", ".bz2", ".snappy", ".lz4", ".zst", ".zstd", ".deflate", ".br")


def format_of(name: str) -> str | None:
    """The format of a result file Spark wrote, from its name."""
    lower = name.lower()
    for codec in _CODECS:
        if lower.endswith(codec) and not lower.endswith(".parquet"):
            lower = lower[: -len(codec)]
    for fmt in OutputFormat:
        if lower.endswith("." + fmt.value):
            return fmt.value
    return None


def data_files(folder: Path) -> list[Path]:
    return sorted(f for f in folder.iterdir() if not f.name.startswith(("_", ".")))


def check_append_format(given: str, folder: Path, fmt: OutputFormat) -> None:
    """`append` adds `fmt` files to a folder of `fmt` results only."""
    for f in data_files(folder):
        found = format_of(f.name) if f.is_file() else None
        if found != fmt.value:
            what = f"{found.upper()} results" if found else "not a result file"
            raise _refuse(given, f"holds '{f.name}' ({what}); --mode append adds {fmt.value.upper()} files to a "
                                 f"folder of {fmt.value.upper()} results — write to another path")  # fmt: skip


def _shape(fields) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in fields]


def existing_shape(folder: Path, fmt: OutputFormat) -> tuple[list[tuple[str, str | None]], bool] | None:
    """(columns there as (name, type or None), whether they are all of them)
    from the first files of a results folder; None when it has none."""
    files = [f for f in data_files(folder) if f.is_file() and f.stat().st_size > 0]
    if not files:
        return None
    if fmt == OutputFormat.PARQUET:
        import pyarrow.parquet as pq
        from pyspark.sql.types import StructType

        schema = pq.read_schema(files[0])
        spark_json = (schema.metadata or {}).get(b"org.apache.spark.sql.parquet.row.metadata")
        if spark_json is not None:
            return _shape(StructType.fromJson(json.loads(spark_json))), True
        return [(name, None) for name in schema.names], True
    if fmt == OutputFormat.CSV:
        with open(files[0], newline="", encoding="utf-8-sig") as fh:
            return [(name, None) for name in next(csv.reader(fh), [])], True
    keys: dict[str, None] = {}
    for f in files[:8]:  # JSON lines omit null fields: the keys seen are some of the columns
        with open(f, encoding="utf-8") as fh:
            for _, line in zip(range(200), fh):
                with contextlib.suppress(ValueError, AttributeError):
                    keys.update(dict.fromkeys(json.loads(line)))
    return [(k, None) for k in keys], False


def check_append_shape(target: Target, df, fmt: OutputFormat) -> None:
    """Refuse to append a result whose columns (and, for Parquet, types)
    differ from the files already there; no job runs."""
    _check_shape(target, _shape(df.schema.fields), fmt)


def _check_shape(target: Target, here: list[tuple[str, str]], fmt: OutputFormat) -> None:
    found = existing_shape(target.path, fmt)
    if found is None:
        return
    there, complete = found
    names = [n for n, _ in here]
    if complete and [n for n, _ in there] != names:
        why = f"columns {', '.join(n for n, _ in there)} there, {', '.join(names)} here"
    elif not complete and not {n for n, _ in there} <= set(names):
        why = f"column {sorted({n for n, _ in there} - set(names))[0]} there, not here"
    else:
        typed = [(a, b) for a, b in zip(there, here) if a[1] is not None and a != b]
        if not typed:
            return
        (n, t), (_, u) = typed[0]
        why = f"column {n} is {t} there, {u} here"
    raise _refuse(target.given, f"holds results of another shape ({why}); --mode append adds only results with the "
                                "same columns and types — write to another path")  # fmt: skip


# ---------------------------------------------------------------- moving


_AT_FDCWD = -100
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _load_renameat2()
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """True when done; False when this system or filesystem cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    e = ctypes.get_errno()
    if e in _UNSUPPORTED:
        return False
    if e in (errno.EEXIST, errno.ENOTEMPTY):
        raise FileExistsError(e, os.strerror(e), str(dst))
    raise OSError(e, os.strerror(e), str(src), None, str(dst))


def rename_noreplace(src: Path, dst: Path) -> None:
    """Move `src` to `dst`; FileExistsError if anything is at `dst`, however
    late it appeared.  Without renameat2: a folder claims `dst` with mkdir
    and replaces only its own empty claim; a file is hard-linked (which fails
    on an existing name) and then unlinked."""
    if _renameat2(src, dst, _RENAME_NOREPLACE):
        return
    if os.path.isdir(src) and not os.path.islink(src):
        os.mkdir(dst)  # FileExistsError when something is there
        try:
            os.rename(src, dst)  # onto our own empty folder; fails if anything was put in it
        except OSError as e:
            with contextlib.suppress(OSError):
                os.rmdir(dst)
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(e.errno, e.strerror, str(dst)) from None
            raise
        return
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:  # no hard links here: claim the name, then replace the claim
        os.close(os.open(dst, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.replace(src, dst)
        return
    os.unlink(src)


def _exchange(a: Path, b: Path) -> bool:
    """Swap `a` and `b` atomically; False when not supported here."""
    try:
        return _renameat2(a, b, _RENAME_EXCHANGE)
    except FileNotFoundError:
        return False


_STAGED = re.compile(r"^\.(?P<name>.+)\.cetql-(?P<role>stage|old|oldx)-(?P<pid>\d+)-(?P<start>\d+)-[0-9a-f]{8}"
                     r"(?:\.[A-Za-z0-9]{1,8})?$", re.S)  # fmt: skip


def staging_path(target: Path, role: str = "stage") -> Path:
    """A fresh hidden name beside `target` that says which process owns it
    (pid and start time), so a later run can tell whether its owner is gone."""
    pid = os.getpid()
    start = start_time(pid)
    name = target.name
    if len(name) > 100:
        name, role = name[:100], "oldx" if role == "old" else role
    return target.with_name(f".{name}.cetql-{role}-{pid}-{start}-{uuid.uuid4().hex[:8]}{target.suffix[:9]}")


def recover(folder: Path, notify=None) -> None:
    """Staging in `folder` whose owner process is gone: removed; the old
    content an interrupted `overwrite` had set aside: put back when nothing
    took its place.  Each said on `notify` (default: standard error)."""
    say = notify or (lambda line: print(line, file=sys.stderr))
    try:
        names = [e.name for e in os.scandir(folder) if ".cetql-" in e.name]
    except OSError:
        return
    for name in names:
        m = _STAGED.match(name)
        if m is None or alive(int(m["pid"]), int(m["start"])):
            continue
        path, target = folder / name, folder / m["name"]
        by = f"by cetql process {m['pid']}, which ended before it finished writing"
        if m["role"] == "oldx":
            say(f"kept '{path}', the previous content of an output, set aside {by}; move it back if it is missing")
        elif m["role"] == "old" and not os.path.lexists(target):
            try:
                rename_noreplace(path, target)
                say(f"restored '{target}', set aside {by}")
            except OSError:
                say(f"kept '{path}', the previous content of '{target}', set aside {by}")
        else:
            _discard(path)
            say(f"removed '{path}', left {by}")


def _discard(path: Path | None) -> None:
    if path is None:
        return
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


class Terminated(KeyboardInterrupt):
    """SIGTERM while a result was being written (handled as Ctrl-C is, then
    the process ends by SIGTERM)."""


class staged:
    """`with staged(target, spark) as stage:` write to `stage.path` (absent
    until written); set `stage.source` to what inside it is the result (it
    is `stage.path` itself by default).  When the block ends well the result
    is moved into place (`stage.written` False when mode ignore found the
    target there by then); when it fails or is interrupted (Ctrl-C, SIGTERM)
    the staging is removed, after cancelling `spark`'s jobs."""

    def __init__(self, target: Target, spark=None):
        self.target, self.spark = target, spark
        self.path = staging_path(target.path)
        self.source = self.path
        self.written = False
        self._saved: dict = {}
        self._defer = False
        self._pending: int | None = None

    def _handle(self, signum, frame):
        if self._defer:
            self._pending = self._pending or signum
            return
        self._deliver(signum, frame)

    def _deliver(self, signum, frame):
        previous = self._saved.get(signum)
        if callable(previous) and previous is not signal.default_int_handler:
            previous(signum, frame)  # e.g. pyspark's SIGINT handler: cancels the jobs, raises KeyboardInterrupt
            return
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                    self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, typ, *_):
        self._defer = True  # from here a signal waits until the result is in place, or gone
        try:
            if typ is None:
                old = None
                try:
                    self.written, old = _place(self.source, self.target)
                finally:
                    _discard(old)
            elif issubclass(typ, KeyboardInterrupt):
                _quiesce(self.spark)
        finally:
            _discard(self.path)
            for sig, handler in self._saved.items():
                signal.signal(sig, handler)
        pending = self._pending
        if (typ is not None and issubclass(typ, Terminated)) or (
            pending == signal.SIGTERM and self._saved.get(pending) == signal.SIG_DFL
        ):
            sys.stdout.flush()  # what SIGTERM would have done, now that nothing is left behind
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGTERM)
            raise Terminated()
        if pending is not None and typ is None:
            self._deliver(pending, None)
        return False


def _place(source: Path, target: Target) -> tuple[bool, Path | None]:
    """Move the staged result into place: (written?, what to remove once it is)."""
    dest, mode = target.path, target.mode
    if mode == OutputMode.APPEND and target.existed and os.path.isdir(dest):
        _append_into(source, dest)
        return True, None
    if mode == OutputMode.OVERWRITE and os.path.lexists(dest):
        return True, _swap(source, dest, target)
    try:
        rename_noreplace(source, dest)
    except FileExistsError:
        if mode == OutputMode.IGNORE:
            return False, None
        raise CetqlError(f"output '{target.given}' appeared while the query ran; it was left as it is and this result "
                         f"was not kept; run again: {target.replace_hint()}") from None  # fmt: skip
    return True, None


def _swap(source: Path, dest: Path, target: Target) -> Path:
    """Overwrite: the new content in place first; returns where the old is."""
    st = os.lstat(dest)
    if stat.S_ISLNK(st.st_mode) or (target.kind == FOLDER) != stat.S_ISDIR(st.st_mode):
        raise CetqlError(f"output '{target.given}' became {_what(st.st_mode)} while the query ran; it was left as it "
                         "is — run again")  # fmt: skip
    if _exchange(source, dest):
        return source  # now holds the old content
    old = staging_path(dest, "old")
    rename_noreplace(dest, old)
    try:
        rename_noreplace(source, dest)
    except BaseException:
        try:
            rename_noreplace(old, dest)
        except OSError:
            raise CetqlError(f"output '{target.given}' could not be replaced, and something took its place; its "
                             f"previous content is in '{old}'") from None  # fmt: skip
        raise
    return old


def _append_into(staging: Path, dest: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    for f in data_files(staging):
        try:
            rename_noreplace(f, dest / f.name)
        except FileExistsError:
            stem, dot, ext = f.name.partition(".")
            rename_noreplace(f, dest / f"{stem}-{tag}{dot}{ext}")


def _quiesce(spark, timeout: float = 30.0) -> None:
    """Cancel the session's jobs and wait until no task runs, so that none
    writes into a staging folder after it is removed."""
    if spark is None:
        return
    try:
        if type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.interruptAll()
            return
        sc = spark.sparkContext
        sc.cancelAllJobs()
        executors = sc._jsc.sc().statusTracker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not sc.statusTracker().getActiveJobsIds() and not any(
                e.numRunningTasks() for e in executors.getExecutorInfos()
            ):
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - a session that is gone runs nothing
        pass


# ---------------------------------------------------------------- DataFrames


def prepare_for_format(df, fmt: OutputFormat):
    """CSV cannot hold arrays or structs: events joined with ';', rows as JSON."""
    from pyspark.sql import functions as F

    if fmt != OutputFormat.CSV:
        return df
    for field in df.schema.fields:
        t = field.dataType.typeName()
        if field.name == "events" and t == "array":
            df = df.withColumn("events", F.concat_ws(";", F.col("events").cast("array<string>")))
        elif t in ("array", "struct", "map"):
            df = df.withColumn(field.name, F.to_json(F.col(f"`{field.name}`")))
    return df


def write(df, target, fmt: OutputFormat, mode: OutputMode = OutputMode.ERROR, inputs=()) -> int | None:
    """Write `df` to `target` (a Target, or a path resolved here); the rows
    written, or None when nothing was (mode ignore) or not counted (a URI)."""
    if not isinstance(target, Target):
        target = resolve_output(target, mode, inputs=inputs, fmt=fmt)
    if target.skip:
        return None
    out = prepare_for_format(df, fmt)
    if target.mode == OutputMode.APPEND and target.existed:
        check_append_shape(target, out, fmt)
    if target.kind == FILE:
        out = out.coalesce(1)
    writer = out.write.format(fmt.value)
    if fmt == OutputFormat.CSV:
        writer = writer.option("header", True)
    if target.uri is not None:
        writer.mode(target.mode.value).save(target.uri)
        return None
    with staged(target, df.sparkSession) as stage:
        writer.mode("error").save(str(stage.path))
        rows = count_rows(stage.path, fmt)
        if target.kind == FILE:
            stage.source = _single_file(stage.path, out, fmt)
    return rows if stage.written else None


def spark_type_name(t) -> str:
    """An Arrow type as Spark names it (`simpleString`): how a folder's
    results are compared before appending, whichever engine wrote them."""
    import pyarrow as pa

    from cetql.backends.inputs.sources import arrow_to_spark  # start-up cost: pyarrow, only when writing

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{spark_type_name(t.value_type)}>"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return arrow_to_spark(t)


def spark_json(schema) -> dict:
    """An Arrow schema as the JSON Spark keeps in its Parquet files' footers
    (so that an append compares types, as for Spark's own files)."""
    import pyarrow as pa

    def one(t):
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return {"type": "array", "elementType": one(t.value_type), "containsNull": True}
        if pa.types.is_decimal(t):
            return f"decimal({t.precision},{t.scale})"
        name = spark_type_name(t)
        return {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long"}.get(name, name)

    return {"type": "struct", "fields": [{"name": f.name, "type": one(f.type), "nullable": True, "metadata": {}}
                                         for f in schema]}  # fmt: skip


def write_batches(schema, batches, target: Target) -> int | None:
    """Write Arrow batches (the in-process engine's result) as one Parquet
    file in a folder laid out as Spark lays out its own (`part-…parquet`
    and `_SUCCESS`), through the same staging as `write`: the rows written,
    or None when nothing was (mode ignore)."""
    import pyarrow.parquet as pq

    if target.skip:
        return None
    if target.mode == OutputMode.APPEND and target.existed:
        _check_shape(target, [(f.name, spark_type_name(f.type)) for f in schema], OutputFormat.PARQUET)
    rows = 0
    with staged(target) as stage:
        stage.path.mkdir()
        part = stage.path / f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        spark_schema = {b"org.apache.spark.sql.parquet.row.metadata": json.dumps(spark_json(schema)).encode()}
        with pq.ParquetWriter(part, schema.with_metadata(spark_schema), compression="snappy",
                              use_deprecated_int96_timestamps=True) as out:  # as Spark writes timestamps by default
            for batch in batches:
                if batch.num_rows:
                    out.write_batch(batch)
                    rows += batch.num_rows
        (stage.path / "_SUCCESS").touch()
        if target.kind == FILE:
            stage.source = part
    return rows if stage.written else None


def write_file(target: Target, render) -> bool:
    """`render(path)` writes one file; it is moved into place as `target`.
    False when mode ignore found the target there."""
    if target.skip:
        return False
    with staged(target) as stage:
        render(stage.path)
    return stage.written


def _single_file(folder: Path, df, fmt: OutputFormat) -> Path:
    files = [f for f in data_files(folder) if f.is_file()]
    if len(files) == 1:
        return files[0]
    if files:
        raise CetqlError(f"Spark wrote {len(files)} files where one was asked for")
    empty = folder / f"empty.{fmt.value}"  # no rows: no part file
    with open(empty, "w", newline="", encoding="utf-8") as fh:
        if fmt == OutputFormat.CSV:
            csv.writer(fh).writerow(df.columns)
    return empty


def count_rows(folder: Path, fmt: OutputFormat) -> int:
    """Rows in a folder Spark wrote: Parquet footers, or lines of CSV/JSON files."""
    files = [f for f in folder.iterdir() if f.is_file() and not f.name.startswith(("_", "."))]
    if fmt == OutputFormat.PARQUET:
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    total = 0
    for f in files:
        if fmt == OutputFormat.CSV:  # records, not lines: a quoted value may hold a newline
            with open(f, newline="", encoding="utf-8") as fh:
                total += max(0, sum(1 for _ in csv.reader(fh)) - 1)
        else:
            with open(f, "rb") as fh:
                total += sum(1 for line in fh if line.strip())
    return total
