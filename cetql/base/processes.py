"""Processes as the operating system names them: whether one exists, when it
started (with its pid, that names it even after the pid is reused), and a
child that dies with its parent.  Standard library only: the command's first
step (`surfaces.cli.launch`) uses it before anything else of cetql loads."""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path


def start_time(pid: int) -> int:
    """A process's start (clock ticks since boot; 0 when unknown): with its
    pid it names the process, even after the pid is reused."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return 0 if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return 0


def pid_exists(pid: int) -> bool:
    """Does a process numbered `pid` exist (whoever owns it)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def alive(pid: int, start: int) -> bool:
    """Is the process that was `pid` started at `start` still running?"""
    if not pid_exists(pid):
        return False
    now = start_time(pid)
    if Path("/proc/self/stat").exists() and now == 0:
        return False  # a zombie, or gone since
    return not (start and now and now != start)


def die_with_parent() -> None:
    """This process gets SIGKILL when its parent ends (Linux; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_COMMAND: list[str] = []  # the cetql command this process is, once its entry point said so


def begin_command(name: str) -> None:
    """This process is the `cetql` command `name` (`run`, `repl`, …) and
    ends when it does (`surfaces.cli.launch.command`)."""
    _COMMAND[:] = [name]


def command() -> str | None:
    """The cetql command this process is, or None: a program or a test
    that calls cetql goes on after it."""
    return _COMMAND[0] if _COMMAND else None
