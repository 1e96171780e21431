"""The IR's text form, cut into tokens for the parser (``gibbous.ir.parser``).

Tokens are what the grammar in docs/ir.md is written in: names after a sigil (``%`` values,
``^`` blocks, ``@`` functions), literals, identifiers and punctuation, one line at a time
(a newline is a token: each operation takes exactly one line).  A character no token starts
with is a ``ParseError`` that says what was expected there.
"""

from __future__ import annotations

import re
import typing as t

__all__ = ["QUOTED_NAME", "SUFFIXED_NAME", "ParseError", "Token", "describe", "tokenize"]


class ParseError(ValueError):
    """Text that is not IR.  The message names the line and column and shows the source line."""

    def __init__(self, reason: str, line: int, column: int, source_line: str) -> None:
        self.reason, self.line, self.column = reason, line, column
        # Keep tabs in the caret's indentation so the caret lines up under tabbed text.
        pad = "".join(c if c == "\t" else " " for c in source_line[: column - 1])
        super().__init__(f"line {line}, column {column}: {reason}\n  {source_line}\n  {pad}^")


class Token(t.NamedTuple):
    kind: str  # a group name of _TOKEN, or "eof"
    text: str
    line: int
    column: int


_STRING = r'"(?:[^"\\\n]|\\.)*"'
# After a sigil: a bare name (possibly ending in a ".N" uniquing suffix), a JSON-quoted name with
# an optional suffix, or a number (an unnamed value or block).
_NAME = rf"(?:[A-Za-z_][A-Za-z0-9_.]*|{_STRING}(?:\.[0-9]+)?|[0-9]+(?![A-Za-z0-9_.]))"
_TOKEN = re.compile(
    rf"""
      (?P<space>[ \t\r\f\v]+)
    | (?P<comment>\#[^\n]*)
    | (?P<newline>\n)
    | (?P<value>%{_NAME})
    | (?P<block>\^{_NAME})
    | (?P<func>@{_NAME})
    | (?P<bytes>b{_STRING})
    | (?P<string>{_STRING})
    | (?P<number>(?:-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|-inf|-nan)(?![A-Za-z0-9_.]))
    | (?P<ellipsis>\.\.\.)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<punct>[(){{}}\[\]<>,:=?])
    """,
    re.VERBOSE,
)


def tokenize(text: str, lines: list[str]) -> t.Iterator[Token]:
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        column = pos - line_start + 1
        if m is None:
            raise ParseError(_bad_character(text, pos), line, column, lines[line - 1])
        kind = t.cast(str, m.lastgroup)
        if kind == "newline":
            yield Token(kind, "\n", line, column)
            line, line_start = line + 1, m.end()
        elif kind not in ("space", "comment"):
            yield Token(kind, m.group(), line, column)
        pos = m.end()
    yield Token("eof", "", line, pos - line_start + 1)


def _bad_character(text: str, pos: int) -> str:
    c = text[pos]
    rest = text[pos + 1 : pos + 2]
    if c == '"' or (c in "%^@b" and rest == '"'):
        return "unterminated string (a string ends with '\"' on the same line)"
    if c in "%^@":
        return f"expected a name after {c!r}"
    if c == "-":
        return "expected a number after '-'"
    if c.isdigit():
        return "bad number"
    return f"unexpected character {c!r}"


def describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of input"
    if tok.kind == "newline":
        return "end of line"
    return repr(tok.text)


QUOTED_NAME = re.compile(rf"({_STRING})(?:\.([0-9]+))?\Z")
SUFFIXED_NAME = re.compile(r"(.*)\.([1-9][0-9]*)\Z")
