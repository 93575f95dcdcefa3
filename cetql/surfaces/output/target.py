"""What a writer writes to: a resolved target (a local folder or file, or a
URI handed to Spark's writer) and the words refusals use."""

from __future__ import annotations

import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from cetql.base.errors import UsageError
from cetql.base.options import OutputMode

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


def _refuse(given: str, why: str) -> UsageError:
    return UsageError(f"output '{given}' {why}")


def _what(mode_bits: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):  # fmt: skip
        if test(mode_bits):
            return name
    return "not a file or folder"
