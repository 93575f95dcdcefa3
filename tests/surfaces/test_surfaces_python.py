"""The Python API speaks Python: options named as keywords in what it
raises (the CLI keeps its flags: one message, rendered per surface), an
unknown keyword refused by name with the closest valid one, error classes a
Python user can catch by the standard exception, and `explain()` printing
as `DataFrame.explain()` does.  None of these start Spark."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from budget import budget
from hypothesis import given, settings
from hypothesis import strategies as st

import cetql
from cetql.base import errors as E
from cetql.base.options import option_names
from cetql.planner.semantics.schema import parse_ddl
from cetql.surfaces.api.extension import cet
from cetql.surfaces.cli.main import main
from cetql.surfaces.repl import Shell

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = (ROOT / "examples" / "kiting.cet").read_text()
RISING = "PATTERN S+ s[] WHERE s[i].ts > r * s[i-1].ts WITHIN 5"
AGG = "RETURN COUNT(*) PATTERN A+ WITHIN 5"
FLAGS = re.compile("|".join(re.escape(f) for f in sorted(E.OPTION_FLAGS, key=len, reverse=True)) + r"|--param\b")


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr("cetql.surfaces.api.runtime.get_spark", refuse)
    monkeypatch.setattr("cetql.surfaces.cli.on_spark.get_spark", refuse)


def _raised(call) -> E.CetqlError:
    with pytest.raises(E.CetqlError) as info:
        call()
    return info.value


# ---------------------------------------------------------------- one message, two surfaces


def _cli_err(capsys, *argv) -> str:
    assert main([str(a) for a in argv]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "python,cli,keyword,flag",
    [
        (lambda: cetql.compile(RISING).run(str(CHECKS)), ("run", "{q}", "--input", CHECKS),
         'params={"r": …}', "--param r=<value>"),
        (lambda: cetql.compile(KITING, schema=parse_ddl("t long, src string, dst string, type string")),
         ("compile", "{q}", "--schema", "t long, src string, dst string, type string"), "time_col=", "--time-col"),
        (lambda: cetql.compile(AGG, strategy="local"), ("compile", "{agg}", "--strategy", "local"),
         "strategy chooses", "--strategy chooses"),
        (lambda: cetql.compile(AGG, with_rows=True), ("compile", "{agg}", "--with-rows"), "with_rows=True", "--with-rows"),
        (lambda: cetql.compile("PATTERN S+ s[] WITHIN 8 SLIDE 1", strategy="distributed", sharing="blocks"),
         ("compile", "{slide}", "--strategy", "distributed", "--sharing", "blocks"),
         'drop sharing="blocks", or use strategy="local"', "drop --sharing blocks, or use --strategy local"),
        (lambda: cetql.compile(KITING, max_trends=-1), ("compile", "{q}", "--max-trends", "-1"),
         "max_trends=-1", "--max-trends -1"),
    ],
    ids=["param", "time_col", "strategy", "with_rows", "sharing", "max_trends"],
)
def test_python_says_keywords_where_the_cli_says_flags(capsys, tmp_path, python, cli, keyword, flag):
    files = {"q": RISING if "param" in flag else KITING, "agg": AGG, "slide": "PATTERN S+ s[] WITHIN 8 SLIDE 1"}
    for name, text in files.items():
        (tmp_path / f"{name}.cet").write_text(text)
    said = str(_raised(python))
    assert keyword in said and not FLAGS.search(said), said
    err = _cli_err(capsys, *[str(a).format(**{k: tmp_path / f"{k}.cet" for k in files}) for a in cli])
    assert flag in err, err


def test_the_shell_says_its_commands(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(out=out, err=err)
    shell.handle(RISING + ";")
    shell.handle(":explain " + RISING)
    said = err.getvalue()
    assert said.count(":param r=<value>") == 2 and "--param" not in said, said


_WORDS = st.sampled_from(["a", "the", "value", "(", ")", ";", ":", "or", "use", "is", "0", "12", "1,000", "'x'", "512m",
                          "maximal", "blocks", "local", "string"])
_FLAG = st.sampled_from([*E.OPTION_FLAGS, "--param r=<value>", "--param name=value", "--explain"])


@settings(max_examples=budget(300), deadline=None)
@given(st.lists(st.one_of(_WORDS, _FLAG), min_size=1, max_size=12))
def test_spoken_leaves_no_option_flag_for_python(words):
    text = " ".join(words)
    python = E.spoken(text, "python")
    assert not FLAGS.search(python) and "--explain" not in python, (text, python)
    for w in words:  # every option named keeps its name, as Python spells it
        if w in E.OPTION_FLAGS:
            assert E.OPTION_FLAGS[w][0] in python
    assert E.spoken(text, "cli") == text


def test_every_run_option_has_its_flag():
    """The table `spoken` renders with covers every run option, and each
    flag is one `cetql run` takes."""
    from cetql.surfaces.cli.main import build_parser

    run = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "run")[1]
    flags = {s for action in run._actions for s in action.option_strings}
    assert {k for k, _ in E.OPTION_FLAGS.values()} == set(option_names())
    assert set(E.OPTION_FLAGS) <= flags


# ---------------------------------------------------------------- keywords


def _distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


@settings(max_examples=budget(100), deadline=None)
@given(st.sampled_from(option_names()), st.data())
def test_an_unknown_keyword_is_named_with_the_closest(option, data):
    at = data.draw(st.integers(0, len(option) - 1))
    typo = option[:at] + option[at + 1 :]
    q = cetql.compile(KITING)
    for call in (lambda: q.run(str(CHECKS), **{typo: "id"}),
                 lambda: cet(SimpleNamespace(), KITING, str(CHECKS), **{typo: "id"})):  # fmt: skip
        e = _raised(call)
        assert isinstance(e, TypeError) and isinstance(e, E.UsageError) and e.exit_code == 2
        said = str(e)
        assert f"unknown keyword '{typo}'" in said
        assert all(o in said for o in option_names()) and "the pattern's types: Check" in said
        near = [c for c in [*option_names(), "Check"] if _distance(typo, c) == 1]
        if len(near) == 1:
            assert f"did you mean '{near[0]}'?" in said, said


def test_the_issues_examples():
    e = _raised(lambda: cet(SimpleNamespace(), KITING, str(CHECKS), idcol="id"))
    assert "unknown keyword 'idcol' (did you mean 'id_col'?)" in str(e)
    e = _raised(lambda: cetql.compile(KITING).run(str(CHECKS), id_column="id"))
    assert "did you mean 'id_col'?" in str(e)
    e = _raised(lambda: cetql.compile(KITING, trend="all"))
    assert isinstance(e, TypeError) and "did you mean 'trends'?" in str(e)


# ---------------------------------------------------------------- classes


@pytest.mark.parametrize(
    "call,standard",
    [
        (lambda: cetql.compile("PATTERN A+ (", None), ValueError),
        (lambda: cetql.compile(KITING, trends="some"), ValueError),
        (lambda: cetql.compile(KITING, approx="yes"), TypeError),
        (lambda: cetql.compile(KITING, max_trends=[1]), TypeError),
        (lambda: cetql.compile(42), TypeError),
        (lambda: cetql.compile(KITING).run(42), TypeError),
        (lambda: cetql.compile(RISING, params=[("r", 1)]), TypeError),
        (lambda: cetql.compile(RISING, params={"r": [1]}), TypeError),
        (lambda: cetql.compile(KITING).run("nope.csv"), FileNotFoundError),
        (lambda: cetql.compile(KITING).run({"Check": "in/nope.parquet"}), FileNotFoundError),
        (lambda: cetql.compile(KITING).run({"Debit": str(CHECKS)}), KeyError),
        (lambda: cetql.compile(RISING).run(str(CHECKS)), ValueError),
    ],
)
def test_errors_are_the_standard_exceptions(call, standard):
    e = _raised(call)
    assert isinstance(e, standard) and e.exit_code == 2


def test_a_missing_path_names_the_file():
    e = _raised(lambda: cetql.compile(KITING).run("data/nope.csv"))
    assert isinstance(e, FileNotFoundError) and e.filename == "data/nope.csv"
    assert str(e) == "input 'data/nope.csv' does not exist"


# ---------------------------------------------------------------- explain


def test_explain_prints_as_dataframe_explain_does(capsys):
    q = cetql.compile(RISING)
    assert q.explain() is None
    printed = capsys.readouterr().out
    assert printed.startswith("detection query") and printed == q.explain(as_string=True) + "\n"
    assert 'params={"name": value}' in printed and "--param" not in printed
    assert q.explain("json") is None
    assert '"kind": "detection"' in capsys.readouterr().out


def test_errors_raised_in_workers_keep_the_command_lines_words():
    """A kernel's error crosses to the driver as traceback text, which the
    CLI prints as it is (cetql.failures): it must stay in the CLI's words."""
    from cetql.kernels.errors import TrendLimitExceeded

    text = "more than --max-trends 10,000,000; raise --max-trends (0: no limit)"
    assert str(TrendLimitExceeded(text)) == text
    assert str(E.UsageError(text)) == "more than max_trends=10000000; raise max_trends= (0: no limit)"
