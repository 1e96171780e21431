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
import re
import typing as t


from gibbous.ir import core
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
from gibbous.ir.literals import DTYPE_LONG as DTYPE_LONG
from gibbous.ir.literals import DTYPE_SHORT as DTYPE_SHORT
from gibbous.ir.literals import UnprintableError as UnprintableError
from gibbous.ir.literals import format_constant as format_constant
from gibbous.ir.literals import format_constant_list as format_constant_list
from gibbous.ir.literals import format_dtype as format_dtype
from gibbous.ir.literals import format_path as format_path
from gibbous.ir.names import import_path as import_path
from gibbous.ir.types import format_type as format_type

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
# A bare name ending in ".<digits>" reads as a uniqued name (hint + suffix), so a hint that
# itself ends that way is quoted: hints "x", "x" and "x.1" print as %x, %x.1 and %"x.1".
UNIQUE_SUFFIX = re.compile(r"\.[0-9]+\Z")
KWNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

def format_name(sigil: str, name: str, suffix: int = 0) -> str:
    """``sigil``, the name (bare or JSON-quoted), then ``.suffix``, the uniquing count, if any."""
    bare = IDENT.match(name) and not UNIQUE_SUFFIX.search(name)
    return sigil + (name if bare else json.dumps(name)) + (f".{suffix}" if suffix else "")


def format_kwname(name: str) -> str:
    return name if KWNAME.match(name) else json.dumps(name)


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


# Operations and functions print through this module (``gibbous.ir.core.TEXT``).
core.TEXT.operation = format_operation  # type: ignore[method-assign]
core.TEXT.function = format_function  # type: ignore[method-assign]
