"""cetql — Complete Event Trend queries compiled to Apache Spark.

    import cetql
    q = cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100")
    print(q.explain())            # the plan that runs
    df = q.run(checks_df)         # a lazy DataFrame; or spark.cet(text, checks_df)

`import cetql` adds `SparkSession.cet` to classic and Spark Connect sessions
(`cetql.install(spark)` does it for one session object).
"""

from .errors import CetqlError, ParameterError, QueryError, QuerySemanticError, QuerySyntaxError, SchemaError, UsageError
from .extension import install
from .options import RunOptions
from .parser import parse
from .printer import to_text
from .query import CompiledQuery, compile
from .session import get_spark

__version__ = "0.2.0"

__all__ = [
    "CetqlError",
    "CompiledQuery",
    "ParameterError",
    "QueryError",
    "QuerySemanticError",
    "QuerySyntaxError",
    "RunOptions",
    "SchemaError",
    "UsageError",
    "compile",
    "get_spark",
    "install",
    "parse",
    "to_text",
]

install()
