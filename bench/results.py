"""bench/RESULTS.md is written by several scripts: each replaces its own
section (from its `## ` heading to the next) and leaves the rest as it was,
hand-written notes included."""

from __future__ import annotations

from pathlib import Path

TITLE = "# Benchmarks\n"
NOTES = "## Notes"


def replace_section(path: str | Path, heading: str, text: str) -> None:
    """Put `text` (which starts with `heading`) in place of the section
    `heading` of the file at `path`, or, if there is none, before the
    hand-written notes (or at the end)."""
    path = Path(path)
    old = path.read_text() if path.exists() else TITLE
    text = text.rstrip("\n") + "\n"
    start = old.find(heading + "\n")
    notes = old.find("\n" + NOTES + "\n")
    if start < 0 and notes >= 0:
        new = old[: notes + 1] + text + "\n" + old[notes + 1 :]
    elif start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(heading))
        new = old[:start] + text + (old[end:] if end >= 0 else "")
    path.write_text(new)
    print(f"wrote {path}")
