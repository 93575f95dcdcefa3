"""Names vulture cannot see used (it reads this file as code that uses
them): called by a framework, by the tests, or by value.  Each line says who
uses it."""

# ruff: noqa: B018 - each line is a use of a name, for vulture
from vulture.whitelist_utils import Whitelist

_ = Whitelist()
_.INDEXES  # cetql/ast.py: tests/language/test_roundtrip.py generates attribute references from it
_.__getattr__  # cetql/__init__.py: Python calls a module's __getattr__ for its lazy attributes
_.EXAMPLES  # cetql/gen.py: tests/surfaces/test_gen.py reads which scenario each example query runs on
_.JSON  # cetql/options.py: an enum member, chosen by value (--format json)
_.get_completions  # cetql/repl.py: prompt_toolkit's Completer hook
_._  # cetql/repl.py: a key binding, registered by its decorator
_.order_errors  # planner/logical/build.py: tests/planner/test_rules.py checks the rules' order with it
_.evaluate  # planner/kernels/expr.py: tests/kernels/test_kernel_values.py evaluates one expression with it
_.init  # planner/spark/streaming.py: Spark's StatefulProcessor hook (transformWithStateInPandas)
_.handleInputRows  # planner/spark/streaming.py: Spark's StatefulProcessor hook
_.handleExpiredTimer  # planner/spark/streaming.py: Spark's StatefulProcessor hook
_.expiredTimerInfo  # planner/spark/streaming.py: handleExpiredTimer's argument, which Spark passes by name
_.release_session_on_close  # cetql/cli.py: read by pyspark's Connect SparkSession.stop (False: the session stays open)
_.AUTO  # cetql/options.py: Engine.AUTO, an enum member chosen by value (--engine auto)
_.order_key  # cetql/kernels/compare.py: the SQL dialects' tests sort by it (tests/kernels/test_compare.py checks it)
_.CASES  # cetql/kernels/compare.py: the table of comparison cases every evaluator and SQL dialect is tested on
_.capability_fields  # cetql/planner/physical/engine.py: tests/engines/test_capabilities.py walks every entry with it
_._check_value  # surfaces/cli/parsing.py: argparse's hook for a value outside an argument's choices
_.tempdir  # surfaces/serve/runner.py: read by the standard library's tempfile (None: TMPDIR is read again)
_.__annotations__  # backends/spark/reader.py: pyspark reads a pandas UDF's kind from its function's type hints
