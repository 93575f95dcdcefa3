"""`cetql gen`: deterministic event streams for every example query,
written by Spark (`write.generate`), from the scenarios in `scenarios`."""

from cetql.surfaces.gen.command import add_parser
from cetql.surfaces.gen.scenarios import EXAMPLES, SCENARIOS, id_col
from cetql.surfaces.gen.write import frames, generate

__all__ = ["EXAMPLES", "SCENARIOS", "add_parser", "frames", "generate", "id_col"]
