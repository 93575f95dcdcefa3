"""Only the `cetql` name lands in a user's environment; the grammar ships
inside the package."""

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
