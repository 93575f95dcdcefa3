"""How many trends of each set on a 1,000-event random-walk stock stream
(10 symbols, [sym], rising price, WITHIN 20 SLIDE 10): the engine's counts and
the brute-force reference's, which must agree.

    python bench/trend_sets.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "support"))

from generate import stock  # noqa: E402
from reference import reference_trends  # noqa: E402

import cetql  # noqa: E402

QUERY = "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 20 SLIDE 10"


def main() -> None:
    spark = cetql.get_spark()
    table = stock(1000)
    df = spark.createDataFrame(table.to_pandas())
    rows = table.to_pylist()
    for trend_set in ("all", "complete", "maximal"):
        engine = cetql.compile(QUERY).run(df, id_col="id", trends=trend_set).count()
        reference = sum(
            len(trends)
            for sym in sorted({r["sym"] for r in rows})
            for trends in reference_trends(
                QUERY, [r for r in rows if r["sym"] == sym], trend_set=trend_set.upper()
            ).values()
        )
        print(f"{trend_set:9s} engine {engine:6,}  reference {reference:6,}")
        assert engine == reference


if __name__ == "__main__":
    main()
