"""The cetql grammar (file: cetql.lark, shipped beside this module)."""

from importlib.resources import files


def grammar_text() -> str:
    return files("cetql.language").joinpath("cetql.lark").read_text(encoding="utf-8")
