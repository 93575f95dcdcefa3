"""What reading inputs as written costs: the reader on one CSV of N rows,
timed in one session, alternating the two sides of each pair.

    python bench/reader.py [--rows 1000000] [--repeat 3]

- ISO times: the time column cast by the exact reader (`times.iso_timestamp`:
  the zone given explicitly, digits below the microsecond refused) against
  Spark's own cast (`try_to_timestamp`, the session's zone, rounding).
- Quotes: the same rows with one quoted field (read whole by one task, as
  RFC 4180 needs for a newline in quotes) against none (split by Spark).

Each side projects the typed time and its invalid flag, as the scan does,
and counts them (every value is read).
Prints the medians and their ratios; writes nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))


def write_csv(path: Path, rows: int, quoted: bool) -> None:
    with open(path, "w") as f:
        f.write("id,ts,src,dst,amount\n")
        for i in range(rows):
            s = 1_767_225_600 + i
            stamp = f"2026-01-{1 + s // 86400 % 28:02d}T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{i % 999999:06d}Z"
            src = '"acct, the first"' if quoted and i == 0 else f"acct{i % 97}"
            f.write(f"{i},{stamp},{src},acct{(i * 7) % 97},{i % 1000}.5\n")


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from cetql.backends.spark import reader, times
    from cetql.backends.spark.session import get_spark

    spark = get_spark("local[2]")
    folder = Path(tempfile.mkdtemp(prefix="cetql-bench-reader-"))
    plain, quoted = folder / "plain.csv", folder / "quoted.csv"
    write_csv(plain, args.rows, quoted=False)
    write_csv(quoted, args.rows, quoted=True)
    src_plain, src_quoted = reader.describe(plain), reader.describe(quoted)
    assert not src_plain.multiline and src_quoted.multiline

    def count(source, cast):
        """As the scan reads a column: the typed value and its invalid flag, projected."""
        df = reader.read(spark, source)
        typed = cast(F.trim(F.col("ts")))
        bad = F.col("ts").isNotNull() & typed.isNull()
        return df.select(typed.alias("t"), bad.alias("bad")).agg(F.count("t"), F.sum(F.col("bad").cast("int"))).collect()

    exact = lambda c: times.iso_timestamp(c, "UTC")  # noqa: E731
    pairs = {
        "ISO times: exact reader / Spark's cast": (lambda: count(src_plain, exact),
                                                   lambda: count(src_plain, F.try_to_timestamp)),
        "quotes: one task a file / split": (lambda: count(src_quoted, F.try_to_timestamp),
                                            lambda: count(src_plain, F.try_to_timestamp)),
    }  # fmt: skip
    for fn in (f for pair in pairs.values() for f in pair):
        fn()  # warm: the JVM's code for each plan
    print(f"{args.rows:,} rows, {plain.stat().st_size / 2**20:.0f} MiB, local[2], medians of {args.repeat}")
    for name, (a, b) in pairs.items():
        ta, tb = [], []
        for _ in range(args.repeat):  # alternating
            ta += timed(a, 1)
            tb += timed(b, 1)
        ma, mb = statistics.median(ta), statistics.median(tb)
        print(f"{name}: {ma:.2f} s / {mb:.2f} s = {ma / mb:.2f}")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
