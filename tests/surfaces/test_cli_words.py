"""A misspelt word is answered with the one meant, in one line, with exit
status 2 — on the command line as in the Python API: an option of any
command (`--id_col` → `--id-col`; one of another command says whose it
is), a choice, a column, an event type, a variable, a parameter given that
the query does not read.  One rule finds the nearest name (`base.words`).
Nothing here starts Spark: every word is checked before it would start."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import ParameterError, SchemaError, UnknownTypeError, UsageError
from cetql.base.words import closest, did_you_mean, edits, fold, nearest
from cetql.planner.semantics.schema import parse_ddl
from cetql.surfaces.cli.main import build_parser, main
from cetql.surfaces.cli.parsing import options, parse
from cetql.surfaces.repl import Shell

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
STOCK = ROOT / "examples" / "queries" / "abi_q2_stock.cet"  # reads the parameter ratio
RISING = "PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price WITHIN 3"

# Each command with what it needs besides the misspelt option, so that only that option is wrong.
NEEDS = {
    "compile": ["compile", str(KITING)],
    "run": ["run", str(KITING), "--input", str(CHECKS)],
    "repl": ["repl"],
    "serve": ["serve"],
    "gen": ["gen", "kiting", "-o", "out"],
    "draw": ["draw", str(KITING), "--input", str(CHECKS), "-o", "out.svg"],
}
COMMANDS = dict(build_parser().commands.choices)
LONG = {c: [o for o in options(p) if o.startswith("--") and o != "--help"] for c, p in COMMANDS.items()}


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    for where in ("cetql.surfaces.api.runtime.get_spark", "cetql.surfaces.cli.on_spark.get_spark",
                  "cetql.surfaces.repl.shell.get_spark", "cetql.surfaces.draw.draw.get_spark",
                  "cetql.backends.spark.session.get_spark", "cetql.surfaces.serve.server.cmd_serve"):  # fmt: skip
        monkeypatch.setattr(where, refuse)


def cli(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """(exit status, standard output, standard error) of `cetql ARGV`, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), patch("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()))):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err[:-1]


def _taken(command: str, word: str) -> bool:
    """Whether argparse reads `word` as an option of `command` (itself, or a prefix of one)."""
    return any(o.startswith(word) for o in options(COMMANDS[command]))


# ---------------------------------------------------------------- the rule


def test_the_issues_words():
    assert closest("dest", ["ts", "id", "src", "dst", "type"]) == "dst"
    assert closest("--id_col", ["--time-col", "--id-col"]) == "--id-col"  # `_` read as `-`
    assert closest("WITHN", ["WHERE", "WITHIN", "SLIDE"]) == "WITHIN"
    assert closest("idcol", ["trends", "id_col", "time_col"]) == "id_col"
    assert did_you_mean("dest", ["dst"]) == " (did you mean 'dst'?)" and did_you_mean("zzz", ["dst"]) == ""


def test_what_is_not_near():
    assert closest("d", ["c"]) is None  # one letter for another is no slip
    assert closest("fortnights", ["s", "sec", "min", "minutes", "h", "hours", "day", "week"]) is None
    assert closest("SOME", ["ALL", "COMPLETE", "MAXIMAL"]) is None
    assert closest("dst", ["dst"]) is None  # the word itself is not a suggestion


WORDS = st.text("abcdefgh_", min_size=2, max_size=9)


@settings(max_examples=200, deadline=None)
@given(WORDS, st.data())
def test_one_slip_is_one_edit(word, data):
    at = data.draw(st.integers(0, len(word) - 2))
    slips = [word[:at] + word[at + 1 :], word[:at] + word[at] + word[at:],
             word[:at] + word[at + 1] + word[at] + word[at + 2 :]]  # fmt: skip
    for slip in slips:
        assert edits(slip, word) <= 1 and edits(word, slip) == edits(slip, word)
        if slip != word:
            assert word in nearest(slip, [word, "zzzzzzzzzzzz"])


def test_nearest_is_fewest_edits_then_most_alike():
    assert nearest("AG", ["WITHIN", "AVG", "AGG"]) == ["AVG", "AGG"]  # equally near and alike: both, as given
    assert nearest("abcd", ["abce", "abcde"]) == ["abcde", "abce"]  # one edit each: the more alike first
    assert nearest("dstt", ["dist", "dst"]) == ["dst", "dist"]  # one edit before two
    assert nearest("Dst", ["ts", "dst"])[0] == "dst"  # case aside
    assert fold("--ID_col") == "--id-col"


# ---------------------------------------------------------------- options of every command


def _mutations(word: str):
    """The slips of the name after `--`: a letter dropped, doubled, two
    swapped, `_` for `-`."""
    name = word[2:]
    for at in range(len(name)):
        yield "--" + name[:at] + name[at + 1 :]
        yield "--" + name[:at] + name[at] + name[at:]
        if at + 1 < len(name):
            yield "--" + name[:at] + name[at + 1] + name[at] + name[at + 2 :]
    yield "--" + name.replace("-", "_")


FLAG_SLIPS = sorted({(c, f, m) for c, flags in LONG.items() for f in flags for m in _mutations(f)
                     if m != f and not _taken(c, m) and m != "--"})  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FLAG_SLIPS))
def test_a_misspelt_option_is_answered_with_the_nearest(slip):
    command, flag, typo = slip
    with pytest.raises(UsageError):  # refused while the line is read: nothing ran, or could
        parse(build_parser(), NEEDS[command] + [typo])
    code, out, err = cli(NEEDS[command] + [typo])
    said = one_line(err)
    assert code == 2 and out == ""
    bare = fold(typo[2:])
    distances = {f: edits(bare, fold(f[2:])) for f in LONG[command]}
    best = min(distances.values())
    assert distances[flag] == best <= 1
    proposed = said.split("did you mean ", 1)[1].split("?", 1)[0] if "did you mean " in said else None
    assert said.startswith(f"error: unknown option {typo}; did you mean "), said
    if [f for f, d in distances.items() if d == best] == [flag]:
        assert proposed == flag, said
    else:  # as near to another of the command's options: either is a fair answer
        assert distances[proposed] == best, said


def test_every_option_of_another_command_says_whose_it_is():
    checked = 0
    for command in COMMANDS:
        for other, flags in LONG.items():
            for flag in flags:
                if other == command or _taken(command, flag):
                    continue
                code, out, err = cli(NEEDS[command] + [flag])
                said = one_line(err)
                assert code == 2 and out == "", said
                assert said.startswith(f"error: unknown option {flag}; ") and f"{flag} is an option of " in said
                owners = [f"cetql {c}" for c in COMMANDS if flag in LONG[c]]
                listed = owners[0] if len(owners) == 1 else ", ".join(owners[:-1]) + " and " + owners[-1]
                assert f"{flag} is an option of {listed}" in said, said
                assert said.endswith(f", not of cetql {command}") or "did you mean" in said, said
                checked += 1
    assert checked > 50


def test_the_issues_command_lines():
    code, out, err = cli(["run", KITING, "--input", CHECKS, "--id_col", "id"])
    assert (code, out, err) == (2, "", "error: unknown option --id_col; did you mean --id-col?\n")
    code, _, err = cli(["repl", "--stream"])
    assert (code, err) == (2, "error: unknown option --stream; --stream is an option of cetql compile and cetql "
                              "run, not of cetql repl\n")  # fmt: skip
    code, _, err = cli(["draw", KITING, "--input", CHECKS, "--trends", "all", "-o", "x.svg"])
    assert code == 2 and one_line(err) == ("error: unknown option --trends; did you mean --trend? (--trends is an "
                                           "option of cetql compile and cetql run)")  # fmt: skip


def test_a_misspelt_required_option_is_named_before_the_one_missing():
    """argparse would say '--input is required'; the misspelt --inptu is the reason."""
    code, _, err = cli(["run", KITING, "--inptu", CHECKS])
    assert code == 2 and one_line(err) == "error: unknown option --inptu; did you mean --input?"
    code, _, err = cli(["gen", "kiting", "--ouptut", "x"])
    assert code == 2 and one_line(err) == "error: unknown option --ouptut; did you mean --output?"


@pytest.mark.parametrize(("argv", "said"), [
    (["rn", KITING], "error: unknown command 'rn' (did you mean 'run'?); the commands: compile, run, repl, gen, draw, serve"),
    (["run", KITING, "--input", CHECKS, "--format", "parqet"],
     "error: --format: invalid choice 'parqet' (did you mean 'parquet'?); choose from parquet, csv, json, table"),
    (["gen", "kitng", "-o", "x"], "error: unknown scenario 'kitng' (did you mean 'kiting'?); choose from "),
    (["--input", CHECKS, "run", KITING],
     "error: unknown option --input; --input is an option of cetql compile, cetql run, cetql repl and cetql draw: "
     "give it after the command"),
    ([], "error: give a command: compile, run, repl, gen, draw or serve"),
    (["compile", KITING, "--max", "1"], "error: ambiguous option: --max could match --max-trends, --max-windows"),
    (["run", KITING, KITING, "--input", CHECKS], f"error: unexpected argument '{KITING}'"),
    (["run", KITING, "--input", CHECKS, "--limit", "-1"], "error: --limit -1: must be zero or positive"),
    (["run", KITING, "--input", CHECKS, "--time-zone", "-05:00"], "error: argument --time-zone: expected one argument"),
])  # fmt: skip
def test_other_command_line_errors_are_one_line(argv, said):
    code, out, err = cli(argv)
    assert code == 2 and out == "" and one_line(err).startswith(said), err


# ---------------------------------------------------------------- columns, types, variables


NAMES = st.from_regex(r"[a-z][a-z0-9]{2,7}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=6, unique=True), st.data())
def test_a_misspelt_column_is_answered_with_the_nearest(columns, data):
    column = data.draw(st.sampled_from(columns))
    at = data.draw(st.integers(0, len(column) - 2))
    typo = data.draw(st.sampled_from([column[:at] + column[at + 1 :], column[:at] + column[at] + column[at:],
                                      column[:at] + column[at + 1] + column[at] + column[at + 2 :]]))  # fmt: skip
    assume(typo.isidentifier() and not typo[0].isdigit() and typo.lower() not in {c.lower() for c in columns})
    assume(typo not in ("ts", "i"))
    schema = "ts long, " + ", ".join(f"{c} string" for c in columns)
    query = f"PATTERN E+ e[] WHERE e[i].{typo} = e[i-1].{typo} WITHIN 3"
    with pytest.raises(SchemaError) as raised:
        cetql.compile(query, schema=parse_ddl(schema))
    said = str(raised.value)
    assert "\n" not in said and f"column '{typo}' " in said
    best = min(edits(typo, c) for c in ["ts", *columns])
    nearest_ones = [c for c in ["ts", *columns] if edits(typo, c) == best]
    if nearest_ones == [column]:
        assert f"(did you mean '{column}'?)" in said, said
    code, out, err = cli(["compile", "-", "--schema", schema], stdin=query)  # the command line says the same
    assert (code, out, err) == (2, "", f"error: {said}\n")


def test_the_readme_query_on_the_bundled_data(tmp_path):
    """The README's first query once read `c[i-1].dest`; the bundled checks have `dst`."""
    readme = (ROOT / "README.md").read_text().split("```sql\n", 1)[1].split("```", 1)[0]
    q = tmp_path / "q.cet"
    q.write_text(readme)
    assert cli(["compile", q, "--input", CHECKS, "--id-col", "id"])[0] == 0
    q.write_text(readme.replace(".dst", ".dest"))
    code, _, err = cli(["compile", q, "--input", CHECKS, "--id-col", "id"])
    assert code == 2 and one_line(err).startswith("error: column 'dest' (c[i-1].dest, 2:44) is not in the input "
                                                  "(did you mean 'dst'?); its columns are: ts, id, src, dst, type")


def test_a_misspelt_type_variable_or_time_column(tmp_path):
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 3")
    code, _, err = cli(["run", q, "--input", f"Chek={CHECKS}", "--id-col", "id"])
    assert code == 2 and "type(s) Chek that the pattern does not use (did you mean 'Check'?)" in one_line(err)
    with pytest.raises(UnknownTypeError, match=r"\(did you mean 'Check'\?\)"):
        cetql.compile(q.read_text()).run({"Chek": str(CHECKS)}, spark=object())
    code, _, err = cli(["compile", q, "--input", CHECKS, "--time-col", "tss"])
    assert code == 2 and "time column 'tss' is not in the input (did you mean 'ts'?)" in one_line(err)
    code, _, err = cli(["run", q, "--input", CHECKS, "--id-col", "id", "--show", "src,dest"])
    assert code == 2 and "--show: no column dest in the input (did you mean 'dst'?)" in one_line(err)
    with pytest.raises(cetql.QueryError) as raised:
        cetql.compile("PATTERN Check+ chk[] WHERE chek.src = 'a' WITHIN 3")
    assert raised.value.message == "unknown variable 'chek' (did you mean 'Check'?); the pattern binds chk"


def test_a_misspelt_keyword_on_the_command_line(tmp_path):
    q = tmp_path / "q.cet"
    q.write_text("PATTERN A+ a[] WITHN 3\n")
    code, out, err = cli(["compile", q])
    assert (code, out) == (2, "") and err.splitlines() == [f"{q}:1:16: syntax error: expected WITHIN here (found 'WITHN')",
                                                           "   1 | PATTERN A+ a[] WITHN 3", "     |                ^"]


# ---------------------------------------------------------------- parameters the query does not read


def test_a_parameter_the_query_does_not_read_is_refused_by_name():
    code, out, err = cli(["compile", STOCK, "--param", "ratio=1", "--param", "x=1"])
    assert (code, out, err) == (2, "", "error: --param x: the query has no parameter x (its parameters: ratio)\n")
    code, _, err = cli(["run", KITING, "--input", CHECKS, "--param", "x=1"])
    assert (code, err) == (2, "error: --param x: the query has no parameter x (it has none)\n")
    code, _, err = cli(["compile", STOCK, "--param", "rati=1"])  # the misspelling, not the missing ratio
    assert (code, err) == (2, "error: --param rati: the query has no parameter rati; did you mean ratio? "
                              "(its parameters: ratio)\n")  # fmt: skip
    code, _, err = cli(["compile", STOCK, "--param", "other=1"])  # nothing near: the missing one first
    assert code == 2 and err.startswith(f"{STOCK}:4:35: error: unbound parameter 'ratio'")


def test_the_api_refuses_it_too():
    with pytest.raises(ParameterError) as raised:
        cetql.compile(RISING, {"ratio": 2, "x": 1})
    assert str(raised.value) == 'params["x"]: the query has no parameter x (its parameters: ratio)'
    with pytest.raises(ParameterError, match=r'params\["rati"\]: .* did you mean ratio\?'):
        cetql.compile(RISING, {"rati": 2})
    compiled = cetql.compile(RISING)  # its value may come when it runs …
    with pytest.raises(ParameterError, match=r'params\["x"\]: the query has no parameter x'):
        compiled.run(str(CHECKS), params={"ratio": 2, "x": 1}, spark=object())  # … and is checked before Spark
    with pytest.raises(ParameterError, match="no parameter x"):
        cetql.compile("PATTERN A+ WITHIN 3", {"x": 1})


def test_the_repl_keeps_its_parameters_for_the_queries_that_read_them():
    """The shell's parameters are set before the queries that read them: one
    a query does not read is not refused, unless it is near a name the query
    lacks (then it is the misspelling of it)."""
    shell = Shell(params={"ratio": 2, "other": 1}, out=io.StringIO(), err=io.StringIO())
    assert shell.compiled(RISING).params == (("ratio", 2),)
    assert shell.compiled("PATTERN A+ WITHIN 3").params == ()
    shell = Shell(params={"rati": 2}, out=io.StringIO(), err=io.StringIO())
    with pytest.raises(ParameterError) as raised:
        shell.compiled(RISING)
    assert raised.value.text("repl").startswith(":param rati: the query has no parameter rati; did you mean ratio?")
