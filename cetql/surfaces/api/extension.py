"""`spark.cet(query, data, …)`: cetql as a method of Spark sessions, classic
and Spark Connect alike.

`import cetql` adds the method to each session class, classic and Spark
Connect, at once if its module is loaded, else as soon as it is (importing
them costs from a tenth of a second to a second, which `import cetql` and
the command line's start do not pay for users who do not need them);
`cetql.install(spark)` does it for one session object explicitly, whatever
its class.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

CONNECT = "pyspark.sql.connect.session"
CLASSIC = "pyspark.sql.session"


def cet(self, query: str | dict, data=None, *, params: dict | None = None, **keywords):
    """`spark.cet(query, data, params={...}, time_col="ts", …)` → a lazy DataFrame;
    `spark.cet({name: query, …}, data, …)` → a workload: a dict {name: lazy
    DataFrame} (`cetql.compile_many(...).run`), each query's rows those it
    gives alone, what they share computed once.

    `data`: a DataFrame, a path, a table/view name, or {type: …}.  Keywords
    are run options (`time_col`, `id_col`, `trends`, …; see `RunOptions`) or
    typed inputs named after the pattern's types (`Check=df`); any other is
    refused (`cetql.ArgumentTypeError`, a TypeError) with the closest valid
    name, as `CompiledQuery.run` does."""
    # start-up cost: `import cetql` must not load the compiler and Spark's DataFrame layer
    from cetql.surfaces.api.query import compile
    from cetql.surfaces.api.workload import compile_many  # start-up cost: as above

    if isinstance(query, dict):
        return compile_many(query, params).run(data, spark=self, **keywords)
    return compile(query, params).run(data, spark=self, **keywords)


def _patch(cls) -> None:
    if getattr(cls, "cet", None) is not cet:
        cls.cet = cet


class _PatchConnect(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Adds `cet` to a session class once its module has loaded (`name`:
    Connect's, or the classic one's)."""

    def __init__(self, name: str = CONNECT):
        self.name = name

    def find_spec(self, name, _path, _target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch(module.SparkSession)
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def install(spark=None) -> None:
    """Add `.cet` to the session classes, or to one session object's class."""
    if spark is not None:
        _patch(type(spark))
        return
    for name in (CLASSIC, CONNECT):  # either now, or when pyspark loads it (`import cetql` does not load Spark)
        module = sys.modules.get(name)
        if module is not None:
            _patch(module.SparkSession)
        elif not any(isinstance(f, _PatchConnect) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _PatchConnect(name))
