"""A generated query made to run on many independent cases at once: each
case's events carry a `case` column, and the query is rewritten to treat
`case` as an equivalence attribute (so no trend spans two cases) and, for an
aggregation, to return and group by it."""

from __future__ import annotations

import cetql
from cetql.language import ast as A


def detection_with_case(text: str) -> str:
    q = cetql.parse(text)
    case = A.Equivalence((A.Name("case"),))
    where = case if q.where is None else A.And((case, q.where))
    fields = {f: getattr(q, f) for f in q.__dataclass_fields__ if f not in ("pos", "clauses")}
    return cetql.to_text(A.Query(**{**fields, "where": where}))


def aggregation_with_case(text: str) -> str:
    q = cetql.parse(text)
    case = A.Equivalence((A.Name("case"),))
    where = case if q.where is None else A.And((case, q.where))
    returns = (A.Name("case"), *q.returns) if q.returns else q.returns
    fields = {f: getattr(q, f) for f in q.__dataclass_fields__ if f not in ("pos", "clauses")}
    fields.update(where=where, group_by=(A.Name("case"), *q.group_by), returns=returns)
    return cetql.to_text(A.Query(**fields))
