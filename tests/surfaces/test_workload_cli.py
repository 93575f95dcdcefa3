"""`cetql compile|run` of a workload, on the embedded engine (no Spark):
several query files or a .cetw file, each query's result under its name
(printed) or in `--output DIR/<name>/`, the rows it gives alone; what is
refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cetql.surfaces.cli.main import main
from cetql.surfaces.cli.workload_file import parse_workload

ROOT = Path(__file__).resolve().parents[2]
STOCK = str(ROOT / "examples" / "data" / "stock.csv")
WORKLOAD = str(ROOT / "examples" / "workload.cetw")


def _rows(folder: Path) -> list[dict]:
    return sorted(pq.read_table(folder).to_pylist(), key=repr)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_a_workload_file_writes_each_query_its_rows_alone(tmp_path, capsys, fmt):
    """Each DIR/<name> holds what `run --output` writes for the query alone:
    Parquet's rows and schema, CSV's and JSON lines' very text."""
    assert main(["run", WORKLOAD, "--input", STOCK, "--id-col", "id", "--format", fmt, "--output",
                 str(tmp_path / "out")]) == 0  # fmt: skip
    said = capsys.readouterr().out
    for name in ("up", "down", "rising"):
        assert f"{name}: wrote" in said and f"({fmt})" in said
    queries = parse_workload(Path(WORKLOAD).read_text(), Path(WORKLOAD).parent)
    for name, text in queries.items():
        (tmp_path / f"{name}.cet").write_text(text)
        alone = tmp_path / f"alone-{name}"
        assert main(["run", str(tmp_path / f"{name}.cet"), "--input", STOCK, "--id-col", "id", "--format", fmt,
                     "--output", str(alone)]) == 0  # fmt: skip
        shared = tmp_path / "out" / name
        if fmt != "parquet":
            assert _text(shared, fmt) == _text(alone, fmt) and _text(alone, fmt), name
            continue
        assert _rows(shared) == _rows(alone), name
        assert pq.read_schema(next(shared.glob("*.parquet"))) == pq.read_schema(next(alone.glob("*.parquet")))


def _text(folder: Path, fmt: str) -> str:
    return "".join(f.read_text() for f in sorted(folder.glob(f"part-*.{fmt}")))


def test_query_files_print_each_result_under_its_name(tmp_path, capsys):
    a, b = tmp_path / "up.cet", tmp_path / "flat.cet"
    a.write_text("PATTERN SEQ(Stock a, Stock b) WHERE a.price < b.price AND [sym] WITHIN 100 AGG COUNT(*)")
    b.write_text("PATTERN SEQ(Stock a, Stock b) WHERE a.price > 100 AGG COUNT(*) WITHIN 100")
    assert main(["run", str(a), str(b), "--input", STOCK, "--id-col", "id", "--format", "csv", "--limit", "0",
                 "--workload-sharing", "none"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.index("== up ==") < out.index("== flat ==")
    assert main(["compile", str(a), str(b), "--input", STOCK, "--id-col", "id", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "workload of 2 queries" in text and "query up:" in text and "query flat:" in text


def test_the_sharing_plan_says_what_is_shared_and_why_not(tmp_path, capsys):
    w = tmp_path / "w.cetw"
    w.write_text("a: PATTERN SEQ(Stock a, Stock b, Stock c) WHERE a.price > 100 AGG COUNT(*) WITHIN 100\n"
                 "b: PATTERN SEQ(Stock a, Stock b, Stock d) WHERE a.price > 100 AND d.price < 90\n"
                 "   AGG COUNT(*) WITHIN 100\n"
                 "wide: PATTERN SEQ(Stock a, Stock b) AGG COUNT(*) WITHIN 200\n"
                 "approx: PATTERN SEQ(Stock a, Stock b) AGG COUNT(*) WITHIN 100 APPROX\n")  # fmt: skip
    assert main(["compile", str(w), "--input", STOCK, "--id-col", "id", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "prefix tree: 4 counter(s) for 2 queries (6 apart)" in text
    assert "wide does not share a's exchange: windows differ" in text
    assert "approx counts alone: approximate numbers" in text
    assert "cost: shared" in text


@pytest.mark.parametrize("text, said", [
    ("a: x.cet\n", "query file 'x.cet' does not exist"),
    ("  indented\n", "an indented line before any 'name:'"),
    ("a: PATTERN A+ a[] WITHIN 3\na: PATTERN A+ a[] WITHIN 4\n", "a second query named 'a'"),
    ("-a: PATTERN A+ a[] WITHIN 3\n", "expected 'name: query file or query'"),
    ("# nothing\n", "names no query"),
    ("a: sub.cet\n", "'sub.cet' is a folder, not a query file"),
    ("Up: PATTERN A+ a[] WITHIN 3\nup: PATTERN A+ a[] WITHIN 4\n", "queries 'Up' and 'up': their output folders are one"),
    (f"{'n' * 201}: PATTERN A+ a[] WITHIN 3\n", "is 201 characters: a name is its output folder, at most 200"),
])  # fmt: skip
def test_a_workload_file_is_refused_with_its_line(tmp_path, capsys, text, said):
    w = tmp_path / "w.cetw"
    w.write_text(text)
    (tmp_path / "sub.cet").mkdir()
    assert main(["compile", str(w)]) == 2
    assert said in capsys.readouterr().err


def test_refused_before_anything_runs(tmp_path, capsys):
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 100")
    other = tmp_path / "sub"
    other.mkdir()
    (other / "q.cet").write_text(q.read_text())
    base = ["run", str(q), "--input", STOCK, "--id-col", "id"]
    assert main([*base, str(other / "q.cet")]) == 2
    assert "two queries named 'q'" in capsys.readouterr().err
    assert main([*base, str(q.with_name("r.cet")), "--param", "nope=1"]) == 2
    assert main(["run", str(q), str(q), "--input", STOCK, "--show", "sym"]) == 2
    assert "--show prints one query's trends" in capsys.readouterr().err
    r = tmp_path / "r.cet"
    r.write_text("PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN 100")
    assert main([*base, str(r), "--param", "nope=1"]) == 2
    assert "no query of the workload has a parameter nope" in capsys.readouterr().err
    r.write_text("PATTERN Check+ c[] WITHIN 100")
    assert main(["run", str(q), str(r), "--input", f"Stock={STOCK}", "--id-col", "id"]) == 2
    assert "query r has no input: none of its types (Check) is bound to one (given: Stock); add --input " \
        "Check=PATH" in capsys.readouterr().err  # fmt: skip
    r.write_text("PATTERN Stock+ s[] WITHN 100")
    assert main([*base, str(r)]) == 2
    assert "query r: expected WITHIN here" in capsys.readouterr().err


@pytest.mark.parametrize(("given", "said"), [
    ("", "is empty"), ("~", "is your home folder"), (".", "is the working folder"),
    ("{data}", "contains the input"), ("nope/deeper/W", "does not exist"),
])  # fmt: skip
def test_a_workload_output_is_checked_as_a_single_runs_is(tmp_path, capsys, monkeypatch, given, said):
    """`--output DIR` of a workload gets every check one query's output
    gets (each query then writes DIR/<name>/), and nothing is made."""
    work, home, data = tmp_path / "work", tmp_path / "home", tmp_path / "data"
    for d in (work, home, data):
        d.mkdir()
    (data / "stock.csv").write_text(Path(STOCK).read_text())
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    (work / "a.cet").write_text("PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 100")
    (work / "b.cet").write_text("RETURN COUNT(*) PATTERN Stock+ s[] WITHIN 100")
    out = given.format(data=data)
    assert main(["run", "a.cet", "b.cet", "--input", str(data / "stock.csv"), "--id-col", "id", "--output", out]) == 2
    assert said in capsys.readouterr().err
    assert sorted(p.name for p in work.iterdir()) == ["a.cet", "b.cet"] and not any(home.iterdir())
    assert sorted(p.name for p in data.iterdir()) == ["stock.csv"]


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
@pytest.mark.parametrize("odd", [0, 1, 2])
def test_append_refused_for_one_query_writes_none(tmp_path, capsys, fmt, odd):
    """`--mode append` where one query's DIR/<name> holds results of another
    shape (whichever query, whatever format): refused before any query's
    result is written — no folder gains a file."""
    out = tmp_path / "out"
    args = ["run", WORKLOAD, "--input", STOCK, "--id-col", "id", "--format", fmt, "--output", str(out)]
    assert main(args) == 0
    names = ("up", "down", "rising")
    other = tmp_path / "other.cet"
    other.write_text("RETURN MAX(s.price) PATTERN Stock+ s[] WITHIN 10")  # a column none of the queries has
    assert main(["run", str(other), "--input", STOCK, "--id-col", "id", "--format", fmt, "--output",
                 str(tmp_path / "other")]) == 0  # fmt: skip
    import shutil

    shutil.rmtree(out / names[odd])
    shutil.copytree(tmp_path / "other", out / names[odd])
    before = {n: sorted(p.name for p in (out / n).iterdir()) for n in names}
    capsys.readouterr()
    assert main([*args, "--mode", "append"]) == 2
    err = capsys.readouterr().err
    assert f"'{out / names[odd]}' holds results of another shape" in err, err
    assert {n: sorted(p.name for p in (out / n).iterdir()) for n in names} == before


def _place(text: str, token: str) -> str:
    """line:column (1-based) of `token` in `text`."""
    at = text.index(token)
    return f"{text.count(chr(10), 0, at) + 1}:{at - text.rfind(chr(10), 0, at)}"


GOOD = "RETURN sym, COUNT(*) PATTERN Stock+ s[] WHERE [sym] GROUP-BY sym WITHIN 100"
BAD = "RETURN sym, COUNT(*)\n  PATTERN Stock+ s[]\n  WHERE [sym] AND s[i].price > @ 1 WITHIN 100"
UNBOUND = "RETURN sym, COUNT(*)\n  PATTERN Stock+ s[]\n  WHERE [sym] AND q.price > 1 GROUP-BY sym WITHIN 100"  # binds no q
ERRORS = {"syntax": (BAD, "@", "syntax error"), "binding": (UNBOUND, "q.price", "error")}


@pytest.mark.parametrize("bad", [0, 1, 2])
@pytest.mark.parametrize("form", ["files", "inline", "named"])
@pytest.mark.parametrize("kind", ["syntax", "binding"])
def test_a_workload_error_names_its_file_and_place_there(tmp_path, capsys, bad, form, kind):
    """A syntax or binding error (an unknown variable) in any query of a
    workload is shown where the user wrote it: the query's file, or the
    workload file's own line and column for a query written inline in it."""
    wrong, token, label = ERRORS[kind]
    texts = [wrong if k == bad else GOOD for k in range(3)]
    if form == "files":
        files = []
        for k, text in enumerate(texts):
            (tmp_path / f"q{k}.cet").write_text(text + "\n")
            files.append(str(tmp_path / f"q{k}.cet"))
        where, shown = files[bad], texts[bad] + "\n"
    elif form == "inline":
        body = "# three queries\n" + "".join(
            f"q{k}: " + text.replace("\n", "\n   ") + "\n\n" for k, text in enumerate(texts)
        )
        (tmp_path / "w.cetw").write_text(body)
        files, where, shown = [str(tmp_path / "w.cetw")], str(tmp_path / "w.cetw"), body
    else:  # a workload file naming query files
        for k, text in enumerate(texts):
            (tmp_path / f"f{k}.cet").write_text(text + "\n")
        (tmp_path / "w.cetw").write_text("".join(f"q{k}: f{k}.cet\n" for k in range(3)))
        files, where, shown = [str(tmp_path / "w.cetw")], str(tmp_path / f"f{bad}.cet"), texts[bad] + "\n"
    assert main(["run", *files, "--input", STOCK, "--id-col", "id"]) == 2
    first, *excerpt = capsys.readouterr().err.splitlines()
    assert first.startswith(f"{where}:{_place(shown, token)}: {label}: query q{bad}: "), first
    assert len(excerpt) >= 2 and excerpt[1].strip().startswith("|") and excerpt[1].rstrip().endswith("^"), excerpt


FINE = "RETURN sym, COUNT(*) PATTERN Stock+ s[] WHERE [sym] GROUP-BY sym WITHIN 100"
MISSPELT = "RETURN sym, COUNT(*)\n  PATTERN Stock+ s[]\n  WHERE [sym] AND s[i].prise > 1\n  GROUP-BY sym WITHIN 100"


@pytest.mark.parametrize("bad", [0, 2])
@pytest.mark.parametrize("form", ["files", "inline", "named"])
def test_a_workload_column_error_names_its_file_and_place_there(tmp_path, capsys, bad, form):
    """A column the input lacks, in any query of a workload, is shown where
    the user wrote it, as a syntax error is: its file and its place there."""
    texts = [MISSPELT if k == bad else FINE for k in range(3)]
    if form == "files":
        for k, text in enumerate(texts):
            (tmp_path / f"q{k}.cet").write_text(text + "\n")
        files, where, shown = [str(tmp_path / f"q{k}.cet") for k in range(3)], f"q{bad}.cet", texts[bad]
    elif form == "inline":
        body = "# three queries\n" + "".join(f"q{k}: " + text.replace("\n", "\n   ") + "\n\n" for k, text in enumerate(texts))
        (tmp_path / "w.cetw").write_text(body)
        files, where, shown = [str(tmp_path / "w.cetw")], "w.cetw", body
    else:
        for k, text in enumerate(texts):
            (tmp_path / f"f{k}.cet").write_text(text + "\n")
        (tmp_path / "w.cetw").write_text("".join(f"q{k}: f{k}.cet\n" for k in range(3)))
        files, where, shown = [str(tmp_path / "w.cetw")], f"f{bad}.cet", texts[bad]
    assert main(["run", *files, "--input", STOCK, "--id-col", "id"]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    place = _place(shown, "s[i].prise")
    assert first.startswith(f"error: query q{bad}: column 'prise' (s[i].prise, {where} {place}) is not in the input"), first
    assert "did you mean 'price'" in first


def test_a_stopped_run_says_what_mode_ignore_left_and_names_the_failing_query(tmp_path, capsys):
    """--mode ignore leaves an existing result as it was: a run stopped later
    says so (not "written"), and the query that stopped it is named."""
    slow = "PATTERN Stock+ s[] WHERE [sym] AND s[i].price >= s[i-1].price WITHIN 1000 TRENDS ALL"
    (tmp_path / "w.cetw").write_text(f"kept: {ROOT / 'examples' / 'kiting.cet'}\nslow: {slow}\n")
    out = tmp_path / "out"
    (out / "kept").mkdir(parents=True)
    (out / "kept" / "old").write_text("old")
    checks = ROOT / "examples" / "data" / "checks.csv"  # typed inputs: two scans, each query run by its own plan
    assert main(["run", str(tmp_path / "w.cetw"), "--input", f"Check={checks}", "--input", f"Stock={STOCK}", "--id-col",
                 "id", "--output", str(out), "--mode", "ignore", "--max-trends", "10"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "the workload stopped: kept left as it was (--mode ignore); slow not written" in err, err
    assert "error: query slow: " in err and "more than --max-trends 10" in err, err
    assert (out / "kept" / "old").read_text() == "old" and not (out / "slow").exists()


def test_a_typed_workload_reads_no_column_in_an_input_whose_queries_do_not_read_it(tmp_path, capsys):
    """q1 reads Stock's x; q2 reads Stock and Trade but no x; Trade's x holds
    a value no number reads. Alone each runs; in a workload too: a scan
    shared by both would check x in Trade, so they read their own scans,
    and the plan says why. Each query's rows are its own."""
    stock = "ts,id,sym,price,x\n" + "".join(f"{t},{t},{'ab'[t % 2]},{100 + t % 5},{t % 3}\n" for t in range(40))
    trade = "ts,id,sym,price,x\n" + "".join(f"{t},{1000 + t},{'ab'[t % 2]},{99 + t % 4},{'oops' if t == 7 else 1}\n"
                                            for t in range(40))  # fmt: skip
    (tmp_path / "s.csv").write_text(stock)
    (tmp_path / "t.csv").write_text(trade)
    texts = {"q1": "RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Stock b) WHERE [sym] AND a.x = 1 GROUP-BY sym WITHIN 20",
             "q2": "RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Trade b) WHERE [sym] AND a.price > 101 GROUP-BY sym "
                   "WITHIN 20"}  # fmt: skip
    (tmp_path / "w.cetw").write_text("".join(f"{n}: {t}\n" for n, t in texts.items()))
    inputs = ["--input", f"Stock={tmp_path / 's.csv'}", "--input", f"Trade={tmp_path / 't.csv'}", "--id-col", "id"]
    assert main(["compile", str(tmp_path / "w.cetw"), *inputs, "--explain"]) == 0
    text = capsys.readouterr().out
    assert "x, which q1 reads, would be checked in input Trade too" in text
    assert "workload of 2 queries: every query alone" in text and "q1: aggregation, aseq; runs alone, on a scan" in text
    assert main(["run", str(tmp_path / "w.cetw"), *inputs, "--output", str(tmp_path / "out"), "--format", "csv"]) == 0
    for name, text in texts.items():
        (tmp_path / f"{name}.cet").write_text(text)
        mine = inputs if name == "q2" else [inputs[0], inputs[1], *inputs[4:]]
        assert main(["run", str(tmp_path / f"{name}.cet"), *mine, "--output", str(tmp_path / name), "--format", "csv"]) == 0
        assert _csv_rows(tmp_path / "out" / name) == _csv_rows(tmp_path / name) != []


def _csv_rows(folder: Path) -> list[str]:
    return sorted(line for f in folder.glob("*.csv") for line in f.read_text().splitlines()[1:])


def test_a_typed_workload_runs_where_the_engine_asked_for_runs_each_query(tmp_path):
    """--engine embedded with typed inputs: each query runs there alone, so
    the workload does (its queries' types were learnt from a plan without
    inputs, which the insisted engine refused as unknown)."""
    examples = ROOT / "examples"
    inputs = ["--input", f"Check={examples / 'data' / 'checks.csv'}", "--input", f"Stock={STOCK}", "--id-col", "id"]
    assert main(["run", str(examples / "kiting.cet"), str(examples / "stock.cet"), *inputs, "--engine", "embedded",
                 "--output", str(tmp_path / "out"), "--format", "csv"]) == 0  # fmt: skip
    assert _csv_rows(tmp_path / "out" / "kiting") and _csv_rows(tmp_path / "out" / "stock")


def test_a_query_file_entry_may_carry_a_comment(tmp_path, capsys):
    """`name: file.cet  # why` and comment lines under it name the file (it
    was read as inline query text, refused at the '.')."""
    (tmp_path / "q.cet").write_text(FINE)
    (tmp_path / "w.cetw").write_text("a: q.cet  # the rising runs\nb: q.cet\t# a tab before\nc: q.cet\n   -- again\n")
    assert main(["compile", str(tmp_path / "w.cetw"), "--input", STOCK, "--id-col", "id"]) == 0
    assert "workload of 3 queries" in capsys.readouterr().out


@pytest.mark.parametrize("sharing", ["none", "auto"])
def test_an_error_of_work_done_for_one_query_names_it(tmp_path, capsys, sharing):
    """An overflow DuckDB meets computing one query's own input (run alone,
    or in a kernel input of its own) names that query."""
    (tmp_path / "w.cetw").write_text(
        "fine: RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Stock b) WHERE [sym] GROUP-BY sym WITHIN 50\n"
        "boom: RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Stock b) WHERE [sym] AND a.price * 9000000000000000000 > 1 "
        "GROUP-BY sym WITHIN 60\n"  # windows of its own: an exchange of its own
    )
    assert main(["run", str(tmp_path / "w.cetw"), "--input", STOCK, "--id-col", "id", "--workload-sharing", sharing]) == 1
    assert "error: query boom: a number went past what its type holds" in capsys.readouterr().err


def test_an_error_of_work_several_queries_share_names_them(tmp_path, capsys):
    """A row the shared scan refuses (a time that is no number) fails the
    run naming the queries that share the scan; alone, each query names
    itself."""
    data = tmp_path / "stock.csv"
    data.write_text(Path(STOCK).read_text().replace("\n3,", "\nsoon,", 1))
    (tmp_path / "w.cetw").write_text(
        "up: RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Stock b) WHERE [sym] GROUP-BY sym WITHIN 50\n"
        "down: RETURN sym, COUNT(*) PATTERN SEQ(Stock a, Stock b) WHERE [sym] AND a.price > b.price GROUP-BY sym "
        "WITHIN 50\n"
    )
    run = ["run", str(tmp_path / "w.cetw"), "--input", str(data), "--id-col", "id"]
    assert main(run) == 1
    err = capsys.readouterr().err
    assert "error: queries up, down (work they share): " in err and "time column 'ts'" in err, err
    assert main([*run, "--workload-sharing", "none"]) == 1
    assert "error: query up: " in capsys.readouterr().err
