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

import os
import re
import stat
from pathlib import Path

from cetql.base.errors import UsageError
from cetql.base.options import OutputFormat, OutputMode
from cetql.surfaces.output.shapes import check_append_format
from cetql.surfaces.output.staging import recover
from cetql.surfaces.output.target import FILE, FOLDER, Target, _refuse, _replace_hint, _what

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(.*)$", re.S)


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
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"the folder of output '{given}' ({parent}) cannot be written: {_unwritable(parent)}")
    return parent


def _unwritable(folder: Path) -> str:
    """Why nothing can be made in `folder`, in a few words."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except OSError:
        pass
    return "you have no permission to write there"
