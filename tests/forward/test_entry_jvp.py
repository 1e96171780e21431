"""``build_frule`` and ``jvp`` take the callables and calls ``build_rrule`` takes: bound methods,
``functools.partial``, callable instances, library functions with keywords, ``*args``,
keyword-only parameters, ``**kwargs`` and defaults at the entry.  Tangents are along the
positional arguments given; keywords, a method's object and a partial's arguments are
constants.  Every derivative against central finite differences."""

from __future__ import annotations

import functools
import typing as t

import numpy as np
import pytest

from gibbous.forward import build_frule, jvp

RNG = np.random.default_rng(11)


def fd(
    f: t.Callable[..., t.Any],
    args: tuple[t.Any, ...],
    tangents: tuple[t.Any, ...],
    kwargs: dict[str, t.Any],
    h: float = 1e-6,
) -> t.Any:
    def at(s: float) -> t.Any:
        moved = tuple(
            a if d is None else (a + s * d if isinstance(a, float) else a + s * d)
            for a, d in zip(args, tangents)
        )
        return np.asarray(f(*moved, **kwargs), dtype=float)

    return (at(h) - at(-h)) / (2 * h)


def check(
    f: t.Callable[..., t.Any],
    args: tuple[t.Any, ...],
    tangents: tuple[t.Any, ...],
    **kwargs: t.Any,
) -> t.Any:
    """The rule of ``f`` for these arguments, and the jvp checked twice (a warm rule too)."""
    rule = build_frule(f, *args, **kwargs)
    for _ in range(2):
        y, dy = jvp(rule, f, args, tangents, **kwargs)
        np.testing.assert_allclose(y, f(*args, **kwargs), rtol=1e-12)
        np.testing.assert_allclose(dy, fd(f, args, tangents, kwargs), rtol=1e-6, atol=1e-8)
    return rule


def poly(x: np.ndarray, *coefficients: float, shift: float = 0.0, **scales: float) -> t.Any:
    out = np.zeros_like(x)
    for c in coefficients:
        out = out * (x - shift) + c
    return out * scales.get("y", 1.0) + scales.get("z", 0.0) * x


def test_star_args_at_the_entry_have_tangents() -> None:
    x = RNG.standard_normal(4)
    rule = check(poly, (x, 1.5, -2.0, 0.5), (RNG.standard_normal(4), 1.0, 0.3, -2.0))
    assert rule.varied == (True, True, True, True)


def test_keywords_at_the_entry_are_constants() -> None:
    x = RNG.standard_normal(4)
    rule = check(poly, (x, 1.5, -2.0), (np.ones(4), 0.0, 1.0), shift=0.25, y=2.0, z=-1.0)
    assert "shift=f64" in repr(rule) and "y=f64" in repr(rule)
    # keywords given in another order bind the same
    y, _ = jvp(rule, poly, (x, 1.5, -2.0), (np.ones(4), 0.0, 1.0), z=-1.0, y=2.0, shift=0.25)
    assert np.allclose(y, poly(x, 1.5, -2.0, shift=0.25, y=2.0, z=-1.0))


def test_keywords_other_than_the_rules_are_refused() -> None:
    x = RNG.standard_normal(3)
    rule = build_frule(poly, x, 1.0, shift=0.5)
    with pytest.raises(TypeError, match="keyword arguments shift; given: y"):
        jvp(rule, poly, (x, 1.0), (np.ones(3), 0.0), y=2.0)
    with pytest.raises(TypeError, match="keyword argument shift is str"):
        jvp(rule, poly, (x, 1.0), (np.ones(3), 0.0), shift="a")


def kw_only(x: float, *, k: float = 3.0, p: int = 2) -> float:
    return k * x**p


def test_keyword_only_parameters_and_their_defaults() -> None:
    check(kw_only, (1.3,), (1.0,))
    check(kw_only, (1.3,), (0.5,), p=3)


def with_defaults(x: np.ndarray, a: float = 2.0, b: np.ndarray | None = None) -> t.Any:
    return np.sum(a * x**2) + (0.0 if b is None else float(b @ x))


def test_defaults_left_out() -> None:
    x = RNG.standard_normal(3)
    check(with_defaults, (x,), (RNG.standard_normal(3),))
    check(with_defaults, (x, 0.5), (RNG.standard_normal(3), 1.0))


class Model:
    def __init__(self, w: np.ndarray) -> None:
        self.w = w

    def loss(self, x: np.ndarray, scale: float = 1.0) -> t.Any:
        return scale * np.tanh(self.w * x)

    def __call__(self, x: np.ndarray) -> t.Any:
        return np.sum(self.loss(x) ** 2)


def test_a_bound_method_holds_its_object_constant() -> None:
    m = Model(RNG.standard_normal(5))
    x = RNG.standard_normal(5)
    rule = check(m.loss, (x,), (RNG.standard_normal(5),), scale=2.0)
    # the rule is for the method: another object of the class, another bound method object
    other = Model(RNG.standard_normal(5))
    y, dy = jvp(rule, other.loss, (x,), (np.ones(5),), scale=2.0)
    assert np.allclose(y, other.loss(x, scale=2.0))
    assert np.allclose(dy, fd(other.loss, (x,), (np.ones(5),), {"scale": 2.0}))


def test_a_callable_instance() -> None:
    m = Model(RNG.standard_normal(5))
    check(m, (RNG.standard_normal(5),), (RNG.standard_normal(5),))


def test_a_partial_holds_its_arguments_constant() -> None:
    p = functools.partial(poly, shift=0.5)
    check(p, (RNG.standard_normal(3), 1.0, 2.0), (np.ones(3), 1.0, 0.0))
    q = functools.partial(with_defaults, RNG.standard_normal(3))
    rule = check(q, (1.5,), (1.0,))
    assert rule.varied == (True,)


def test_a_library_function_with_keywords() -> None:
    x = RNG.standard_normal((3, 4))
    check(np.sum, (x,), (RNG.standard_normal((3, 4)),), axis=1)
    check(np.linalg.norm, (x,), (RNG.standard_normal((3, 4)),), axis=0)
    check(x.sum, (), (), axis=0)  # (a bound method of an array: the array is a constant)


def test_a_rule_of_another_callable_is_refused() -> None:
    rule = build_frule(kw_only, 1.0)
    with pytest.raises(TypeError, match="not a rule of"):
        jvp(rule, with_defaults, (1.0,), (1.0,))
    m = Model(np.ones(2))
    method = build_frule(m.loss, np.ones(2))
    with pytest.raises(TypeError, match="not a rule of"):
        jvp(method, Model.loss, (m, np.ones(2)), (None, np.ones(2)))


def test_a_call_python_would_refuse_is_refused_as_python_does() -> None:
    with pytest.raises(TypeError, match="kw_only.*unexpected keyword argument 'q'"):
        build_frule(kw_only, 1.0, q=2.0)
    with pytest.raises(TypeError, match="with_defaults.*too many positional arguments"):
        build_frule(with_defaults, np.ones(2), 1.0, None, 3.0)
