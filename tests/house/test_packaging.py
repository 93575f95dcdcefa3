"""Only the `cetql` name lands in a user's environment; the grammar ships
inside the package."""

import os
import subprocess
import sys


def test_everything_lives_under_cetql(tmp_path):
    code = (
        "import importlib.util as u, cetql.planner, cetql.language.grammar;"
        "print(u.find_spec('planner'), u.find_spec('grammar'));"
        "print(len(cetql.language.grammar.grammar_text()) > 1000)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "None", "True"]


def test_version_flag():
    out = subprocess.run([sys.executable, "-m", "cetql", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("cetql ")


def test_no_undefined_names():
    """pyflakes' checks (undefined names, unused imports) over the whole tree:
    an undefined name is a failure only the one code path that reaches it
    would otherwise find."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "F", "--no-cache", str(root)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_console_script_resolves():
    """The `cetql` command's entry point names a function that exists (it
    moved with the house's layers once and pointed nowhere)."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="cetql")
    out = subprocess.run([sys.executable, "-c", f"from {script.module} import {script.attr}"], capture_output=True,
                         text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr


def _wheel_venv(tmp_path):
    """A fresh virtual environment with cetql installed from its wheel (not
    editable): the dependencies come from the suite's environment (a .pth
    naming its site-packages), cetql only from the wheel."""
    import site
    import sysconfig
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "-q", "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True)  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("cetql-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                   "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    with zipfile.ZipFile(wheel) as z:
        z.extractall(purelib)
    deps = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (purelib / "suite_deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    return venv / "bin" / "python", purelib


def test_the_wheel_runs_the_readme_first_command_and_a_parquet_run(tmp_path):
    """Every package is in the wheel: the README's first command (CSV in, a
    table out) and a Parquet run written as Parquet, from a non-editable
    install, on the embedded engine, no Spark."""
    from pathlib import Path

    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    python, purelib = _wheel_venv(tmp_path)
    root = Path(__file__).resolve().parents[2]
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a checkout on it would shadow the wheel
    where = subprocess.run([str(python), "-c", "import cetql; print(cetql.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert where.startswith(str(purelib)), where
    run = [str(python), "-m", "cetql", "run", str(root / "examples" / "kiting.cet"), "--id-col", "id", "--no-serve"]
    out = subprocess.run([*run, "--input", str(root / "examples" / "data" / "checks.csv")], cwd=work, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\n") == 3772 and "3,771 trends" in out.stderr
    pq.write_table(pcsv.read_csv(root / "examples" / "data" / "checks.csv"), work / "checks.parquet")
    out = subprocess.run([*run, "--input", "checks.parquet", "--output", "trends"], cwd=work, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert pq.read_table(work / "trends").num_rows == 3771
