"""The engines a query may run on, in the order of preference: the
planner takes the first whose declared capabilities cover the plan
(`planner.physical.engine`)."""

from cetql.backends.embedded.capabilities import CAPABILITIES as EMBEDDED
from cetql.backends.spark.capabilities import CAPABILITIES as SPARK

OFFERED = (EMBEDDED, SPARK)
