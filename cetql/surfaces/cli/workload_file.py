"""A workload's queries from the command line: several query files
(`cetql run q1.cet q2.cet …`, each named by its file's stem) or one
workload file (`.cetw`):

    # comments start with '#'
    rise: queries/rise.cet            a name, then a query file (relative to this file)
    drop: PATTERN SEQ(Stock a, Stock b)   or the query itself, inline; its
          WHERE a.price > b.price         continuation lines are indented
          AGG COUNT(*) WITHIN 100

A name starts a line (a letter or digit, then letters, digits, `_`, `-`
or `.`) and ends with `:`; it names the query's output folder
(`--output DIR` writes `DIR/<name>/`).  A value that is one word ending in
`.cet` is a file (a `# …` comment may follow it); anything else is the
query's text.  Why not TOML or
YAML: a query is text with quotes, brackets and `--` comments of its own;
this format takes it as written, without quoting or escaping.
"""

from __future__ import annotations

import re
from pathlib import Path

from cetql.base.errors import Pos, UsageError
from cetql.surfaces.arguments import read_query

ENTRY = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(.*)")
EXTENSION = ".cetw"


def is_workload(args) -> bool:
    """Several query files, or one workload file."""
    return bool(getattr(args, "more_queries", None)) or str(args.query_file).endswith(EXTENSION)


def read_workload(args) -> dict[str, str]:
    """{name: query text}, in the order given."""
    files = [args.query_file, *(getattr(args, "more_queries", None) or [])]
    if len(files) == 1:
        return parse_workload(read_query(files[0]), Path(files[0]).parent, files[0])
    if any(f.endswith(EXTENSION) for f in files):
        raise UsageError("give one workload file (.cetw), or query files, not both")
    if files.count("-") > 1:
        raise UsageError("standard input (-) can be read once")
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for f in files:
        name = "stdin" if f == "-" else Path(f).stem
        if name in seen:
            raise UsageError(f"two queries named {name!r} ({seen[name]} and {f}): name them in a workload file "
                             f"(name: path, one a line; see cetql run -h)")  # fmt: skip
        seen[name] = f
        out[name] = read_query(f)
    return out


def parse_workload(text: str, base: Path, label: str = "the workload file") -> dict[str, str]:
    entries = _entries(text, label)
    if not entries:
        raise UsageError(f"{label} names no query (one 'name: query file or query' a line)")
    out: dict[str, str] = {}
    for name, lines, number, _ in entries:
        if name in out:
            raise UsageError(f"{label}, line {number}: a second query named {name!r}")
        out[name] = _query(lines, base, label, number)
    return out


def _entries(text: str, label: str) -> list[tuple[str, list[str], int, list[tuple[int, int]]]]:
    """(name, its lines, the line it starts on, where each of its lines is in
    the file: (line, column before its first character)) of each entry."""
    entries: list[tuple[str, list[str], int, list[tuple[int, int]]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if not entries:
                raise UsageError(f"{label}, line {number}: an indented line before any 'name:'")
            entries[-1][1].append(line)
            entries[-1][3].append((number, len(line) - len(line.lstrip())))
            continue
        m = ENTRY.fullmatch(line.rstrip())
        if m is None:
            raise UsageError(f"{label}, line {number}: expected 'name: query file or query', not {line.strip()!r}")
        value = m.group(2)
        entries.append((m.group(1), [value], number, [(number, m.start(2) + len(value) - len(value.lstrip()))]))
    return entries


def locate(args, name: str | None, pos: Pos | None) -> tuple[str | None, Pos | None, str | None]:
    """Where a workload query's error is, in the file the user wrote it in:
    (that file, the place in it, the file's text for the excerpt; None: the
    query's own text).  Query files: the query's file and its own place; a
    workload file's inline query: the workload file, the place moved to its
    line and column there; one it names: that query file."""
    files = [args.query_file, *(getattr(args, "more_queries", None) or [])]
    if name is None:
        return None, pos, None
    if len(files) > 1:  # query files: the query's own, its text for the excerpt (an error raised without it)
        found = next((f for f in files if ("stdin" if f == "-" else Path(f).stem) == name), None)
        return (found, pos, read_query(found)) if found not in (None, "-") else (None, pos, None)
    text = read_query(files[0])
    for entry, lines, _, places in _entries(text, files[0]):
        if entry != name:
            continue
        first = _file_of(lines)
        if first is not None:
            path = Path(first) if Path(first).is_absolute() else Path(files[0]).parent / first
            return str(path), pos, read_query(str(path)) if path.is_file() else None
        kept = [p for p, x in zip(places, lines) if x.strip()]  # the query's lines, as `_query` joins them
        if pos is None or not 1 <= pos.line <= len(kept):
            return files[0], None, None
        line, column = kept[pos.line - 1]
        return files[0], Pos(line, column + pos.column), text
    return files[0], pos, None


def _file_of(lines: list[str]) -> str | None:
    """The query file an entry names: one word ending in `.cet`, a `# …`
    comment after it and comment lines below it allowed (None: the entry
    is a query's text)."""
    first = re.split(r"\s#", lines[0], maxsplit=1)[0].strip()
    more = [x.strip() for x in lines[1:] if x.strip() and not x.strip().startswith(("#", "--"))]
    return first if not more and first.endswith(".cet") and " " not in first else None


def _query(lines: list[str], base: Path, label: str, number: int) -> str:
    first, rest = lines[0].strip(), [x.strip() for x in lines[1:]]
    if (file := _file_of(lines)) is not None:
        path = Path(file) if Path(file).is_absolute() else base / file
        if path.is_dir():
            raise UsageError(f"{label}, line {number}: '{file}' is a folder, not a query file (read beside {label})")
        if not path.is_file():
            raise UsageError(f"{label}, line {number}: query file '{file}' does not exist (read beside {label})")
        return read_query(str(path))
    text = "\n".join(x for x in [first, *rest] if x)
    if not text:
        raise UsageError(f"{label}, line {number}: no query after the name")
    return text
