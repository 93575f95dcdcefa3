"""The Spark layer: the one input reader (`reader`), spec expressions as
Spark columns (`exprs`), the plan compiler (`compiler`, one function per
operator) and the distributed strategy (`distributed`)."""
