"""Nothing the user already has is destroyed, and nothing is left behind:
every writer (`run --output`, `gen -o`, `draw -o`, the REPL's `:save`) goes
through one resolver (`cetql.output`), shown here against every target it
must refuse, in every mode, with the tree around it snapshotted before and
after; then the moves into place, interruptions and `append`.

Refusals need no Spark (they happen before it starts); the few real writes
share the suite's session; signals are sent to subprocesses.
`python tests/surfaces/test_output_safety.py` prints this module's rows of
docs/reliability.md's table (`CASES`).
"""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.base.errors import CetqlError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # as conftest.py does: also a script
from processes import spark_env

from cetql.base.errors import UsageError
from cetql.base.options import OutputFormat, OutputMode
from cetql.base.processes import start_time
from cetql.surfaces import output
from cetql.surfaces.cli.main import main
from cetql.surfaces.output import staging
from cetql.surfaces.output import writers as output_writers
from cetql.surfaces.repl import HELP, Shell

ROOT = Path(__file__).resolve().parents[2]
KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
COUNT = KITING + " AGG COUNT(*)"
CHECKS = "id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,B,D\n4,4,D,E\n"

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_every_writer_refuses_what_it_must_not_touch", "`run --output`, `gen -o`, `draw -o` or `:save`, in every mode, given an empty path, `.`, `..`, `~`, a folder above home, `/`, an input, a folder holding or inside one, the query file or a folder holding it, a symlink to the working folder, a named pipe, a device, or a file where a folder is written (a folder where a file is)", "refused before Spark starts (exit 2), one line naming the path and why; the tree around it unchanged"),
    ("test_spellings_of_a_protected_path_are_refused", "a protected path spelt another way: `file:`, `file://`, `FILE://localhost` (any case), `./`, `sub/..`, `//`, a trailing `/`, a symlinked folder, `~`", "read as the path it names (symlinks followed) and refused the same"),
    ("test_empty_output_with_overwrite", "`--output \"\"` (an unset `$OUT`) with `--mode overwrite`", "refused (exit 2): the path is empty; the working folder untouched"),
    ("test_upper_case_file_scheme_names_the_input", "`--output FILE:///…/in.csv --mode overwrite` where `in.csv` is the input", "refused (exit 2): is an input of the query; the input untouched"),
    ("test_uri_outputs", "`--output hdfs://…` or `S3A://…`", "handed to Spark's own writer in `--mode error` or `ignore` (scheme in lower case); `overwrite` and `append` refused (exit 2), as are URIs for `gen`, `draw` and `:save`"),
    ("test_folder_appearing_while_the_query_runs", "the `--output` folder created by someone else while the query runs", "`--mode error`: exit 1, 'appeared while the query ran', that folder untouched and the result not kept; `--mode ignore`: nothing written, and it says so"),
    ("test_a_move_into_place_never_replaces", "a result moved into place where something appeared (Linux `renameat2`, and the fallback without it)", "the move fails; what appeared is untouched"),
    ("test_overwrite_swaps_and_restores", "`--mode overwrite`, and the move of the new result failing", "the new content swapped in before the old is removed; on failure the old put back as it was"),
    ("test_ctrl_c_inside_a_write_removes_staging", "Ctrl-C while a result is being written", "the staging beside the target removed; the target untouched"),
    ("test_sigterm_during_a_write", "SIGTERM while a run writes its `--output` (the kernels' workers writing, or Spark's writer)", "the job cancelled, the staging removed, the process ends by SIGTERM; no output and nothing beside it"),
    ("test_sigkill_staging_is_removed_by_the_next_run", "SIGKILL while a result is being written", "the staging (named by its owner's pid and start time) removed by the next run writing beside it, which says so on stderr"),
    ("test_staging_of_a_live_owner_is_kept", "staging beside a target whose owner still runs, or whose set-aside old content was never put back", "a live owner's staging left alone; old content set aside by a dead owner put back where nothing replaced it"),
    ("test_append_of_another_format", "`--mode append --format csv` onto a folder of Parquet results (or onto a folder of other files)", "refused before Spark starts (exit 2), naming a file that is not CSV"),
    ("test_append_of_another_shape", "`--mode append` of an aggregation onto a detection's results (Parquet or CSV)", "refused before the job runs (exit 2), naming the columns that differ; nothing added"),
    ("test_save_in_the_repl", "`:save res.csv` twice in the REPL, then `:save res.csv overwrite`", "one CSV file; the second refused with ':save res.csv overwrite' replaces it; that replaces it"),
]  # fmt: skip


# ---------------------------------------------------------------- a tree to protect


def snapshot(*roots: Path) -> dict:
    """Every entry under `roots`: its kind, and its bytes' hash, link target
    or mode — never opening a pipe or a device."""
    seen = {}
    for root in roots:
        for folder, dirs, files in os.walk(root, followlinks=False):
            for name in dirs + files:
                p = Path(folder) / name
                st_ = os.lstat(p)
                if stat.S_ISLNK(st_.st_mode):
                    seen[str(p)] = ("link", os.readlink(p))
                elif stat.S_ISREG(st_.st_mode):
                    seen[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), st_.st_mtime_ns)
                else:
                    seen[str(p)] = (stat.S_IFMT(st_.st_mode), st_.st_mtime_ns)
    return seen


@pytest.fixture
def world(tmp_path, monkeypatch):
    """tmp/home (HOME)/proj/work (the working folder) with an input, a query
    file, a file, a named pipe, folders named like files and a symlink to
    the working folder itself."""
    home = tmp_path / "home"
    work = home / "proj" / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "in.csv").write_text(CHECKS)
    (work / "queries").mkdir()
    (work / "queries" / "q.cet").write_text(KITING)
    (work / "notes.txt").write_text("mine")
    (work / "pics.svg").mkdir()
    (work / "pics.csv").mkdir()
    (work / "fresh").mkdir()
    os.mkfifo(work / "pipe")
    (work / "here").symlink_to(".")
    (work / "alias").symlink_to("data")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return tmp_path


# (spelling, input, writers it applies to): every one must be refused
INPUT, QUERY = "data/in.csv", "queries/q.cet"
ALL, READERS, FOLDERS = "run gen draw save", "run draw save", "run gen save"
REFUSED = [
    ("", INPUT, ALL),
    (".", INPUT, ALL),
    ("..", INPUT, ALL),
    ("~", INPUT, ALL),
    ("{tmp}", INPUT, ALL),  # holds the home folder
    ("/", INPUT, ALL),
    (INPUT, INPUT, ALL),
    ("FILE://{work}/data/in.csv", INPUT, ALL),
    ("data", INPUT, READERS),  # holds the input
    ("data", "data", READERS),  # is the input folder
    ("data/new", "data", READERS),  # inside the input folder
    ("alias/in.csv", INPUT, ALL),  # the input through a symlinked folder
    (QUERY, INPUT, ALL),
    ("queries", INPUT, READERS),  # holds the query file
    ("here", INPUT, ALL),  # a symlink to the working folder
    ("pipe", INPUT, ALL),
    ("/dev/null", INPUT, ALL),
    ("notes.txt", INPUT, FOLDERS),  # a file where a folder is written
    ("pics.svg", INPUT, "draw"),  # a folder where a file is written
    ("pics.csv", INPUT, "save"),
]
MODES = {"run": ["error", "overwrite", "append", "ignore"], "gen": ["error", "overwrite"],
         "draw": ["error", "overwrite"], "save": ["error", "overwrite"]}  # fmt: skip


def _attempt(writer: str, target: str, mode: str, source: str, capsys) -> tuple[int, str]:
    """One writer asked to write `target`: (exit status, what it printed on stderr)."""
    if writer == "save":
        err = io.StringIO()
        shell = Shell(data=source, out=io.StringIO(), err=err)
        shell.last_execution, shell.last_file = object(), QUERY  # refused before the result is touched
        shell.handle(f":save {shlex.quote(target)}" + (" overwrite" if mode == "overwrite" else ""))
        assert shell._spark is None
        return (2 if err.getvalue() else 0), err.getvalue()
    args = {
        "run": ["run", QUERY, "--input", source, "--output", target, "--mode", mode],
        "gen": ["gen", "figures", "--events", "5", "-o", target, "--mode", mode],
        "draw": ["draw", QUERY, "--input", source, "-o", target, "--mode", mode],
    }[writer]
    code = main(args)
    return code, capsys.readouterr().err


def test_every_writer_refuses_what_it_must_not_touch(world, capsys):
    work = world / "home" / "proj" / "work"
    before, root = snapshot(world), sorted(os.listdir("/"))
    tried = 0
    for spelling, source, writers in REFUSED:
        target = spelling.format(tmp=world, work=work)
        for writer in writers.split():
            for mode in MODES[writer]:
                code, err = _attempt(writer, target, mode, source, capsys)
                lines = err.strip().splitlines()
                assert code == 2 and len(lines) == 1, (writer, mode, target, err)
                assert f"output '{target}'" in lines[0], (writer, mode, target, err)
                tried += 1
    assert snapshot(world) == before and sorted(os.listdir("/")) == root
    assert tried > 100


# ---------------------------------------------------------------- spellings


@st.composite
def spellings(draw, base: Path, cwd: Path, home: Path):
    """Ways to write the absolute path `base`: from /, from the working
    folder or from ~; with `./`, `sub/..` through real folders of the
    test's own tree (`home`'s parent), `//`,
    trailing slashes, a `file:` scheme in any case."""
    anchors = [("/", base.relative_to("/").parts)]
    rel = Path(os.path.relpath(base, cwd)).parts
    anchors.append(("", rel if rel != (".",) else ()))
    if base.is_relative_to(home):
        anchors.append(("~/", base.relative_to(home).parts))
    anchor, parts = draw(st.sampled_from(anchors))
    start = Path(anchor.replace("~", str(home))) if anchor else cwd
    out, here = [], start
    for part in parts:
        if draw(st.integers(0, 4)) == 0:
            out.append(".")
        # detours only through the test's own folders: others (/tmp) change while tests run beside this one
        mine = here.is_dir() and here.is_relative_to(home.parent)
        subs = sorted(p.name for p in here.iterdir() if p.is_dir() and not p.is_symlink()) if mine else []
        if subs and draw(st.integers(0, 4)) == 0:
            out += [draw(st.sampled_from(subs)), ".."]
        out.append(part)
        here = here / part
    text = (draw(st.sampled_from(["/", "//"]))).join(out)
    if not out:
        text = "."
    text = anchor + text if anchor != "/" else "/" + text
    text += draw(st.sampled_from(["", "/", "//", "/."])) if base.is_dir() and not base.is_symlink() else ""
    if anchor == "/" and draw(st.booleans()):
        scheme = draw(st.sampled_from(["file:", "file://", "file://localhost"]))
        text = "".join(c.upper() if draw(st.booleans()) else c for c in scheme) + text
    return text


def test_spellings_of_a_protected_path_are_refused(world):
    work = world / "home" / "proj" / "work"
    home = world / "home"
    protected = [work / INPUT, work / "data", work, home, home / "proj", work / QUERY, work / "queries"]

    @settings(max_examples=budget(300), deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(protected).flatmap(lambda b: st.tuples(st.just(b), spellings(b, work, home))),
           st.sampled_from(list(OutputMode)))  # fmt: skip
    def refused(case, mode):
        base, text = case
        with pytest.raises(UsageError, match="output '"):
            output.resolve_output(text, mode, inputs=[INPUT], query_file=QUERY, fmt=OutputFormat.PARQUET)

    @settings(max_examples=budget(200), deadline=None, suppress_health_check=list(HealthCheck))
    @given(spellings(work / "fresh", work, home), st.sampled_from(["out", "out/", "x.parquet"]))
    def fresh(folder, name):
        text = folder.rstrip("/") + "/" + name
        target = output.resolve_output(text, inputs=[INPUT], query_file=QUERY)
        assert target.path == work / "fresh" / name.rstrip("/") and not target.existed

    refused()
    fresh()


def test_empty_output_with_overwrite(world, capsys):
    before = snapshot(world)
    assert main(["run", QUERY, "--input", INPUT, "--output", "", "--mode", "overwrite"]) == 2
    assert "output '' is empty (an unset variable?)" in capsys.readouterr().err
    assert snapshot(world) == before


def test_upper_case_file_scheme_names_the_input(world, capsys):
    work = world / "home" / "proj" / "work"
    before = snapshot(world)
    target = f"FILE://{work}/data/in.csv"
    code = main(["run", QUERY, "--input", INPUT, "--output", target, "--format", "csv", "--mode", "overwrite"])
    assert code == 2 and f"output '{target}' is an input of the query" in capsys.readouterr().err
    assert snapshot(world) == before


def test_uri_outputs(world, capsys):
    for mode in ("error", "ignore"):
        target = output.resolve_output("S3A://bucket/out/", mode)
        assert target.uri == "s3a://bucket/out" and target.path is None
    for mode in ("overwrite", "append"):
        with pytest.raises(UsageError, match=f"--mode {mode} needs a local path"):
            output.resolve_output("hdfs://nn:8020/out", mode)
    for writer, kind in (("gen", "folder"), ("draw", "file"), ("save", "file")):
        with pytest.raises(UsageError, match="is not a local path"):
            output.resolve_output("hdfs://nn/out", "error", writer=writer, kind=kind)
    assert output.resolve_output("name:with:colons").path == Path.cwd() / "name:with:colons"
    with pytest.raises(UsageError, match="names the host 'elsewhere'"):
        output.resolve_output("file://elsewhere/tmp/out")


# ---------------------------------------------------------------- moving into place


@pytest.fixture(params=["renameat2", "fallback"])
def renames(request, monkeypatch):
    if request.param == "renameat2":
        if staging._RENAMEAT2 is None:
            pytest.skip("no renameat2 here")
    else:
        monkeypatch.setattr(staging, "_RENAMEAT2", None)
    return request.param


def test_a_move_into_place_never_replaces(tmp_path, renames):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    (src / "part").write_text("new")
    dst.mkdir()  # empty: a plain rename(2) would replace it
    with pytest.raises(FileExistsError):
        output.rename_noreplace(src, dst)
    (dst / "theirs").write_text("theirs")
    with pytest.raises(FileExistsError):
        output.rename_noreplace(src, dst)
    assert [p.name for p in dst.iterdir()] == ["theirs"] and (src / "part").read_text() == "new"
    f, g = tmp_path / "f", tmp_path / "g"
    f.write_text("new")
    g.write_text("theirs")
    with pytest.raises(FileExistsError):
        output.rename_noreplace(f, g)
    assert g.read_text() == "theirs" and f.read_text() == "new"
    output.rename_noreplace(src, tmp_path / "moved")
    output.rename_noreplace(f, tmp_path / "moved.txt")
    assert (tmp_path / "moved" / "part").read_text() == "new" and (tmp_path / "moved.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "g", "moved", "moved.txt"]


def _target(path: Path, mode: str, kind: str = "folder") -> output.Target:
    return output.Target(str(path), OutputMode(mode), kind, path=path, existed=path.exists())


def test_overwrite_swaps_and_restores(tmp_path, renames, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old").write_text("old")
    with output.staged(_target(out, "overwrite")) as stage:
        stage.path.mkdir()
        (stage.path / "new").write_text("new")
    assert [p.name for p in out.iterdir()] == ["new"] and stage.written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the old content removed once the new was in

    def failing(src, dst, real=output.rename_noreplace):
        if Path(dst) == out and ".cetql-stage-" in Path(src).name:
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(staging, "_exchange", lambda a, b: False)
    monkeypatch.setattr(staging, "rename_noreplace", failing)
    with pytest.raises(CetqlError, match="could not be written: Input/output error; nothing was written there"):
        with output.staged(_target(out, "overwrite")) as stage:
            stage.path.mkdir()
            (stage.path / "newer").write_text("newer")
    assert [p.name for p in out.iterdir()] == ["new"] and (out / "new").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_folder_appearing_while_the_query_runs(spark, tmp_path, capsys, monkeypatch):
    (tmp_path / "in.csv").write_text(CHECKS)
    (tmp_path / "q.cet").write_text(KITING)
    monkeypatch.chdir(tmp_path)
    job = output_writers.staged.call

    def meanwhile(stage, fn):  # after the job (Spark's writer's or the kernels' workers'), before the move:
        done = job(stage, fn)  # someone makes the folder
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "theirs.txt").write_text("theirs")
        return done

    monkeypatch.setattr(output_writers.staged, "call", meanwhile)
    assert main(["run", "q.cet", "--input", "in.csv", "--output", "out"]) == 1
    err = capsys.readouterr().err
    assert "output 'out' appeared while the query ran; it was left as it is" in err and len(err.splitlines()) == 1
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["theirs.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out", "q.cet"]
    (tmp_path / "out" / "theirs.txt").unlink()
    (tmp_path / "out").rmdir()
    assert main(["run", "q.cet", "--input", "in.csv", "--output", "out", "--mode", "ignore"]) == 0
    assert "'out' exists; nothing written (--mode ignore)" in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["theirs.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out", "q.cet"]


# ---------------------------------------------------------------- interruptions and debris


def test_ctrl_c_inside_a_write_removes_staging(tmp_path):
    out = tmp_path / "out"
    handler = signal.getsignal(signal.SIGINT)  # Python's, or pyspark's once a SparkContext started
    for interrupt in (lambda: os.kill(os.getpid(), signal.SIGINT), lambda: (_ for _ in ()).throw(KeyboardInterrupt)):
        with pytest.raises(KeyboardInterrupt):
            with output.staged(_target(out, "error")) as stage:
                stage.path.mkdir()
                (stage.path / "part-0").write_text("partial")
                interrupt()
                time.sleep(5)  # ends at once: Python raises on the signal (without one, pytest.raises fails)
        assert not list(tmp_path.iterdir())
    assert signal.getsignal(signal.SIGINT) is handler  # put back


def _java_child(pid: int) -> int | None:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid and \
                        "java" in (d / "cmdline").read_text():  # fmt: skip
                    return int(d.name)
            except (OSError, ValueError, IndexError):
                continue
    return None


def _gone(pid: int | None, timeout: float = 300) -> bool:  # the timeout only ends a hang
    deadline = time.monotonic() + timeout
    while pid is not None and time.monotonic() < deadline:
        if start_time(pid) == 0:
            return True
        time.sleep(0.2)
    return pid is None or start_time(pid) == 0


def _writing(tmp_path: Path, flags: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int | None]:
    """`cetql run --output out` on a query that takes long, once its write
    job has begun (its staging folder is there): (the process, its JVM)."""
    (tmp_path / "slow.csv").write_text("ts,price\n" + "".join(f"{i},{i}\n" for i in range(3000)))
    (tmp_path / "slow.cet").write_text("PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN 100000 TRENDS ALL")
    proc = subprocess.Popen([sys.executable, "-m", "cetql", "run", "slow.cet", "--input", "slow.csv", "--max-trends",
                             "0", "--output", "out", "--engine", "spark", *flags], cwd=tmp_path, env=spark_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 600  # only ends a hang
    while time.monotonic() < deadline and proc.poll() is None and not _staging(tmp_path):
        time.sleep(0.2)
    assert _staging(tmp_path), proc.communicate(timeout=60)
    # tasks are writing once a task attempt's folder (Spark's writer) or file (the kernels' workers) is in the staging
    while time.monotonic() < deadline and proc.poll() is None and not any(
            p.name.startswith(("attempt_", ".part-")) for s in _staging(tmp_path) for p in (tmp_path / s).rglob("*")):  # fmt: skip
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate(timeout=60)
    return proc, _java_child(proc.pid)


def _staging(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if ".cetql-" in p.name]


@pytest.mark.spark  # a cetql run on Spark, killed while it writes
@pytest.mark.parametrize("flags", [(), ("--master", "local[2]")], ids=["workers write", "spark writes"])
def test_sigterm_during_a_write(tmp_path, flags):
    proc, jvm = _writing(tmp_path, flags)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err and not _staging(tmp_path)
    assert _gone(jvm)  # no task left to write into it
    assert not _staging(tmp_path) and not (tmp_path / "out").exists()


def _plain_writer(out: Path) -> subprocess.Popen:
    """A process writing `out` through `staged` without Spark, once its
    staging holds a partial result."""
    script = textwrap.dedent(f"""
        import time
        from cetql.surfaces import output
        with output.staged(output.resolve_output({str(out)!r})) as stage:
            stage.path.mkdir()
            (stage.path / "part-0").write_text("partial")
            print("ready", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.communicate(timeout=30)
    return proc


def test_sigkill_staging_is_removed_by_the_next_run(spark, tmp_path, capsys, monkeypatch):
    """SIGKILL cannot be handled: the staging stays, named by its owner; the
    next `cetql run` writing beside it sees the owner gone and removes it.
    (A killed `cetql run` also ends its JVM, see the SIGTERM test.)"""
    proc = _plain_writer(tmp_path / "out")
    proc.kill()
    proc.communicate(timeout=30)
    (left,) = _staging(tmp_path)
    (tmp_path / "in.csv").write_text(CHECKS)
    (tmp_path / "q.cet").write_text(KITING)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "q.cet", "--input", "in.csv", "--output", "out"]) == 0
    err = capsys.readouterr().err
    assert f"removed '{tmp_path / left}', left by cetql process {proc.pid}, which ended" in err
    assert not _staging(tmp_path) and (tmp_path / "out").is_dir()


def test_staging_of_a_live_owner_is_kept(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    me, start = os.getpid(), start_time(os.getpid())
    live = tmp_path / f".a.cetql-stage-{me}-{start}-0123abcd"
    reused = tmp_path / f".b.cetql-stage-{me}-{start + 1}-0123abcd"  # this pid, another process's start
    dead_stage = tmp_path / f".c.cetql-stage-{dead}-1-0123abcd"
    aside = tmp_path / f".d.cetql-old-{dead}-1-0123abcd"
    for p in (live, reused, dead_stage, aside):
        p.mkdir()
        (p / "part").write_text(p.name)
    heard = []
    output.resolve_output(tmp_path / "new", notify=heard.append)
    assert live.exists() and not reused.exists() and not dead_stage.exists()
    assert (tmp_path / "d" / "part").read_text() == aside.name  # put back where nothing replaced it
    assert len(heard) == 3 and any(f"restored '{tmp_path / 'd'}'" in line for line in heard)


def test_sigterm_in_a_plain_write_ends_the_process_after_cleaning(tmp_path):
    """The same without Spark: a SIGTERM inside `staged` removes the
    staging, then ends the process by SIGTERM."""
    proc = _plain_writer(tmp_path / "out")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and not err
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- append


def test_append_of_another_format(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text(CHECKS)
    (tmp_path / "q.cet").write_text(KITING)
    (tmp_path / "out").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "out" / "part-0.snappy.parquet")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    before = snapshot(tmp_path)
    assert main(["run", "q.cet", "--input", "in.csv", "--output", "out", "--format", "csv", "--mode", "append"]) == 2
    assert "output 'out' holds 'part-0.snappy.parquet' (PARQUET results); --mode append adds CSV" in \
        capsys.readouterr().err  # fmt: skip
    assert main(["run", "q.cet", "--input", "in.csv", "--output", "notes", "--mode", "append"]) == 2
    assert "holds 'todo.txt' (not a result file)" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_append_of_another_shape(spark, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text(CHECKS)
    (tmp_path / "q.cet").write_text(KITING)
    (tmp_path / "agg.cet").write_text(COUNT)
    for fmt in ("parquet", "csv"):
        assert main(["run", "q.cet", "--input", "in.csv", "--output", fmt, "--format", fmt]) == 0
        capsys.readouterr()
        before = snapshot(tmp_path)
        assert main(["run", "agg.cet", "--input", "in.csv", "--output", fmt, "--format", fmt, "--mode", "append"]) == 2
        err = capsys.readouterr().err
        assert f"output '{fmt}' holds results of another shape (columns " in err and len(err.splitlines()) == 1
        assert snapshot(tmp_path) == before
    # JSON lines omit null fields: the names there must be among the result's
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "part-0.json").write_text('{"window_start": 0, "other": 1}\n')
    with pytest.raises(UsageError, match="column other there, not here"):
        output.write(spark.range(1).selectExpr("0 AS window_start"), "js", OutputFormat.JSON, OutputMode.APPEND)


# ---------------------------------------------------------------- the REPL


def test_save_in_the_repl(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text(CHECKS)
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(data="in.csv", out=out, err=err)
    shell._spark = spark
    shell.handle(KITING + ";")
    rows = shell.last_execution.dataframe.count()
    shell.handle(":save res.csv")
    assert (tmp_path / "res.csv").is_file() and f"wrote {rows:,} rows to res.csv (csv)" in out.getvalue()
    lines = (tmp_path / "res.csv").read_text().splitlines()
    assert lines[0].startswith("window_start,window_end,") and len(lines) == rows + 1
    (tmp_path / "res.csv").write_text("mine")
    shell.handle(":save res.csv")
    assert "output 'res.csv' already exists; ':save res.csv overwrite' replaces it" in err.getvalue()
    assert (tmp_path / "res.csv").read_text() == "mine"
    shell.handle(":save res.csv overwrite")
    assert (tmp_path / "res.csv").read_text().splitlines() == lines
    shell.handle(":save res")
    assert (tmp_path / "res").is_dir() and f"wrote {rows:,} rows to res (parquet folder)" in out.getvalue()
    shell.handle(":save res.csv please")
    assert ":save PATH [overwrite]" in err.getvalue().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "res", "res.csv"]


def test_repl_help_and_docs_agree_on_save():
    page = (ROOT / "docs" / "commands.md").read_text()
    assert ":save PATH [overwrite]" in HELP and "`:save PATH [overwrite]`" in page


def test_cases_are_tests():
    names = {name for name, _, _ in CASES}
    assert names <= {name for name in globals() if name.startswith("test_")}


if __name__ == "__main__":  # print this module's rows of docs/reliability.md's table
    for name, what, does in CASES:
        print(f"| {what} | {does} | `{name}` |")
