"""The IR's text form, reading side: ``parse(text) -> Function``.

Reads exactly what ``printer`` prints (the grammar is in docs/ir.md), so that

    str(parse(text)) == text                      for any printed text, and
    structurally_equal(parse(str(f)), f)          for any function whose constants print.

A hand-written lexer (``gibbous.ir.lexer``) feeds a recursive-descent parser; nothing is ever
evaluated.  Literals are decoded token by token (``int``, ``float``, ``json.loads`` of one
string token) and dotted paths are imported with ``names.resolve``.  Text is
whitespace-insensitive within a line, but each operation takes exactly one line; ``#`` starts
a comment.

Values and blocks may be used above the line that defines them (blocks may come in any order).
A use of a name not defined yet gets a placeholder value; the definition takes over all of the
placeholder's uses, so the finished IR holds only real values and exact use lists.  The parser
rejects only text it cannot read; whether the IR it reads is well formed (dominance, arity,
types) is the verifier's business.
"""

from __future__ import annotations

import json
import math
import re
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Location,
    Raise,
    Return,
    Value,
)
from gibbous.ir.lexer import (
    QUOTED_NAME,
    SUFFIXED_NAME,
    ParseError,
    Token,
    describe,
    tokenize,
)
from gibbous.ir.names import UnresolvablePath, resolve
from gibbous.ir.printer import DTYPE_LONG

__all__ = ["ParseError", "parse", "parse_constant", "parse_type"]


def parse(text: str) -> Function:
    """The one function ``text`` describes."""
    p = _Parser(text)
    f = p.function()
    p.skip_newlines()
    p.expect("eof", what="end of input after '}' (the text holds one function)")
    return f


def parse_type(text: str) -> T.Type:
    """A type in its text form, e.g. ``tuple[f64[:], const<numpy.sin>]``."""
    p = _Parser(text)
    p.skip_newlines()
    ty = p.type_()
    p.skip_newlines()
    p.expect("eof", what="end of input after the type")
    return ty


def parse_constant(text: str) -> object:
    """A constant in its text form, e.g. ``(1, -inf, "s")`` or ``numpy.sin``."""
    p = _Parser(text)
    p.skip_newlines()
    value = p.constant()
    p.skip_newlines()
    p.expect("eof", what="end of input after the constant")
    return value


# A name as the printer spells it, reduced to what identifies it: (hint, uniquing suffix) for a
# named value or block, (None, n) for an unnamed one.
_Key = tuple[str | None, int]

# The Python values an element of each NumPy dtype kind may be written as (other kinds: any).
_SCALAR_KINDS: dict[str, tuple[type, ...]] = {
    "b": (bool,),
    "i": (int,),
    "u": (int,),
    "f": (int, float),
    "c": (int, float, complex),
    "U": (str,),
    "S": (bytes,),
}


# --------------------------------------------------------------------------------------------
# Parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self._tokens = tokenize(text, self.lines)
        self._ahead: list[Token] = []
        # Names of the function being read: defined ones with their defining token, and
        # placeholders for names used before their definition, with their first use.
        self.values: dict[_Key, tuple[Value, Token]] = {}
        self.forward: dict[_Key, tuple[Value, Token]] = {}
        self.blocks: dict[_Key, tuple[Block, Token]] = {}
        self.forward_blocks: dict[_Key, tuple[Block, Token]] = {}
        self.func: Function | None = None

    # -- token stream

    def peek(self, k: int = 0) -> Token:
        while len(self._ahead) <= k:
            if self._ahead and self._ahead[-1].kind == "eof":
                return self._ahead[-1]
            self._ahead.append(next(self._tokens))
        return self._ahead[k]

    def next(self) -> Token:
        tok = self.peek()
        if tok.kind != "eof":
            self._ahead.pop(0)
        return tok

    def at(self, kind: str, text: str | None = None, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == kind and (text is None or tok.text == text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        return self.next() if self.at(kind, text) else None

    def expect(self, kind: str, text: str | None = None, *, what: str | None = None) -> Token:
        if self.at(kind, text):
            return self.next()
        wanted = what or (repr(text) if text is not None else kind)
        raise self.error(f"expected {wanted}, got {describe(self.peek())}")

    def punct(self, text: str) -> Token:
        return self.expect("punct", text)

    def error(self, reason: str, tok: Token | None = None) -> ParseError:
        tok = tok if tok is not None else self.peek()
        return ParseError(reason, tok.line, tok.column, self.lines[tok.line - 1])

    def skip_newlines(self) -> None:
        while self.accept("newline"):
            pass

    def end_of_line(self, after: str) -> None:
        if not self.at("eof") and not self.accept("newline"):
            raise self.error(f"expected end of line after {after}, got {describe(self.peek())}")

    def comma_list(self, close: str, item: t.Callable[[], None]) -> None:
        """Items separated by commas up to the closing bracket (a trailing comma is allowed)."""
        while not self.accept("punct", close):
            item()
            if not self.accept("punct", ","):
                self.punct(close)
                return

    # -- functions and blocks

    def function(self) -> Function:
        self.skip_newlines()
        self.expect("ident", "func", what="'func'")
        name_tok = self.expect("func", what="a function name such as @f")
        name = self.func_name(name_tok)
        header: list[tuple[Token, T.Type]] = []

        def argument() -> None:
            tok = self.expect("value", what="an argument such as %x")
            self.punct(":")
            header.append((tok, self.type_()))

        self.punct("(")
        self.comma_list(")", argument)
        loc = self.location()
        opening = self.punct("{")
        self.end_of_line("'{'")
        self.skip_newlines()

        entry_tok = self.expect("block", what="the entry block's label, such as ^entry:")
        if self.at("punct", "("):
            raise self.error(
                "the entry block takes no argument list: its arguments are the function's, "
                "written in the 'func' header"
            )
        self.punct(":")
        self.end_of_line("a block label")
        f = Function(
            name,
            [(self.name_key(tok)[0], ty) for tok, ty in header],
            loc=loc,
            entry_name=self.name_key(entry_tok)[0],
        )
        self.func = f
        self.blocks[self.name_key(entry_tok)] = (f.entry, entry_tok)
        for (tok, _), arg in zip(header, f.args):
            self.define(tok, arg)

        block, n_labelled = f.entry, 1
        while True:
            self.skip_newlines()
            if self.accept("punct", "}"):
                break
            if self.at("eof"):
                raise self.error(
                    f"expected '}}' to close the function opened on line {opening.line}"
                )
            if self.at("block"):
                block = self.label(n_labelled)
                n_labelled += 1
            else:
                self.operation(block)
        self.check_all_defined()
        return f

    def func_name(self, tok: Token) -> str:
        body = tok.text[1:]
        if body.startswith('"'):
            m = QUOTED_NAME.match(body)
            if m is None or m.group(2) is not None:
                raise self.error("a function name takes no '.N' suffix", tok)
            return self.json_string(m.group(1), tok)
        return body

    def label(self, index: int) -> Block:
        tok = self.next()
        key = self.name_key(tok)
        if key in self.blocks:
            first = self.blocks[key][1]
            raise self.error(
                f"duplicate block {tok.text} (first labelled on line {first.line})", tok
            )
        f = t.cast(Function, self.func)
        if key in self.forward_blocks:
            block = self.forward_blocks.pop(key)[0]
        else:
            block = f.add_block(key[0])
        f.move_block(block, index)  # blocks keep the order of their labels
        self.blocks[key] = (block, tok)

        def argument() -> None:
            arg_tok = self.expect("value", what="a block argument such as %x")
            self.punct(":")
            self.define(arg_tok, block.add_arg(self.type_(), self.name_key(arg_tok)[0]))

        if self.accept("punct", "("):
            self.comma_list(")", argument)
        self.punct(":")
        self.end_of_line("a block label")
        return block

    def check_all_defined(self) -> None:
        unknown = [("value", tok) for _, tok in self.forward.values()]
        unknown += [("block", tok) for _, tok in self.forward_blocks.values()]
        if unknown:
            what, tok = min(unknown, key=lambda u: (u[1].line, u[1].column))
            raise self.error(f"unknown {what} {tok.text}", tok)

    # -- operations

    def operation(self, block: Block) -> None:
        tok = self.peek()
        if tok.kind == "value":
            self.call(block)
        elif tok.kind == "ident" and tok.text in ("jump", "branch", "guard", "return", "raise"):
            self.next()
            if tok.text == "jump":
                target, args = self.target()
                block.append(Jump(target, args, loc=self.location()))
            elif tok.text == "branch":
                cond = self.operand()
                self.punct(",")
                if_true, true_args = self.target()
                self.punct(",")
                if_false, false_args = self.target()
                loc = self.location()
                block.append(Branch(cond, if_true, true_args, if_false, false_args, loc=loc))
            elif tok.text == "guard":
                guarded = self.operand()
                self.punct(",")
                normal, normal_args = self.target()
                self.punct(",")
                self.expect("ident", "except", what="'except' before the handler")
                handler, handler_args = self.target()
                loc = self.location()
                block.append(Guard(guarded, normal, normal_args, handler, handler_args, loc=loc))
            elif tok.text == "return":
                value = self.operand()
                block.append(Return(value, loc=self.location()))
            else:
                exc = self.operand()
                block.append(Raise(exc, loc=self.location()))
        else:
            raise self.error(
                "expected an operation (%x = call ..., jump, branch, guard, return, raise) "
                f"or a block label, got {describe(tok)}"
            )
        self.end_of_line("the operation")

    def call(self, block: Block) -> None:
        result_tok = self.next()
        self.punct("=")
        self.expect("ident", "call", what="'call'")
        callee = self.operand()
        args: list[Value] = []
        kwargs: dict[str, Value] = {}

        def argument() -> None:
            kw = self.peek()
            if kw.kind in ("ident", "string") and self.at("punct", "=", k=1):
                self.next()
                self.next()
                name = kw.text if kw.kind == "ident" else self.json_string(kw.text, kw)
                if name in kwargs:
                    raise self.error(f"keyword argument {name!r} given twice", kw)
                kwargs[name] = self.operand()
            elif kwargs:
                raise self.error("positional argument after keyword arguments")
            else:
                args.append(self.operand())

        self.punct("(")
        self.comma_list(")", argument)
        self.punct(":")
        ty = self.type_()
        loc = self.location()
        name = self.name_key(result_tok)[0]
        op = Call(callee, args, kwargs, type=ty, name=name, loc=loc)
        block.append(op)
        self.define(result_tok, op.result)

    def target(self) -> tuple[Block, list[Value]]:
        tok = self.expect("block", what="a block such as ^b")
        key = self.name_key(tok)
        if key in self.blocks:
            block = self.blocks[key][0]
        elif key in self.forward_blocks:
            block = self.forward_blocks[key][0]
        else:
            block = t.cast(Function, self.func).add_block(key[0])
            self.forward_blocks[key] = (block, tok)
        args: list[Value] = []
        if self.accept("punct", "("):
            self.comma_list(")", lambda: args.append(self.operand()))
        return block, args

    def location(self) -> Location | None:
        if not self.accept("ident", "loc"):
            return None
        self.punct("(")
        file = self.expect("string", what="a file name in double quotes")
        self.punct(":")
        line = self.expect("number", what="a line number")
        if not re.fullmatch(r"-?[0-9]+", line.text):
            raise self.error("a line number is an integer", line)
        self.punct(")")
        return Location(self.json_string(file.text, file), int(line.text))

    # -- names and operands

    def name_key(self, tok: Token) -> _Key:
        body = tok.text[1:]
        if body.startswith('"'):
            m = t.cast(re.Match[str], QUOTED_NAME.match(body))
            return self.json_string(m.group(1), tok), int(m.group(2) or 0)
        if body[0].isdigit():
            return None, int(body)
        m2 = SUFFIXED_NAME.match(body)
        return (m2.group(1), int(m2.group(2))) if m2 else (body, 0)

    def define(self, tok: Token, value: Value) -> None:
        key = self.name_key(tok)
        if key in self.values:
            first = self.values[key][1]
            raise self.error(
                f"duplicate definition of {tok.text} (first defined on line {first.line})", tok
            )
        self.values[key] = (value, tok)
        if key in self.forward:
            self.forward.pop(key)[0].replace_all_uses_with(value)

    def operand(self) -> Value:
        if not self.at("value"):
            return Constant(self.constant())
        tok = self.next()
        key = self.name_key(tok)
        if key in self.values:
            return self.values[key][0]
        if key not in self.forward:
            self.forward[key] = (Value(T.ANY, name=key[0]), tok)
        return self.forward[key][0]

    # -- types

    def type_(self) -> T.Type:
        tok = self.next()
        if tok.kind == "punct" and tok.text == "?":
            if not self.at("punct", "["):
                raise self.error("expected '[' after '?' (an array of unknown dtype)")
            return T.Array(None, self.dims())
        if tok.kind == "string":
            return self.dtype_type(self.json_string(tok.text, tok), tok)
        if tok.kind != "ident":
            raise self.error(f"expected a type, got {describe(tok)}", tok)
        match tok.text:
            case "any":
                return T.ANY
            case "never":
                return T.BOTTOM
            case "str":
                return T.STR
            case "none":
                return T.NONE
            case "list" | "set":
                self.punct("[")
                item = self.type_()
                self.punct("]")
                return T.List(item) if tok.text == "list" else T.Set(item)
            case "dict":
                self.punct("[")
                key_type = self.type_()
                self.punct(",")
                value_type = self.type_()
                self.punct("]")
                return T.Dict(key_type, value_type)
            case "tuple":
                cls: type = tuple
                if self.accept("punct", "<"):
                    cls = self.class_path(tuple)
                    self.punct(">")
                items: list[T.Type] = []
                self.punct("[")
                self.comma_list("]", lambda: items.append(self.type_()))
                return T.Tuple(tuple(items), cls)
            case "object":
                self.punct("<")
                cls = self.class_path(object)
                self.punct(">")
                return T.Object(cls)
            case "const":
                self.punct("<")
                const = self.constant()
                self.punct(">")
                return T.Const(const)
        if tok.text in DTYPE_LONG:
            return self.dtype_type(DTYPE_LONG[tok.text], tok)
        raise self.error(f"expected a type, got {describe(tok)}", tok)

    def dtype_type(self, name: str, tok: Token) -> T.Type:
        dtype = _numpy_dtype(name)
        if dtype is None:
            raise self.error(f"unknown NumPy dtype {name!r}", tok)
        if self.at("punct", "["):
            return T.Array(name, self.dims())
        match dtype.kind:
            case "b":
                return T.BOOL
            case "i" | "u":
                return T.Int(name)
            case "f":
                return T.Float(name)
            case "c":
                return T.Complex(name)
        raise self.error(
            f"{name!r} is not a scalar dtype (bool, int, float, complex); "
            "an array of it is written with [...]",
            tok,
        )

    def dims(self) -> int | None:
        """``[:,:]`` gives 2, ``[]`` gives 0 and ``[...]`` unknown (``None``)."""
        self.punct("[")
        if self.accept("ellipsis"):
            self.punct("]")
            return None
        ndim = 0
        while not self.accept("punct", "]"):
            if ndim:
                self.punct(",")
            self.expect("punct", ":", what="':' (one per dimension) or ']'")
            ndim += 1
        return ndim

    def class_path(self, base: type) -> type:
        tok = self.expect("ident", what="an import path such as collections.OrderedDict")
        cls = self.resolve(tok)
        if not isinstance(cls, type) or not issubclass(cls, base):
            what = "a class" if base is object else f"a subclass of {base.__name__}"
            raise self.error(f"{tok.text} is not {what}", tok)
        return cls

    # -- constants

    def constant(self) -> object:
        tok = self.next()
        match tok.kind:
            case "number":
                return self.number(tok)
            case "string":
                return self.json_string(tok.text, tok)
            case "bytes":
                try:
                    return bytes.fromhex(self.json_string(tok.text[1:], tok))
                except ValueError:
                    raise self.error("bytes are written b\"<hex digits>\"", tok) from None
            case "ellipsis":
                return Ellipsis
            case "punct" if tok.text == "(":
                return self.tuple_rest(tok)
            case "ident":
                return self.named_constant(tok)
        raise self.error(f"expected a value (%x) or a constant, got {describe(tok)}", tok)

    def number(self, tok: Token) -> int | float:
        try:
            return int(tok.text) if re.fullmatch(r"-?[0-9]+", tok.text) else float(tok.text)
        except ValueError as e:  # e.g. an int too long to convert
            raise self.error(f"bad number: {e}", tok) from None

    def real(self) -> float:
        tok = self.next()
        if tok.kind == "number":
            return float(self.number(tok))
        if tok.kind == "ident" and tok.text in ("inf", "nan"):
            return float(tok.text)
        raise self.error(f"expected a real number, got {describe(tok)}", tok)

    def tuple_rest(self, opening: Token) -> tuple[object, ...]:
        items: list[object] = []
        trailing_comma = False
        while not self.accept("punct", ")"):
            items.append(self.constant())
            trailing_comma = bool(self.accept("punct", ","))
            if not trailing_comma:
                self.punct(")")
                break
        if len(items) == 1 and not trailing_comma:
            raise self.error("a one-element tuple is written (x,)", opening)
        return tuple(items)

    def named_constant(self, tok: Token) -> object:
        word = tok.text
        match word:
            case "None":
                return None
            case "True":
                return True
            case "False":
                return False
            case "inf" | "nan":
                return float(word)
        if not self.at("punct", "("):
            return self.resolve(tok)
        if word == "complex":
            self.next()
            re_ = self.real()
            self.punct(",")
            im = self.real()
            self.punct(")")
            return complex(re_, im)
        if word == "slice":
            self.next()
            parts: list[object] = []
            self.comma_list(")", lambda: parts.append(self.constant()))
            if len(parts) != 3:
                raise self.error("a slice is written slice(start, stop, step)", tok)
            return slice(*parts)
        if word == "array":
            return self.array(tok)
        if word in DTYPE_LONG:
            self.next()
            inner_tok = self.peek()
            inner = self.constant()
            self.punct(")")
            out = np.empty(1, _numpy_dtype(DTYPE_LONG[word]))
            return self.convert(out, inner, inner_tok)[0]
        return self.resolve(tok)  # an import path followed by a call's '('

    def array(self, tok: Token) -> np.ndarray[t.Any, t.Any]:
        self.next()
        dtype_tok = self.next()
        if dtype_tok.kind == "ident" and dtype_tok.text in DTYPE_LONG:
            name = DTYPE_LONG[dtype_tok.text]
        elif dtype_tok.kind == "string":
            name = self.json_string(dtype_tok.text, dtype_tok)
        else:
            raise self.error(f"expected a dtype, got {describe(dtype_tok)}", dtype_tok)
        dtype = _numpy_dtype(name)
        if dtype is None:
            raise self.error(f"unknown NumPy dtype {name!r}", dtype_tok)
        self.punct(",")
        leaves: list[tuple[object, Token]] = []
        shape = self.nested(leaves)
        if self.accept("punct", ","):
            self.expect("ident", "shape", what="'shape='")
            self.punct("=")
            shape_tok = self.peek()
            given = self.constant()
            if not (
                isinstance(given, tuple)
                and all(type(n) is int and n >= 0 for n in given)
                and given[: len(shape)] == shape
                and math.prod(given) == len(leaves)
            ):
                raise self.error(f"shape {given!r} does not fit the elements {shape!r}", shape_tok)
            shape = t.cast(tuple[int, ...], given)
        self.punct(")")
        flat = np.empty(len(leaves), dtype)
        for i, (leaf, leaf_tok) in enumerate(leaves):
            self.convert(flat[i : i + 1], leaf, leaf_tok)
        return flat.reshape(shape)

    def nested(self, leaves: list[tuple[object, Token]]) -> tuple[int, ...]:
        """Read nested rows (or one element) into ``leaves``; return their shape."""
        opening = self.peek()
        if not self.accept("punct", "["):
            leaves.append((self.constant(), opening))
            return ()
        shapes: list[tuple[int, ...]] = []

        def row() -> None:
            row_tok = self.peek()
            shapes.append(self.nested(leaves))
            if shapes[-1] != shapes[0]:
                raise self.error("rows of an array have different shapes", row_tok)

        self.comma_list("]", row)
        return (len(shapes), *(shapes[0] if shapes else ()))

    def convert(
        self, out: np.ndarray[t.Any, t.Any], value: object, tok: Token
    ) -> np.ndarray[t.Any, t.Any]:
        """Store ``value`` into the one-element array ``out``, refusing values that do not fit."""
        kind = out.dtype.kind
        allowed = _SCALAR_KINDS.get(kind)
        if allowed is None or (
            isinstance(value, allowed) and (bool in allowed or not isinstance(value, bool))
        ):
            try:
                with np.errstate(over="raise", invalid="raise"):  # f32(1e300) is no f32
                    out[0] = value  # an object array stores a tuple whole, not its items
            except (ValueError, TypeError, OverflowError, FloatingPointError):
                pass
            else:
                # Strings truncate silently, and older NumPy wraps integers around.
                if kind not in "iuUS" or out[0].item() == value:
                    return out
        raise self.error(f"{type(value).__name__} value does not fit dtype {out.dtype.name}", tok)

    def resolve(self, tok: Token) -> object:
        try:
            return resolve(tok.text)
        except UnresolvablePath as e:
            raise self.error(f"cannot resolve import path {tok.text}: {e}", tok) from None

    def json_string(self, text: str, tok: Token) -> str:
        try:
            return t.cast(str, json.loads(text))
        except json.JSONDecodeError as e:
            raise self.error(f"bad string literal: {e.msg}", tok) from None


def _numpy_dtype(name: str) -> np.dtype[t.Any] | None:
    """The dtype whose ``.name`` is ``name``, if there is one."""
    # Flexible dtypes name their size in bits ("str64", "bytes16"), which np.dtype cannot read.
    m = re.fullmatch(r"(str|bytes|void)([0-9]+)", name)
    if m is not None:
        code, itemsize = {"str": ("U", 32), "bytes": ("S", 8), "void": ("V", 8)}[m.group(1)]
        name = f"{code}{int(m.group(2)) // itemsize}"
    try:
        return np.dtype(name)
    except TypeError:
        return None
