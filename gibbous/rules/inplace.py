"""The first stateful rules: NumPy calls that overwrite an array.

``np.matmul(A, B, out=C)`` (the seed's ``mul!``); the unary ufuncs with an output
(``np.exp(x, out=y)``, ``np.sin(x, out=x)``: the table ``UNARY_PARTIALS``); the binary ones
(``np.add(x, y, out=z)``, ``np.power``, ``np.maximum``, ``np.arctan2``, ``np.hypot``,
``np.logaddexp``...: ``BINARY_PARTIALS``), the output by keyword or by position; and the
in-place operators ``a += b``, ``a -= b``, ``a *= b``, ``a /= b``, ``a **= b``, ``a %= b`` on
float arrays (``operator.iadd`` and friends, which NumPy runs as ``np.add(a, b, out=a)``),
and ``a //= b``, ``np.floor(x, out=y)`` and the like, which have no derivative but overwrite.

Mutation semantics (docs/design.md, "Mutation"): the forward pass saves the array it
overwrites, primal and fdata, runs the primal and zeroes the output's fdata (the new value's
tangent starts fresh, Mooncake's ``C.dx .= 0``).  The pullback reads the output's fdata as
the cotangent and

1. restores the output's primal, so that every input holds its value at the call again, even
   an input that *is* the output (``a += b``) or overlaps it;
2. computes each input's gradient into a buffer of the state (summed over the axes it was
   broadcast along), reading the cotangent before step 3 overwrites it;
3. restores the output's fdata;
4. adds the gradients into the inputs' fdata (arrays) or returns them as rdata (float scalars),
   after step 3, so that an input aliasing the output ends with saved fdata + gradient.

After forward + reverse, every argument is as it was, primal and fdata, same objects.

The buffers live in the rule's state and are reused: a warm call allocates no NumPy memory
beyond what the primal allocates (``out=`` everywhere).  They are reallocated only when shapes
or dtypes change.  Arrays of one dtype throughout: float64 or float32, or complex128 for the
ufuncs of ``COMPLEX_UNARY_PARTIALS`` and ``COMPLEX_BINARY_PARTIALS``; scalars may be floats or
complex numbers (their gradient is returned) or ints (no gradient).  An array operand without
fdata (inactive: the AD pass found no derivative flowing through it) is a constant.
"""

from __future__ import annotations

import numbers
import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.rules import formulas
from gibbous.rules import render
from gibbous.rules.registry import Pullback, stateful_primitive
from gibbous.tangents.model import NO_TANGENT, CoDual, NoTangent

Array = np.ndarray[t.Any, t.Any]
_CoDual = CoDual[t.Any, t.Any]

FLOAT_DTYPES = ("float64", "float32")
COMPLEX_DTYPE = "complex128"  # holomorphic unary ufuncs, + - * / and their operators

# --------------------------------------------------------------------------------------------
# Saving what a call overwrites


@attrs.frozen
class Saved:
    """The primal and fdata an output held before the call overwrote it."""

    primal: Array
    fdata: Array

    @classmethod
    def like(cls, out: Array) -> Saved:
        return cls(np.empty_like(out), np.empty_like(out))

    def fits(self, out: Array) -> bool:
        return self.primal.shape == out.shape and bool(self.primal.dtype == out.dtype)

    def save(self, out: _CoDual) -> None:
        # Item assignment: what ``np.copyto`` does for one dtype, without its dispatch layer.
        self.primal[...] = out.primal
        self.fdata[...] = out.fdata


# --------------------------------------------------------------------------------------------
# np.matmul(A, B, out=C)


@attrs.frozen
class MatmulState:
    saved: Saved
    grad_a: Array
    grad_b: Array

    def fits(self, a: Array, b: Array, out: Array) -> bool:
        return (
            self.saved.fits(out)
            and self.grad_a.shape == a.shape
            and self.grad_b.shape == b.shape
            and self.grad_a.dtype == a.dtype
        )


def matmul_out(
    state: MatmulState | None, f: _CoDual, a: _CoDual, b: _CoDual, out: _CoDual
) -> tuple[_CoDual, Pullback, MatmulState]:
    A, B, C = a.primal, b.primal, out.primal
    if state is None or not state.fits(A, B, C):
        state = MatmulState(Saved.like(C), np.empty_like(A), np.empty_like(B))
    saved, grad_a, grad_b = state.saved, state.grad_a, state.grad_b
    saved.save(out)
    np.matmul(A, B, out=C)
    dA, dB, dC = a.fdata, b.fdata, out.fdata
    dC.fill(0)

    def pullback(dy: object) -> tuple[t.Any, ...]:
        C[...] = saved.primal
        np.matmul(dC, B.T, out=grad_a)
        np.matmul(A.T, dC, out=grad_b)
        dC[...] = saved.fdata
        np.add(dA, grad_a, out=dA)
        np.add(dB, grad_b, out=dB)
        return _NO_RDATA_4

    return out, pullback, state


_NO_RDATA_4 = (NO_TANGENT,) * 4

# --------------------------------------------------------------------------------------------
# Elementwise ufuncs with an output: np.add(x, y, out=z), np.exp(x, out=y), a += b, a **= 2, ...
#
# ``partial(g, *operands, out, work)`` writes g * dz/d(operand i), shaped like the output z,
# into ``out``; the operands hold their values at the call.  The partials are the formulas of
# ``gibbous.rules.formulas`` (ties and singular points included) rendered as kernels
# (``gibbous.rules.render.kernel``): every step writes with ``out=`` into ``out`` or the
# state's ``Work`` buffers, so a warm pullback allocates nothing.  ``out`` never aliases an
# operand or ``g``.


Work = render.Work

_Partial = t.Callable[..., None]


@attrs.frozen
class Partials:
    """The partial of each operand (``None``: that operand never gets a gradient) and the
    work buffers they use."""

    fns: tuple[_Partial | None, ...]
    tmp: int = 0
    mask: int = 0
    singular: bool = False  # computes inf or nan where the result is then set to 0


def _partials(
    ufunc: np.ufunc, names: tuple[str | None, ...], real: bool = True, tangent: bool = False
) -> Partials:
    table = formulas.UNARY if len(names) == 1 else formulas.BINARY
    kernels = [
        None if n is None else render.kernel(_form(table[n], tangent), len(names), ufunc, real, render.KERNEL)
        for n in names
    ]
    done = [k for k in kernels if k is not None]
    return Partials(
        tuple(None if k is None else k.fn for k in kernels),
        max([k.buffers for k in done], default=0),
        max([k.masks for k in done], default=0),
        any(k.singular for k in done),
    )


def _form(e: formulas.Expr, tangent: bool) -> formulas.Expr:
    if not tangent:
        return e
    form = formulas.complex_tangent(e)
    assert form is not None, e  # (every formula of a complex in-place rule has one)
    return form


# Each ufunc's formulas (``None``: piecewise constant, the output is overwritten and restored,
# nothing flows back); the holomorphic ones also on complex128 arrays.
UNARY_FORMULAS: dict[np.ufunc, str | None] = {
    **{getattr(np, ufunc): name for ufunc, name in formulas.UFUNCS_UNARY.items()},
    np.radians: "deg2rad",
    np.degrees: "rad2deg",
    **dict.fromkeys([np.sign, np.floor, np.ceil, np.trunc, np.rint]),
}
_REAL_ONLY = {np.cbrt, np.deg2rad, np.radians, np.rad2deg, np.degrees, np.absolute, np.fabs}

BINARY_FORMULAS: dict[np.ufunc, tuple[str | None, str | None]] = {
    **{getattr(np, ufunc): names for ufunc, names in formulas.UFUNCS_BINARY.items()},
    np.floor_divide: (None, None),
    np.copysign: ("copysign_x", None),  # (the sign of y: locally constant)
    np.nextafter: ("first", None),  # (one ulp towards y)
}
# Comparisons, predicates and bit operations: booleans or ints, without a derivative, written
# into a float output of any operands (``np.less(x, y, out)``, ``np.isnan(x, out=z)``,
# ``np.invert(2, z)``): the output is overwritten (its tangent zeroed) and restored.
ZERO_UNARY_OUT: tuple[np.ufunc, ...] = (
    np.signbit, np.isnan, np.isinf, np.isfinite, np.logical_not, np.invert, np.spacing,
    *[getattr(np, "bitwise_count")] * hasattr(np, "bitwise_count"),  # (NumPy 2.0 on)
)  # fmt: skip
ZERO_BINARY_OUT: tuple[np.ufunc, ...] = (
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.heaviside,
)  # fmt: skip
UNARY_FORMULAS.update(dict.fromkeys(ZERO_UNARY_OUT))
BINARY_FORMULAS.update(dict.fromkeys(ZERO_BINARY_OUT, (None, None)))
_COMPLEX_BINARY = (np.add, np.subtract, np.multiply, np.divide)

# Real arrays (float64, float32) ...
UNARY_PARTIALS = {u: _partials(u, (n,)) for u, n in UNARY_FORMULAS.items()}
BINARY_PARTIALS = {u: _partials(u, ns) for u, ns in BINARY_FORMULAS.items()}
# ... and complex128 arrays, with the conjugates
COMPLEX_UNARY_PARTIALS = {
    u: _partials(u, (n,), real=False)
    for u, n in UNARY_FORMULAS.items()
    if n is not None and u not in _REAL_ONLY
}
COMPLEX_BINARY_PARTIALS = {u: _partials(u, BINARY_FORMULAS[u], False) for u in _COMPLEX_BINARY}
# ... and, for forward mode, the tangent kernels of the same ufuncs on complex128 arrays: each
# formula in its complex form (``formulas.complex_tangent``; on real arrays the partials above
# are the tangents' kernels too, the conjugates dropped)
COMPLEX_TANGENTS: dict[np.ufunc, Partials] = {
    **{u: _partials(u, (UNARY_FORMULAS[u],), False, True) for u in COMPLEX_UNARY_PARTIALS},
    **{u: _partials(u, BINARY_FORMULAS[u], False, True) for u in _COMPLEX_BINARY},
}

# NumPy deprecates passing their output by position (a third operand may one day be an input).
KEYWORD_OUT_ONLY = frozenset({np.maximum, np.minimum})

IN_PLACE_OPERATORS: dict[t.Callable[[t.Any, t.Any], t.Any], np.ufunc] = {
    operator.iadd: np.add,
    operator.isub: np.subtract,
    operator.imul: np.multiply,
    operator.itruediv: np.divide,
    operator.ipow: np.power,
    operator.imod: np.remainder,
    operator.ifloordiv: np.floor_divide,
}


@attrs.frozen
class Gradient:
    """Where one input's gradient is summed: ``buffer`` is shaped like the input (0-d for a
    scalar); ``axes`` are the output's axes to sum over (``None``: all, for a scalar), and
    ``summed`` is ``buffer`` viewed with the output's rank, to receive the sum."""

    buffer: Array
    axes: tuple[int, ...] | None
    summed: Array


def _gradient(operand: object, out: Array) -> Gradient | None:
    if isinstance(operand, np.ndarray):
        shape, target = operand.shape, out.shape
        lead = len(target) - len(shape)
        if lead < 0 or any(n not in (1, m) for n, m in zip(shape, target[lead:])):
            raise ValueError(
                f"operand of shape {shape} does not broadcast to the output's shape {target}"
            )
        axes = tuple(range(lead)) + tuple(
            lead + i for i, (n, m) in enumerate(zip(shape, target[lead:])) if n == 1 != m
        )
        buffer = np.empty(shape, out.dtype)
        return Gradient(buffer, axes, buffer.reshape((1,) * lead + shape))
    if isinstance(operand, _INEXACT):
        buffer = np.empty((), out.dtype)
        return Gradient(buffer, None, buffer)
    return None  # an int: no gradient


_COMPLEX = (complex, np.complexfloating)
_INEXACT = (float, np.floating, *_COMPLEX)


def _signature(operand: object) -> object:
    return operand.shape if isinstance(operand, np.ndarray) else type(operand)


# One operand that may take a gradient: its position, its partial, its gradient's buffer.
_Step = tuple[int, _Partial, Gradient]


@attrs.frozen
class ElementwiseState:
    key: tuple[object, ...]  # the output's shape and dtype, the inputs' shapes or classes
    saved: Saved
    scratch: Array | None  # shaped like the output, for gradients that must be summed
    steps: tuple[_Step, ...]  # the operands with a partial that are floats or arrays
    work: Work
    no_rdata: tuple[t.Any, ...]  # each operand's rdata without a gradient: 0.0 for floats


def _elementwise_state(
    state: ElementwiseState | None, partials: Partials, operands: tuple[object, ...], out: Array
) -> ElementwiseState:
    key = (out.shape, out.dtype) + tuple([_signature(x) for x in operands])
    if state is not None and state.key == key:
        return state
    steps = []
    for i, (partial, x) in enumerate(zip(partials.fns, operands)):
        grad = None if partial is None else _gradient(x, out)
        if partial is not None and grad is not None:
            steps.append((i, partial, grad))
    needs_scratch = any(grad.axes != () for _, _, grad in steps)
    scratch = np.empty_like(out) if needs_scratch else None
    work = Work(
        tuple([np.empty_like(out) for _ in range(partials.tmp)]),
        tuple([np.empty(out.shape, np.bool_) for _ in range(partials.mask)]),
    )
    no_rdata = tuple(
        [type(x)(0) if isinstance(x, _INEXACT) else NO_TANGENT for x in operands]
    )
    return ElementwiseState(key, Saved.like(out), scratch, tuple(steps), work, no_rdata)


def _into_gradient(
    partial: _Partial,
    grad: Gradient,
    scratch: Array | None,
    work: Work,
    g: Array,
    operands: tuple[t.Any, ...],
) -> None:
    if grad.axes == ():
        partial(g, *operands, grad.buffer, work)
        return
    assert scratch is not None
    partial(g, *operands, scratch, work)
    np.add.reduce(scratch, axis=grad.axes, out=grad.summed, keepdims=grad.axes is not None)


def _finish(operand: _CoDual, grad: Gradient) -> t.Any:
    """Add an array input's gradient into its fdata; a scalar input's is its rdata (the real
    part for a real scalar of a complex call)."""
    if grad.axes is None:
        p, value = operand.primal, grad.buffer[()]
        return type(p)(value if isinstance(p, _COMPLEX) else value.real)
    np.add(operand.fdata, grad.buffer, out=operand.fdata)
    return NO_TANGENT


def _elementwise(
    state: ElementwiseState | None,
    ufunc: np.ufunc,
    partials: Partials,
    operands: tuple[_CoDual, ...],
    out: _CoDual,
) -> tuple[t.Callable[[], list[t.Any]], ElementwiseState]:
    """Run ``ufunc(*operands, out=out)``; the pullback returns the rdata of the operands."""
    primals = tuple([x.primal for x in operands])
    z = out.primal
    state = _elementwise_state(state, partials, primals, z)
    saved, scratch, work, no_rdata = state.saved, state.scratch, state.work, state.no_rdata
    # Floats, and arrays with fdata: an inactive array has none, and is a constant here.
    steps = [
        s for s in state.steps if s[2].axes is None or type(operands[s[0]].fdata) is not NoTangent
    ]
    saved.save(out)
    ufunc(*primals, out=z)
    dz = out.fdata
    dz.fill(0)
    quiet = partials.singular

    def pullback() -> list[t.Any]:
        np.copyto(z, saved.primal)
        if quiet:  # a singular point whose partial is then zeroed (0 ** -1) must not warn
            with np.errstate(divide="ignore", invalid="ignore"):
                for _, partial, grad in steps:
                    _into_gradient(partial, grad, scratch, work, dz, primals)
        else:
            for _, partial, grad in steps:
                _into_gradient(partial, grad, scratch, work, dz, primals)
        np.copyto(dz, saved.fdata)
        rdata = list(no_rdata)
        for i, _, grad in steps:
            rdata[i] = _finish(operands[i], grad)
        return rdata

    return pullback, state


def _ufunc_out_rule(ufunc: np.ufunc, partials: Partials) -> t.Callable[..., t.Any]:
    """``ufunc(*operands, out=out)`` or ``ufunc(*operands, out)``."""

    def ufunc_out(
        state: ElementwiseState | None, f: _CoDual, *args: _CoDual, **kwargs: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        out = kwargs["out"] if kwargs else args[-1]
        operands = args if kwargs else args[:-1]
        pullback, state = _elementwise(state, ufunc, partials, operands, out)

        def ufunc_pullback(dy: object) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback(), NO_TANGENT)

        return out, ufunc_pullback, state

    ufunc_out.__qualname__ = f"{ufunc.__name__}_out"
    return ufunc_out


def _in_place_rule(ufunc: np.ufunc, partials: Partials) -> t.Callable[..., t.Any]:
    def in_place(
        state: ElementwiseState | None, f: _CoDual, a: _CoDual, b: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        pullback, state = _elementwise(state, ufunc, partials, (a, b), a)

        def in_place_pullback(dy: object) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback())

        return a, in_place_pullback, state

    in_place.__qualname__ = f"{ufunc.__name__}_in_place"
    return in_place


# --------------------------------------------------------------------------------------------
# Registration


def _register() -> None:
    # Any scalar operand: floats (of any precision) get a gradient, ints and bools none; NumPy
    # itself refuses a complex scalar with a real output.
    scalar = T.Object(numbers.Number)
    any_array = T.Array(None, None)
    for dtype in FLOAT_DTYPES:
        array = T.Array(dtype, None)
        matrix = T.Array(dtype, 2)
        stateful_primitive(
            np.matmul, matrix, matrix, kwargs={"out": matrix}, state_type=MatmulState
        )(matmul_out)
        stateful_primitive(np.matmul, matrix, matrix, matrix, state_type=MatmulState)(
            matmul_out
        )
        for ufunc, partials in UNARY_PARTIALS.items():
            rule = _ufunc_out_rule(ufunc, partials)
            # (of any operands where nothing flows back; a scalar's, ``np.arccosh(1.5, z)``)
            for x in [any_array, scalar] if ufunc in ZERO_UNARY_OUT else [array, scalar]:
                stateful_primitive(ufunc, x, kwargs={"out": array}, state_type=ElementwiseState)(
                    rule
                )
                stateful_primitive(ufunc, x, array, state_type=ElementwiseState)(rule)
        for ufunc, partials in BINARY_PARTIALS.items():
            rule = _ufunc_out_rule(ufunc, partials)
            operand = any_array if ufunc in ZERO_BINARY_OUT else array
            for x, y in [(operand, operand), (operand, scalar), (scalar, operand)]:
                stateful_primitive(
                    ufunc, x, y, kwargs={"out": array}, state_type=ElementwiseState
                )(rule)
                if ufunc not in KEYWORD_OUT_ONLY:
                    stateful_primitive(ufunc, x, y, array, state_type=ElementwiseState)(rule)
        for op, ufunc in IN_PLACE_OPERATORS.items():
            rule = _in_place_rule(ufunc, BINARY_PARTIALS[ufunc])
            for b in (array, scalar):
                stateful_primitive(op, array, b, state_type=ElementwiseState)(rule)
    array = T.Array(COMPLEX_DTYPE, None)
    for ufunc, partials in COMPLEX_UNARY_PARTIALS.items():
        rule = _ufunc_out_rule(ufunc, partials)
        stateful_primitive(ufunc, array, kwargs={"out": array}, state_type=ElementwiseState)(rule)
        stateful_primitive(ufunc, array, array, state_type=ElementwiseState)(rule)
    for ufunc, partials in COMPLEX_BINARY_PARTIALS.items():
        rule = _ufunc_out_rule(ufunc, partials)
        for x, y in [(array, array), (array, scalar), (scalar, array)]:
            stateful_primitive(ufunc, x, y, kwargs={"out": array}, state_type=ElementwiseState)(
                rule
            )
            stateful_primitive(ufunc, x, y, array, state_type=ElementwiseState)(rule)
    for op, ufunc in IN_PLACE_OPERATORS.items():
        if ufunc in COMPLEX_BINARY_PARTIALS:
            rule = _in_place_rule(ufunc, COMPLEX_BINARY_PARTIALS[ufunc])
            for b in (array, scalar):
                stateful_primitive(op, array, b, state_type=ElementwiseState)(rule)


_register()
