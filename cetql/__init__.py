"""cetql — Complete Event Trend queries compiled to Apache Spark.

    import cetql
    q = cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100")
    df = q.run(checks)            # or spark.cet(text, checks)

The compiler (`compile`, `parse`, `to_text`) loads on first use, so Spark's
Python workers, which only need the kernels, start quickly.
"""

from .errors import CetqlError, ParameterError, QueryError, QuerySemanticError, QuerySyntaxError, SchemaError
from .session import get_spark, install

__version__ = "0.1.0"

__all__ = [
    "CetqlError",
    "CompiledQuery",
    "ParameterError",
    "QueryError",
    "QuerySemanticError",
    "QuerySyntaxError",
    "SchemaError",
    "compile",
    "get_spark",
    "parse",
    "to_text",
]

_LAZY = {"compile": "compiler", "CompiledQuery": "compiler", "parse": "parser", "to_text": "printer"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cetql' has no attribute '{name}'")


install()
