"""The kernels alone, without Spark: each one timed on one Arrow table, the
compiled path (numba) against the reference (pure Python,
compiled=never), in one run; prints a markdown table.

    python bench/kernels.py [--events N] [--repeat R]

- A W100 / A W1000: `RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND
  S.price < NEXT(S).price GROUP-BY id WITHIN W SLIDE W/2` on N ticks, one a
  second over 10 ids (100 and 1,000 events a window and id), exact (every
  digit, `--exact string`) and approximate (`--approx`).
- D1: `PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50`
  (kiting) on N checks between 50 accounts; trends written to Arrow.

The kernel input is built as the product builds it (query text → plan →
kernel spec, the Spark compiler's columns and windows: tests/support/harness.py),
not timed.  events/s: input events per second (each falls in two windows);
one process, one thread: per core.  The compiled path's first call
(loading numba's cache, or compiling into it) is timed on its own; the
figures are the best of R warm calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "support")]

from generate import kiting  # noqa: E402
from harness import kernel_table, plan_for  # noqa: E402

from cetql.base.options import RunOptions  # noqa: E402
from cetql.kernels.aggregate import aggregate_table  # noqa: E402
from cetql.kernels.detect import detect_table  # noqa: E402
from cetql.planner.physical.kernel import kernel_spec  # noqa: E402

A = "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id WITHIN {w} SLIDE {s}"
D1 = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50"


def ticks(n: int, ids: int = 10, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    price = 100 + np.cumsum(rng.choice([-1.0, 1.0], n) * rng.integers(1, 5, n))
    return [{"ts": t, "id": t % ids, "price": float(p)} for t, p in enumerate(price)]


def case(text: str, events: list[dict], **options):
    cols = sorted({k for e in events[:1] for k in e})
    plan, phys = plan_for(text, columns=cols, options=RunOptions.of(**options))
    return kernel_spec(phys), kernel_table(plan, phys, events)


def run(kernel, spec, table, mode: str) -> tuple[float, int, pa.Table]:
    spec = dataclasses.replace(spec, compiled="always" if mode == "fast" else "never")
    t = time.perf_counter()
    out = pa.Table.from_batches(list(kernel(spec, table)))
    return time.perf_counter() - t, out.num_rows, out


def measure(name, kernel, spec, table, n: int, repeat: int, trends: bool) -> list[str]:
    first, _, _ = run(kernel, spec, table, "fast")
    fast = min(run(kernel, spec, table, "fast")[0] for _ in range(repeat))
    ref_s, rows, ref = run(kernel, spec, table, "python")
    _, _, got = run(kernel, spec, table, "fast")
    assert got.equals(ref), f"{name}: the compiled path's rows differ from the reference's"
    per = (lambda s: f"{rows / s:,.0f}") if trends else (lambda s: f"{n / s:,.0f}")
    return [name, f"{n:,}", f"{rows:,}", f"{ref_s:.3f}", f"{fast:.3f}", f"{first:.2f}", per(ref_s), per(fast),
            f"{ref_s / fast:.1f}"]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    n = a.events
    stock = ticks(n)
    lines = ["| kernel | events | output rows | reference s | compiled s | compiled first call s | reference /s "
             "| compiled /s | reference / compiled |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for w, mode in ((1000, "exact"), (10000, "exact"), (1000, "approx"), (10000, "approx")):
        options = {"approx": True} if mode == "approx" else {"exact": "string"}
        spec, table = case(A.format(w=w, s=w // 2), stock, **options)
        name = f"A W{w // 10} {mode} (events/s)"
        lines.append("| " + " | ".join(measure(name, aggregate_table, spec, table, n, a.repeat, False)) + " |")
    spec, table = case(D1, kiting(n).to_pylist())
    lines.append("| " + " | ".join(measure("D1 (trends/s)", detect_table, spec, table, n, a.repeat, True)) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
