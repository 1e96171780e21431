"""Forward mode and hvp through the constructs SciPy's distributions are made of, written here
in plain Python so that each is seen alone: a method of a library object called through a
value read at run time (unbound, as reverse mode takes it, the object first), ``map`` over
tuples and lists, masks whose type the build could not tell (``1 - cond``, ``np.putmask``),
``(x,) + args`` of a tuple of unknown items, and a method called with ``*args`` whose result
has no tangent.  Each is checked against central finite differences and reverse mode."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp

X = np.array([0.3, 0.7, 1.1])
V = np.cos(np.arange(3) * 1.7 + 0.3)


class Dist:
    """A distribution as SciPy writes one: ``*args`` shapes, a support, a mask."""

    def _get_support(self, *args: t.Any) -> tuple[float, float]:
        return 0.0, np.inf

    def _mask(self, x: t.Any, *args: t.Any) -> t.Any:
        a, b = self._get_support(*args)
        return (a < x) & (x < b)

    def logpdf(self, x: t.Any, *args: t.Any) -> t.Any:
        x, = map(np.asarray, (x,))
        args = tuple(map(np.asarray, args))
        cond = self._mask(x, *args)
        out = np.empty(np.shape(cond))
        out.fill(-np.inf)
        np.putmask(out, (1 - cond) + np.isnan(x), 7.0)
        good = ((x,) + args)[0][cond]
        np.place(out, cond, np.log(good) * args[0] - good)
        return out


class Holder:
    """Holds the distribution: ``h.d.logpdf`` is read at run time (a value of type any)."""

    def __init__(self) -> None:
        self.d = Dist()


H = Holder()


def central(f: t.Callable[..., float], x: np.ndarray, v: np.ndarray, *rest: t.Any) -> float:
    h = 1e-6
    return (f(x + h * v, *rest) - f(x - h * v, *rest)) / (2 * h)


def dist_loss(x: t.Any, h: Holder) -> float:
    return float(np.sum(h.d.logpdf(x, 1.5)))


def mapped(x: t.Any) -> float:
    a, b = map(np.sin, (x, 2.0 * x))
    c = list(map(np.multiply, [x, x], [a, b]))
    return float(np.sum(a * b + c[0] - c[1]))


def test_a_library_objects_method_found_at_run_time() -> None:
    y, dy = jvp(build_frule(dist_loss, X, H), dist_loss, (X, H), (V, None))
    assert y == pytest.approx(dist_loss(X, H), rel=1e-13)
    assert dy == pytest.approx(central(dist_loss, X, V, H), rel=1e-6)
    assert dy == pytest.approx(float(np.dot(gibbous.grad(dist_loss)(X, H), V)), rel=1e-12)


def test_hvp_of_a_method_with_star_args_whose_result_has_no_tangent() -> None:
    """``a, b = self._get_support(*args)`` returns constants: the program's tangent of them is
    None, and the caller unpacks zeros (``emit.filled``)."""
    h = np.asarray(gibbous.hvp(dist_loss, X, V, H))
    expected = -1.5 / X**2 * V  # d²/dx² of 1.5 log x - x
    np.testing.assert_allclose(h, expected, rtol=1e-10)


def test_map_over_tuples_and_lists_in_forward_mode() -> None:
    y, dy = jvp(build_frule(mapped, X), mapped, (X,), (V,))
    assert y == pytest.approx(mapped(X), rel=1e-13)
    assert dy == pytest.approx(central(mapped, X, V), rel=1e-6)
    h = np.asarray(gibbous.hvp(mapped, X, V))
    g = gibbous.grad(mapped)
    fd = (np.asarray(g(X + 1e-5 * V)) - np.asarray(g(X - 1e-5 * V))) / 2e-5
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-8)


def test_map_over_an_iterator_is_refused_in_forward_mode() -> None:
    """Forward mode calls ``fn`` when the map is made: of an iterator, whose items another
    consumer could take in between, that is not Python's lazy map; refused by name."""

    def f(x: t.Any) -> float:
        return float(sum(map(np.sum, iter([x, 2.0 * x]))))

    with pytest.raises(ForwardModeError, match="builtins.map"):
        jvp(build_frule(f, X), f, (X,), (V,))
    assert np.sum(gibbous.grad(f)(X)) == pytest.approx(9.0)  # (reverse mode's map is lazy)


def test_a_bool_operand_of_a_written_formula_has_zeros_for_tangent() -> None:
    """A written-out formula (hvp's) lets a bool operand of unknown type through its check
    (``1 - cond``); whatever tangent the build gave the bool, the formula takes zeros."""
    from gibbous.rules.emit import operand_tangent

    mask, dx = np.array([True, False]), np.array([0.5, -1.0])
    assert np.array_equal(operand_tangent(mask, dx), np.zeros(2))
    assert operand_tangent(np.float64(1.5), 2.5) == 2.5
    assert operand_tangent(True, 1.0) == 0.0


def array_methods_of_unknown(x: t.Any) -> float:
    """Methods of an array read out of a dict of mixed values (of type any), called plainly
    and with ``**kwargs``, and a mask's ``any()`` whose result has no tangent."""
    d = {"a": x, "n": 1}
    y = d["a"].reshape(1, -1)
    kw = {"axis": 1}
    s = (d["a"] ** 2).sum(**kw) if (d["a"] > 0).any() else 0.0
    return float(np.sum(y**3) + np.sum(s * d["a"].T))


def test_array_methods_of_values_of_unknown_type_under_hvp() -> None:
    x = np.array([[0.3, 0.7, 1.1], [0.5, -0.2, 0.9]])
    v = np.cos(np.arange(6) * 1.7 + 0.3).reshape(2, 3)
    hv = gibbous.hvp(array_methods_of_unknown, x, v)
    grad = gibbous.grad(array_methods_of_unknown)
    h = 1e-5
    expected = (np.asarray(grad(x + h * v)) - np.asarray(grad(x - h * v))) / (2 * h)
    np.testing.assert_allclose(hv, expected, rtol=1e-6, atol=1e-9)
    y, dy = jvp(build_frule(array_methods_of_unknown, x), array_methods_of_unknown, (x,), (v,))
    assert dy == pytest.approx(central(array_methods_of_unknown, x, v), rel=1e-6)
