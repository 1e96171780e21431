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

_INFIX = {"+", "-", "*", "/", "//", "==", ">", "<", "&"}
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
        return f"({args[0]} {op} {args[1]})"
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
# Kernels: the formula as straight-line source, each step ``out=`` into a buffer, allocating
# nothing.
#
# Every node that is not a leaf writes into a buffer chosen when the kernel is built: a node's
# first computed operand reuses the node's own buffer, each further one takes the next free
# buffer (bool buffers for comparisons).  Operands that may all be scalars are computed in
# Python (NumPy would fill an output from scalars through a temporary as large as the output).


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

    fn: t.Callable[..., t.Any]
    buffers: int
    masks: int
    singular: bool


_UFUNCS: dict[str, np.ufunc] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "//": np.floor_divide,
    "**": np.power, "==": np.equal, ">": np.greater, "<": np.less, "&": np.logical_and,
    "neg": np.negative, "conj": np.conjugate,
}  # fmt: skip
_UFUNC_NAMES = {op: u.__name__ for op, u in _UFUNCS.items()}
PY_OPERATORS: dict[str, t.Callable[..., t.Any]] = {
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


class _Emitter:
    """Writes a kernel's statements: each node assigns a local, ``v<n>``."""

    def __init__(self, parameters: tuple[str, ...], arrays: set[str], real: bool) -> None:
        self.parameters, self.arrays, self.real = parameters, arrays, real
        self.lines: list[str] = []
        self.buffers = self.masks = 0  # the highest float buffer used; masks used
        self.count = 0
        self.z: str | None = None  # the result, computed once up front where used twice

    def leaf(self, e: Expr) -> bool:
        return e.op == "const" or (e.op == "var" and e.name in self.parameters)

    def buffer(self, k: int) -> str:
        self.buffers = max(self.buffers, k)
        return f"b{k}"

    def mask(self, k: int) -> str:
        self.masks = max(self.masks, k + 1)
        return f"m{k}"

    def local(self, line: str, indent: str, array: bool) -> str:
        self.count += 1
        name = f"v{self.count}"
        self.lines.append(f"{indent}{name} = {line}")
        if array:
            self.arrays.add(name)
        return name

    def emit(self, e: Expr, dest: int, free: int, mfree: int, indent: str) -> str:
        """``e`` into float buffer ``dest`` (mask ``dest`` if ``e`` is a comparison), with
        buffers from ``free`` and masks from ``mfree`` on for its operands; the name or
        literal of its value."""
        op = e.op
        if op == "const":  # a float: NumPy takes a Python int to arrays more slowly
            return repr(float(e.value))
        if op == "var" and e.name in self.parameters:
            return e.name
        if (op == "conj" and self.real) or (op == "call" and e.name == "lift_base"):
            # real values: no conjugate; arrays of one dtype: the base as it is
            return self.emit(e.args[0], dest, free, mfree, indent)
        if op == "where":
            return self._where(e, dest, free, mfree, indent)
        args: tuple[Expr, ...] = e.args
        if op == "var" and self.z is not None:
            return self.z
        if op == "var":  # z: the function again (the output, restored, no longer holds it)
            args, fn, py = tuple(Expr("var", name=n) for n in "xy"[: len(self.parameters) - 1]), "forward", "forward"
        elif op == "call":
            fn = py = e.name
        elif op == "*" and args[0] == args[1] and not self.leaf(args[0]):
            args, fn, py = args[:1], "square", "_square"  # x * x: x computed once
        else:
            fn, py = _UFUNC_NAMES[op], f"_py[{op!r}]"
        if op == "**":
            fn = "_power"
        boolean = op in _BOOL
        names = self._operands(args, dest, free, mfree, boolean, indent)
        out = self.mask(dest) if boolean else self.buffer(dest)
        call = f"{fn}({', '.join(names)}, out={out})"
        if any(n in self.arrays for n in names):
            name = self.local(call, indent, True)
            if not boolean:  # a buffer passed as None is the array NumPy made
                self.lines.append(f"{indent}{out} = {name}")
            return name
        scalar = f"{py}({', '.join(names)})" if op != "conj" else f"{names[0]}.conjugate()"
        check = " or ".join(f"type({n}) is _nd" for n in names if not n[0].isdigit())
        return self.local(f"{call} if {check or 'False'} else {scalar}", indent, False)

    def _operands(
        self, args: t.Sequence[Expr], dest: int, free: int, mfree: int, boolean: bool,
        indent: str,
    ) -> list[str]:  # fmt: skip
        """The first computed operand into ``dest`` (unless that is a mask), the others into
        buffers of their own."""
        names: list[str] = []
        reuse = not boolean
        for a in args:
            if self.leaf(a):
                names.append(self.emit(a, dest, free, mfree, indent))
            elif a.op in _BOOL:
                names.append(self.emit(a, mfree, free, mfree + 1, indent))
                mfree += 1
            elif reuse:
                names.append(self.emit(a, dest, free, mfree, indent))
                reuse = False
            else:
                names.append(self.emit(a, free, free + 1, mfree, indent))
                free += 1
        return names

    def _where(self, e: Expr, dest: int, free: int, mfree: int, indent: str) -> str:
        cond, then, otherwise = e.args
        c = self.emit(cond, mfree, free, mfree + 1, indent)
        self.count += 1
        result = f"v{self.count}"
        inner = indent + "    "
        self.lines.append(f"{indent}if type({c}) is not _nd:  # a scalar condition: one branch")
        self.lines.append(f"{inner}if {c}:")
        a = self.emit(then, free, free + 1, mfree + 1, inner + "    ")
        self.lines.append(f"{inner}    {result} = {a}")
        self.lines.append(f"{inner}else:")
        b = self.emit(otherwise, dest, free, mfree + 1, inner + "    ")
        self.lines.append(f"{inner}    {result} = {b}")
        self.lines.append(f"{indent}else:")
        b = self.emit(otherwise, dest, free, mfree + 1, inner)
        out = self.buffer(dest)
        self.lines.append(_copy_unless(out, b, inner))
        a = self.emit(then, free, free + 1, mfree + 1, inner)
        if not self.leaf(then):
            self.buffer(free)
        self.lines.append(f"{inner}copyto({out}, {a}, where={c})")
        self.lines.append(f"{inner}{result} = {out}")
        return result


def _uses(e: Expr, name: str) -> int:
    """How often variable ``name`` occurs in ``e``."""
    own = int(e.op == "var" and e.name == name)
    return own + sum(_uses(a, name) for a in e.args)


def _real_log(x: t.Any, out: Array | None = None) -> t.Any:
    if out is None:
        return math.log(abs(x))
    np.abs(x, out=out)
    return np.log(out, out=out)


# What a kernel's function names mean: NumPy's ufuncs, on real arrays where it matters.
KERNEL: dict[str, t.Callable[..., t.Any]] = {
    **{n: getattr(np, n) for n in "cos sin cosh sinh sqrt exp exp2 log log1p trunc rint".split()},
    "copysign": np.copysign, "ldexp": np.ldexp,
    "unit": np.sign,
    "real_log": _real_log,
}


def _copy_unless(out: str, value: str, indent: str) -> str:
    if value.isidentifier():
        return f"{indent}if {value} is not {out}:\n{indent}    copyto({out}, {value})"
    return f"{indent}copyto({out}, {value})"  # a number


def _square(v: t.Any) -> t.Any:
    return v * v


def _power(x: t.Any, p: t.Any, out: Array) -> Array:
    """``x ** p``; a constant exponent of 1 or 2 as a copy or a square (``h ** 2`` is common,
    and ``np.power`` does not take the shortcut ``**`` does)."""
    if type(p) is not np.ndarray and p == 1:
        np.copyto(out, x)
        return out
    if type(p) is not np.ndarray and p == 2:
        np.square(x, out=out)
    else:
        np.power(x, p, out=out)
    return out


def kernel(
    e: Expr, arity: int, forward: np.ufunc | None, real: bool, ns: Namespace
) -> Kernel:
    """The partial of formula ``e`` on real or complex arrays: ``fn(g, *operands, out, work)``
    where ``forward`` computes ``z`` again if the formula uses it, else (``forward`` None)
    ``fn(g, *operands, z, out, work)`` with every operand an array, and then ``out`` may be
    None for a new array (a kernel without work buffers).  It returns ``out``."""
    parameters = PARAMETERS[arity] if forward is None else PARAMETERS[arity][:-1]
    arrays = set(parameters) if forward is None else {"g", "x"} if arity == 1 else {"g"}
    emitter = _Emitter(parameters, arrays, real)
    e = _simplify(e)
    if forward is not None and _uses(e, "z") > 1:
        # The function once, into a buffer of its own, before any branch could need it:
        # ``hypot``'s ``x / z`` where ``z != 0`` would compute it three times.
        emitter.z = emitter.emit(Expr("var", name="z"), 1, 2, 0, "    ")
        result = emitter.emit(e, 0, 2, 0, "    ")
    else:
        result = emitter.emit(e, 0, 1, 0, "    ")
    # The work buffers are shared by the partials of one ufunc: as many as the hungriest needs.
    tmp = "".join(f"b{k}, " for k in range(1, emitter.buffers + 1))
    masks = "".join(f"m{k}, " for k in range(emitter.masks))
    code = "\n".join(
        [
            f"def partial({', '.join(parameters)}, b0, work):",
            f"    ({tmp}) = work.tmp[:{emitter.buffers}]" if tmp else "",
            f"    ({masks}) = work.mask[:{emitter.masks}]" if masks else "",
            *emitter.lines,
            _copy_unless("b0", result, "    "),  # a leaf (g) or a scalar
            "    return b0",
        ]
    )
    scope: dict[str, t.Any] = {
        **ns, **{u.__name__: u for u in _UFUNCS.values()}, "_py": PY_OPERATORS, "_nd": np.ndarray,
        "_square": _square, "_power": _power, "square": np.square, "copyto": np.copyto,
        "forward": forward,
    }  # fmt: skip
    exec(compile(code, "<kernel>", "exec"), scope)
    return Kernel(scope["partial"], emitter.buffers, emitter.masks, "where" in e.ops())
