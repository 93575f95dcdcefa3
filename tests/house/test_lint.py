"""Lints the suite runs: unused arguments (ruff's ARG rules), unused
definitions (vulture), and the size limits of every module (a module at most
400 lines, a function at most 60), so dead code and sprawl are found by
the tests rather than by a reader."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = [str(ROOT / "cetql")]
MODULE_LINES, FUNCTION_LINES = 400, 60


def test_no_unused_arguments():
    """An argument nothing reads is a decision made elsewhere or a leftover;
    one an interface passes is named with a leading underscore."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "ARG", "--no-cache", *CODE],
                         capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def _grammar_rules() -> list[str]:
    """The grammar's rule and alias names: lark calls the parser's
    transformer methods of those names."""
    from cetql.language.grammar import grammar_text

    text = grammar_text()
    rules = re.findall(r"^\s*[?!]?([a-z_][a-z0-9_]*)\s*(?:\.\d+)?\s*:", text, re.M)
    return sorted({*rules, *re.findall(r"->\s*([a-z_][a-z0-9_]*)", text)})


def test_no_unused_definitions():
    """vulture over the package; tests/house/vulture_allow.py lists the names only
    a framework, a test or a value uses, and the grammar's rule names are
    the parser's transformer methods."""
    pytest.importorskip("vulture")
    allow = str(Path(__file__).parent / "vulture_allow.py")
    command = [sys.executable, "-m", "vulture", *CODE, allow, "--min-confidence", "60",
               "--ignore-names", ",".join(_grammar_rules())]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def _sizes():
    for path in sorted((ROOT / "cetql").rglob("*.py")):
        source = path.read_text()
        name = str(path.relative_to(ROOT))
        yield name, None, source.count("\n")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield name, node.name, node.end_lineno - node.lineno + 1


def test_modules_and_functions_stay_small():
    too_big = [(m, f, n) for m, f, n in _sizes() if n > (MODULE_LINES if f is None else FUNCTION_LINES)]
    assert not too_big, too_big


def test_spark_names_are_quoted_by_one_function():
    """A column name reaches Spark quoted by `backends.spark.sql.quote`
    (backticks doubled), never by a hand-written `` f"`{name}`" ``: a
    backtick in a user's column name made Spark's parser fail."""
    pattern = re.compile(r"""f["'][^"']*`\{""")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "cetql").rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]  # fmt: skip
    assert found == []
