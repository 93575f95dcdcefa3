"""`cetql repl`: an interactive shell on one warm Spark session (`shell.Shell`),
read by `loop`; its command line in `command` (light: `cetql --help` loads
neither the shell nor Spark)."""

from importlib import import_module

_LAZY = {"HELP": "shell", "Shell": "shell", "is_complete": "shell", "cmd_repl": "loop", "loop": "loop"}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:  # start-up cost: the shell imports the Spark layer
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
