"""A serve's warm-up (`serve.runner.warm_up`) loads the compiled loops its
runs call, with the argument types they pass: a run handed to the warm
process then compiles and loads nothing (each forked run paid the load of
every loop the warm-up missed — COUNT(*) in limbs, a tenth of a second).
Runs of the benchmarks' shapes: kiting detection over text accounts
(`--id-col`), and exact COUNT(*) of rising prices, keyed and not, past 64
bits."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numba
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cetql.backends.embedded.compiler import run
from cetql.backends.inputs.facts import describe_paths
from cetql.base.options import Engine, RunOptions, Sink
from cetql.kernels import select
from cetql.surfaces.api.query import compile
from cetql.surfaces.serve.runner import warm_up

pytestmark = pytest.mark.skipif(not select.available(), reason="numba does not import here")

RUNS = [
    ("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50", {"id_col": "id", "max_trends": 0}),
    ("RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id WITHIN 1000 SLIDE 500",
     {"exact": "decimal"}),
    ("RETURN COUNT(*) PATTERN Stock S+ WHERE S.price < NEXT(S).price WITHIN 2000 SLIDE 1000", {"exact": "string"}),
]  # fmt: skip


def _signatures() -> dict[str, set]:
    return {f"{m}.{k}": set(map(str, v.signatures)) for m, mod in list(sys.modules.items()) if m.startswith("cetql.")
            for k, v in vars(mod).items() if isinstance(v, numba.core.registry.CPUDispatcher)}  # fmt: skip


def test_runs_call_the_loops_the_warm_up_loaded(tmp_path):
    """In a process of its own: what this one compiled before is not the warm-up's."""
    done = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}


def _runs(tmp_path: Path) -> dict[str, list[str]]:
    """The loops and argument types the runs call that the warm-up did not load."""
    warm_up()
    loaded = _signatures()
    n = 6000
    table = pa.table({"ts": pa.array(range(n), pa.int64()), "id": pa.array(range(n), pa.int64()),
                      "src": pa.array([f"acct{i * 31 % 40}" for i in range(n)]),
                      "dst": pa.array([f"acct{i * 17 % 40}" for i in range(n)]),
                      "price": pa.array([1000 + i // 3 - (i * 7 % 5) for i in range(n)], pa.int64())})  # fmt: skip
    path = tmp_path / "events.parquet"
    pq.write_table(table, path)
    inputs = describe_paths({None: str(path)}, "ts")
    for text, options in RUNS:
        opts = replace(RunOptions.of(engine=Engine.AUTO, **options), sink=Sink.PARQUET)
        plan = compile(text, {}, options=opts, inputs=inputs).plan
        assert plan.engine.engine == Engine.EMBEDDED, plan.engine.reason
        assert sum(b.num_rows for b in run(plan).batches) > 0, text
    return {k: sorted(v - loaded.get(k, set())) for k, v in _signatures().items() if v - loaded.get(k, set())}


if __name__ == "__main__":
    print(json.dumps(_runs(Path(sys.argv[1]))))
