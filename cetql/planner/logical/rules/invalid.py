"""What happens to rows with an invalid time or an unreadable value."""

from __future__ import annotations

from dataclasses import replace

from cetql.planner.logical.plan import Decision, InvalidRows
from cetql.planner.logical.rules import Draft

READS = ("options",)
SETS = ("invalid",)


def apply(d: Draft) -> Draft:
    if d.options.drop_invalid:
        return replace(d, invalid=Decision(InvalidRows.DROP, "rows with a null, NaN or infinite time, or a value "
                                           "that cannot be read, are dropped and counted (--drop-invalid)"))  # fmt: skip
    return replace(d, invalid=Decision(InvalidRows.REJECT, "a null, NaN or infinite time, or a value that cannot be "
                                       "read as its column's type, fails the query with the number of rows "
                                       "(--drop-invalid drops them)"))  # fmt: skip
