"""`--explain`: every compiler stage, as rich text for people and as JSON for
tools.  `explain_data` is the single source; the rich view renders it."""

from __future__ import annotations

from dataclasses import fields
from decimal import Decimal

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.tree import Tree

from . import ast as A
from .compiler import CompiledQuery
from .planner.template import Template
from .printer import to_text


def ast_to_data(node):
    """AST → plain nested dicts (`node` names the class, `pos` is 'line:col')."""
    if isinstance(node, A.Node):
        out = {"node": type(node).__name__}
        for f in fields(node):
            if not f.compare:  # the position and other bookkeeping
                continue
            out[f.name] = ast_to_data(getattr(node, f.name))
        if node.pos is not None:
            out["pos"] = str(node.pos)
        return out
    if isinstance(node, tuple):
        return [ast_to_data(x) for x in node]
    if isinstance(node, Decimal):
        return str(node)
    return node


def template_data(t: Template) -> dict:
    return {
        "states": [
            {
                "name": n,
                "type": p.type,
                "var": p.var,
                "role": t.role(n),
                "kleene": p.kleene_self,
                "repeated": p.repeated,
            }
            for n, p in t.positions.items()
        ],
        "transitions": [
            {"from": a, "to": b, "label": "/".join(sorted(labels))} for (a, b), labels in sorted(t.transitions.items())
        ],
        "negations": [
            {
                "case": n.case,
                "previous": sorted(n.previous),
                "following": sorted(n.following),
                "template": template_data(n.template),
            }
            for n in t.negatives
        ],
    }


def explain_data(c: CompiledQuery) -> dict:
    b = c.bound
    return {
        "query": to_text(c.ast),
        "kind": b.kind,
        "trend_set": {"set": b.trend_set, "reason": b.trend_set_reason},
        "window": {
            "length": str(b.window.length),
            "slide": str(b.window.slide),
            "unit": "time column units" if b.window.unitless else "seconds",
            "tumbling": b.window.tumbling,
        },
        "parameters": {
            "bound": {k: (str(v) if isinstance(v, Decimal) else v) for k, v in b.params.items()},
            "unbound": b.unbound_params,
        },
        "schema": str(b.schema) if b.schema else None,
        "ast": ast_to_data(c.ast),
        "predicates": [
            {
                "predicate": p.text,
                "kind": p.kind,
                "op": p.op,
                "scope": p.scope,
                "variables": list(p.variables),
                "h": p.h,
                "monotone": p.monotone,
                "comparator": p.comparator,
                "reason": p.reason,
            }
            for p in c.predicates
        ],
        "template": template_data(b.template),
        "plan": {
            "steps": [{"op": s.op, **{k: _jsonable(v) for k, v in s.details.items()}} for s in c.plan.steps],
            "strategy": c.plan.strategy,
            "reason": c.plan.strategy_reason,
        },
    }


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v if isinstance(v, (str, int, float, bool, type(None))) else str(v)


# ---------------------------------------------------------------- rich view


def _ast_tree(data, label: str = "Query") -> Tree:
    tree = Tree(f"[bold]{label}[/]")
    _fill(tree, data)
    return tree


def _fill(tree: Tree, data) -> None:
    scalars = {k: v for k, v in data.items() if k not in ("node", "pos") and not isinstance(v, (dict, list))}
    for k, v in data.items():
        if isinstance(v, dict):
            sub = tree.add(_node_label(k, v))
            _fill(sub, v)
        elif isinstance(v, list) and v:
            sub = tree.add(f"[dim]{k}[/]")
            for item in v:
                if isinstance(item, dict):
                    _fill(sub.add(_node_label(None, item)), item)
                else:
                    sub.add(escape(repr(item)))
    del scalars


def _node_label(key, v: dict) -> str:
    facts = ", ".join(
        escape(f"{k}={v[k]!r}")
        for k in v
        if k not in ("node", "pos") and not isinstance(v[k], (dict, list)) and v[k] not in (None, False, ())
    )
    head = f"[dim]{key}:[/] " if key else ""
    pos = f" [dim]@{v['pos']}[/]" if "pos" in v else ""
    return f"{head}[cyan]{v.get('node', '')}[/]" + (f" {facts}" if facts else "") + pos


def render(c: CompiledQuery, console: Console | None = None, *, explain: bool = True) -> None:
    console = console or Console()
    d = explain_data(c)
    if not explain:
        console.print(
            f"[green]ok[/]: {d['kind']} query over {d['trend_set']['set']} trends, "
            f"{len(d['predicates'])} predicate(s), strategy {d['plan']['strategy']}"
        )
        _warn_unbound(console, d)
        return

    console.print(Panel(Syntax(d["query"], "sql", word_wrap=True), title="query (canonical form)", expand=False))
    console.print(_ast_tree(d["ast"], "AST"))

    table = Table(title="predicates", show_lines=False)
    for col in ("predicate", "kind", "op", "scope", "h / orientation", "why"):
        table.add_column(col, overflow="fold")
    for p in d["predicates"]:
        orient = ""
        if p["comparator"]:
            orient = f"next {p['comparator']} h(prev); {p['h']}" + (f" ({p['monotone']})" if p["monotone"] else "")
        table.add_row(*(escape(x) for x in (p["predicate"], p["kind"], p["op"], p["scope"], orient, p["reason"])))
    if not d["predicates"]:
        table.add_row("(none)", "", "", "", "", "")
    console.print(table)

    console.print(_template_tree(d["template"]))

    plan = Tree("[bold]logical plan[/]")
    node = plan
    for s in d["plan"]["steps"]:
        facts = escape(", ".join(f"{k}={v}" for k, v in s.items() if k != "op"))
        node = node.add(f"[magenta]{s['op']}[/] {facts}")
    console.print(plan)
    console.print(f"[bold]strategy[/]: {escape(d['plan']['strategy'] + ' — ' + d['plan']['reason'])}")
    console.print(f"[bold]trend set[/]: {escape(d['trend_set']['set'] + ' — ' + d['trend_set']['reason'])}")
    console.print(f"[bold]window[/]: {escape(str(c.bound.window))}")
    if d["schema"]:
        console.print(f"[bold]schema[/]: checked against {escape(d['schema'])}")
    _warn_unbound(console, d)


def _template_tree(t: dict, title: str = "template") -> Tree:
    tree = Tree(f"[bold]{title}[/]")
    states = tree.add("states")
    for s in t["states"]:
        kind = "+" if s["kleene"] else " (repeated)" if s["repeated"] else ""
        states.add(escape(f"{s['name']}: {s['type']}{kind}") + f" [yellow]{s['role']}[/]")
    trans = tree.add("transitions")
    for tr in t["transitions"]:
        trans.add(escape(f"{tr['from']} → {tr['to']} ({tr['label']})"))
    for n in t["negations"]:
        prev = ", ".join(n["previous"]) or "window start"
        follow = ", ".join(n["following"]) or "window end"
        sub = _template_tree(n["template"], escape(f"NOT ({n['case']}: after {prev}, before {follow})"))
        tree.add(Group(sub))
    return tree


def _warn_unbound(console: Console, d: dict) -> None:
    if d["parameters"]["unbound"]:
        names = escape(", ".join(d["parameters"]["unbound"]))
        console.print(f"[yellow]note[/]: parameter(s) {names} unbound; give them at run time with --param name=value")
