"""Arrow results as both engines make them: the result's columns from a
kernel's batches (`result`) and Parquet files as Spark writes them
(`parquet`) — the embedded engine's, and a Spark plan's whose kernels'
Python workers write their own files (`engine.workers_write`)."""
