"""A text column's type from its sampled values (`sources.decide`): the
tests stop as soon as their answer is known, and must answer as reading
every value with each test does (the rule as SEMANTICS.md and
docs/inputs.md state it, spelled here the plain way)."""

from __future__ import annotations

from budget import budget
from hypothesis import given, settings
from hypothesis import strategies as st

from cetql.backends.inputs import casts, times
from cetql.backends.inputs.sources import decide


def every_value_read(values: list[str]) -> str:
    """The rule, each test over every value."""
    vals = [v.strip(" ") for v in values]
    if not vals:
        return "string"
    n = len(vals)
    ints = sum(1 for v in vals if casts.INT_RE.match(v))
    if ints == n:
        return "bigint" if all(-(2**63) <= int(v) < 2**63 for v in vals) else "decimal(38,0)"
    nums = sum(1 for v in vals if casts.NUMBER_RE.match(v))
    if nums == n or (nums * 2 > n and nums > 0):
        return "bigint" if ints == nums else "double"
    found = [v for v in vals if times.is_time(v)]
    if len(found) * 2 > n:
        return "timestamp_ns" if any(times.iso_parts(v)[1] % 1000 != 0 for v in found) else "timestamp"  # below micros
    if all(v.lower() in casts.BOOLEANS for v in vals):
        return "boolean"
    return "string"


# values near every boundary of the rule: integers (past 64 bits too), numbers, times to the second, micro- and
# nanosecond, booleans, text; a trailing line end (Python's `$` matches before it) and Spark's trimmed spaces
VALUES = ["0", "-7", "+12", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.5", "-.5",
          "2e10", "1E-3", "inf", "-Infinity", "NaN", "nan", "+NaN", "2024-01-02", "2024-01-02T03:04:05",
          "2024-01-02 03:04:05.123456", "2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.1234567+01:00",
          "2024-01-03T00:00:00.000000001", "2024-02-30", "2024-01-02T03:04:05+19:00", "true", "FALSE", "True", "acct07", "notcovered", "1.2.3",
          "12\n", " 5 ", "1.5\n", "-", "e5", ""]  # fmt: skip


@settings(max_examples=budget(600))
@given(st.lists(st.sampled_from(VALUES) | st.text(alphabet="0123456789.-+eEaNnTtrufsl:Z \n", max_size=12),
                min_size=0, max_size=12))  # fmt: skip
def test_decide_answers_as_every_value_read(values):
    values = [v for v in values if v != ""]  # the sample holds non-empty values only
    assert decide(values) == every_value_read(values), values


def test_a_majority_decides_and_a_tie_does_not():
    assert decide(["1", "2", "x"]) == "bigint"  # two numbers of three, all integers
    assert decide(["1", "2.5", "x"]) == "double"
    assert decide(["1", "x"]) == "string"  # a tie is no majority
    assert decide(["2024-01-02", "2024-01-03T00:00:00.000000001", "x"]) == "timestamp_ns"
    assert decide(["2024-01-02", "x"]) == "string"
    assert decide(["true", "False"]) == "boolean" and decide(["true", "1"]) == "string"  # "1" is no boolean
