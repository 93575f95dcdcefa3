"""Every command in README.md, docs/*.md and examples/*.md runs as written,
and says what the document says it says.

Commands are taken from the documents themselves: each line of a ```bash
block (continuations joined), each `$ cetql …` line of a plain ``` block
(the lines after it are what it printed: those without "…" must appear in
the output; `$ cetql … | head -4` runs the command and checks the lines
shown), and each `cetql …` in a table row (examples/README.md). A count the
document states for a command — "3,771 trends" after a block of one
command, the `result` cell of a table row — is checked against the summary
the command printed. Lines shown under a `$ cetql …` are what a terminal
shows when they hold a table (box-drawing characters): that command runs
in a pseudo-terminal 80 columns wide, as a reader's; otherwise it runs
in-process through the CLI's `main`, its standard output not a terminal.
Each document runs in a folder of its own (a reader's checkout: examples/ is
the repository's; all of examples/ is one folder), commands in order: later
ones use what earlier ones wrote, and a command repeated in a document set
runs once, as a reader runs it. Every ```python block runs too, in a folder
of its own, on the suite's Spark session.

Engines: a `cetql run` the planner gives to the embedded engine (local
files, printed or written as Parquet) runs in full — it takes a second. One
that would start Spark, and every `cetql draw`, goes through everything the
CLI checks before Spark starts (arguments, the query compiled against the
inputs' real columns and types, type bindings, parameters, paths) and stops
where Spark would start. A `cetql gen` runs on the suite's Spark session,
since later commands read what it writes. `CETQL_DOCS=full pytest
tests/surfaces/test_readme.py` runs everything in full, on Spark where the
plan says so, and checks every stated count (all of examples/ takes minutes
on 2 shared cores).

Skipped, and why:
- `pip install …` and `pytest`: what CI itself runs to get here.
- `cetql serve …`, `cetql repl …`: a long-running server and an interactive
  shell (tests/engines/test_connect.py and tests/surfaces/test_repl.py run
  them); a command with `--remote` needs that server.
- ```console blocks: transcripts of sessions that run until stopped (a
  stream fed by hand; tests/streams/test_streaming_cli.py runs streams), and
  the Python stream of docs/streams.md, a plain block that
  tests/streams/test_streaming.py runs.

Sizes: examples/ documents data made by `cetql gen` at sizes (up to 100,000
events a scenario) that take many minutes to query on the suite's 2 cores.
By default each `cetql gen` there runs at the small size
tests/surfaces/test_gen.py uses (which runs the same queries on the same
small data); `CETQL_DOCS=full` runs them as written.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_gen import SMALL

from cetql.surfaces.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FULL = os.environ.get("CETQL_DOCS") == "full"
SKIP = {
    "pip install": "installs the package the suite runs on",
    "pytest": "the suite itself",
    "cetql serve": "a long-running server (tests/engines/test_connect.py)",
    "cetql repl": "an interactive shell (tests/surfaces/test_repl.py)",
}
COUNT = re.compile(r"\b(\d{1,3}(?:,\d{3})*) (trends|rows)\b")
BOX = set("┏┃┡│└")  # a table as a terminal shows it
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Command:
    doc: str
    text: str
    count: int | None = None  # the number of trends/rows the document states
    shown: tuple[str, ...] = ()  # output lines the document shows
    terminal: bool = False  # the lines shown are a terminal's

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)[1:]

    @property
    def key(self) -> str:
        return ("on a terminal: " if self.terminal else "") + " ".join(self.argv)


def _skip_reason(text: str) -> str | None:
    for prefix, why in SKIP.items():
        if text.startswith(prefix):
            return why
    return "needs a Spark Connect server (cetql serve)" if "--remote" in text else None


def _stated(after: str) -> int | None:
    """The first count in the prose after a block, up to the next block or heading."""
    prose = re.split(r"```|\n#", after, maxsplit=1)[0]
    m = COUNT.search(prose)
    return int(m.group(1).replace(",", "")) if m else None


def _shown(block: str, start: int) -> list[tuple[int, Command]]:
    """The `$ cetql …` lines of a plain block, with the lines shown under each."""
    found = []
    served = False  # after `cetql serve &`: the command runs on that server
    for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
        first, *rest = part.splitlines()
        served = served or first.startswith("cetql serve")
        if first.startswith("cetql") and not first.endswith("&"):
            command = first.split(" | ")[0].strip()  # `… | head -4`: the lines shown are the first ones
            shown = tuple(r.strip() for r in rest if r.strip() and "…" not in r)
            terminal = any(BOX & set(line) for line in shown)
            text = command + (" --remote sc://127.0.0.1:15002" if served else "")
            found.append((start, Command("", text, None, shown, terminal)))
    return found


def commands(path: Path) -> list[Command]:
    text = path.read_text()
    doc = str(path.relative_to(ROOT))
    found: list[tuple[int, Command]] = []
    for block in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S):
        lang, body = block.group(1), block.group(2)
        if lang == "bash":
            lines = [c.strip() for c in body.replace("\\\n", " ").splitlines() if c.strip()]
            runs = [c for c in lines if c.startswith("cetql run")]
            count = _stated(text[block.end():]) if len(runs) == 1 else None
            for c in lines:
                found.append((block.start(), Command(doc, c, count if c in runs else None)))
        elif lang == "":
            found += [(i, Command(doc, c.text, c.count, c.shown, c.terminal)) for i, c in _shown(body, block.start())]
    for row in re.finditer(r"^\|.*\|\s*$", text, flags=re.M):  # a table row: its gen, then its run
        cells = row.group(0).strip().strip("|").split("|")
        m = COUNT.search(cells[-1])
        codes = [c for c in re.findall(r"`(cetql [^`]+)`", row.group(0)) if len(c.split()) > 2]  # not `cetql run`
        for i, code in enumerate(codes):
            count = int(m.group(1).replace(",", "")) if m and code.startswith("cetql run") else None
            found.append((row.start() + i, Command(doc, code, count)))
    return [c for _, c in sorted(found, key=lambda x: x[0])]


README = commands(ROOT / "README.md")
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCS = {p.stem: commands(p) for p in DOC_PAGES}
EXAMPLE_DOCS = sorted((ROOT / "examples").glob("*.md"))
EXAMPLES = [c for p in EXAMPLE_DOCS for c in commands(p)]


def _cases(cmds: list[Command], folder: str):
    """One test per distinct command (as a reader runs a repeated one once),
    with every count the documents state for it: they must agree."""
    by_key: dict[str, list[Command]] = {}
    for c in cmds:
        by_key.setdefault(c.key, []).append(c)
    for same in by_key.values():
        first = same[0]
        counts = {c.count for c in same if c.count is not None}
        shown = tuple(line for c in same for line in c.shown)
        case = Command(first.doc, first.text, next(iter(counts)) if len(counts) == 1 else None, shown, first.terminal)
        why = _skip_reason(first.text)
        marks = [pytest.mark.skip(reason=why)] if why else []
        if _needs_spark(first):
            marks.append(pytest.mark.spark)
        if len(counts) > 1:
            places = ", ".join(f"{c.doc}: {c.count:,}" for c in same if c.count is not None)
            marks = [pytest.mark.xfail(strict=True, reason=f"the documents disagree ({places})")]
        mode = "on a terminal: " if first.terminal else ""
        yield pytest.param(folder, case, id=f"{first.doc}: {mode}{first.text[:90]}", marks=marks)


def _on_committed_data(c: Command) -> bool:
    return "data/" not in c.text.replace("examples/data/", "")


def _needs_spark(c: Command) -> bool:
    """A `cetql gen` runs on Spark, and a command reading what one wrote
    (its data/ folder) needs it to have run; CETQL_DOCS=full runs
    everything on Spark where the plan says so."""
    return FULL or c.argv[:1] == ["gen"] or not _on_committed_data(c)


def _scaled(argv: list[str]) -> list[str]:
    """A `cetql gen` at the small size of its scenario (unless CETQL_DOCS=full)."""
    if FULL or argv[0] != "gen" or "--events" not in argv:
        return argv
    i = argv.index("--events")
    return [*argv[: i + 1], str(min(int(argv[i + 1]), SMALL[argv[1]])), *argv[i + 2 :]]


def _check(c: Command, out: str, err: str) -> None:
    if c.count is not None and (FULL or _on_committed_data(c)):
        m = re.search(r"^(?:wrote )?(\d[\d,]*) (trends?|rows?)\b", out + err, flags=re.M)
        assert m, f"{c.doc}: `{c.text}` printed no summary"
        assert int(m.group(1).replace(",", "")) == c.count, f"{c.doc}: `{c.text}` says {m.group(0)}, the doc {c.count:,}"
    for line in c.shown:
        assert line in out, f"{c.doc}: `{c.text}` did not print {line!r}"


class _SparkWouldStart(Exception):
    pass


def _stop(*a, **k):
    raise _SparkWouldStart


# where the commands that start Spark get their session
SPARK_STARTS = ("cetql.surfaces.cli.on_spark.get_spark", "cetql.surfaces.draw.draw.get_spark")


def _run(c: Command, request, monkeypatch, capsys) -> None:
    """Run a command as the module's docstring says: in full, or up to Spark's start."""
    if c.terminal:
        _run_on_a_terminal(c, Path.cwd())
        return
    if FULL or c.argv[0] == "gen":
        request.getfixturevalue("spark")
    else:
        for name in SPARK_STARTS:
            monkeypatch.setattr(name, _stop)
    try:
        code = main(_scaled(c.argv))
    except _SparkWouldStart:
        return  # every check before Spark passed
    out, err = capsys.readouterr()
    assert code == 0, f"{c.doc}: `{c.text}` exited {code}: {err}"
    _check(c, out, err)


def _run_on_a_terminal(c: Command, folder: Path) -> None:
    """The command in a pseudo-terminal of 80 columns, as `python -m cetql`
    (on the embedded engine unless CETQL_DOCS=full: a plan for Spark stops
    there, refused before Spark starts)."""
    import pexpect

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "CETQL_ENGINE")}
    if not FULL:
        env["CETQL_ENGINE"] = "embedded"
    child = pexpect.spawn(sys.executable, ["-m", "cetql", *c.argv], cwd=str(folder), env=env,
                          dimensions=(50, 80), encoding="utf-8", timeout=300)  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    screen = ANSI.sub("", child.before).replace("\r\n", "\n")
    if not FULL and child.exitstatus == 2 and "--engine embedded cannot run this query" in screen:
        return  # every check before Spark passed
    assert child.exitstatus == 0, f"{c.doc}: `{c.text}` exited {child.exitstatus}: {screen[-2000:]}"
    _check(c, screen, "")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A reader's checkout per document (all of examples/ is one): `examples/` is the repository's."""
    made = {}
    for name in ("README", *DOCS, "examples"):
        path = tmp_path_factory.mktemp(name)
        (path / "examples").symlink_to(ROOT / "examples")
        made[name] = path
    return made


def test_documents_have_commands():
    assert len([c for c in README if c.text.startswith("cetql run")]) >= 3
    assert any(c.terminal and c.shown for c in README)  # the first query's table, as a terminal shows it
    assert any(c.shown and not c.terminal for c in README)  # and its CSV, piped
    assert {"run", "commands", "streams", "language", "semantics", "reliability"} <= set(DOCS)
    for page in ("run", "commands", "streams"):
        assert [c for c in DOCS[page] if c.text.startswith("cetql")], page
    assert any(c.shown and c.text.startswith("cetql compile") for c in DOCS["commands"])  # the --explain example
    assert {Path(c.doc).name for c in EXAMPLES} == {p.name for p in EXAMPLE_DOCS}
    stated = [c for c in EXAMPLES if c.count is not None]
    assert len({c.key for c in stated}) >= 27  # the table's result column at least


def test_readme_stays_short():
    """A newcomer reads it in five minutes; the reference is in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


# docs/security.md, the serve's trust model, comes with the serve's trust checks: until then its links wait
WRITTEN_WITH_ITS_CODE = {"docs/security.md"}


def test_documents_link_to_what_exists():
    """Every relative link of README.md, docs/ and examples/ names a file or
    folder of the repository, and a `#section` one of its headings."""
    broken = []
    for page in [ROOT / "README.md", *DOC_PAGES, *EXAMPLE_DOCS]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, section = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if str(where.relative_to(ROOT)) in WRITTEN_WITH_ITS_CODE and not where.exists():
                continue
            if not where.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif section and where.suffix == ".md" and section not in _anchors(where):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    heads = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


DOC_CASES = [*_cases(README, "README"), *(case for name, cmds in DOCS.items() for case in _cases(cmds, name))]


@pytest.mark.parametrize(("folder", "cmd"), DOC_CASES)
def test_documents_command(folders, request, monkeypatch, capsys, folder, cmd):
    monkeypatch.chdir(folders[folder])
    _run(cmd, request, monkeypatch, capsys)


@pytest.mark.parametrize(("folder", "cmd"), list(_cases(EXAMPLES, "examples")))
def test_examples_command(folders, request, monkeypatch, capsys, folder, cmd):
    monkeypatch.chdir(folders[folder])
    _run(cmd, request, monkeypatch, capsys)


def _python_blocks():
    for path in [ROOT / "README.md", *DOC_PAGES, *EXAMPLE_DOCS]:
        doc = str(path.relative_to(ROOT))
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)):
            yield pytest.param(doc, block, id=f"{doc}: python block {i + 1}")


@pytest.mark.parametrize(("doc", "snippet"), list(_python_blocks()))
def test_documents_python_runs(spark, tmp_path, monkeypatch, capsys, doc, snippet):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, doc, "exec"), {})
    if "print(" in snippet or ".show(" in snippet:
        assert capsys.readouterr().out.strip(), f"{doc}: the block printed nothing"
