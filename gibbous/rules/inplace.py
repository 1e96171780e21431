"""The first stateful rules: NumPy calls that overwrite an array.

``np.matmul(A, B, out=C)`` (the seed's ``mul!``), ``np.add/subtract/multiply/divide(x, y,
out=z)`` and the in-place operators ``a += b``, ``a -= b``, ``a *= b``, ``a /= b`` on float
arrays (``operator.iadd`` and friends, which NumPy runs as ``np.add(a, b, out=a)``).

Mutation semantics (DESIGN.md): the forward pass saves the array it overwrites, primal and
fdata, runs the primal and zeroes the output's fdata (the new value's tangent starts fresh,
Mooncake's ``C.dx .= 0``).  The pullback reads the output's fdata as the cotangent and

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
or dtypes change.  Arrays of one float dtype (float64 or float32) throughout; scalars may be
floats (their gradient is returned) or ints (no gradient).
"""

from __future__ import annotations

import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.rules.registry import Pullback, stateful_primitive
from gibbous.rules.tangents import NO_TANGENT, CoDual

Array = np.ndarray[t.Any, t.Any]
_CoDual = CoDual[t.Any, t.Any]

FLOAT_DTYPES = ("float64", "float32")

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
        np.copyto(self.primal, out.primal)
        np.copyto(self.fdata, out.fdata)


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
        np.copyto(C, saved.primal)
        np.matmul(dC, B.T, out=grad_a)
        np.matmul(A.T, dC, out=grad_b)
        np.copyto(dC, saved.fdata)
        np.add(dA, grad_a, out=dA)
        np.add(dB, grad_b, out=dB)
        return _NO_RDATA_4

    return out, pullback, state


_NO_RDATA_4 = (NO_TANGENT,) * 4

# --------------------------------------------------------------------------------------------
# Elementwise arithmetic with an output: np.add(x, y, out=z), a += b, ...

# ``partial(g, x, y, out)`` writes g * dz/dx (first table entry) or g * dz/dy (second), shaped
# like the output z; x and y hold their values at the call.


def _copy(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.copyto(out, g)


def _negate(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.negative(g, out=out)


def _times_y(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.multiply(g, y, out=out)


def _times_x(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.multiply(g, x, out=out)


def _over_y(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.divide(g, y, out=out)


def _minus_x_over_y_squared(g: Array, x: t.Any, y: t.Any, out: Array) -> None:
    np.divide(g, y, out=out)
    np.multiply(out, x, out=out)
    np.divide(out, y, out=out)
    np.negative(out, out=out)


_Partial = t.Callable[[Array, t.Any, t.Any, Array], None]

PARTIALS: dict[np.ufunc, tuple[_Partial, _Partial]] = {
    np.add: (_copy, _copy),
    np.subtract: (_copy, _negate),
    np.multiply: (_times_y, _times_x),
    np.divide: (_over_y, _minus_x_over_y_squared),
}

IN_PLACE_OPERATORS: dict[t.Callable[[t.Any, t.Any], t.Any], np.ufunc] = {
    operator.iadd: np.add,
    operator.isub: np.subtract,
    operator.imul: np.multiply,
    operator.itruediv: np.divide,
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
    if isinstance(operand, (float, np.floating)):
        buffer = np.empty((), out.dtype)
        return Gradient(buffer, None, buffer)
    return None  # an int: no gradient


def _signature(operand: object) -> object:
    return operand.shape if isinstance(operand, np.ndarray) else type(operand)


@attrs.frozen
class ElementwiseState:
    key: tuple[object, ...]  # the output's shape and dtype, the inputs' shapes or classes
    saved: Saved
    scratch: Array | None  # shaped like the output, for gradients that must be summed
    grad_x: Gradient | None
    grad_y: Gradient | None


def _elementwise_state(
    state: ElementwiseState | None, x: object, y: object, out: Array
) -> ElementwiseState:
    key = (out.shape, out.dtype, _signature(x), _signature(y))
    if state is not None and state.key == key:
        return state
    grads = (_gradient(x, out), _gradient(y, out))
    needs_scratch = any(g is not None and g.axes != () for g in grads)
    scratch = np.empty_like(out) if needs_scratch else None
    return ElementwiseState(key, Saved.like(out), scratch, *grads)


def _into_gradient(
    partial: _Partial, grad: Gradient, scratch: Array | None, g: Array, x: t.Any, y: t.Any
) -> None:
    if grad.axes == ():
        partial(g, x, y, grad.buffer)
        return
    assert scratch is not None
    partial(g, x, y, scratch)
    np.add.reduce(scratch, axis=grad.axes, out=grad.summed, keepdims=grad.axes is not None)


def _finish(operand: _CoDual, grad: Gradient | None) -> t.Any:
    """Add an array input's gradient into its fdata; a float input's is its rdata."""
    if grad is None:
        return NO_TANGENT
    if grad.axes is None:
        return type(operand.primal)(grad.buffer[()])
    np.add(operand.fdata, grad.buffer, out=operand.fdata)
    return NO_TANGENT


def _elementwise(
    state: ElementwiseState | None, ufunc: np.ufunc, x: _CoDual, y: _CoDual, out: _CoDual
) -> tuple[Pullback, ElementwiseState]:
    """Run ``ufunc(x, y, out=out)``; the pullback returns the rdata of x and y."""
    xp, yp, z = x.primal, y.primal, out.primal
    state = _elementwise_state(state, xp, yp, z)
    saved, scratch, grad_x, grad_y = state.saved, state.scratch, state.grad_x, state.grad_y
    partial_x, partial_y = PARTIALS[ufunc]
    saved.save(out)
    ufunc(xp, yp, out=z)
    dz = out.fdata
    dz.fill(0)

    def pullback(dy: object) -> tuple[t.Any, ...]:
        np.copyto(z, saved.primal)
        if grad_x is not None:
            _into_gradient(partial_x, grad_x, scratch, dz, xp, yp)
        if grad_y is not None:
            _into_gradient(partial_y, grad_y, scratch, dz, xp, yp)
        np.copyto(dz, saved.fdata)
        return (_finish(x, grad_x), _finish(y, grad_y))

    return pullback, state


def _ufunc_out_rule(ufunc: np.ufunc) -> t.Callable[..., t.Any]:
    def ufunc_out(
        state: ElementwiseState | None, f: _CoDual, x: _CoDual, y: _CoDual, out: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        pullback, state = _elementwise(state, ufunc, x, y, out)

        def ufunc_pullback(dy: object) -> tuple[t.Any, ...]:
            rx, ry = pullback(dy)
            return (NO_TANGENT, rx, ry, NO_TANGENT)

        return out, ufunc_pullback, state

    ufunc_out.__qualname__ = f"{ufunc.__name__}_out"
    return ufunc_out


def _in_place_rule(ufunc: np.ufunc) -> t.Callable[..., t.Any]:
    def in_place(
        state: ElementwiseState | None, f: _CoDual, a: _CoDual, b: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        pullback, state = _elementwise(state, ufunc, a, b, a)

        def in_place_pullback(dy: object) -> tuple[t.Any, ...]:
            ra, rb = pullback(dy)
            return (NO_TANGENT, ra, rb)

        return a, in_place_pullback, state

    in_place.__qualname__ = f"{ufunc.__name__}_in_place"
    return in_place


# --------------------------------------------------------------------------------------------
# Registration


def _register() -> None:
    for dtype in FLOAT_DTYPES:
        array = T.Array(dtype, None)
        matrix = T.Array(dtype, 2)
        # Python floats are f64 whatever the arrays' dtype; ints (and bools) get no gradient.
        scalars: tuple[T.Type, ...] = tuple(dict.fromkeys((T.Float(dtype), T.FLOAT, T.INT)))
        stateful_primitive(
            np.matmul, matrix, matrix, kwargs={"out": matrix}, state_type=MatmulState
        )(matmul_out)
        stateful_primitive(np.matmul, matrix, matrix, matrix, state_type=MatmulState)(
            matmul_out
        )
        operand_pairs: list[tuple[T.Type, T.Type]] = [(array, array)]
        operand_pairs += [(array, s) for s in scalars] + [(s, array) for s in scalars]
        for ufunc in PARTIALS:
            rule = _ufunc_out_rule(ufunc)
            for x, y in operand_pairs:
                stateful_primitive(
                    ufunc, x, y, kwargs={"out": array}, state_type=ElementwiseState
                )(rule)
                stateful_primitive(ufunc, x, y, array, state_type=ElementwiseState)(rule)
        for op, ufunc in IN_PLACE_OPERATORS.items():
            rule = _in_place_rule(ufunc)
            for b in (array, *scalars):
                stateful_primitive(op, array, b, state_type=ElementwiseState)(rule)


_register()
