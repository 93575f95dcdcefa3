"""SQL spelled from the plan: one compiler of kernel expressions
(`expressions`), a dialect for each backend (`dialects`)."""
