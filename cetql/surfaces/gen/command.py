"""`cetql gen SCENARIO --events N -o PATH`: the command line."""

from __future__ import annotations

from cetql.surfaces.gen.scenarios import SCENARIOS
from cetql.surfaces.gen.write import _target, generate
from cetql.surfaces.serve.state import token_for


def add_parser(subparsers) -> None:
    """`cetql gen SCENARIO --events N -o PATH [--seed S] [--mode error|overwrite]`."""
    import argparse

    lines = [f"  {s.name:<10} {s.about} (default {s.default_events:,} events)" for s in SCENARIOS.values()]
    g = subparsers.add_parser(
        "gen",
        help="write a deterministic example stream as Parquet",
        description="Write a deterministic event stream for the example queries, as Parquet, with Spark.\n\nscenarios:\n"
        + "\n".join(lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("scenario", choices=list(SCENARIOS), metavar="SCENARIO", help=", ".join(SCENARIOS))
    g.add_argument("--events", help="number of events (default: the scenario's, see above)")
    g.add_argument("-o", "--output", required=True, metavar="PATH", help="a Parquet folder (one per type under it)")
    g.add_argument("--seed", default=1, help="the same seed gives the same data (default 1)")
    g.add_argument(
        "--mode", choices=["error", "overwrite"], default="error", help="if PATH exists: refuse (default) or replace"
    )
    g.add_argument("--master", help="Spark master URL (default: the active session, else local[*])")
    g.set_defaults(func=_cmd_gen)


def _cmd_gen(args) -> int:
    from cetql.backends.spark.session import get_spark  # start-up cost: `cetql --help` must not load pyspark

    events = args.events if args.events is not None else SCENARIOS[args.scenario].default_events
    _target(args.output, args.mode)  # refused before Spark starts
    spark = get_spark(args.master, token_for=token_for)
    result = generate(args.scenario, events, args.output, seed=args.seed, spark=spark, mode=args.mode)
    print(result["message"])
    return 0
