"""`cetql repl`: an interactive shell on one warm Spark session (`shell.Shell`),
read by `loop`."""

from cetql.surfaces.repl.loop import add_parser, cmd_repl, loop
from cetql.surfaces.repl.shell import HELP, Shell, is_complete

__all__ = ["HELP", "Shell", "add_parser", "cmd_repl", "is_complete", "loop"]
