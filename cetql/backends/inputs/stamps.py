"""An input's files as the plan was made for them, checked when they are
read: one function, `check_unchanged`, that every engine's reader calls
(the Spark reader at once and again in the job that reads the files,
`spark.reader.unchanged`; the in-process engine when it opens them).

A file rewritten between planning and reading would be read with the
plan's columns and types, by position (CSV), with the old length (Spark's
listing): other columns, other trends, no error.  Its size and modification
time (to the nanosecond) are recorded when the reader describes it
(`sources.describe`) and carried in the plan's scan facts (`InputFacts`,
`ScanInput`); a file whose size or time differs, or that is gone, is refused
with a message that names it and says to run the query again."""

from __future__ import annotations

import os
from collections.abc import Iterable
from urllib.parse import unquote

from cetql.base.errors import SchemaError
from cetql.planner.semantics.sources import FileStamp


class InputChanged(SchemaError):
    """An input file changed between planning and reading (a ValueError, as
    every error of data that does not fit the plan)."""


def stamp(path) -> FileStamp:
    """A file as it is now."""
    st = os.stat(path)
    return FileStamp(str(path), st.st_size, st.st_mtime_ns)


def changed(stamps: Iterable[FileStamp], paths: Iterable[str] | None = None) -> str | None:
    """How the first file of `stamps` (of those among `paths`, when given)
    is no longer as planned ("file … changed since the query was planned
    (…)"), or None when every one is."""
    wanted = None if paths is None else {_plain(p) for p in paths}
    for s in stamps:
        if wanted is not None and _plain(s.path) not in wanted:
            continue
        try:
            now = stamp(s.path)
        except OSError:
            return f"file {s.path} was removed since the query was planned"
        if now.size != s.size:
            return f"file {s.path} changed since the query was planned (its size was {s.size:,} bytes, now {now.size:,})"
        if now.mtime_ns != s.mtime_ns:
            return f"file {s.path} changed since the query was planned (it was written again)"
    return None


def check_unchanged(stamps: Iterable[FileStamp], label: str, paths: Iterable[str] | None = None) -> None:
    """Refuse an input whose files are not as the plan was made for them."""
    why = changed(stamps, paths)
    if why is not None:
        raise InputChanged(f"input '{label}': {why}; run the query again to plan it for the input as it is now")


def _plain(path: str) -> str:
    """A local path, also when Spark names it as a URI (file:/…, file:///…, %-escaped)."""
    if path.startswith("file:"):
        path = unquote(path[5:])
        while path.startswith("//"):
            path = path[1:]
    return os.path.normpath(path)
