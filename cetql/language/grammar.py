"""The cetql grammar (file: cetql.lark, shipped beside this module) and the
one Lark parser built from it."""

from functools import lru_cache
from importlib.resources import files

from lark import Lark


def grammar_text() -> str:
    return files("cetql.language").joinpath("cetql.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def lark_parser() -> Lark:
    return Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


@lru_cache(maxsize=1)
def keywords() -> dict[str, str]:
    """The grammar's keywords: terminal name → how a query spells it
    (`GROUP_BY` → `GROUP-BY`)."""
    out = {t.name: t.pattern.value.upper() for t in lark_parser().terminals
           if t.pattern.type == "str" and t.pattern.value.isalpha()}  # fmt: skip
    out["GROUP_BY"] = "GROUP-BY"
    return out
