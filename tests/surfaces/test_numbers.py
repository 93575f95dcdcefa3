"""Every numeric flag of every command is read in one place
(`cli.numbers.check_numbers`): a value outside its range — negative, zero
where zero means nothing, fractional where it counts, a word, NaN, infinity,
past what Spark or a timestamp holds — is one line naming the flag (exit 2)
before anything runs; a value inside is the number.  No numeric flag
escapes the table (argparse reads them all as text)."""

import argparse
import math
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cetql.surfaces.cli.main import build_parser, main
from cetql.surfaces.cli.numbers import RULES, check_numbers

SOME = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
LONG = 2**63 - 1
RUN = ["run", "q.cet", "--input", "in.csv"]
# flag → (the command before it, lowest value, highest value, whole numbers only), written from the help texts
FLAGS = {
    "--limit": (RUN, 0, 2**31 - 1, True),
    "--max-trends": (RUN, 0, LONG, True),
    "--max-windows": (RUN, 0, LONG, True),
    "--partitions": (RUN, 1, 2**31 - 1, True),
    "--until-idle": ([*RUN, "--stream"], "positive", math.inf, False),
    "--events": (["gen", "kiting", "-o", "out"], 1, 10**9, True),
    "--seed": (["gen", "kiting", "-o", "out"], -LONG - 1, LONG, True),
    "--trend": (["draw", "q.cet", "--input", "in.csv", "-o", "x.svg"], 1, LONG, True),
    "--max-nodes": (["draw", "q.cet", "--input", "in.csv", "-o", "x.svg"], 1, LONG, True),
    "--port": (["serve"], 1, 65535, True),
    "--start-timeout": (["serve"], "positive", math.inf, False),
}
DURATIONS = {"--watermark": ([*RUN, "--stream"], 0), "--trigger": ([*RUN, "--stream"], "positive")}


def _inside(value: Decimal, lo, hi, whole: bool) -> bool:
    if not value.is_finite() or (whole and value != value.to_integral_value()):
        return False
    return (value > 0 if lo == "positive" else value >= lo) and value <= hi


numbers = st.one_of(
    st.integers(-(10**21), 10**21).map(Decimal),
    st.sampled_from([-1, 0, 1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**9, 10**9 + 1,
                     65535, 65536]).map(Decimal),  # fmt: skip
    st.decimals(-(10**6), 10**6, places=3, allow_nan=False, allow_infinity=False),
)
texts = st.one_of(numbers.map(str), st.sampled_from(["nan", "inf", "-inf", "soon", "", "1e400", "1e3", " 7 ", "0x10"]))


@SOME
@given(st.sampled_from(sorted(FLAGS)), texts)
@example("--until-idle", "-1")  # the issue's: a stream stopped at once, exit 0, nothing written
@example("--events", "100000000000000000000")  # a 42-line Python and Java trace
def test_a_numeric_flag_is_its_number_or_one_line(flag, text):
    command, lo, hi, whole = FLAGS[flag]
    try:
        value = Decimal(text.strip())
    except ArithmeticError:
        value = Decimal("NaN")
    argv = [*command, f"{flag}={text}"]
    if _inside(value, lo, hi, whole):
        args = build_parser().parse_args(argv)
        check_numbers(args)
        got = getattr(args, flag[2:].replace("-", "_"))
        assert got == (int(value) if whole else float(value)), (flag, text, got)
        return
    _refused(argv, flag)


@SOME
@given(st.sampled_from(sorted(DURATIONS)), numbers, st.sampled_from(["", " s", " seconds", " minutes", "ms"]))
def test_a_stream_duration_is_zero_or_more_or_one_line(flag, amount, unit):
    command, lo = DURATIONS[flag]
    argv = [*command, f"{flag}={amount}{unit}"]
    if amount > 0 or (amount == 0 and lo == 0):
        check_numbers(build_parser().parse_args(argv))
        return
    _refused(argv, flag)


def _refused(argv, flag):
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(argv)
    lines = err.getvalue().splitlines()
    assert code == 2 and out.getvalue() == "", (argv, code)
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} "), (argv, lines)


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)
        else:
            yield action


def test_no_numeric_flag_escapes_the_table():
    """A flag argparse would read as a number (its own usage screen for a
    word, any value in range for it) or whose default is a number is read by
    the table; every rule of the table is a flag of some command."""
    actions = [a for a in _actions(build_parser()) if a.option_strings]
    numeric = {a.dest for a in actions if a.type in (int, float)
               or (isinstance(a.default, (int, float)) and not isinstance(a.default, bool))}  # fmt: skip
    assert {a.dest for a in actions if a.type in (int, float)} == set()
    assert numeric <= set(RULES), numeric - set(RULES)
    assert set(RULES) <= {a.dest for a in actions}
    flags = {o for a in actions for o in a.option_strings}
    assert set(FLAGS) | set(DURATIONS) | {"--memory-budget"} == {f for f in flags if f[2:].replace("-", "_") in RULES}


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "lots"])
def test_memory_budget_is_a_positive_size_or_one_line(text):
    _refused([*RUN, "--memory-budget", text], "--memory-budget")


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts)
@example("-1")
@example(str(2**31))
def test_the_shells_limit_is_the_command_lines(text):
    import io

    from cetql.surfaces.repl import Shell

    out, err = io.StringIO(), io.StringIO()
    shell = Shell(out=out, err=err)
    shell.handle(f":limit {text}")
    try:
        value = Decimal(text.strip())
    except ArithmeticError:
        value = Decimal("NaN")
    if _inside(value, *FLAGS["--limit"][1:]):
        assert shell.limit == int(value) and err.getvalue() == ""
    else:
        assert shell.limit == 20 and err.getvalue().startswith("error: :limit "), err.getvalue()
