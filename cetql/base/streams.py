"""Standard error as cetql writes to it: what it says there (a summary, a
warning, an error) is never what fails a run.  A full or closed standard
error (`2>/dev/full`, a terminal gone) loses the words, not the result:
the run's status is the run's.  Standard library only (the serve's
children and the command's first step use it)."""

from __future__ import annotations

import io
import os


class Unfailing(io.TextIOBase):
    """A text stream on file descriptor `fd` whose writes never raise: each
    goes out at once (no buffer left to fail again at exit)."""

    def __init__(self, fd: int, encoding: str = "utf-8"):
        super().__init__()
        self._fd, self._encoding = fd, encoding

    @property
    def encoding(self) -> str:
        return self._encoding

    @property
    def errors(self) -> str:
        return "backslashreplace"

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = text.encode(self._encoding, "backslashreplace")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # the words are lost; the run goes on
        return len(text)


def unfailing_stderr(stream):
    """`stream` (the process's standard error) as an `Unfailing` one on its descriptor; as it was when it has none."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream
    return Unfailing(fd, getattr(stream, "encoding", None) or "utf-8")
