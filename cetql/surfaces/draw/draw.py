"""`cetql draw`: a picture of one window and group of a detection query —
its events in time order, an edge where two can be consecutive in a trend
(the graph detection walks), the trends drawn in colour with a legend that
prints each as `cetql run` does.

Nodes are labelled by what the query's predicates link, as `cetql run`
prints chains (`render.default_chain`): for `c[i].src = c[i-1].dst` a node is
the account a check paid into, and each chain starts from its first payer's
account, so a trend reads acct23 → acct04 → acct15; for `s[i].price >
s[i-1].price` a node is a price.

The group drawn is the one with the most trends among those that
`--window-start` and `--group` allow and that hold at most `--max-nodes`
events (one Spark job counts every group's trends without building them); it
is named on standard error.  Only that group's events leave Spark.  Needs
matplotlib (`pip install "cetql[draw]"`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from cetql.backends.inputs.facts import describe_paths
from cetql.backends.spark.compiler import kernel_input
from cetql.backends.spark.failures import describe
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError, UsageError
from cetql.base.options import RunOptions
from cetql.planner.physical.kernel import kernel_spec
from cetql.surfaces.api.query import compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.draw import picture
from cetql.surfaces.draw.group import choose, fetch, group_run
from cetql.surfaces.draw.scene import _values, scene_of
from cetql.surfaces.draw.times import _window_index, window_text
from cetql.surfaces.output import resolve_output, write_file
from cetql.surfaces.render import default_chain
from cetql.surfaces.serve.state import token_for

FORMATS = {".svg": "svg", ".png": "png"}


def _format(output: str) -> str:
    """The picture's format, from the output's extension (checked before Spark starts)."""
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        raise UsageError(f"--output must end in .svg or .png, not '{Path(output).name}'")
    return fmt


def _groups(items: list[str] | None) -> dict[str, str]:
    groups = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--group takes KEY=VALUE, not '{item}'")
        groups[key.strip()] = value
    return groups


def cmd_draw(args) -> int:
    data, typed = parse_inputs(args.input)
    target = resolve_output(args.output, args.mode, inputs=[data] if data else list(typed.values()),
                            query_file=args.query_file, kind="file", writer="draw")  # fmt: skip
    fmt = _format(args.output)
    groups = _groups(args.group)
    _check_matplotlib()
    # one kernel group per window: the group drawn is a window's
    options = RunOptions.of(time_col=args.time_col, id_col=args.id_col, max_trends=0, sharing="copy")
    known = describe_paths({None: data} if data is not None else dict(typed), options.time_col)
    compiled = compile(read_query(args.query_file), parse_params(args.param), options=options, inputs=known,
                       strict_params=True)  # fmt: skip
    if compiled.kind != "detection":
        raise UsageError("cetql draw shows a detection query's trends; drop AGG/RETURN to draw its pattern")
    spark = get_spark(args.master, remote=args.remote, token_for=token_for)
    try:
        execution = compiled.execution(data, spark=spark, options=options, **typed)
        plan = execution.plan
        df = kernel_input(plan, execution.inputs)
        phys = SimpleNamespace(spec=kernel_spec(plan), names=plan.names, time_kind=plan.scan.time_kind.value,
                               keys=tuple((k.column, k.attr) for k in plan.partition.keys),
                               window_slide=plan.windows.slide, window_length=plan.windows.length)  # fmt: skip
        window = _window_index(args.window_start, phys) if args.window_start is not None else None
        chosen, n_events, _, among = choose(df, phys, window, groups, args.max_nodes)
        run = group_run(phys.spec, fetch(df, phys, chosen))
        if args.trend is not None and args.trend > len(run.trends):
            raise UsageError(f"--trend {args.trend}: that window has {len(run.trends):,} trends")
        if args.label:
            chain = ("values", tuple(a.strip() for a in args.label.split(",") if a.strip()))
        else:
            chain = default_chain(execution.plan.logical)
        values = _values(execution, list(run.times), chain[1] if chain else (), "--label" if args.label else "labels")
    except CetqlError:
        raise
    except Exception as e:
        raise describe(e) from None
    where = window_text(chosen[phys.names.window], phys)
    keys = ", ".join(f"{attr} = {chosen[col]}" for col, attr in phys.keys)
    where += f", {keys}" if keys else ""
    if window is None or len(groups) < len(phys.keys):  # chosen here: say which
        _say_chosen(where, run, phys, n_events, among, args.max_nodes)
    name = "query" if args.query_file == "-" else Path(args.query_file).name
    positions = execution.plan.logical.root.template.all_positions
    fig = picture.draw(scene_of(run, phys, chain, values, title=f"{name}: {where}", wanted=args.trend,
                                positions=positions))  # fmt: skip
    if write_file(target, lambda path: Path(path).write_bytes(picture.encode(fig, fmt))):
        print(f"drew {where} to {args.output} ({round(fig.bbox.width)}×{round(fig.bbox.height)} px)")
    else:
        print(f"'{args.output}' exists; nothing drawn (--mode ignore)")
    return 0


def _check_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401 - an optional dependency: is it installed?
    except ImportError:
        raise UsageError('cetql draw needs matplotlib: pip install "cetql[draw]"') from None


def _say_chosen(where: str, run, phys, n_events: int, among: int, max_nodes: int) -> None:
    found = f"{len(run.trends):,}" if run.complete else f"more than {len(run.trends):,}"
    hint = "--window-start and --group choose another" if phys.keys else "--window-start chooses another"
    print(f"drawing {where}: {n_events:,} events, {found} trends, the most of {among:,} "
          f"{'groups' if phys.keys else 'windows'} of at most {max_nodes:,} events ({hint})",
          file=sys.stderr)  # fmt: skip
