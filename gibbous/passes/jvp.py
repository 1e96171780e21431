"""The forward-mode transform: a typed function becomes one that returns its value and tangent.

``f(x1, ..., xn)`` becomes ``f_jvp(x1, ..., xn, dx_i, ...)`` with one tangent argument per
*varied* argument (one with a tangent), returning ``pair(y, dy)``.  A value is varied when it
is a varied argument, or the result of a call with a varied operand, or a block argument that
some edge passes a varied value to, and its type can carry a real tangent (a float, a float
array).  The blocks stay the primal's, in the primal's order, with a tangent block argument
beside each varied one; every primal call is made as the primal makes it, so the value is the
primal's, bit for bit.  After a call with varied operands comes its tangent:

    %z = call numpy.sin(%x)                      # the primal call, as it was
    %0 = call math.cos(%x)                       # the tangent, written out by the site's
    %dz = call operator.mul(%dx, %0)             # forward rule (gibbous.rules.forward)

or, where a type is ``Any``, a call of the rule's tangent function; a call of a Python
function becomes a call of the callee's own forward program, which returns the pair.
``resolve`` (the session's) says which.

What this first version refuses, with an error naming the construct and the line: a varied
value of another type (a container, a complex number, an object), a call that may write into a
varied operand (in-place mutation), exception handlers (``try``) in the function.  A wrong
tangent is never the result: what is not understood is refused.
"""

from __future__ import annotations

import operator
import typing as t
from types import FunctionType

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.cfg import reverse_postorder
from gibbous.ir.core import (
    Block,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Jump,
    Location,
    Operation,
    Raise,
    Return,
    Value,
    edge_args,
)
from gibbous.ir.exceptions import GibbousError
from gibbous.ir.purity import is_pure_call
from gibbous.passes.activity import WRITE_NOTHING
from gibbous.rules import forward as FR
from gibbous.rules.inline import SUM
from gibbous.rules.public_names import callable_name


class ForwardModeError(GibbousError, TypeError):
    """A construct or a call that forward mode cannot differentiate (yet)."""


@attrs.frozen
class Site:
    """How a call with varied operands is differentiated: ``kind`` is ``"zero"`` (its result
    has no tangent), ``"tangent"`` (``what`` is the tangent function) or ``"derived"``
    (``what`` is the callee's forward program, called with the operands and the tangents of
    the varied ones) or ``"dynamic"`` (a callee known only at run time: ``what(callee,
    *operands, *tangents)``, None for an operand without one, resolves it then)."""

    kind: t.Literal["zero", "tangent", "derived", "dynamic"]
    what: object = None


#: ``resolve(call, varied)``: the call's ``Site`` (``varied[i]``: operand ``i`` has a
#: tangent); raises ``ForwardModeError`` if the call has no forward rule.
Resolver = t.Callable[[Call, tuple[bool, ...]], Site]


def tangent_carrying(ty: T.Type) -> bool:
    """Whether values of ``ty`` get a tangent here: floats and real float arrays, and values
    whose type inference could not tell (``Any``: a recursive call's result, ``x[k]``), whose
    tangent functions check at run time what they are given."""
    if isinstance(ty, (T.Float, T.Any)):
        return True
    return isinstance(ty, T.Array) and ty.dtype is not None and np.dtype(ty.dtype).kind == "f"


def _tangentless(ty: T.Type) -> bool:
    """Types whose values never carry a derivative (an int, a bool, None, a string)."""
    if isinstance(ty, T.Const):
        return not isinstance(ty.value, (float, complex, np.inexact))
    if isinstance(ty, T.Array):
        return ty.dtype is not None and np.dtype(ty.dtype).kind in "biu"
    if isinstance(ty, T.Tuple):  # ``x.shape``
        return all(map(_tangentless, ty.items))
    return isinstance(ty, (T.Int, T.Bool, T.NoneType, T.Str))


def where(op: Operation | None, fn_name: str) -> str:
    loc = None if op is None else op.loc
    return f"{loc.file}:{loc.line}" if isinstance(loc, Location) else f"in {fn_name}"


def jvp_transform(
    f: Function,
    varied_args: t.Sequence[bool],
    resolve: Resolver,
    fn_name: str,
    tangent_only: bool = False,
) -> Function:
    """``f``'s forward program (see the module's doc); with ``tangent_only`` it returns the
    tangent alone (what a Hessian-vector product differentiates)."""
    return _Transform(f, tuple(varied_args), resolve, fn_name, tangent_only).run()


class _Transform:
    def __init__(
        self,
        f: Function,
        varied_args: tuple[bool, ...],
        resolve: Resolver,
        fn_name: str,
        tangent_only: bool,
    ) -> None:
        self.f, self.resolve, self.fn_name = f, resolve, fn_name
        self.tangent_only = tangent_only
        for block in f.blocks:
            if isinstance(block.terminator, Guard):
                raise self.refuse(block.terminator, "a try statement (exception handlers)")
        self.varied = self._analyse(varied_args)
        self.primal: dict[Value, Value] = {}
        self.tangent: dict[Value, Value] = {}
        self.blocks: dict[Block, Block] = {}
        args = [(a.name, a.type) for a in f.args]
        args += [(f"d{a.name or i}", a.type) for i, a in enumerate(f.args) if a in self.varied]
        self.out = Function(f"{f.name}_jvp", args, loc=f.loc)

    def _analyse(self, varied_args: tuple[bool, ...]) -> set[Value]:
        varied: set[Value] = set()
        for a, v in zip(self.f.args, varied_args):
            if v:
                if isinstance(a.type, T.Any) or not tangent_carrying(a.type):
                    raise self.refuse(None, f"argument {a.name!r} of type {a.type}")
                varied.add(a)
        changed = True
        while changed:
            changed = False
            for block in self.f.blocks:
                for op in block.ops:
                    if isinstance(op, Call):
                        if op.result not in varied and any(v in varied for v in op.operands):
                            if tangent_carrying(op.type):
                                varied.add(op.result)
                                changed = True
                    elif isinstance(op, (Jump, Branch, Guard)):
                        for i, succ in enumerate(op.successors):
                            for param, value in zip(succ.args, edge_args(op, i)):
                                if value in varied and param not in varied:
                                    if not tangent_carrying(param.type):
                                        raise self.refuse(op, f"a value of type {param.type}")
                                    varied.add(param)
                                    changed = True
        return varied

    def refuse(self, op: Operation | None, what: str) -> ForwardModeError:
        return ForwardModeError(
            f"forward mode cannot differentiate {what} ({where(op, self.fn_name)}, in "
            f"{self.fn_name}): this version of build_frule takes floats and float64 arrays "
            "through NumPy's elementwise functions, reductions, products, indexing and "
            "reshaping, and calls of Python functions made of those; use build_rrule and "
            "value_and_pullback for the rest"
        )

    # -- emission ---------------------------------------------------------------------------

    def run(self) -> Function:
        order = reverse_postorder(self.f)
        for block in self.f.blocks:
            if block is self.f.entry:
                new = self.out.entry
                params = [a for a in new.args]
                n = len(block.args)
                for old, p in zip(block.args, params[:n]):
                    self.primal[old] = p
                for old, p in zip([a for a in block.args if a in self.varied], params[n:]):
                    self.tangent[old] = p
            else:
                new = self.out.add_block(block.name)
                for a in block.args:
                    self.primal[a] = new.add_arg(a.type, a.name)
                for a in block.args:
                    if a in self.varied:
                        self.tangent[a] = new.add_arg(a.type, f"d{a.name or ''}")
            self.blocks[block] = new
        for block in order:
            b = Builder(self.out, self.blocks[block])
            for op in block.ops:
                b.loc = op.loc
                self.emit(b, op)
        if not self.tangent_only:  # (reverse mode has no rule for the quicker call)
            _quicker_sums(self.out)
        return self.out

    def p(self, v: Value) -> Value:
        if isinstance(v, Constant):
            return Constant(v.value)
        return self.primal[v]

    def d(self, b: Builder, v: Value) -> Value:
        """``v``'s tangent: its own, or zeros shaped as it (a value without one)."""
        hit = self.tangent.get(v)
        if hit is not None:
            return hit
        return FR.zero(b, self.p(v))

    def emit(self, b: Builder, op: Operation) -> None:
        if isinstance(op, Call):
            self.call(b, op)
        elif isinstance(op, Jump):
            b.jump(self.blocks[op.target], *self.edge(b, op, 0))
        elif isinstance(op, Branch):
            b.branch(
                self.p(op.cond),
                self.blocks[op.successors[0]],
                self.edge(b, op, 0),
                self.blocks[op.successors[1]],
                self.edge(b, op, 1),
            )
        elif isinstance(op, Return):
            # (no tangent: None, which the entry point makes zeros of the result's shape)
            v = op.value
            dv = self.tangent.get(v) if v in self.varied else None
            if self.tangent_only:
                b.ret(FR.zero(b, self.p(v)) if dv is None else dv)
            else:
                b.ret(pair(b, self.p(v), Constant(None) if dv is None else dv))
        elif isinstance(op, Raise):
            b.raise_(self.p(op.exc))
        else:
            assert isinstance(op, Guard)
            raise self.refuse(op, "a try statement (exception handlers)")

    def edge(self, b: Builder, op: Jump | Branch, i: int) -> list[Value]:
        succ = op.successors[i]
        values = edge_args(op, i)
        out = [self.p(v) for v in values]
        out += [self.d(b, v) for param, v in zip(succ.args, values) if param in self.varied]
        return out

    def call(self, b: Builder, op: Call) -> None:
        r = op.result
        callee = self.p(op.callee)
        args = [self.p(a) for a in op.args]
        kwargs = {k: self.p(v) for k, v in op.kwargs.items()}
        operands = (*op.args, *op.kwargs.values())
        varied = tuple(a in self.varied for a in operands)
        if op.callee in self.varied:
            raise self.refuse(op, "a call of a value with a tangent")
        pure = is_pure_call(op) or _writes_nothing(op)
        if not any(varied) or pure and _tangentless(r.type):
            # No tangent in, or none out (``x > 0``, ``int(x)``): the primal's call.
            self.varied.discard(r)
            self.primal[r] = b.call(callee, *args, kwargs=kwargs, type=r.type, name=r.name)
            return
        if not isinstance(op.callee, Constant):  # (a closure's cell, an argument, ...)
            self.dynamic(b, op, callee, args, varied)
            return
        name = callable_name(op.callee.value)
        fn = op.callee.value
        if not pure and _tangentless(r.type) and not isinstance(fn, FunctionType):
            # (a call made for what it writes: ``y[0] = x``, ``a.append(x)``, ``np.copyto``)
            raise self.refuse(op, f"{name}, which may write into an operand with a tangent")
        if fn in FR.IN_PLACE and op.args:
            # ``x += y`` writes into an array, which the tangents of its aliases would miss;
            # into a float it makes a new value.  (Forward rules take no ``out=``.)
            first = op.args[0].type
            if isinstance(first, T.Array) or "out" in op.kwargs:
                raise self.refuse(op, f"{name}, which may write into an operand with a tangent")
            if isinstance(first, T.Any):
                b.call(FR.not_an_array, self.p(op.args[0]), name, type=T.NONE)
        if r not in self.varied and not _tangentless(r.type):
            raise self.refuse(op, f"{name}, whose result ({r.type}) depends on a float")
        site = self.resolve(op, varied)  # (a call without a forward rule is refused there)
        if site.kind == "derived":
            if kwargs:
                raise self.refuse(op, f"keyword arguments of {name}")
            tangents = [self.tangent[a] for a, v in zip(op.args, varied) if v]
            made = b.call(site.what, *args, *tangents, type=T.ANY)
            self.primal[r] = b.call(operator.getitem, made, 0, type=r.type, name=r.name)
            if r in self.varied:
                self.tangent[r] = b.call(operator.getitem, made, 1, type=r.type)
            return
        z = self.primal[r] = b.call(callee, *args, kwargs=kwargs, type=r.type, name=r.name)
        if site.kind == "zero" or r not in self.varied:
            self.varied.discard(r)  # (no derivative: a constant from here on)
            return
        if isinstance(site.what, FR.Emit):  # the tangent written out
            given = [self.tangent[a] if v else None for a, v in zip(operands, varied)]
            self.tangent[r] = site.what.fn(b, z, args, given, kwargs)
            return
        tangents = [self.tangent[a] if v else Constant(None) for a, v in zip(operands, varied)]
        self.tangent[r] = b.call(site.what, z, *args, *tangents, kwargs=kwargs, type=r.type)

    def dynamic(
        self, b: Builder, op: Call, callee: Value, args: list[Value], varied: tuple[bool, ...]
    ) -> None:
        """A callee known only at run time: the resolver's handler finds its forward rule or
        program then, and returns the pair."""
        r = op.result
        if any(varied[len(op.args) :]):
            raise self.refuse(op, "a keyword argument with a tangent")
        if r not in self.varied and not _tangentless(r.type):
            raise self.refuse(op, f"a call whose result ({r.type}) depends on a float")
        site = self.resolve(op, varied)
        tangents = [self.tangent[a] if v else Constant(None) for a, v in zip(op.args, varied)]
        kwargs = {k: self.p(v) for k, v in op.kwargs.items()}
        made = b.call(site.what, callee, *args, *tangents, kwargs=kwargs, type=T.ANY)
        self.primal[r] = b.call(operator.getitem, made, 0, type=r.type, name=r.name)
        if r in self.varied:
            self.tangent[r] = b.call(operator.getitem, made, 1, type=r.type)

def _quicker_sums(f: Function) -> None:
    """``np.sum(x)`` of a whole float array as the reverse programs compute it: NumPy's own
    call once it has looked at the keywords (``gibbous.rules.inline.SUM.primal``)."""
    assert SUM.primal is not None
    quicker, constants = SUM.primal
    for op in list(f.calls()):
        callee = op.callee
        if not (isinstance(callee, Constant) and callee.value is np.sum) or op.kwargs:
            continue
        if len(op.args) != 1 or not tangent_carrying(op.args[0].type):
            continue
        if not isinstance(op.args[0].type, T.Array):
            continue
        new = Builder(f).before(op).call(
            quicker, op.args[0], *constants, type=op.type, name=op.result.name, loc=op.loc
        )
        op.result.replace_all_uses_with(new)
        op.erase()


def pair(b: Builder, y: Value, dy: Value) -> Value:
    """What a forward program returns: the value and its tangent."""
    return b.call(runtime.make_tuple, y, dy, type=T.Tuple((y.type, dy.type)))


def _writes_nothing(op: Call) -> bool:
    callee = op.callee
    return isinstance(callee, Constant) and callee.value in WRITE_NOTHING
