"""cetql — Complete Event Trend queries compiled to Apache Spark.

    import cetql
    q = cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100")
    q.explain()                   # prints the plan that runs (as_string=True: the text)
    df = q.run(checks_df)         # a lazy DataFrame; or spark.cet(text, checks_df)

`import cetql` adds `SparkSession.cet` to classic and Spark Connect sessions
(`cetql.install(spark)` does it for one session object).
"""

from cetql.base.errors import (
    ArgumentTypeError,
    CetqlError,
    InputNotFoundError,
    ParameterError,
    QueryError,
    QuerySemanticError,
    QuerySyntaxError,
    SchemaError,
    UnknownTypeError,
    UsageError,
)
from cetql.base.options import RunOptions
from cetql.base.version import VERSION
from cetql.surfaces.api.extension import install

__version__ = VERSION

__all__ = [
    "ArgumentTypeError",
    "CetqlError",
    "CompiledQuery",
    "InputNotFoundError",
    "ParameterError",
    "QueryError",
    "QuerySemanticError",
    "QuerySyntaxError",
    "RunOptions",
    "SchemaError",
    "UnknownTypeError",
    "UsageError",
    "compile",
    "get_spark",
    "install",
    "parse",
    "to_text",
]

# The compiler loads on first use: Spark's Python workers import cetql for
# the kernels only, and should not pay for the front end, Spark's
# DataFrame layer.
_LAZY = {"compile": "surfaces.api.query", "CompiledQuery": "surfaces.api.query", "parse": "language.parser",
         "to_text": "language.printer", "get_spark": "backends.spark.session"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cetql' has no attribute '{name}'")


install()
