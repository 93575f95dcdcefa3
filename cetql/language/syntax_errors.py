"""Lark's errors as `QuerySyntaxError`s that say where and what was
expected — or, where a name stands for a misspelt keyword, the keyword
meant, once:

    syntax error: 1:16: expected WITHIN here (found 'WITHN')
       1 | PATTERN A+ a[] WITHN 3
         |                ^

A name is taken for a misspelt keyword when it is near one (`base.words`)
and the query, with that keyword in its place, parses past the point where
the parser stopped: the name it stopped at, or one of the few tokens just
before (in `WITHIN 3 SLDE 1` it stops at `1`, `SLDE` read as a time unit).
Otherwise the message lists what the parser would have accepted there.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_interactive_parser import InteractiveParser

from cetql.base.errors import Pos, QuerySyntaxError
from cetql.base.words import nearest
from cetql.language.grammar import keywords, lark_parser

# Keywords that begin a clause: one read as a name says something is missing before it.
CLAUSE_KEYWORDS = ("PATTERN", "WHERE", "RETURN", "AGG", "WITHIN", "SLIDE", "TRENDS", "APPROX", "GROUP-BY")
LOOK_BACK = 8  # the tokens, the one the parser stopped at included, that may be a misspelt keyword

# How the expected terminals are named in messages.
_TERMINAL_NAMES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "DOT": "'.'",
    "STAR": "'*'",
    "MINUS": "'-'",
    "LESSTHAN": "'<'",
    "ARRAY": "'[]'",
    "QUANT": "'+', '*' or '?'",
    "BANG": "'!'",
    "COMP_OP": "a comparison (= != < <= > >=)",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'",
    "ANGLE_CLOSE": "'>'",
    "ASEQ_OPEN": "'['",
    "GROUP_BY": "GROUP-BY",
    "$END": "the end of the query",
}


def misspelt(found: str, meant: str) -> str:
    """The message for a word written where `meant` was expected."""
    return f"expected {meant} here (found '{found}')"


def syntax_error(e: UnexpectedInput, text: str) -> QuerySyntaxError:
    """The error a user reads for Lark's `e` on `text`."""
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        if char and char in "'\"":
            return QuerySyntaxError(f"unterminated string: no closing {char} on this line", Pos(e.line, e.column), text)
        allowed = _accepted(e, e.allowed)
        message = f"unexpected character '{char}'" + (f"; expected {_expected(allowed)}" if allowed else "")
        return _explained(text, e.pos_in_stream, message, Pos(e.line, e.column))
    if isinstance(e, UnexpectedEOF):
        return _explained(text, len(text), f"unexpected end of query; expected {_expected(e.expected)}", _end(text))
    token = e.token
    end = token.type == "$END"
    pos = _end(text.rstrip()) if end else Pos(token.line, token.column)
    accepted = _accepted(e, e.expected)
    if token.type == "ANGLE_CLOSE" and "ANGLE_CLOSE" not in accepted:
        # A trailing `>` is read as the close of A-Seq's `<…>`; it is really
        # a comparison that lacks its right-hand side.
        return QuerySyntaxError("comparison '>' has no right-hand side", pos, text)
    message = f"unexpected {_describe_token(token)}; expected {_expected(accepted)}"
    return _explained(text, len(text) if end else token.start_pos, message, pos, None if end else token)


def _explained(text: str, stop: int, message: str, pos: Pos, stopped_at: Token | None = None) -> QuerySyntaxError:
    """The keyword a misspelt name stands for, else `message` — with, when
    the token before `stop` is a clause keyword the parser read as a name,
    that it was.  `stopped_at`: the token the parser refused, if any."""
    read = [t for t in _read(text) if t.start_pos < stop]
    for token, word_end in reversed(_words([*read, *([stopped_at] if stopped_at is not None else [])][-LOOK_BACK:])):
        word = text[token.start_pos : word_end]
        for keyword in nearest(word, keywords().values()):
            for end in _ends(text, word_end, keyword):
                if _parses_past(text, token.start_pos, end, keyword, stop):
                    found = text[token.start_pos : end]
                    return QuerySyntaxError(misspelt(found, keyword), Pos(token.line, token.column), text)
    if read and read[-1].type == "NAME" and str(read[-1]).upper().replace("_", "-") in CLAUSE_KEYWORDS:
        message += f" (the keyword {str(read[-1]).upper()} was read as a name: is something missing before it?)"
    return QuerySyntaxError(message, pos, text)


def _read(text: str) -> list[Token]:
    """The tokens the parser read, up to the one it stopped at."""
    read: list[Token] = []
    parser = lark_parser().parse_interactive(text)
    try:
        for token in parser.iter_parse():
            read.append(token)
        parser.feed_eof(read[-1] if read else None)
    except UnexpectedInput:
        pass
    return read


def _words(tokens: list[Token]) -> list[tuple[Token, int]]:
    """(first token, end) of the words among `tokens` that may be a misspelt
    keyword: each name, and a name glued to the word before it — where a
    keyword is expected and no name, the lexer reads `PATTERNN` as PATTERN
    and N."""
    out = []
    for before, token in zip([None, *tokens], tokens):
        if token.type != "NAME":
            continue
        if before is not None and before.end_pos == token.start_pos and str(before).isalpha():
            out.append((before, token.end_pos))
        out.append((token, token.end_pos))
    return out


def _ends(text: str, end: int, keyword: str) -> list[int]:
    """Where a misspelling of `keyword` whose first word ends at `end` may
    end: there, and for a keyword of two words (GROUP-BY) first at the end
    of the word after it (`GROPU-BY`, `GROUP-YB`)."""
    second = _SECOND_WORD.match(text, end) if "-" in keyword else None
    return [second.end(), end] if second else [end]


_SECOND_WORD = re.compile(r"[ \t-]*[A-Za-z]+")


def _parses_past(text: str, start: int, end: int, keyword: str, stop: int) -> bool:
    """Whether `text` with `keyword` in the place of text[start:end] parses past `stop`."""
    reach = _reach(text[:start] + keyword + text[end:])
    return reach >= start + len(keyword) and reach - (len(keyword) - (end - start)) > stop


def _reach(text: str) -> int:
    """Where the parser stops in `text` (past its end if it parses)."""
    try:
        lark_parser().parse(text)
    except UnexpectedToken as e:
        return len(text) if e.token.type == "$END" else e.token.start_pos
    except UnexpectedCharacters as e:
        return e.pos_in_stream
    except UnexpectedEOF:
        return len(text)
    return len(text) + 1


def _end(text: str) -> Pos:
    lines = text.splitlines() or [""]
    return Pos(len(lines), len(lines[-1]) + 1)


def _describe_terminal(name: str) -> str:
    return _TERMINAL_NAMES.get(name, name.replace("_", "-") if name.isupper() else repr(name))


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of query"
    if token.type == "NAME":
        return f"name '{token}'"
    if token.type in ("NUMBER", "STRING"):
        return f"{token.type.lower()} {token}"
    if token.type.isalpha() and str(token).isalpha():
        return f"keyword {str(token).upper()}"
    return f"'{token}'"


def _expected(names) -> str:
    # Keywords read best in upper case, after the punctuation and the classes.
    described = sorted({_describe_terminal(n) for n in names})
    if not described:
        return ""
    if len(described) == 1:
        return described[0]
    return ", ".join(described[:-1]) + " or " + described[-1]


def _accepted(e, fallback) -> set[str]:
    """The terminals the parser would really accept where it stopped: LALR
    lookahead sets over-approximate, the interactive parser does not."""
    try:
        ip = getattr(e, "interactive_parser", None)
        if ip is None and getattr(e, "state", None) is not None:
            ip = InteractiveParser(lark_parser().parser.parser.parser, e.state, None)
        if ip is not None:
            accepted = set(ip.accepts())
            if accepted:
                return accepted
    except Exception:  # pragma: no cover - the fallback is only less precise
        pass
    return set(fallback or ())
