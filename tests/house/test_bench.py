"""The one bench entry: every case of bench/cases.py names a script of
bench/ with a `main()`, `python -m bench` lists them all, and an unknown
case is refused by name."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from cases import CASES  # noqa: E402


def test_every_case_names_a_script_with_a_main():
    for case in CASES:
        tree = ast.parse((ROOT / "bench" / f"{case.script}.py").read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), case


def test_the_entry_lists_and_refuses():
    listed = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert listed.returncode == 0 and all(f"  {c.name} " in listed.stdout for c in CASES), listed.stdout
    wrong = subprocess.run([sys.executable, "-m", "bench", "D3"], cwd=ROOT, capture_output=True, text=True)
    assert wrong.returncode == 2 and "unknown case 'D3'" in wrong.stderr
