"""A stream's output folder, where every file a reader finds is whole.

Spark's file sink writes each task's part file under its final name and
records the micro-batch's files in its log (`_spark_metadata`) only once
all are written: Spark's own readers follow the log, but pyarrow, pandas
or a shell glob read every `part-*` file, and a stream killed mid-batch
leaves one cut short (often empty), which they refuse.  Spark offers no
other name to write under, so the sink writes into a hidden folder inside
the output (`SINK`: readers skip names that start with a dot), and a file
the log lists is moved out of it, whole, by a rename (`publish`), after
each micro-batch and when the stream starts and stops.  What the log does
not list is a micro-batch cut short: removed when no query writes
(`tidy`; Spark writes that micro-batch again from the checkpoint).

Exactly once still holds: a file is listed once, and a rename either
happened or did not (a stream killed between a commit and its rename
moves the file when it starts again)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

SINK = ".cetql-stream"


def sink_of(output: Path) -> Path:
    """Where Spark's file sink writes for `output`."""
    return output / SINK


def committed(sink: Path) -> list[Path]:
    """The files a file sink's log lists (every committed micro-batch's)."""
    log = sink / "_spark_metadata"
    files = []
    for f in sorted(log.iterdir()) if log.is_dir() else []:
        if not f.name.split(".")[0].isdigit() or f.name.endswith(".tmp") or f.name.startswith("."):
            continue  # Spark's checksums and files being written
        for line in f.read_text().splitlines()[1:]:
            entry = json.loads(line)
            if entry.get("action") == "add":
                files.append(Path(unquote(urlparse(entry["path"]).path)))
    return files


def publish(output: Path) -> int:
    """Move each committed file still in the sink into `output`; how many were moved."""
    sink, moved = sink_of(output), 0
    for f in committed(sink):
        if f.parent != sink or not f.exists():
            continue  # moved already
        crc = f.with_name(f".{f.name}.crc")  # the local file system's checksum, kept with its file
        with contextlib.suppress(FileNotFoundError):
            os.rename(crc, output / crc.name)
        os.rename(f, output / f.name)
        moved += 1
    return moved


def tidy(output: Path) -> None:
    """With no query writing: the sink's part files no commit lists (a
    micro-batch cut short) removed."""
    sink = sink_of(output)
    if not sink.is_dir():
        return
    listed = {f.name for f in committed(sink)}
    for f in sink.iterdir():
        name = f.name[1:].removesuffix(".crc") if f.name.startswith(".") and f.name.endswith(".crc") else f.name
        if f.is_file() and name.startswith("part-") and name not in listed:
            f.unlink(missing_ok=True)
