"""Generated workloads and how to run them, for the workload tests: 2-8
queries over one generated stream — fixed SEQ counts with a shared prefix
(A-Seq's Pre-Tree), with a shared middle, with a shared Kleene part, with
predicates or windows that differ, negations inside and around them — and
each query run alone (`engines.run_to`) or in the workload, written as
`cetql run --output DIR` writes them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engines import footer, rows, run_to, write_inputs
from generators import WINDOWS, queries
from hypothesis import strategies as st

import cetql
from cetql.base.options import Engine, OutputFormat, OutputMode, RunOptions, Sink
from cetql.surfaces.cli.flags import known_inputs
from cetql.surfaces.output import resolve_output, write, write_batches

# one position of a SEQ: (type, vertex predicate on its variable or None)
STEPS = [("A", None), ("B", None), ("A", "{v}.k = 'u'"), ("B", "{v}.x > 1"), ("A", "{v}.x <= 2"), ("C", None),
         ("B", "{v}.g = 'g'")]  # fmt: skip


@st.composite
def seq_count(draw, prefix, suffix=(), windows=((6, 3),), keyed: bool | None = None):
    """COUNT(*) of SEQ(prefix…, middle…, suffix…): A-Seq's prefix counters,
    a negated C somewhere now and then, an equivalence on g now and then."""
    middle = draw(st.lists(st.sampled_from(STEPS), min_size=0 if prefix or suffix else 1, max_size=1))
    steps = [*prefix, *middle, *suffix]
    items, where = [], []
    for i, (t, pred) in enumerate(steps):
        items.append(f"{t} v{i}")
        if pred:
            where.append(pred.format(v=f"v{i}"))
    if draw(st.integers(0, 2)) == 0:  # often within the shared prefix, where sharing must tell queries apart
        at = draw(st.integers(0, min(len(items), len(prefix) + 1)))
        items.insert(at, "!C n")
        if draw(st.booleans()):
            where.append("n.x < 3")
    if keyed if keyed is not None else draw(st.integers(0, 4)) == 0:
        where.append("[g]")
    within, slide = draw(st.sampled_from(windows))
    text = f"PATTERN SEQ({', '.join(items)})" + (f"\nWHERE {' AND '.join(where)}" if where else "")
    return f"{text}\nAGG COUNT(*)\nWITHIN {within} SLIDE {slide}"


@st.composite
def kleene_count(draw, predicate: str, windows=((6, 3),)):
    """A shared Kleene part, SEQ(A a, B+ b[]) with the same edge predicate, a different head."""
    head = draw(st.sampled_from(["", "WHERE a.k = 'u' AND ", "WHERE a.x > 0 AND "])) or "WHERE "
    within, slide = draw(st.sampled_from(windows))
    return f"PATTERN SEQ(A a, B+ b[])\n{head}{predicate}\nAGG COUNT(*)\nWITHIN {within} SLIDE {slide}"


@st.composite
def workloads(draw, typed: bool, detection: bool = True):
    """{name: query}: 2-8 queries of several families over one stream."""
    family_windows = tuple(draw(st.lists(st.sampled_from(WINDOWS), min_size=1, max_size=draw(st.sampled_from([1, 1, 2])),
                                         unique=True)))  # fmt: skip
    prefix = draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=2))
    middle = draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=2))
    keyed = draw(st.sampled_from([None, False, True]))
    kinds = st.sampled_from(["prefix"] * 5 + ["middle", "kleene", "aggregation"]
                            + (["detection"] if detection else []))  # fmt: skip
    out = {}
    for i in range(draw(st.integers(2, 8))):
        kind = draw(kinds)
        if kind == "prefix":
            text = draw(seq_count(prefix, windows=family_windows, keyed=keyed))
        elif kind == "middle":
            head = draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=1))
            text = draw(seq_count(head + middle, windows=family_windows, keyed=keyed))
        elif kind == "kleene":
            text = draw(kleene_count("b[i].x >= b[i-1].x", windows=family_windows))
        else:
            text = draw(queries(kind == "aggregation", repeated_types=not typed))
        out[f"q{i}"] = text
    return out


def compiled(texts: dict, data, by_type: dict, engine: Engine = Engine.AUTO, sharing: str = "auto", **options):
    """The workload planned as `cetql run … --output DIR` plans it."""
    opts = replace(RunOptions.of(**options), engine=engine, sink=Sink.PARQUET)
    cw = cetql.compile_many(texts, options=opts, strict_params=True, sharing=sharing)
    each = {n: known_inputs(data, {t: p for t, p in by_type.items() if t in c.types}, "ts") for n, c in cw.queries}
    return cw.planned(each, strict_params=True)


def run_workload_to(folder: Path, cw, data, by_type: dict, spark=None) -> dict[str, Path]:
    """Each query's result written to folder/<name>, by the workload's engine."""
    out = {}
    folder.mkdir(parents=True, exist_ok=True)
    if cw.plan.engine.engine == Engine.EMBEDDED:
        from cetql.backends.embedded.workload import run_workload

        for name, result in run_workload(cw.plan).items():
            write_batches(result.schema, result.batches, resolve_output(str(folder / name), OutputMode.ERROR,
                                                                        fmt=OutputFormat.PARQUET))  # fmt: skip
            out[name] = folder / name
        return out
    types = {t for _, c in cw.queries for t in c.types}  # an input of a type no query reads is refused by name
    frames = cw.run(data, spark=spark, **{t: p for t, p in by_type.items() if t in types})
    try:
        for name, df in frames.items():
            write(df, resolve_output(str(folder / name), OutputMode.ERROR, fmt=OutputFormat.PARQUET), OutputFormat.PARQUET)
            out[name] = folder / name
    finally:
        frames.unpersist()
    return out


def alone(folder: Path, texts: dict, data, by_type: dict, engine: Engine, spark=None, **options) -> dict:
    """(rows, footer) of each query run alone."""
    out = {}
    for name, text in texts.items():
        types = cetql.compile(text).types
        mine = {t: p for t, p in by_type.items() if t in types}
        done = run_to(folder / f"alone-{name}", text, data, mine, engine, spark=spark, **options)
        out[name] = (rows(done), footer(done))
    return out


def shared_and_alone_embedded(texts: dict, events: list[dict], folder: Path):
    """(the compiled workload, {name: (rows, footer)} run shared, the same
    of each query alone) of typed events written as Parquet, on the
    embedded engine."""
    data, by_type = write_inputs(folder, events, True, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    done = run_workload_to(folder / "shared", cw, data, by_type)
    shared = {n: (rows(p), footer(p)) for n, p in done.items()}
    return cw, shared, alone(folder, texts, data, by_type, Engine.EMBEDDED, id_col="id")
