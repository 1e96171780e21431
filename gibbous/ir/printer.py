"""The IR's text form, printing side.  The grammar is in docs/ir.md; ``parser`` reads it back.

    func @poly(%x: f64) loc("poly.py":3) {
    ^entry:
      %y = call operator.mul(%x, 2.0) : f64 loc("poly.py":4)
      %0 = call numpy.sin(%y) : f64 loc("poly.py":4)
      return %0 loc("poly.py":4)
    }

Names: a value or block prints by its name hint (``%y``), made unique with a ``.N`` suffix;
a hint that is not an identifier, or ends like a suffix, is JSON-quoted (``%"a b"``, ``%"x.1"``).
Values and blocks without a hint are numbered in order (``%0``, ``^1``).  Constants print inline.
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
    Operation,
    Raise,
    Return,
    Value,
)
from gibbous.ir.names import import_path

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
# A bare name ending in ".<digits>" reads as a uniqued name (hint + suffix), so a hint that
# itself ends that way is quoted: hints "x", "x" and "x.1" print as %x, %x.1 and %"x.1".
UNIQUE_SUFFIX = re.compile(r"\.[0-9]+\Z")
KWNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Short dtype names, both ways.  Any other dtype prints as its quoted NumPy name.
DTYPE_SHORT = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "longdouble": "f128",
    "complex128": "c128",
    "complex64": "c64",
    "clongdouble": "c256",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint64": "u64",
    "uint32": "u32",
    "uint16": "u16",
    "uint8": "u8",
    "bool": "bool",
}
DTYPE_LONG = {v: k for k, v in DTYPE_SHORT.items()}


class UnprintableError(ValueError):
    """A constant that has neither a literal form nor an import path."""


def format_name(sigil: str, name: str, suffix: int = 0) -> str:
    """``sigil``, the name (bare or JSON-quoted), then ``.suffix``, the uniquing count, if any."""
    bare = IDENT.match(name) and not UNIQUE_SUFFIX.search(name)
    return sigil + (name if bare else json.dumps(name)) + (f".{suffix}" if suffix else "")


def format_kwname(name: str) -> str:
    return name if KWNAME.match(name) else json.dumps(name)


def format_dtype(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype) or json.dumps(dtype)


def format_path(obj: object) -> str:
    path = import_path(obj)
    if path is None:
        raise UnprintableError(
            f"{obj!r} has no import path; the text form can only name importable objects"
        )
    return path


def format_type(ty: T.Type, *, lenient: bool = False) -> str:
    """The text of ``ty``.  ``lenient`` is for messages: a class or constant without an import
    path prints by its module and qualified name (or repr) instead of raising."""

    def path(obj: object) -> str:
        if not lenient:
            return format_path(obj)
        found = import_path(obj)
        if found is not None:
            return found
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"

    def sub(item: T.Type) -> str:
        return format_type(item, lenient=lenient)

    match ty:
        case T.Any():
            return "any"
        case T.Bottom():
            return "never"
        case T.Bool():
            return "bool"
        case T.Int(dtype=d) | T.Float(dtype=d) | T.Complex(dtype=d):
            return format_dtype(d)
        case T.Str():
            return "str"
        case T.NoneType():
            return "none"
        case T.Array(dtype=dtype, ndim=ndim):
            dims = "..." if ndim is None else ",".join(":" * ndim)
            return ("?" if dtype is None else format_dtype(dtype)) + f"[{dims}]"
        case T.Tuple(items=items, cls=cls):
            head = "tuple" if cls is tuple else f"tuple<{path(cls)}>"
            return head + "[" + ", ".join(map(sub, items)) + "]"
        case T.List(item=item):
            return f"list[{sub(item)}]"
        case T.Set(item=item):
            return f"set[{sub(item)}]"
        case T.Dict(key=key, value=value):
            return f"dict[{sub(key)}, {sub(value)}]"
        case T.Object(cls=cls):
            return f"object<{path(cls)}>"
        case T.Const(value=value):
            try:
                return f"const<{format_constant(value)}>"
            except UnprintableError:
                if not lenient:
                    raise
                return f"const<{value!r}>"
    raise TypeError(f"not an IR type: {ty!r}")


def _format_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _format_complex(z: complex) -> str:
    return f"complex({_format_float(z.real)}, {_format_float(z.imag)})"


def format_constant(value: object) -> str:
    """A constant as a literal, a constructor form, or an import path."""
    match value:
        case None:
            return "None"
        case bool():
            return repr(value)
        case int() if type(value) is int:
            return repr(value)
        case float() if type(value) is float:
            return _format_float(value)
        case complex() if type(value) is complex:
            return _format_complex(value)
        case str() if type(value) is str:
            return json.dumps(value)
        case bytes() if type(value) is bytes:
            return "b" + json.dumps(value.hex())
        case tuple() if type(value) is tuple:
            inner = ", ".join(map(format_constant, value))
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        case slice():
            parts = (value.start, value.stop, value.step)
            return "slice(" + ", ".join(map(format_constant, parts)) + ")"
        case np.ndarray() if type(value) is np.ndarray:
            # Nested lists lose the shape after a zero-length dimension: [] could be (0, 3).
            shape = ""
            if value.size == 0 and value.ndim > 1:
                shape = f", shape={format_constant(value.shape)}"
            return f"array({format_dtype(value.dtype.name)}, {format_constant_list(value)}{shape})"
        case np.generic() if value.dtype.name in DTYPE_SHORT:
            return f"{format_dtype(value.dtype.name)}({format_constant(value.item())})"
    if value is Ellipsis:
        return "..."
    return format_path(value)


def format_constant_list(a: np.ndarray[t.Any, t.Any]) -> str:
    if a.ndim == 0:
        return format_constant(a.item())
    # a[i, ...] is a 0-d array even for object dtype, where iterating gives the elements bare.
    return "[" + ", ".join(format_constant_list(a[i, ...]) for i in range(len(a))) + "]"


def format_loc(loc: Location | None) -> str:
    return "" if loc is None else f" loc({json.dumps(loc.file)}:{loc.line})"


class Namer:
    """Unique printed names for the values and blocks of one function."""

    def __init__(self) -> None:
        self.values: dict[int, str] = {}
        self.blocks: dict[int, str] = {}
        self._seen: dict[str, int] = {}  # per hint: how many values used it so far
        self._seen_blocks: dict[str, int] = {}
        self._n_values = 0
        self._n_blocks = 0

    @staticmethod
    def _unique(sigil: str, hint: str, seen: dict[str, int]) -> str:
        # format_name is injective in (hint, suffix), so a count per hint keeps names unique
        # and lets the parser recover the hint by dropping the suffix.
        n = seen.get(hint, 0)
        seen[hint] = n + 1
        return format_name(sigil, hint, n)

    def define(self, v: Value) -> str:
        if v.name is None:
            text = f"%{self._n_values}"
            self._n_values += 1
        else:
            text = self._unique("%", v.name, self._seen)
        self.values[id(v)] = text
        return text

    def define_block(self, b: Block) -> str:
        if b.name is None:
            text = f"^{self._n_blocks}"
            self._n_blocks += 1
        else:
            text = self._unique("^", b.name, self._seen_blocks)
        self.blocks[id(b)] = text
        return text

    def ref(self, v: Value) -> str:
        if isinstance(v, Constant):
            return format_constant(v.value)
        return self.values.get(id(v)) or f"%<undefined {type(v).__name__} {id(v):#x}>"

    def block_ref(self, b: Block) -> str:
        return self.blocks.get(id(b)) or f"^<block not in function {id(b):#x}>"

    def target(self, b: Block, args: t.Sequence[Value]) -> str:
        return self.block_ref(b) + (f"({', '.join(map(self.ref, args))})" if args else "")


def format_operation(op: Operation, namer: Namer | None = None) -> str:
    """One operation on one line (no location).  Without a namer, values print by their hints."""
    if namer is None:
        namer = _LooseNamer()
    match op:
        case Call():
            args = [namer.ref(a) for a in op.args]
            args += [f"{format_kwname(k)}={namer.ref(v)}" for k, v in op.kwargs.items()]
            result = namer.values.get(id(op.result)) or namer.define(op.result)
            return (
                f"{result} = call {namer.ref(op.callee)}({', '.join(args)})"
                f" : {format_type(op.result.type)}"
            )
        case Jump():
            return "jump " + namer.target(op.target, op.args)
        case Branch():
            return (
                f"branch {namer.ref(op.cond)}, {namer.target(op.if_true, op.true_args)}, "
                f"{namer.target(op.if_false, op.false_args)}"
            )
        case Guard():
            return (
                f"guard {namer.ref(op.guarded)}, {namer.target(op.normal, op.normal_args)}, "
                f"except {namer.target(op.handler, op.handler_args)}"
            )
        case Return():
            return f"return {namer.ref(op.value)}"
        case Raise():
            return f"raise {namer.ref(op.exc)}"
    raise TypeError(f"not an IR operation: {op!r}")


class _LooseNamer(Namer):
    """Names for an operation printed alone (in error messages): hints, or '%?'."""

    def ref(self, v: Value) -> str:
        if isinstance(v, Constant):
            try:
                return format_constant(v.value)
            except UnprintableError:
                return f"<{v.value!r}>"
        return format_name("%", v.name) if v.name is not None else "%?"

    def define(self, v: Value) -> str:
        return self.ref(v)

    def block_ref(self, b: Block) -> str:
        return format_name("^", b.name) if b.name is not None else "^?"


def function_namer(f: Function) -> Namer:
    """The names ``format_function`` prints ``f``'s blocks and values under."""
    namer = Namer()
    for b in f.blocks:  # blocks first: a jump may name a block printed later
        namer.define_block(b)
    for a in f.args:
        namer.define(a)
    for i, b in enumerate(f.blocks):
        for v in _defined_in(b, skip_args=i == 0):
            namer.define(v)
    return namer


def format_function(f: Function) -> str:
    namer = function_namer(f)
    header_args = ", ".join(f"{namer.ref(a)}: {format_type(a.type)}" for a in f.args)
    lines = [f"func {format_name('@', f.name)}({header_args}){format_loc(f.loc)} {{"]
    for i, b in enumerate(f.blocks):
        label = namer.block_ref(b)
        if i > 0 and b.args:
            label += "(" + ", ".join(f"{namer.ref(a)}: {format_type(a.type)}" for a in b.args) + ")"
        lines.append(label + ":")
        lines.extend(f"  {format_operation(op, namer)}{format_loc(op.loc)}" for op in b.ops)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _defined_in(b: Block, skip_args: bool) -> t.Iterator[Value]:
    if not skip_args:
        yield from b.args
    for op in b.ops:
        if isinstance(op, Call):
            yield op.result
