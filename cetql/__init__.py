"""cetql — Complete Event Trend queries compiled to Apache Spark."""

from .compiler import CompiledQuery, compile
from .errors import CetqlError, ParameterError, QueryError, QuerySemanticError, QuerySyntaxError, SchemaError
from .parser import parse
from .printer import to_text

__version__ = "0.1.0"

from .session import get_spark, install  # noqa: E402

install()

__all__ = [
    "CetqlError",
    "CompiledQuery",
    "compile",
    "get_spark",
    "ParameterError",
    "QueryError",
    "QuerySemanticError",
    "QuerySyntaxError",
    "SchemaError",
    "parse",
    "to_text",
]
