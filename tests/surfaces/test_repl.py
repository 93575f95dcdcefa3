"""`cetql repl` in a real terminal (a pty, through pexpect), and its entry
rules and commands without one."""

from __future__ import annotations

import io
import os
import re
import sys
import termios
import time
from pathlib import Path

import pexpect
import pytest

from cetql.surfaces.repl import Shell, is_complete
from cetql.surfaces.repl.loop import _entries_from

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
COUNT = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50 AGG COUNT(*)"


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_entry_rules():
    assert is_complete(":quit")
    assert is_complete("PATTERN A+ a[] WITHIN 3;")
    assert is_complete("PATTERN A+ a[]\nWITHIN 3\n")  # a blank line ends it
    assert not is_complete("PATTERN A+ a[]")
    assert not is_complete("PATTERN A+ a[]\nWITHIN 3")
    script = io.StringIO(":input x.csv\nPATTERN A+ a[]\nWITHIN 3;\nPATTERN B+ b[]\n\n:quit\n")
    assert list(_entries_from(script)) == [":input x.csv", "PATTERN A+ a[]\nWITHIN 3;\n", "PATTERN B+ b[]\n", ":quit"]


def test_completion_offers_keywords_variables_and_columns():
    shell = Shell(data=str(CHECKS))
    shell.set_input(str(CHECKS))
    assert "type" in shell.words("PATTERN Check+ c[] WHERE c.ty")
    assert shell.words("PATTERN Check+ c[] WHERE c.s") == ["src"]
    assert "WHERE" in shell.words("PATTERN Check+ c[] WH")
    assert "Check" in shell.words("PATTERN Check+ c[] WHERE Ch")
    assert ":explain" in shell.words(":ex")


def test_commands_without_spark(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(out=out, err=err)
    shell.handle(":param ratio=1.5")
    shell.handle(":explain PATTERN S+ s[] WHERE s[i].x > ratio * s[i-1].x WITHIN 10")
    shell.handle("PATTERN S+ s[ WITHIN 10;")
    shell.handle("PATTERN S+ s[] WITHIN 10;")  # no input yet
    shell.handle(":save x.csv")
    shell.handle(":nope")
    assert shell.handle(":quit") is False
    assert "ratio=1.5" in out.getvalue() and "plan:" in out.getvalue()
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("syntax error: 1:") and lines[2].strip().endswith("^")
    assert "no input" in lines[3]
    assert ":save writes the last result" in lines[4]
    assert "unknown command ':nope'" in lines[5]
    assert shell._spark is None  # nothing above needed Spark


def test_add_refuses_a_name_one_held_folder_has_in_another_case():
    """`:add up` beside a held `Up`: refused at once (a workload's names are
    its output folders, one where case is not told apart), the held query
    kept; `:add Up` again replaces it."""
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(out=out, err=err)
    query = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10"
    shell.handle(f":add Up {query}")
    shell.handle(f":add up {query}")
    shell.handle(f":add Up {query}")
    assert "queries 'Up' and 'up': their output folders are one" in err.getvalue()
    assert list(shell.held) == ["Up"] and shell._spark is None


def _wait_for_signals(child, timeout: float = 180) -> None:
    """Until the terminal turns Ctrl-C into SIGINT again (ISIG set: the
    prompt has left raw mode); the timeout only fails a hang."""
    deadline = time.monotonic() + timeout
    while not termios.tcgetattr(child.child_fd)[3] & termios.ISIG:
        assert time.monotonic() < deadline, "the prompt never gave the terminal back"
        time.sleep(0.05)


def _interrupt(child, tries: int = 20) -> None:
    """Ctrl-C until the running query says it was cancelled; its answer
    first fails.  A Ctrl-C can be lost: prompt_toolkit leaves raw mode before
    it gives SIGINT back, and one in that gap reaches its handler, whose loop
    is ending (a wider gap on a loaded machine)."""
    for _ in range(tries):
        child.sendintr()
        if child.expect(["cancelled", r"answered in", pexpect.TIMEOUT], timeout=3) == 0:
            return
        assert child.match is pexpect.TIMEOUT, "the query ran to its answer: Ctrl-C did not cancel it"
    raise AssertionError(f"{tries} Ctrl-C in {3 * tries} s and the query was neither cancelled nor answered")


@pytest.mark.spark  # --master local[2]
@pytest.mark.slow
def test_repl_in_a_terminal(tmp_path):
    """Ctrl-C while the first query waits, then a two-line query typed with
    a completed column name, a malformed one (caret, nothing runs), the
    same query again (its latency printed below the first's), `:quit`."""
    history = tmp_path / "history"
    env = {**os.environ, "CETQL_HISTORY": str(history), "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "PYSPARK_PYTHON": sys.executable}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "cetql", "repl", "--input", str(CHECKS), "--id-col", "id", "--master", "local[2]"],
        env=env, cwd=str(tmp_path), encoding="utf-8", dimensions=(50, 200), timeout=180,
    )  # fmt: skip
    transcript = io.StringIO()
    child.logfile_read = transcript
    try:
        child.expect("cetql>")
        # Ctrl-C while the query waits for Spark: cancelled, back at the prompt
        child.send(COUNT + ";\r")
        child.expect(re.escape("\x1b[?2004l"))  # the prompt has handed the query over
        _wait_for_signals(child)  # and given the terminal back (out of raw mode, Ctrl-C is a signal again)
        _interrupt(child)
        child.expect("cetql>")

        # two lines; `c.ty<Tab>` completes to the input's column `type`
        child.send("PATTERN Check+ c[] WHERE c.ty\t")
        child.send(" = 'notcovered' AND c[i].src = c[i-1].dst\r")
        child.expect(r"\.\.\.>")
        child.send("WITHIN 100 SLIDE 50 AGG COUNT(*);\r")
        child.expect(r"answered in ([0-9.]+) s")
        first = float(child.match.group(1))
        child.expect("cetql>")

        child.send("PATTERN Check+ c[ WITHIN 10;\r")
        child.expect(r"syntax error: 1:28: unexpected end of query")
        child.expect(r"\^")
        child.expect("cetql>")

        child.send(COUNT + ";\r")
        child.expect(r"answered in ([0-9.]+) s")
        second = float(child.match.group(1))
        child.expect("cetql>")
        child.send(":quit\r")
        child.expect(pexpect.EOF)
    except pexpect.ExceptionPexpect:
        print(_plain(transcript.getvalue())[-3000:])  # what the terminal showed, for the failure report
        raise
    finally:
        child.close(force=True)
    text = _plain(transcript.getvalue())
    assert child.exitstatus == 0, text[-2000:]
    assert "COUNT(*)" in text and "41 rows" in text
    assert re.search(r"running .*\d+/\d+ tasks", text)  # progress while a query runs (on a terminal only)
    assert text.index(f"answered in {first:.2f} s") < text.index(f"answered in {second:.2f} s")
    print(f"repl latency: first query {first:.2f} s (Spark starting), second {second:.2f} s")
    assert "c.type = 'notcovered'" in history.read_text()  # history across sessions
