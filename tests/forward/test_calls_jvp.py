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


def test_hvp_through_star_calls() -> None:
    """``f(*args, **kw)`` in a product: an IR binder unpacks the tuple (``forward/binders.py``);
    against central differences of ``jvp``'s tangents (first derivatives, exact)."""
    hvp = build_hvp(star_call_site, 1.5, 2.5)
    h = 1e-5
    rule = build_frule(star_call_site, 1.5, 2.5)

    def tangent(x: float) -> float:
        return float(jvp(rule, star_call_site, (x, 2.5), (1.0, 0.0))[1])

    expected = (tangent(1.5 + h) - tangent(1.5 - h)) / (2 * h)
    assert float(hvp(1.5, 1.0, 2.5)) == pytest.approx(expected, rel=1e-6)


def _apply_one(g: t.Callable[..., t.Any], x: float) -> t.Any:
    return g(x)  # (``g`` a value: a call leaving ``m`` to its default)


def closure_default_through_a_value(x: float, k: float) -> float:
    def scaled(v: float, m: float = k * 2.0) -> float:  # (a default made on every call)
        return v * m * v

    return _apply_one(scaled, x) * x


def test_hvp_of_a_closure_left_to_its_default_through_a_value() -> None:
    hvp = build_hvp(closure_default_through_a_value, 1.5, 2.0)
    for k in (2.0, 3.0):  # (each call's closure has its own default: its binder reads it)
        assert float(hvp(1.5, 1.0, k)) == pytest.approx(6 * 2.0 * k * 1.5)


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


class Trace:
    def __init__(self, x: float) -> None:
        self.items = [x]  # (a list held by an object: its type is unknown where it is read)
        self.labels: list[str] = []


def list_methods(x: np.ndarray, w: float) -> float:
    tr = Trace(w)
    tr.items.append(x[0] * w)
    tr.items.extend([x[1], 2.0])
    tr.items.insert(1, x[2] * x[2])
    tr.labels.append("three")
    last = tr.items.pop()
    tr.items.remove(x[1])
    tr.items.reverse()
    copy = tr.items.copy()
    copy.append(w)
    return sum(v * (k + 1) for k, v in enumerate(tr.items)) * last + copy[-1] * len(tr.labels)


def test_list_methods_through_values_of_unknown_type() -> None:
    check(list_methods, np.array([0.3, -1.2, 0.8]), 0.7)


def into_a_constant_list(x: float) -> float:
    box = Trace(1.0)
    box.labels.append(x * 2.0)  # a value with a tangent into a list of constants
    return float(box.labels[0])


def test_a_value_with_a_tangent_into_a_list_without_one_is_refused() -> None:
    rule = build_frule(into_a_constant_list, 1.5)
    with pytest.raises(ForwardModeError, match="list.append of a value with a tangent"):
        jvp(rule, into_a_constant_list, (1.5,), (1.0,))


def enumerated_from_a_dict(d: dict[str, t.Any], w: float) -> float:
    total = 0.0
    for k, v in enumerate(d["xs"], start=1):  # (an item of a dict: of a type unknown)
        total += v * k * w  # k has no tangent: the index's is none
    return total


def test_enumerate_gives_the_index_no_tangent() -> None:
    d, dd = {"xs": [0.5, -1.5, 2.0]}, {"xs": [1.0, 0.25, -0.5]}
    rule = build_frule(enumerated_from_a_dict, d, 0.7)
    y, dy = jvp(rule, enumerated_from_a_dict, (d, 0.7), (dd, 0.3))
    # (d/dw: sum k x_k = 0.5 - 3.0 + 6.0; d/dx_k: k w)
    assert dy == pytest.approx(0.3 * 3.5 + 0.7 * (1.0 * 1.0 + 2 * 0.25 - 3 * 0.5))


def test_enumerate_of_a_value_of_unknown_type_gives_the_index_no_tangent() -> None:
    # (before: the index's "tangent" was the index, a silent wrong number; list_methods too)
    def weighted(w: float) -> float:
        tr = Trace(w)
        tr.items.extend([2.0 * w, 3.0])  # (an attribute: its type is unknown where it is read)
        return sum(v * k for k, v in enumerate(tr.items))

    rule = build_frule(weighted, 0.7)
    assert jvp(rule, weighted, (0.7,), (1.0,))[1] == pytest.approx(2.0)


class Params(t.NamedTuple):
    k: float
    c: float


def replaced_and_named(x: np.ndarray, w: float) -> float:
    p = Params(w, 2.0)
    q = p._replace(c=w * x[0])  # (a NamedTuple's tangent: the NamedTuple of its fields')

    def scale(a: float, b: float = 1.0) -> float:  # (a closure: a keyword with a tangent)
        return a * b * w

    label = ", ".join(str(int(v > 0)) for v in x)  # (strings: no tangent)
    signs = set(int(v > 0) for v in x)
    ok = {"x": x}["x"] > -5.0  # (a condition of unknown type)
    return float(q.k * q.c + scale(x[2], b=x[1] * w) + np.sum(np.where(ok, x, 0.0))) * len(label) / len(signs)


def test_named_tuples_keywords_and_strings() -> None:
    check(replaced_and_named, np.array([0.3, -1.2, 0.8]), 0.7)


def _reshaped_by_a_captured_size(x: np.ndarray, P: np.ndarray) -> float:
    n = P.shape[0]  # (read in a comprehension below: a cell, typed any)
    rows = [np.sin(x[i]) * P[i, 0] for i in range(n)]
    z = x.reshape((n, 2))  # (a shape holding a value of unknown type: no derivative)
    return float(np.sum(z * z) + sum(rows))


def test_a_shape_of_values_of_unknown_type_has_no_tangent() -> None:
    """``x.reshape((n, 2))`` with ``n`` from a cell (GradBench's particle): the int's tangent,
    whatever a value of unknown type carried, is none (it was refused: no forward rule of
    ``reshape`` with a varied shape)."""
    f = _reshaped_by_a_captured_size
    x, P = np.linspace(0.0, 1.0, 8), np.arange(8.0).reshape(4, 2)
    v, dP = np.cos(np.arange(8.0)), np.ones((4, 2))
    rule = build_frule(f, x, P)
    _, dy = jvp(rule, f, (x, P), (v, dP))
    h = 1e-6
    fd = (f(x + h * v, P + h * dP) - f(x - h * v, P - h * dP)) / (2 * h)
    assert dy == pytest.approx(fd, rel=1e-7)


_TABLE = np.array([1.0, -0.5, 0.16])


def _constant_of(n: float) -> np.ndarray:
    return _TABLE[: int(n) + 2] * 1.0  # (no derivative in n: its forward program's is zeros)


def _opaque_constant_of(n: float) -> t.Any:
    # (of a type inference cannot tell: zeros of what it is at run time)
    return np.asarray(_TABLE.tolist())[: int(n) + 1]


@pytest.mark.parametrize("g", [_constant_of, _opaque_constant_of])
def test_a_callee_whose_result_has_no_derivative_gives_zeros(g: t.Any) -> None:
    """The caller takes the call's result as varied (an operand is), so the callee's forward
    program gives zeros, not None, for its float result (scipy.special.bernoulli)."""

    def f(s: float) -> t.Any:
        return np.sum(g(s) * 0.5) + s * s

    check(f, 0.6)
    np.testing.assert_allclose(build_hvp(f, 0.6)(0.6, 0.9), 1.8)
