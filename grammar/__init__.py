"""The cetql grammar, shipped as `cetql.grammar` (file: cetql.lark)."""

from importlib.resources import files


def grammar_text() -> str:
    return files(__name__).joinpath("cetql.lark").read_text(encoding="utf-8")
