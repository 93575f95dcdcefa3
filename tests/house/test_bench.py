"""The one bench entry: every case of bench/cases.py names a script of
bench/ with a `main()`, `python -m bench` lists them all, and an unknown
case is refused by name."""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_bench_cases", ROOT / "bench" / "cases.py")
_cases = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _cases  # dataclasses look their module up by name
_spec.loader.exec_module(_cases)
CASES = _cases.CASES  # by its path: tests/support has a `cases` module of its own


def test_every_case_names_a_script_with_a_main():
    for case in CASES:
        tree = ast.parse((ROOT / "bench" / f"{case.script}.py").read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), case


def test_the_entry_lists_and_refuses():
    listed = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert listed.returncode == 0 and all(f"  {c.name} " in listed.stdout for c in CASES), listed.stdout
    wrong = subprocess.run([sys.executable, "-m", "bench", "D3"], cwd=ROOT, capture_output=True, text=True)
    assert wrong.returncode == 2 and "unknown case 'D3'" in wrong.stderr
