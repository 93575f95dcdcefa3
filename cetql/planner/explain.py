"""`--explain`: the logical plan in plain words for Spark users (each
decision with its reason), then the physical plan that runs (what Spark and
the kernels receive), the predicates and the template; the AST only on
request.  `explain_text` is what `cetql compile --explain` prints and what
`CompiledQuery.explain()` returns; `explain_json` the same facts as JSON,
the physical plan in full (`planner.physical.data` reads it back).

Plain text, one fact per line, no wrapping: it reads the same in a terminal,
a pipe or a file.
"""

from __future__ import annotations

import json
from dataclasses import fields
from decimal import Decimal

from cetql.base.options import format_size
from cetql.language import ast as A
from cetql.language.printer import to_text
from cetql.planner.logical.plan import Aggregate, Decision, Detect, Filter, LogicalPlan, Partition, Scan, Windows
from cetql.planner.physical import plan as P
from cetql.planner.physical.data import to_data
from cetql.planner.physical.show import physical_lines
from cetql.planner.semantics import ir
from cetql.planner.semantics.template import Template, describe


def _num(v):
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _window_text(w: ir.Window, time_kind: str | None) -> str:
    unit = "" if w.unitless and time_kind not in ("timestamp", "timestamp_ns") else " s"
    length, slide = _num(w.length), _num(w.slide)
    if w.tumbling:
        return f"tumbling windows [k*{length}{unit}, (k+1)*{length}{unit})"
    return f"sliding windows [k*{slide}{unit}, k*{slide}{unit} + {length}{unit})"


def _inputs_text(scan: Scan) -> str:
    i = scan.inputs
    if not i.known:
        return "not known yet (give --input to plan for them)"
    what = ", ".join(i.names)
    if i.typed:
        return f"{what}, bound to types {', '.join(i.types)}"
    return f"{what} (a single-type stream: any row may take any type of the pattern)"


def plan_lines(plan: LogicalPlan) -> list[str]:
    """The operator tree, Scan first, in plain words."""
    out: list[str] = []

    def op(name: str, first: str, *more: str) -> None:
        out.append(f"{name:<10} {first}")
        out.extend(f"{'':<10} {m}" for m in more)

    for node in plan.operators():
        words = _OPERATOR_LINES.get(type(node))
        if words is not None:
            name, lines = words(node, plan)
            op(name, *(lines or ["none"]))
    stream = plan.stream.choice if plan.stream is not None else None
    if stream is not None:
        op("Stream", f"streaming — {plan.stream.reason}", f"keys: {stream.block}",
           f"watermark: {stream.watermark.choice:,} ms — {stream.watermark.reason}", f"late events: {stream.late}")
    return out


def _scan_lines(node: Scan, _plan) -> tuple[str, list[str]]:
    kind = node.inputs.time_kind
    time = f"time {node.time_col}" + (f" ({kind.replace('_ns', ', nanoseconds')})" if kind else "")
    ids = f"ids from column {node.id_col}" if node.id_col else "ids derived from input order"
    return "Scan", [f"inputs: {_inputs_text(node)}", f"{time}; {ids}; event types {', '.join(node.types)}",
                    f"invalid rows: {node.invalid}"]  # fmt: skip


def _filter_lines(node: Filter, _plan) -> tuple[str, list[str]]:
    lines = [f"every event: {p.text}" for p in node.constant]
    for sf in node.states:
        conds = ([f"type {sf.type}"] if node.child.inputs.typed else []) + [p.text for p in sf.predicates]
        tag = " (negated)" if sf.negated else ""
        lines.append(f"{sf.position}{tag}: {' AND '.join(conds) if conds else 'any event'}")
    return "Filter", lines


def _windows_lines(node: Windows, plan) -> tuple[str, list[str]]:
    return "Windows", [_window_text(node.window, plan.find(Scan).inputs.time_kind), f"sharing: {node.sharing}"]


def _partition_lines(node: Partition, _plan) -> tuple[str, list[str]]:
    first = f"block of {node.child.block} windows" if node.child.block else "window"
    keys = ", ".join([first, *[k.attr for k in node.keys]])
    lines = [f"by ({keys}) — {node.reason}", f"partitions: {node.partitions}"]
    if node.subkeys:
        lines.append("sub-keys in the kernel: " + ", ".join(s.attr for s in node.subkeys))
    return "Partition", lines + [f"[{k.position}.{k.attr}]: {k.method}" for k in node.variable_keys]


def _detect_lines(node: Detect, _plan) -> tuple[str, list[str]]:
    lines = [f"trends: {node.trend_set}", f"strategy: {node.strategy}"]
    lines += _transition_lines(node.transitions)
    lines += [f"cross: {c.text} — {c.reason}" for c in node.cross]
    lines.append(f"guard: {node.guard}")
    if node.estimate is not None:
        lines.append(f"estimate: {node.estimate}")
    if node.prefilter is not None:
        lines.append(f"pre-filter: {node.prefilter}")
    if node.split is not None:
        lines.append(f"split: {node.split}")
    if node.memory is not None:
        lines.append(f"memory: {format_size(node.memory.choice)} — {node.memory.reason}")
    lines.append(f"cost: {node.cost}")
    if node.with_rows:
        lines.append("rows: each trend carries its events' input rows")
    return "Detect", lines


def _aggregate_lines(node: Aggregate, _plan) -> tuple[str, list[str]]:
    lines = ["aggregates: " + ", ".join(a.name for a in node.aggregates), f"trends: {node.trend_set}",
             f"algorithm: {node.algorithm}"]  # fmt: skip
    if node.complete is not None:
        lines.append(f"complete: {node.complete}")
    lines.append(f"numbers: {node.numbers}")
    lines += _transition_lines(node.transitions)
    lines.append(f"cost: {node.cost}")
    return "Aggregate", lines


_OPERATOR_LINES = {Scan: _scan_lines, Filter: _filter_lines, Windows: _windows_lines, Partition: _partition_lines,
                   Detect: _detect_lines, Aggregate: _aggregate_lines}  # fmt: skip


def _transition_lines(transitions) -> list[str]:
    lines = []
    for tp in transitions:
        where = " AND ".join(p.text for p in tp.predicates) or "no predicate"
        lines.append(f"step {tp.source} → {tp.target}: {where}; index {tp.index}")
    return lines


def predicate_lines(query: ir.BoundQuery) -> list[str]:
    out = []
    for p in query.predicates:
        line = f"{p.text}  [{ir.label(p)}] {p.reason}"
        if isinstance(p, ir.EdgePredicate) and p.comparator:
            line += f"; oriented next {p.comparator} h(prev), {p.h_text}" + (
                f" ({p.monotone})" if p.monotone and p.monotone != "unknown" else ""
            )
        out.append(line)
    return out or ["(none)"]


def _head(plan: LogicalPlan) -> str:
    root = plan.root
    how = f"strategy {root.strategy.choice.value}" if isinstance(root, Detect) else f"algorithm {root.algorithm.choice.value}"
    return f"{plan.query.kind.value} query over {root.trend_set.choice.value} trends, {how}"


def explain_text(compiled, *, ast: bool = False) -> str:
    physical: P.PhysicalPlan = compiled.plan
    plan = physical.logical
    q = plan.query
    lines = [_head(plan), "", "query:"]
    lines += ["  " + x for x in to_text(compiled.ast).splitlines()]
    lines += ["", "plan:"] + ["  " + x for x in plan_lines(plan)]
    lines += ["", "physical plan:"] + ["  " + x for x in physical_lines(physical)]
    if physical.assumed:
        lines += ["", "assumed (not known when planning; the plan that runs is made for the real ones):"]
        lines += ["  " + a for a in physical.assumed]
    lines += ["", "predicates:"] + ["  " + x for x in predicate_lines(q)]
    lines += ["", "template:"] + ["  " + x for x in describe(q.template)]
    if q.params:
        lines += ["", "parameters: " + ", ".join(f"{k}={v}" for k, v in q.params)]
    if q.unbound:
        lines += ["", f"note: parameter(s) {', '.join(q.unbound)} unbound; give them at run time with --param name=value"]
    if q.schema is not None:
        lines += ["", f"schema: checked against {q.schema}"]
    if ast:
        lines += ["", "AST:"] + ["  " + x for x in _ast_lines(compiled.ast)]
    return "\n".join(lines)


def summary_text(compiled) -> str:
    plan = compiled.plan.logical
    root = plan.root
    how = f"strategy {root.strategy.choice.value}" if isinstance(root, Detect) else f"algorithm {root.algorithm.choice.value}"
    text = (
        f"ok: {plan.query.kind.value} query over {root.trend_set.choice.value} trends, "
        f"{len(plan.query.predicates)} predicate(s), {how}"
    )
    if plan.query.unbound:
        text += f"\nnote: parameter(s) {', '.join(plan.query.unbound)} unbound; give them at run time with --param name=value"
    return text


# ---------------------------------------------------------------- JSON


def _decision(d: Decision | None):
    if d is None:
        return None
    choice = d.choice.value if hasattr(d.choice, "value") else d.choice
    return {"choice": choice, "reason": d.reason}


def _estimate(d: Decision | None):
    if d is None or d.choice is None:
        return _decision(d)
    e = d.choice
    return {"choice": {"events": e.events, "nodes": e.nodes, "edges": e.edges, "bytes": e.bytes}, "reason": d.reason}


def _jsonable(v):
    if isinstance(v, Decimal):
        return _num(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def plan_data(plan: LogicalPlan) -> list[dict]:
    out = []
    for node in plan.operators():
        if isinstance(node, Scan):
            i = node.inputs
            out.append({"op": "Scan", "inputs": list(i.names) if i.known else None, "typed": i.typed,
                        "types": list(node.types), "time": node.time_col, "time_kind": i.time_kind,
                        "id": node.id_col, "invalid": _decision(node.invalid)})  # fmt: skip
        elif isinstance(node, Filter):
            out.append({"op": "Filter", "constant": [p.text for p in node.constant],
                        "states": [{"position": s.position, "type": s.type, "negated": s.negated,
                                    "predicates": [p.text for p in s.predicates]} for s in node.states]})  # fmt: skip
        elif isinstance(node, Windows):
            w = node.window
            out.append({"op": "Windows", "length": _num(w.length), "slide": _num(w.slide),
                        "unit": None if w.unitless else "s", "tumbling": w.tumbling,
                        "sharing": _decision(node.sharing), "block": node.block,
                        "propagate": node.propagate, "shared_graph": node.shared_graph})  # fmt: skip
        elif isinstance(node, Partition):
            out.append({"op": "Partition", "keys": [k.attr for k in node.keys],
                        "subkeys": [s.attr for s in node.subkeys], "partitions": _decision(node.partitions),
                        "variable_keys": [{"key": f"{k.position}.{k.attr}", "method": _decision(k.method)}
                                          for k in node.variable_keys],
                        "reason": node.reason})  # fmt: skip
        else:
            d = {"op": type(node).__name__, "trend_set": _decision(node.trend_set),
                 "transitions": [{"from": t.source, "to": t.target, "predicates": [p.text for p in t.predicates],
                                  "index": _decision(t.index)} for t in node.transitions],
                 "cost": node.cost}  # fmt: skip
            if isinstance(node, Detect):
                d.update(strategy=_decision(node.strategy), guard=_decision(node.guard), memory=_decision(node.memory),
                         max_edges=node.max_edges, batch_events=node.batch_events, prefilter=_decision(node.prefilter),
                         estimate=_estimate(node.estimate), split=_decision(node.split),
                         cross=[c.text for c in node.cross], with_rows=node.with_rows)  # fmt: skip
            else:
                d.update(algorithm=_decision(node.algorithm), complete=_decision(node.complete),
                         numbers=_decision(node.numbers), aggregates=[a.name for a in node.aggregates],
                         group_by=[k.text() for k in node.group_by])  # fmt: skip
            out.append(d)
    stream = plan.stream.choice if plan.stream is not None else None
    if stream is not None:
        out.append({"op": "Stream", "reason": plan.stream.reason, "block": _decision(stream.block),
                    "watermark_ms": _decision(stream.watermark), "late": _decision(stream.late)})  # fmt: skip
    return out


def explain_data(compiled) -> dict:
    physical: P.PhysicalPlan = compiled.plan
    plan = physical.logical
    q = plan.query
    return {
        "query": to_text(compiled.ast),
        "kind": q.kind.value,
        "trend_set": _decision(plan.root.trend_set),
        "plan": plan_data(plan),
        "physical": to_data(physical),
        "assumed": list(physical.assumed),
        "predicates": [
            {
                "predicate": p.text,
                "kind": p.kind,
                "op": str(p.op),
                "scope": p.scope,
                "reason": p.reason,
                **(
                    {"from": p.source, "to": p.target, "comparator": p.comparator, "h": p.h_text, "monotone": p.monotone}
                    if isinstance(p, ir.EdgePredicate)
                    else {"positions": list(p.positions)}
                    if isinstance(p, (ir.VertexPredicate, ir.CrossPredicate))
                    else {"keys": [k.text() for k in p.keys]}
                ),
            }
            for p in q.predicates
        ],
        "template": _template_data(q.template),
        "parameters": {"bound": {k: _jsonable(v) for k, v in q.params}, "unbound": list(q.unbound)},
        "schema": str(q.schema) if q.schema else None,
        "ast": ast_to_data(compiled.ast),
    }


def explain_json(compiled) -> str:
    return json.dumps(explain_data(compiled), indent=2)


def _template_data(t: Template) -> dict:
    return {
        "states": [
            {"name": p.name, "type": p.type, "var": p.var, "role": t.role(p.name), "kleene": p.kleene_self,
             "repeated": p.repeated}  # fmt: skip
            for p in t.positions
        ],
        "transitions": [{"from": a, "to": b, "label": "/".join(sorted(labels))} for a, b, labels in t.transitions],
        "negations": [
            {"case": n.case, "previous": sorted(n.previous), "following": sorted(n.following),
             "template": _template_data(n.template)}  # fmt: skip
            for n in t.negatives
        ],
    }


def ast_to_data(node):
    """AST → plain nested dicts (`node` names the class, `pos` is 'line:col')."""
    if isinstance(node, A.Node):
        out = {"node": type(node).__name__}
        for f in fields(node):
            if not f.compare:
                continue
            out[f.name] = ast_to_data(getattr(node, f.name))
        if node.pos is not None:
            out["pos"] = str(node.pos)
        return out
    if isinstance(node, tuple):
        return [ast_to_data(x) for x in node]
    return _jsonable(node)


def _ast_lines(node) -> list[str]:
    data = ast_to_data(node)
    return _data_lines(data, "")


def _data_lines(d, indent: str) -> list[str]:
    lines = []
    if isinstance(d, dict):
        facts = ", ".join(f"{k}={v!r}" for k, v in d.items()
                          if k not in ("node", "pos") and not isinstance(v, (dict, list)) and v not in (None, False))  # fmt: skip
        pos = f" @{d['pos']}" if "pos" in d else ""
        lines.append(f"{indent}{d.get('node', '')}{(' ' + facts) if facts else ''}{pos}")
        for k, v in d.items():
            if isinstance(v, dict):
                lines.append(f"{indent}  {k}:")
                lines += _data_lines(v, indent + "    ")
            elif isinstance(v, list) and v:
                lines.append(f"{indent}  {k}:")
                for x in v:
                    lines += _data_lines(x, indent + "    ") if isinstance(x, dict) else [f"{indent}    {x!r}"]
    return lines
