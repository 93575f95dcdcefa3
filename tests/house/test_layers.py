"""The house's shape, checked (docs/architecture.md): a folder per layer,
imports that point down only, no import cycle anywhere — imports inside
functions included — and a cetql import inside a function only for
start-up cost or an optional dependency, saying which."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "cetql"

# Layers, bottom first: a module may import its own layer and those listed
# for it.  The two backends stand side by side on what both need (`inputs`, `arrow`).
LAYERS = {
    "base": "cetql.base",
    "language": "cetql.language",
    "kernels": "cetql.kernels",
    "semantics": "cetql.planner.semantics",
    "logical": "cetql.planner.logical",
    "physical": "cetql.planner.physical",
    "planner": "cetql.planner",  # planning, explain: over the planner's stages
    "sql": "cetql.backends.sql",  # the one expression compiler, a dialect a backend
    "inputs": "cetql.backends.inputs",
    "arrow": "cetql.backends.arrow",  # Arrow results and Spark's Parquet files, as both backends make them
    "spark": "cetql.backends.spark",
    "embedded": "cetql.backends.embedded",
    "surfaces": "cetql.surfaces",
    "package": "cetql",  # the package's face (lazy names) and `python -m cetql`
}
BELOW = {
    "base": set(),
    "language": {"base"},
    "kernels": {"base"},
    "semantics": {"base", "language", "kernels"},
    "logical": {"base", "language", "kernels", "semantics"},
    "physical": {"base", "language", "kernels", "semantics", "logical"},
    "planner": {"base", "language", "kernels", "semantics", "logical", "physical"},
}
BELOW["sql"] = BELOW["planner"] | {"planner"}
BELOW["inputs"] = BELOW["sql"] | {"sql"}
BELOW["arrow"] = BELOW["inputs"] | {"inputs"}
BELOW["spark"] = BELOW["arrow"] | {"arrow"}
BELOW["embedded"] = BELOW["arrow"] | {"arrow"}
BELOW["surfaces"] = BELOW["arrow"] | {"arrow", "spark", "embedded"}
BELOW["package"] = set(LAYERS) - {"package"}

# The words a function-level import's comment must use: why it is not at the top.
REASONS = ("start-up", "optional")


def layer_of(module: str) -> str | None:
    found = [name for name, prefix in LAYERS.items() if module == prefix or module.startswith(prefix + ".")]
    return max(found, key=lambda name: len(LAYERS[name])) if found else None


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]):
    """(imported cetql module, line, inside a function?) for each import of a cetql module."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            targets = subs or [base]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            while t not in known and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in known and t != name:
                yield t, (node.lineno, node.end_lineno), id(node) in inside


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t, _, _ in imports(name, path, known)} for name, path in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_module_is_in_a_layer():
    assert not [m for m in modules() if layer_of(m) is None]


def test_imports_point_down():
    known, wrong = modules(), []
    for name, path in known.items():
        mine = layer_of(name)
        for target, (line, _), _ in imports(name, path, known):
            theirs = layer_of(target)
            if theirs != mine and theirs not in BELOW[mine] and target != "cetql":
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    """Function-level imports count: a cycle they hide is still a cycle."""
    found = cycles(graph())
    assert not found, "\n".join(" ↔ ".join(c) for c in found)


def test_the_cycle_check_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_imports_say_why():
    """A cetql import inside a function is for start-up cost or an optional
    dependency, and its comment (on the line or the one before) says which."""
    known, unexplained = modules(), []
    for name, path in known.items():
        lines = path.read_text().splitlines()
        for target, (line, end), inside in imports(name, path, known):
            said = " ".join(lines[max(line - 2, 0) : end])
            if inside and not any(r in said for r in REASONS):
                unexplained.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not unexplained, "\n".join(sorted(set(unexplained)))
