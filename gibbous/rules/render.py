"""Renderings of ``gibbous.rules.formulas``: each turns a formula into code once, when a rule
module is imported, so that no tree is walked when a derivative is computed.

* ``numpy_pullback`` and ``float_pullback`` compile Python source, one function per formula;
* ``inline_adjoint`` writes the formula's arithmetic with an IR builder;
* ``kernel`` builds a partial that writes into preallocated buffers with ``out=``.

Each takes a *namespace*: what the formula's function names mean in that rendering.
"""

from __future__ import annotations

import math
import operator
import typing as t

import attrs
import numpy as np

from gibbous.rules.formulas import Expr

Array = np.ndarray[t.Any, t.Any]
Namespace = t.Mapping[str, t.Callable[..., t.Any]]

_INFIX = {"+": "+", "-": "-", "*": "*", "/": "/", "//": "//", "==": "==", ">": ">", "<": "<",
          "&": "&"}  # fmt: skip
PARAMETERS = {1: ("g", "x", "z"), 2: ("g", "x", "y", "z")}


def source(e: Expr, real: bool) -> str:
    """Python source of ``e``, fully parenthesized so that it evaluates as written.  ``real``:
    the values are Python floats (``conj`` is nothing, ``where`` a conditional expression, a
    power ``**``); else NumPy values (``conj``, ``where`` and ``power`` are the namespace's)."""
    op, args = e.op, [source(a, real) for a in e.args]
    if op == "var":
        return e.name
    if op == "const":
        return repr(e.value)
    if op in _INFIX:
        return f"({args[0]} {_INFIX[op]} {args[1]})"
    if op == "neg":
        return f"(-{args[0]})"
    if op == "conj" and real:
        return args[0]
    if op == "where" and real:
        return f"({args[1]} if {args[0]} else {args[2]})"
    if op == "**":
        return f"({args[0]} ** {args[1]})" if real else f"power({args[0]}, {args[1]})"
    name = e.name if op == "call" else op
    return f"{name}({', '.join(args)})"


def compile_formula(name: str, e: Expr, arity: int, real: bool, ns: Namespace) -> t.Any:
    params = ", ".join(PARAMETERS[arity])
    code = f"def {name}({params}):\n    return {source(e, real)}\n"
    scope: dict[str, t.Any] = dict(ns)
    exec(compile(code, f"<formula {name}>", "exec"), scope)
    return scope[name]


def numpy_pullback(name: str, e: Expr, arity: int, ns: Namespace) -> t.Any:
    """``grad(g, x, z)`` or ``grad(g, x, y, z)`` of NumPy scalars or arrays."""
    return compile_formula(name, e, arity, False, ns)


def float_pullback(name: str, e: Expr, arity: int, ns: Namespace) -> t.Any | None:
    """The same on Python floats, or None if the formula calls a function ``ns`` lacks."""
    if not e.calls() <= set(ns):
        return None
    return compile_formula(name, e, arity, True, ns)


# --------------------------------------------------------------------------------------------
# Inline: the formula written with a builder, for the reverse programs of scalar code

_IR_OPS: dict[str, t.Callable[..., t.Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "neg": operator.neg,
}  # fmt: skip
# Functions of floats to floats (not ``trunc``, an int; not the ones that branch).
IR_FUNCTIONS = {"cos": math.cos, "sin": math.sin, "cosh": math.cosh, "sinh": math.sinh,
                "sqrt": math.sqrt, "exp": math.exp, "exp2": math.exp2, "log": math.log,
                "log1p": math.log1p}  # fmt: skip


def inline_expressible(e: Expr) -> bool:
    return e.ops() <= {"var", "const", "conj", "call", *_IR_OPS} and e.calls() <= set(IR_FUNCTIONS)


def inline_adjoint(e: Expr, call: t.Callable[..., t.Any], env: t.Mapping[str, t.Any]) -> t.Any:
    """``e`` written with ``call(fn, *args)`` (a builder's call), the variables from ``env``."""
    if e.op == "var":
        return env[e.name]
    if e.op == "const":
        return float(e.value)
    args = [inline_adjoint(a, call, env) for a in e.args]
    if e.op == "conj":  # floats
        return args[0]
    fn = IR_FUNCTIONS[e.name] if e.op == "call" else _IR_OPS[e.op]
    return call(fn, *args)


# --------------------------------------------------------------------------------------------
# Kernels: the formula evaluated into buffers with ``out=``, allocating nothing.
#
# Every node that is not a leaf writes into a buffer chosen when the kernel is built: a node's
# first computed operand reuses the node's own buffer, each further one takes the next free
# buffer (bool buffers for comparisons).  Operands that are all scalars are computed in Python
# (NumPy would fill an output from scalars through a temporary as large as the output).

Env = list[t.Any]  # g, operands..., then the float buffers (the first is ``out``), then masks
Eval = t.Callable[[Env], t.Any]


@attrs.frozen
class Work:
    """A kernel's buffers shaped like the output, besides ``out``."""

    tmp: tuple[Array, ...]  # of the output's dtype
    mask: tuple[Array, ...]  # bool


NO_WORK = Work((), ())


@attrs.frozen
class Kernel:
    """``fn(g, *operands, out, work)``: writes the gradient into ``out`` (never aliasing an
    operand or g); ``buffers`` and ``masks`` are how many float and bool work buffers it needs
    (besides ``out``); ``singular``: it may compute inf or nan where it then writes 0."""

    fn: t.Callable[..., None]
    buffers: int
    masks: int
    singular: bool


_UFUNCS: dict[str, np.ufunc] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "//": np.floor_divide,
    "**": np.power, "==": np.equal, ">": np.greater, "<": np.less, "&": np.logical_and,
    "neg": np.negative, "conj": np.conjugate,
}  # fmt: skip
_PY: dict[str, t.Callable[..., t.Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "**": operator.pow, "==": operator.eq, ">": operator.gt,
    "<": operator.lt, "&": operator.and_, "neg": operator.neg,
}  # fmt: skip
_BOOL = {"==", ">", "<", "&"}


def _simplify(e: Expr) -> Expr:
    """``(-a) * b`` as ``-(a * b)`` (and ``/``): the same numbers, one buffer fewer."""
    args = tuple(_simplify(a) for a in e.args)
    if e.op in ("*", "/") and args[0].op == "neg":
        return Expr("neg", (Expr(e.op, (args[0].args[0], args[1])),))
    return attrs.evolve(e, args=args)


class _Builder:
    def __init__(
        self, arity: int, forward: np.ufunc | None, real: bool, ns: Namespace
    ) -> None:
        self.arity, self.forward, self.real, self.ns = arity, forward, real, ns
        # env: g, the operands (and z, if given), then the float buffers
        self.parameters = PARAMETERS[arity] if forward is None else PARAMETERS[arity][:-1]
        self.base = len(self.parameters)
        self.buffers = self.masks = 0  # the highest float buffer used; masks used

    def leaf(self, e: Expr) -> bool:
        return e.op == "const" or (e.op == "var" and e.name in self.parameters)

    def buffer(self, k: int) -> int:
        self.buffers = max(self.buffers, k)
        return self.base + k

    def mask(self, k: int) -> int:
        self.masks = max(self.masks, k + 1)
        return -1 - k

    def build(self, e: Expr, dest: int, free: int, mfree: int) -> Eval:
        """``e`` into float buffer ``dest`` (mask ``dest`` if ``e`` is a comparison), with
        buffers from ``free`` and masks from ``mfree`` on for its operands."""
        op = e.op
        if op == "const":
            value = e.value
            return lambda env: value
        if op == "var" and e.name in self.parameters:
            i = self.parameters.index(e.name)
            return lambda env: env[i]
        if op == "conj" and self.real:
            return self.build(e.args[0], dest, free, mfree)
        if op == "call" and e.name == "lift_base":  # arrays of one dtype: x as it is
            return self.build(e.args[0], dest, free, mfree)
        if op == "where":
            return self._where(e, dest, free, mfree)
        if op == "**":
            return _power(self._operands(e.args, dest, free, mfree, False), self.buffer(dest))
        py: t.Callable[..., t.Any] | None = _PY.get(op)
        if op == "var":  # z: the function again (the output, restored, no longer holds it)
            args: tuple[Expr, ...] = tuple(Expr("var", name=n) for n in "xy"[: self.arity])
            assert self.forward is not None
            fn: t.Callable[..., t.Any] = self.forward
        elif op == "call":
            args, fn = e.args, self.ns[e.name]
        else:
            args, fn = e.args, _UFUNCS[op]
        if op == "conj":
            py = _conjugate
        if op == "*" and args[0] == args[1] and not self.leaf(args[0]):
            args, fn, py = args[:1], np.square, _square  # x * x: x computed once
        boolean = op in _BOOL
        slots = self._operands(args, dest, free, mfree, boolean)
        at = self.mask(dest) if boolean else self.buffer(dest)

        def apply(env: Env) -> t.Any:
            values = [s(env) for s in slots]
            for v in values:
                if type(v) is np.ndarray:
                    return fn(*values, out=env[at])
            return py(*values) if py is not None else fn(*values)

        return apply

    def _operands(
        self, args: t.Sequence[Expr], dest: int, free: int, mfree: int, boolean: bool
    ) -> list[Eval]:
        """The first computed operand into ``dest`` (unless that is a mask), the others into
        buffers of their own."""
        slots: list[Eval] = []
        reuse = not boolean
        for a in args:
            if self.leaf(a):
                slots.append(self.build(a, dest, free, mfree))
            elif a.op in _BOOL:
                slots.append(self.build(a, mfree, free, mfree + 1))
                mfree += 1
            elif reuse:
                slots.append(self.build(a, dest, free, mfree))
                reuse = False
            else:
                slots.append(self.build(a, free, free + 1, mfree))
                free += 1
        return slots

    def _where(self, e: Expr, dest: int, free: int, mfree: int) -> Eval:
        cond, then, otherwise = e.args
        c = self.build(cond, mfree, free, mfree + 1)
        b = self.build(otherwise, dest, free, mfree + 1)
        a = self.build(then, free, free + 1, mfree + 1)
        if not self.leaf(then):
            self.buffer(free)
        at = self.buffer(dest)

        def choose(env: Env) -> t.Any:
            mask = c(env)
            if type(mask) is not np.ndarray:  # a scalar condition: one branch only
                return a(env) if mask else b(env)
            out, otherwise_value = env[at], b(env)
            if otherwise_value is not out:
                np.copyto(out, otherwise_value)
            np.copyto(out, a(env), where=mask)
            return out

        return choose


def _real_log(x: t.Any, out: Array | None = None) -> t.Any:
    if out is None:
        return math.log(abs(x))
    np.abs(x, out=out)
    return np.log(out, out=out)


# What a kernel's function names mean: NumPy's ufuncs, on real arrays where it matters.
KERNEL: dict[str, t.Callable[..., t.Any]] = {
    **{n: getattr(np, n) for n in "cos sin cosh sinh sqrt exp exp2 log log1p trunc rint".split()},
    "unit": np.sign,
    "real_log": _real_log,
}


def _conjugate(v: t.Any) -> t.Any:
    return v.conjugate()


def _square(v: t.Any) -> t.Any:
    return v * v


def _power(slots: list[Eval], at: int) -> Eval:
    """``x ** y``; a constant exponent of 1 or 2 as a copy or a square (``h ** 2`` is common,
    and ``np.power`` does not take the shortcut ``**`` does)."""
    base_of, exponent_of = slots

    def power(env: Env) -> t.Any:
        b, p = base_of(env), exponent_of(env)
        if type(b) is not np.ndarray and type(p) is not np.ndarray:
            return b**p
        out = env[at]
        if type(p) is not np.ndarray and p == 1:
            np.copyto(out, b)
        elif type(p) is not np.ndarray and p == 2:
            np.square(b, out=out)
        else:
            np.power(b, p, out=out)
        return out

    return power


def kernel(
    e: Expr, arity: int, forward: np.ufunc | None, real: bool, ns: Namespace
) -> Kernel:
    """The partial of formula ``e`` on real or complex arrays: ``fn(g, *operands, out, work)``
    where ``forward`` computes ``z`` again if the formula uses it, else (``forward`` None)
    ``fn(g, *operands, z, out, work)``."""
    builder = _Builder(arity, forward, real, ns)
    body = builder.build(_simplify(e), 0, 1, 0)

    def partial(*args: t.Any) -> None:
        # g, operands..., out, work
        work: Work = args[-1]
        env = [*args[:-1], *work.tmp, *reversed(work.mask)]
        result = body(env)
        out = args[-2]
        if result is not out:  # a leaf (``g``) or a scalar
            np.copyto(out, result)

    return Kernel(partial, builder.buffers, builder.masks, "where" in e.ops())
