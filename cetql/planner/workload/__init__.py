"""Workloads: several queries planned together (`share.workload`), what
they share shown by `--explain` (`show`)."""
