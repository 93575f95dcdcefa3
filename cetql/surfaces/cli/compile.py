"""`cetql compile`: check a query and show its plan, without an engine."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from cetql.backends.spark.resources import default_resources
from cetql.base.errors import UsageError
from cetql.base.options import Sink
from cetql.planner.explain import explain_data, explain_text, summary_text
from cetql.planner.logical.plan import Inputs
from cetql.planner.semantics.schema import parse_ddl
from cetql.surfaces.api.query import check_inputs, compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.cli.flags import as_stream, known_inputs, run_options
from cetql.surfaces.cli.workload import cmd_compile_workload
from cetql.surfaces.cli.workload_file import is_workload


def cmd_compile(args) -> int:
    if is_workload(args):
        return cmd_compile_workload(args)
    text = read_query(args.query_file)
    options = run_options(args)
    params = parse_params(args.param)
    if args.schema and args.input:
        raise UsageError("give either --schema or --input, not both")
    data, typed = parse_inputs(args.input)
    check_inputs(data if data is not None else typed)
    inputs = known_inputs(data, typed, options.time_col, options.time_zone) if args.input else None
    if args.input and inputs is None:
        missing = [v for v in ([data] if data else typed.values()) if not Path(str(v)).exists()]
        raise UsageError(f"input '{missing[0]}' does not exist")
    schema = parse_ddl(args.schema) if args.schema else (inputs.schema if inputs else None)
    if args.stream:  # planned as `run --stream` runs it: the plan's stateful operator
        inputs = as_stream(inputs or Inputs(schema=schema), args.watermark)
    elif args.watermark is not None:
        raise UsageError("--watermark is for streams: add --stream")
    # planned for the session `cetql run` starts by default (local[*], its driver memory), for a result written as
    # Parquet files (`run --output DIR`): the plan that runs there
    options = replace(options, sink=Sink.PARQUET)
    compiled = compile(text, params, schema, options=options, inputs=inputs, resources=default_resources(),
                       strict_params=bool(args.param))  # fmt: skip
    if args.format == "json":
        data_out = explain_data(compiled)
        if not args.ast:
            data_out.pop("ast", None)
        print(json.dumps(data_out, indent=2))
        return 0
    if args.explain or args.ast:
        print(explain_text(compiled, ast=args.ast))
    else:
        print(summary_text(compiled))
    return 0
