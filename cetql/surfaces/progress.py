"""Progress of a running query on the terminal: Spark's stages and tasks on
one line of standard error while the query runs, erased for good before
anything else is printed.

Shown only when standard error is a terminal (never in pipes, files or
logs).  Classic sessions are polled through Spark's status tracker; Spark
Connect sessions report through their progress handler.

The invariants, whatever the terminal's width:

- the line is never wider than the terminal less one column (measured at
  each draw, so a resized terminal is followed), so it takes one row and
  never wraps; erasing it is `\\r` and erase-to-end-of-screen, after moving
  up over the rows it would take if the terminal has shrunk since;
- the first write to standard output or standard error by anyone else
  (results, a summary, a message) erases it and ends the display: inside
  `progress(…)`, `sys.stdout` and `sys.stderr` are guarded, and
  `Display.guard(stream)` guards any other stream.  So the line never
  shares a row with results or the summary.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import unicodedata
from contextlib import contextmanager

from cetql.backends.spark.connect import is_connect

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ERASE = "\r\x1b[J"  # to the start of the row, then erase to the end of the screen


def _classic_status(spark):
    tracker = spark.sparkContext.statusTracker()

    def status():
        done = total = 0
        stages = tracker.getActiveStageIds()
        for sid in stages:
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return len(stages), done, total

    return status


def terminal_width(stream, default: int = 80) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return default
    return columns if columns > 0 else default


def _narrow(text: str) -> str:
    """`text` with one column per character: anything a terminal would draw
    wider, narrower or not at all (wide, combining, control) becomes `?`."""
    return "".join(
        c if c.isprintable() and not unicodedata.combining(c) and unicodedata.east_asian_width(c) not in "WF" else "?"
        for c in text
    )


def line(label: str, stages: int, done: int, total: int, elapsed: float, frame: int, width: int) -> str:
    """The progress line, at most `width - 1` columns (one row, never
    wrapping): spinner, label, bar, tasks, elapsed time; the bar goes first
    when space is short, then the tail of the text."""
    label = _narrow(label)
    clock = f"{int(elapsed) // 60}:{int(elapsed) % 60:02d}"
    tasks = f"{done}/{total} tasks, {stages} stage(s)" if total else "starting"
    head = f"{SPINNER[frame % len(SPINNER)]} {label}"
    tail = f" {tasks} {clock}"
    room = width - 1 - len(head) - len(tail) - 2
    bar = ""
    if total and room >= 10:
        n = min(room, 40)
        filled = n * min(done, total) // total
        bar = " " + "━" * filled + "╺" * (n - filled)
    text = head + bar + tail
    return text[: max(0, width - 1)]


class Display:
    """One progress line on `stream`; `stop()` erases it for good."""

    def __init__(self, stream, label: str, status=None):
        self.stream = stream
        self.label = label
        self.status = status  # () -> (stages, done, total), polled; or None (pushed by `show`)
        self.numbers = (0, 0, 0)
        self.started = time.monotonic()
        self.stopped = False
        self._drawn = 0  # characters of the line on the screen now
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cetql-progress", daemon=True)
        self._frame = 0

    def start(self) -> Display:
        self._thread.start()
        return self

    def show(self, stages: int, done: int, total: int) -> None:
        self.numbers = (stages, done, total)

    def _run(self) -> None:
        while not self._wake.wait(0.25):
            if self.status is not None:
                try:
                    self.show(*self.status())
                except Exception:  # noqa: BLE001 - a session going away: stop showing, never fail the query
                    self.status = None
            self.draw()

    def _erase(self) -> None:
        if not self._drawn:
            return
        rows = -(-self._drawn // max(1, terminal_width(self.stream)))  # more than one if the terminal shrank
        self.stream.write((f"\x1b[{rows - 1}A" if rows > 1 else "") + ERASE)
        self._drawn = 0

    def draw(self) -> None:
        with self._lock:
            if self.stopped:
                return
            self._frame += 1
            text = line(self.label, *self.numbers, time.monotonic() - self.started, self._frame,
                        terminal_width(self.stream))  # fmt: skip
            try:
                self._erase()
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # the terminal went away
                self.stopped = True
                return
            self._drawn = len(text)

    def stop(self) -> None:
        """Erase the line and end the display (idempotent)."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            try:
                self._erase()
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1)

    def guard(self, stream):
        """`stream`, whose first write ends the display first."""
        return _Guarded(stream, self)


class _Guarded:
    """A text stream that erases the progress line before its first write."""

    def __init__(self, stream, display: Display):
        self._stream = stream
        self._display = display

    def write(self, text):
        if text:
            self._display.stop()
        return self._stream.write(text)

    def writelines(self, lines):
        self._display.stop()
        return self._stream.writelines(lines)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _Off:
    """No display (standard error is not a terminal)."""

    def stop(self) -> None:
        pass

    def guard(self, stream):
        return stream


@contextmanager
def progress(spark, label: str, stream=None):
    """Show `label` with Spark's progress while the block runs; yields the
    display (`stop()`, `guard(stream)`)."""
    stream = stream or sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        yield _Off()
        return
    handler = None
    if is_connect(spark):
        display = Display(stream, label)

        def handler(stages=None, **_):  # noqa: E306 - Spark Connect's callback
            items = list(stages or [])
            display.show(len(items), sum(s.num_completed_tasks for s in items), sum(s.num_tasks for s in items))

        try:
            spark.registerProgressHandler(handler)
        except Exception:  # noqa: BLE001 - an older server: no numbers, the line still says it runs
            handler = None
    else:
        display = Display(stream, label, _classic_status(spark))
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = display.guard(sys.stdout), display.guard(sys.stderr)
    display.start()
    try:
        yield display
    finally:
        display.stop()
        if isinstance(sys.stdout, _Guarded) and sys.stdout._display is display:
            sys.stdout = saved[0]
        if isinstance(sys.stderr, _Guarded) and sys.stderr._display is display:
            sys.stderr = saved[1]
        if handler is not None:
            try:
                spark.removeProgressHandler(handler)
            except Exception:  # noqa: BLE001
                pass
