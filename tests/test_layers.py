"""The one-way import rule (README, Layout): each stage imports only the
stages before it, the kernels only the base; no module imports another
cetql module inside a function except where the reason is written beside it
(start-up cost, an optional dependency) — never to dodge a cycle."""

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent

# module (as installed) → its layer
LAYERS = {
    "base": ["cetql.errors", "cetql.options"],
    "syntax": ["cetql.ast", "cetql.parser", "cetql.printer", "cetql.grammar"],
    "semantics": ["cetql.planner.semantics"],
    "logical": ["cetql.planner.logical"],
    "physical": ["cetql.planner.physical"],
    "planning": ["cetql.planner.planning"],
    "spark": ["cetql.planner.spark"],
    "kernels": ["cetql.planner.kernels"],
}
# what each layer may import (besides itself); the API modules (cetql.query,
# runtime, cli, …) sit above all of them and may import any.
ALLOWED = {
    "base": set(),
    "syntax": {"base"},
    "semantics": {"base", "syntax"},
    "logical": {"base", "syntax", "semantics"},
    "physical": {"base", "syntax", "semantics", "logical", "kernels"},
    "planning": {"base", "syntax", "semantics", "logical", "physical", "kernels"},
    "spark": {"base", "syntax", "semantics", "logical", "physical", "kernels"},
    "kernels": {"base"},
}


def _installed_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "planner":
        parts = ["cetql", "planner", *parts[1:]]
    elif parts[0] == "grammar":
        parts = ["cetql", "grammar", *parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str | None:
    for layer, prefixes in LAYERS.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return layer
    return None


def _modules():
    for folder in ("cetql", "planner", "grammar"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path, _installed_name(path)


def _imports(path: Path, name: str):
    """(imported cetql module, line, inside a function?) for each import."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    functions = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    functions.add(id(inner))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            targets = [target] + ([f"{target}.{a.name}" for a in node.names] if node.level or target.startswith("cetql") else [])
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            if t == "cetql" or t.startswith("cetql."):
                yield t, node.lineno, id(node) in functions, path


def test_imports_point_one_way():
    wrong = []
    for path, name in _modules():
        mine = _layer(name)
        if mine is None:
            continue
        for target, line, _, _ in _imports(path, name):
            theirs = _layer(target)
            if target == "cetql" or theirs is None:
                if mine != "base" and target in ("cetql",):
                    continue
                if theirs is None and target.startswith("cetql.") and _layer(target) is None:
                    # an API module (cetql.query, …) imported from a stage
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {target} (the API)")
                continue
            if theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_function_level_imports_of_cetql_say_why():
    """A cetql import inside a function is for start-up cost or an optional
    extra, and says so on the line before or on the line itself."""
    unexplained = []
    for path, name in _modules():
        lines = path.read_text().splitlines()
        for target, line, inside, _ in _imports(path, name):
            if not inside:
                continue
            here = lines[line - 1]
            before = lines[line - 2] if line >= 2 else ""
            if "#" not in here and "#" not in before:
                unexplained.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not unexplained, "\n".join(sorted(set(unexplained)))
