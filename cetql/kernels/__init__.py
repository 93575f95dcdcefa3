"""Kernels: pure Python (with pyarrow and numpy) that Spark's Python workers
run over one partition.  They receive a plain, picklable spec
(`cetql.planner.kernels.spec`) and import nothing from the rest of the
compiler but the base modules `cetql.errors` and `cetql.options`."""
