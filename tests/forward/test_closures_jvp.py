"""Forward mode through closures (``gibbous.library.python.closures``): captured values, ``nonlocal``
writes, closures made by one function and called by another, closures of closures; against
central finite differences.  What it cannot follow is refused by name."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp

RNG = np.random.default_rng(41)


def central(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], d: tuple[t.Any, ...]) -> t.Any:
    h = 1e-6

    def at(s: float) -> t.Any:
        return f(*(a if v is None else a + s * v for a, v in zip(args, d)))

    return (np.asarray(at(h)) - np.asarray(at(-h))) / (2 * h)


def check(f: t.Callable[..., t.Any], *args: t.Any) -> None:
    d = tuple(
        float(RNG.standard_normal()) if isinstance(a, float)
        else RNG.standard_normal(a.shape) if isinstance(a, np.ndarray) else None
        for a in args
    )  # fmt: skip
    given = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in (*args, *d))
    rule = build_frule(f, *args)
    for _ in range(2):  # a warm rule, and boxes (frames) made anew per call
        y, dy = jvp(rule, f, args, d)
        np.testing.assert_allclose(y, f(*args), rtol=1e-13)
        np.testing.assert_allclose(dy, central(f, args, d), rtol=1e-6, atol=1e-8)
    for a, b in zip((*args, *d), given):  # (nothing given was written)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def captured(x: float) -> float:
    def inner(y: float) -> float:
        return x * y

    return inner(2.0) + inner(x)


def rebound(x: float) -> float:
    def get() -> float:
        return x

    x = x * 10  # the cell written by the function that made it
    return get()


def accumulates(x: float) -> float:
    total = 0.0

    def add(v: float) -> None:
        nonlocal total  # written by the closure, read by its maker
        total = total + v * x

    add(1.0)
    add(x)
    return total


def make_step(lr: float) -> t.Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def step(w: np.ndarray, g: np.ndarray) -> np.ndarray:
        return w - lr * g

    return step


def train(lr: float, w: np.ndarray) -> float:
    step = make_step(lr)  # a closure made by a callee, called here
    for _ in range(3):
        w = step(w, np.sin(w))
    return float(np.sum(w))


def make_momentum(lr: float, beta: float = 0.9) -> t.Callable[[np.ndarray, np.ndarray], np.ndarray]:
    velocity = None

    def step(w: np.ndarray, g: np.ndarray) -> np.ndarray:
        nonlocal velocity
        velocity = g if velocity is None else beta * velocity + g
        return w - lr * velocity

    return step


def momentum(lr: float, w: np.ndarray) -> float:
    step = make_momentum(lr)
    for _ in range(4):
        w = step(w, np.cos(w))
    return float(np.sum(w**2))


def nested(x: float, a: np.ndarray) -> float:
    def outer(s: float) -> t.Callable[[], float]:
        def inner() -> float:
            return float(np.sum(a * s * x))  # a cell of outer's and two of nested's

        return inner

    return outer(x)() + outer(2.0)()


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (captured, (1.5,)),
        (rebound, (0.7,)),
        (accumulates, (1.3,)),
        (train, (0.1, RNG.standard_normal(4))),
        (momentum, (0.05, RNG.standard_normal(3))),
        (nested, (0.4, RNG.standard_normal(3))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_closures(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


def default_with_tangent(x: float) -> float:
    def g(a: float, b: float = x) -> float:
        return a * b

    return g(2.0)


def defaults_of_every_kind(x: float, w: np.ndarray) -> float:
    def g(a: float, b: np.ndarray = np.sin(w) * x, *, c: float = x * x, d: float = 3.0) -> float:
        return float(np.sum(a * b)) + c * d

    # left out, given by position, given by keyword, a keyword-only one given
    return g(2.0) + g(x, w) + 2 * g(1.0, b=w * w) + g(x, c=0.5)


def test_default_values_with_tangents_pass_theirs() -> None:
    """A call leaving out a default that depends on a float gets its tangent (by keyword)."""
    check(default_with_tangent, 1.3)
    check(defaults_of_every_kind, 0.7, RNG.standard_normal(4))


def test_a_default_value_with_a_tangent_is_refused_in_a_product() -> None:
    with pytest.raises(ForwardModeError, match="default value with a tangent"):
        gibbous.hvp(default_with_tangent, 1.0, 1.0)


def made_outside() -> t.Callable[[float], float]:
    total = 0.0

    def add(v: float) -> float:
        nonlocal total
        total = total + v
        return total

    return add


ADD = made_outside()  # a closure made outside the differentiated code


def writes_a_cell_made_outside(x: float) -> float:
    return ADD(x * 2.0)


def test_a_write_into_a_cell_made_outside_is_refused() -> None:
    with pytest.raises(ForwardModeError, match="nonlocal"):
        rule = build_frule(writes_a_cell_made_outside, 1.0)
        jvp(rule, writes_a_cell_made_outside, (1.0,), (1.0,))


def test_the_forward_program_prints() -> None:
    """Tangent functions and the run-time callee's handler have no import path: the IR's
    text names them for reading (``python -m gibbous ir --stage jvp``)."""
    from gibbous.inspect.stages import code_ir

    text = str(code_ir(captured, 1.5, stage="jvp"))
    assert "forward.dynamic_calls.with_tangent(%inner" in text
    assert "forward_cells_make_cell(%x_cell, %x, %dx)" in text


def _scaled_by(scale: float) -> t.Callable[[np.ndarray], float]:
    def scaled(x: np.ndarray) -> float:
        return float(np.sum(np.array([scale * np.sin(v) for v in x])))

    return scaled


def test_a_comprehension_reading_the_cells_of_a_closure_made_outside() -> None:
    """GradBench's pattern: an objective made by a factory whose comprehension reads the
    factory's parameter.  The comprehension only reads the cell, so no write can reach it (it
    was refused as "a write into a variable of an enclosing function")."""
    f = _scaled_by(2.0)
    x, v = np.linspace(0.1, 0.9, 4), np.array([1.0, -0.5, 0.25, 2.0])
    rule = build_frule(f, x)
    _, dy = jvp(rule, f, (x,), (v,))
    h = 1e-6
    assert dy == pytest.approx((f(x + h * v) - f(x - h * v)) / (2 * h), rel=1e-7)


def _counted_by(start: float) -> t.Callable[[float], float]:
    total = start

    def add(x: float) -> float:
        nonlocal total
        total = total + x
        return total * x

    return add


def test_a_closure_made_outside_that_writes_its_cell_is_still_refused() -> None:
    f = _counted_by(1.0)
    with pytest.raises(ForwardModeError, match="nonlocal"):
        build_frule(f, 2.0)
