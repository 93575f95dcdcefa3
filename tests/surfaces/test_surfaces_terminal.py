"""The terminal: the progress line is erased before anything else is printed,
whatever the width, and never shares a row with results or the summary.

What the terminal shows is computed by a small screen model (below) from the
bytes a real pty received: printable characters wrap at the width, `\\r`,
`\\n`, cursor up, erase to the end of the line or screen; colours ignored."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import termios
import threading
import unicodedata
from pathlib import Path

import pytest
from budget import budget
from hypothesis import given, settings
from hypothesis import strategies as st

from cetql.surfaces import progress as P
from cetql.surfaces.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
SPINNER = set(P.SPINNER)


class Screen:
    """A terminal that reflows on resize (as VTE, iTerm2, kitty, tmux and
    Windows Terminal do): the text is kept as logical lines (ended by a line
    feed) wrapped at the current width; the cursor is a place in a logical
    line.  Handles printable characters (with the pending wrap at the last
    column), `\r`, `\n` (as a tty delivers it: `\r\n`), cursor up (`ESC[nA`, `ESC[nF`), erase to the end of
    the row or screen (`ESC[K`, `ESC[J`); ignores other escapes (colours)."""

    def __init__(self, width: int):
        self.width = width
        self.lines = [""]
        self.line = self.off = 0
        self.pending = False  # the last column was written: the next character wraps

    def _rows(self, text: str) -> int:
        return max(1, -(-len(text) // self.width))

    def _where(self) -> tuple[int, int]:
        """(row within the logical line, column) of the cursor."""
        if self.pending:
            return self.off // self.width - 1, self.width - 1
        return self.off // self.width, self.off % self.width

    def feed(self, raw: str, width: int | None = None) -> Screen:
        if width is not None and width != self.width:  # reflow; a cursor just after a full row's text stays there
            self.width = width
            self.pending = 0 < self.off == len(self.lines[self.line]) and self.off % width == 0
        i = 0
        while i < len(raw):
            ch = raw[i]
            if ch == "\x1b":
                m = re.match(r"\x1b\[([0-9;?]*)([A-Za-z])", raw[i:]) or re.match(r"\x1b[()].|\x1b.", raw[i:])
                i += len(m.group(0))
                if m.re.groups == 2:
                    self._escape(int(m.group(1)) if m.group(1).isdigit() else 0, m.group(2))
                continue
            i += 1
            if ch == "\r":
                row, _ = self._where()
                self.off, self.pending = row * self.width, False
            elif ch == "\n":  # as a tty gives it (ONLCR): to the start of the next row
                row, _ = self._where()
                self.pending = False
                if row + 1 < self._rows(self.lines[self.line]):
                    self.off = (row + 1) * self.width
                else:
                    self.line += 1
                    if self.line == len(self.lines):
                        self.lines.append("")
                    self.off = 0
            elif ch >= " ":
                text = self.lines[self.line].ljust(self.off)
                self.lines[self.line] = text[: self.off] + ch + text[self.off + 1 :]
                self.off += 1
                self.pending = self.off % self.width == 0
        return self

    def _escape(self, n: int, cmd: str) -> None:
        if cmd in "AF":
            row, col = self._where()
            target = sum(self._rows(x) for x in self.lines[: self.line]) + row - max(n, 1)
            self.line, self.pending = 0, False
            while target >= self._rows(self.lines[self.line]) and self.line + 1 < len(self.lines):
                target -= self._rows(self.lines[self.line])
                self.line += 1
            self.off = max(0, target) * self.width + (0 if cmd == "F" else col)
        elif cmd == "J" and n == 0:
            self.lines[self.line] = self.lines[self.line][: self.off]
            del self.lines[self.line + 1 :]
        elif cmd == "K":
            row, _ = self._where()
            text = self.lines[self.line]
            self.lines[self.line] = text[: self.off if n == 0 else row * self.width] + text[(row + 1) * self.width :]

    def rows(self) -> list[str]:
        out = []
        for text in self.lines:
            out += [text[k : k + self.width].rstrip() for k in range(0, max(len(text), 1), self.width)]
        while out and not out[-1]:
            out.pop()
        return out


def screen(raw: str, width: int) -> list[str]:
    """The rows a terminal of `width` columns shows after `raw` (scrollback
    included: no height)."""
    return Screen(width).feed(raw).rows()


def _progress_on(text: str) -> bool:
    return "running" in text or "tasks," in text or bool(SPINNER & set(text))


# ---------------------------------------------------------------- the line alone


@settings(max_examples=budget(300), deadline=None)
@given(label=st.text(min_size=0, max_size=120), width=st.integers(1, 300), stages=st.integers(0, 50),
       done=st.integers(0, 10**6), total=st.integers(0, 10**6), elapsed=st.floats(0, 10**6), frame=st.integers(0, 99))
def test_the_line_never_wraps(label, width, stages, done, total, elapsed, frame):
    text = P.line(label, stages, done, total, elapsed, frame, width)
    columns = [0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text]
    assert sum(columns) <= width - 1 and all(c.isprintable() for c in text)


class _Tty:
    """A terminal stream for `Display`: what was written, with the width the
    terminal had at the time."""

    def __init__(self):
        self.width = 80
        self.parts: list[tuple[str, int]] = []

    def write(self, text):
        self.parts.append((text, self.width))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return True


@settings(max_examples=budget(100), deadline=None)
@given(widths=st.lists(st.integers(2, 200), min_size=1, max_size=6), label=st.text(min_size=1, max_size=90),
       before=st.text(alphabet="xy \n", max_size=60).map(lambda t: t + "\n" if t else t), result=st.text(alphabet="abc ,\n", max_size=200))
def test_the_line_is_erased_whatever_the_width_does(widths, label, before, result):
    """What was on the terminal (whole lines: the line starts at the start
    of a row), then progress frames drawn at widths that change between
    frames (a resized terminal), then a result: the screen is what the
    earlier text and the result alone give."""
    term = _Tty()
    term.write(before)
    shown = P.Display(term, label, status=lambda: (1, 3, 7))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "terminal_width", lambda stream, default=80: stream.width)
        for w in widths:
            term.width = w
            shown.draw()
        shown.guard(term).write(result)
        shown.stop()  # as leaving `progress(…)` does, if nothing was written
    got = Screen(80)
    for text, width in term.parts:
        got.feed(text, width)
    assert got.rows() == Screen(80).feed(before).feed(result, widths[-1]).rows()


# ---------------------------------------------------------------- a real pty


def _pty(columns: int):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    got: list[bytes] = []

    def read():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            got.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out = os.fdopen(os.dup(slave), "w", encoding="utf-8", buffering=1)
    err = os.fdopen(os.dup(slave), "w", encoding="utf-8", buffering=1)
    return master, slave, out, err, reader, got


def test_progress_is_gone_before_the_table_in_a_narrow_terminal(spark, monkeypatch, tmp_path):
    """`cetql run` on a 40-column pty (standard output and error both the
    terminal): the progress line was drawn, the table starts on a row of its
    own, the summary is whole on the screen, and nothing of the progress
    line is left."""
    columns = 40
    data = tmp_path / "checks.csv"
    data.write_text("".join(CHECKS.read_text().splitlines(keepends=True)[:400]))
    master, slave, out, err, reader, got = _pty(columns)
    monkeypatch.setenv("COLUMNS", str(columns))  # rich sizes the table from it when fds 0-2 are not the pty
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    try:
        code = main(["run", str(ROOT / "examples" / "kiting.cet"), "--input", str(data), "--id-col", "id", "--engine",
                     "spark"])  # Spark's progress line  # fmt: skip
    finally:
        out.flush()
        err.flush()
        out.close()
        err.close()
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    raw = b"".join(got).decode("utf-8", "replace")
    assert code == 0, raw[-2000:]
    assert "running kiting.cet" in raw  # the line was drawn while the query ran
    top = raw.index("┏")
    assert not _progress_on(raw[top:]), "progress drawn after the table began"
    rows = screen(raw, columns)
    assert not any(_progress_on(r) for r in rows), "\n".join(rows)
    table = next(i for i, r in enumerate(rows) if "┏" in r)
    assert rows[table].startswith("┏")  # not glued to anything
    summary = next(i for i, r in enumerate(rows) if re.match(r"\d[\d,]* trends; ", r))
    text = " ".join(rows[summary:])
    assert re.match(r"\d[\d,]* trends; [\d,]+ distinct across windows; by length 1: [\d,]+", text), text
    assert "(first 20 shown)" in text
