"""Forward mode through calls the way real code makes them: ``*args`` and ``**kwargs``
parameters, keyword-only parameters with defaults, ``f(*args, **kwargs)`` at the call site,
closures binding arguments (``functools.partial``-style wrappers); against central finite
differences.  Defaults are read from the function called."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous import build_hvp
from gibbous.forward import ForwardModeError, build_frule, jvp
from tests.forward.test_closures_jvp import check


def rhs(t_: float, y: np.ndarray, *args: float, scale: float = 1.0, **kw: float) -> t.Any:
    a, b = args
    return scale * (a * y + b * np.sin(y)) + kw.get("c", 0.0) * t_


def star_parameters(y: np.ndarray, a: float) -> float:
    return float(np.sum(rhs(0.5, y, a, 2.0, scale=3.0, c=a)) + np.sum(rhs(0.1, y, 1.0, a)))


def helper(a: float, b: float, c: float = 2.0) -> float:
    return a * b + c


def star_call_site(x: float, y: float) -> float:
    args = [x, y]
    kw = {"c": 3.0}
    return helper(*args) + helper(*args, **kw) + helper(*(x, 2)) * helper(*[y], b=x)


def bind(fun: t.Callable[..., t.Any], *bound: t.Any, **kw: t.Any) -> t.Callable[..., t.Any]:
    def wrapped(x: t.Any, *more: t.Any) -> t.Any:
        return fun(x, *bound, *more, **kw)

    return wrapped


def quadratic(x: np.ndarray, A: np.ndarray, b: np.ndarray, scale: float = 1.0) -> t.Any:
    return scale * (0.5 * x @ A @ x - b @ x)


def bound_arguments(x: np.ndarray, A: np.ndarray, b: np.ndarray) -> float:
    f = bind(quadratic, A, scale=2.0)
    return float(f(x, b))


def step(f: t.Callable[..., t.Any], y: np.ndarray, h: float, *args: t.Any) -> t.Any:
    k1 = f(y, *args)
    k2 = f(y + 0.5 * h * k1, *args)
    return y + h * k2


def oscillator(y: np.ndarray, w: float) -> t.Any:
    return np.array([y[1], -w * w * y[0]])


def midpoint(y: np.ndarray, w: float) -> float:
    for _ in range(5):
        y = step(oscillator, y, 0.1, w)
    return float(y[0] ** 2 + y[1])


def defaults_made_anew(x: float, k: float) -> float:
    def scaled(v: float, m: float = k * 2.0) -> float:  # a default made on every call
        return v * m

    return scaled(x) + scaled(x, 1.5)


A = np.array([[3.0, 0.5], [0.5, 2.0]])


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (star_parameters, (np.array([0.3, -0.7]), 1.3)),
        (star_call_site, (1.5, 2.5)),
        (bound_arguments, (np.array([0.5, -1.0]), A, np.array([1.0, 2.0]))),
        (midpoint, (np.array([1.0, 0.2]), 1.7)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_calls_match_central_differences(f: t.Callable[..., t.Any], args: t.Any) -> None:
    check(f, *args)


def test_a_closure_made_anew_reads_its_own_defaults() -> None:
    rule = build_frule(defaults_made_anew, 1.5, 1.0)
    for k in (1.0, 2.0, 3.0):  # (no tangent for k: the default is a constant of each call)
        y, dy = jvp(rule, defaults_made_anew, (1.5, k), (1.0, None))
        assert (y, dy) == pytest.approx((1.5 * 2.0 * k + 2.25, 2.0 * k + 1.5))


def test_hvp_refuses_a_star_call_by_name() -> None:
    with pytest.raises(ForwardModeError, match=r"\*args in a Hessian-vector product"):
        build_hvp(star_call_site, 1.5, 2.5)


def zipped(x: np.ndarray, w: float) -> float:
    total = 0.0
    for i, (a, b) in enumerate(zip(x, [w, 2.0 * w, 3.0]), start=1):  # (the shortest stops)
        total += i * a * b
    for a in reversed(list(x)):
        total = total * 0.5 + a
    return total


def sorted_values(x: np.ndarray, w: float) -> float:
    ys = sorted([x[0] * w, x[1], x[2] - w, x[1]], key=abs, reverse=True)  # (a tie kept in order)
    return ys[0] * 3.0 + ys[1] * ys[2] + ys[3]


def unknown_types(x: np.ndarray) -> float:
    parts = {"x": x}  # (an item of a dict: a value whose type the build cannot tell)
    v = parts["x"]
    ok = np.isfinite(v)
    if v.size != 3 or not ok.all():
        raise ValueError(f"bad {v[0]}")  # (an exception made of a float: no tangent)
    return float(np.sum(np.where(ok, v * v, 0.0)))


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (zipped, (np.array([0.3, -1.2, 0.8]), 0.7)),
        (sorted_values, (np.array([0.3, -1.2, 0.8]), 0.7)),
        (unknown_types, (np.array([0.3, -1.2, 0.8]),)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_builtins_match_central_differences(f: t.Callable[..., t.Any], args: t.Any) -> None:
    check(f, *args)
