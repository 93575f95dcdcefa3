"""Writing beside the target and moving into place without replacing
anything (`staged`): a rename that cannot replace (Linux `renameat2`), an
overwrite that swaps the new content in and removes the old only once the
new is in place, and staging left by a killed process found and removed
once its owner is gone."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import signal
import stat
import sys
import threading
import time
import uuid
from pathlib import Path

from cetql.base.errors import CetqlError
from cetql.base.options import OutputMode
from cetql.base.processes import alive, command, start_time
from cetql.surfaces.output.shapes import data_files
from cetql.surfaces.output.target import FOLDER, Target, _what

_AT_FDCWD = -100


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


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
    """SIGTERM or SIGHUP while a result was being written (handled as Ctrl-C
    is, then the process ends by that signal)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__()
        self.signum = signum


# the signals that end a writing process and can be caught: each removes the staging first
_ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class staged:
    """`with staged(target, spark) as stage:` write to `stage.path` (absent
    until written); set `stage.source` to what inside it is the result (it
    is `stage.path` itself by default).  When the block ends well the result
    is moved into place (`stage.written` False when mode ignore found the
    target there by then); when it fails or is interrupted (Ctrl-C, SIGTERM)
    the staging is removed, after cancelling `spark`'s jobs (and waiting
    for a write `stage.call` runs to return)."""

    def __init__(self, target: Target, spark=None):
        self.target, self.spark = target, spark
        self.path = staging_path(target.path)
        self.source = self.path
        self.written = False
        self._saved: dict = {}
        self._defer = False
        self._pending: int | None = None
        self._calls: list[threading.Event] = []

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
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)

    def call(self, fn):
        """`fn()`, a Spark action that writes into `path`, run in a thread of
        its own: interrupted, this thread returns at once, and the staging is
        removed only once `fn` has returned (its jobs cancelled until then —
        a job still being planned when Ctrl-C came would make the folder
        again after its removal)."""
        if self.spark is None or type(self.spark).__module__.startswith("pyspark.sql.connect"):
            return fn()
        done, box = threading.Event(), []

        def work():
            try:
                box.append((True, fn()))
            except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
                box.append((False, e))
            finally:
                done.set()

        self._calls.append(done)
        threading.Thread(target=work, name="cetql-write", daemon=True).start()
        done.wait()
        ok, value = box[0]
        if not ok:
            from cetql.backends.spark.failures import io_problem  # start-up cost: pyspark's, for a Spark write only

            problem = io_problem(value)
            if problem is not None:
                raise self._failed(problem) from None
            raise value
        return value

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in _ENDING:
                if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                    self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, typ, exc, _tb):
        self._defer = True  # from here a signal waits until the result is in place, or gone
        try:
            if typ is None:
                old = None
                try:
                    self.written, old = _place(self.source, self.target)
                except OSError as e:
                    raise self._failed(_reason(e)) from None
                finally:
                    _discard(old)
            elif issubclass(typ, KeyboardInterrupt):
                _quiesce(self.spark, self._calls)
                _stop_if_ours(self.spark)
        finally:
            _discard(self.path)
            for sig, handler in self._saved.items():
                signal.signal(sig, handler)
        pending = self._pending
        ending = exc.signum if isinstance(exc, Terminated) else None
        if ending is None and pending not in (None, signal.SIGINT) and self._saved.get(pending) == signal.SIG_DFL:
            ending = pending
        if ending is not None:
            sys.stdout.flush()  # what the signal would have done, now that nothing is left behind
            sys.stderr.flush()
            if self._saved.get(ending, signal.SIG_DFL) == signal.SIG_DFL:
                os.kill(os.getpid(), ending)
            raise Terminated(ending)
        if pending is not None and typ is None:
            self._deliver(pending, None)
        if typ is not None and issubclass(typ, OSError):
            raise self._failed(_reason(exc)) from None
        return False

    def _failed(self, why: str) -> CetqlError:
        """The output could not be written (a full or read-only file system…), said by its name, not the staging's."""
        return CetqlError(f"output '{self.target.given}' could not be written: {why}; nothing was written there")


def _reason(e: OSError) -> str:
    """What the system said, in its own words (pyarrow words it its way, with the errno inside)."""
    code = e.errno
    if not code:
        m = re.search(r"\[errno (\d+)\]", str(e))
        code = int(m[1]) if m else None
    return os.strerror(code) if code else (e.strerror or str(e))


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


def _stop_if_ours(spark) -> None:
    """Stop a session this process started, before its staging is removed:
    a cancelled write's job still ends in the JVM after the action returned
    (its committer making the folder again, empty, as the process ended);
    stopped, the JVM runs nothing more.  A user's session is left running."""
    if spark is None or type(spark).__module__.startswith("pyspark.sql.connect") or not _ends_with_this_run():
        return
    from cetql.backends.spark.session import started_here  # start-up cost: pyspark's, for an interrupted Spark write

    if started_here(spark):
        with contextlib.suppress(Exception):  # a session that is gone runs nothing
            spark.stop()


def _ends_with_this_run() -> bool:
    """Whether this process is a `cetql run` command, which ends with its run
    (`processes.command`): only there is the session stopped; a REPL's, a
    program's that calls cetql, or a test process's stays theirs to use."""
    return command() == "run"


def _quiesce(spark, calls=(), timeout: float = 30.0) -> None:
    """Cancel the session's jobs until the writes `calls` ran have returned
    and no task runs, so that nothing writes into a staging folder after it
    is removed."""
    if spark is None:
        return
    try:
        if type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.interruptAll()
            return
        sc = spark.sparkContext
        executors = sc._jsc.sc().statusTracker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            sc.cancelAllJobs()  # again each time: a job that began since
            if all(c.is_set() for c in calls) and not sc.statusTracker().getActiveJobsIds() and not any(
                e.numRunningTasks() for e in executors.getExecutorInfos()
            ):
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - a session that is gone runs nothing
        pass
