"""Forward mode through dicts (``gibbous.library.python.containers``): a dict of parameters as an
argument, dicts made, written, read with ``get``, iterated by ``items`` and ``values``, and
returned; against central finite differences.  Writes it has no rule for are refused."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.forward import ForwardModeError, build_frule, jvp

RNG = np.random.default_rng(47)
Params = dict[str, t.Any]


def loss(params: Params, x: np.ndarray) -> float:
    h = np.tanh(params["W"] @ x + params["b"])
    out = {"h": h, "n": 3}
    out["s"] = float(np.sum(h**2))  # a write into a dict made here
    total = 0.0
    for _, v in params.items():
        total = total + float(np.sum(v))
    for v in params.values():
        total = total + float(np.sum(v * v))
    return out["s"] + params.get("scale", 1.0) * total + out["n"]


def moved(params: Params, d: Params, s: float) -> Params:
    return {k: v + s * d[k] if k in d else v for k, v in params.items()}


def test_a_dict_of_parameters() -> None:
    params = {"W": RNG.standard_normal((2, 3)) / 2, "b": RNG.standard_normal(2), "scale": 0.7}
    x = RNG.standard_normal(3)
    d = {"W": RNG.standard_normal((2, 3)), "b": RNG.standard_normal(2), "scale": 0.3}
    rule = build_frule(loss, params, x)
    for _ in range(2):
        y, dy = jvp(rule, loss, (params, x), (d, None))
        assert y == loss(params, x)
        h = 1e-6
        fd = (loss(moved(params, d, h), x) - loss(moved(params, d, -h), x)) / (2 * h)
        assert dy == pytest.approx(fd, rel=1e-6)
    # keys left out of the tangent: zeros
    _, dy = jvp(rule, loss, (params, x), ({"b": d["b"]}, None))
    h = 1e-6
    only_b = {"b": d["b"]}
    fd = (loss(moved(params, only_b, h), x) - loss(moved(params, only_b, -h), x)) / (2 * h)
    assert dy == pytest.approx(fd, rel=1e-6)


def returns_a_dict(x: float) -> Params:
    return {"square": x * x, "label": "x", "count": 2}


def test_a_dict_result() -> None:
    rule = build_frule(returns_a_dict, 1.5)
    y, dy = jvp(rule, returns_a_dict, (1.5,), (1.0,))
    assert y == {"square": 2.25, "label": "x", "count": 2}
    assert dy == {"square": pytest.approx(3.0), "label": None, "count": 0.0}


def test_a_bad_tangent_is_refused() -> None:
    params = {"W": np.ones((2, 3)), "b": np.ones(2)}
    rule = build_frule(loss, params, np.ones(3))
    with pytest.raises(TypeError, match="dict of tangents"):
        jvp(rule, loss, (params, np.ones(3)), ({"other": 1.0}, None))


def updates(params: Params, x: float) -> float:
    params.update({"a": x * x})  # (run as its forward twin: the tangent written beside it)
    return float(params["a"]) * 2.0


def test_an_update_of_the_argument() -> None:
    params = {"a": 1.0}
    y, dy = jvp(build_frule(updates, params, 2.0), updates, (params, 2.0), ({"a": 0.0}, 1.0))
    assert params == {"a": 4.0}  # (as one call of ``updates`` leaves it)
    assert (y, dy) == (8.0, pytest.approx((updates({"a": 1.0}, 2.0 + 1e-6) - updates({"a": 1.0}, 2.0 - 1e-6)) / 2e-6, rel=1e-6))


def sets_a_default(params: Params, x: float) -> float:
    return float(params.setdefault("z", x)) * 2.0  # a write forward mode has no rule for


def test_a_write_without_a_rule_is_refused() -> None:
    with pytest.raises(ForwardModeError, match="setdefault"):
        build_frule(sets_a_default, {"a": 1.0}, 2.0)


def scales_a_value(params: Params, x: float) -> float:
    params["w"] *= x  # into the argument's array
    return float(np.sum(params["w"]))


def test_a_dict_argument_written_keeps_the_callers_tangent() -> None:
    w = np.array([1.0, 2.0])
    rule = build_frule(scales_a_value, {"w": w.copy()}, 3.0)
    tangent = {"w": np.array([0.5, -1.0])}
    params = {"w": w.copy()}
    _, dy = jvp(rule, scales_a_value, (params, 3.0), (tangent, 0.25))
    np.testing.assert_array_equal(params["w"], w * 3.0)  # the primal's write
    np.testing.assert_array_equal(tangent["w"], [0.5, -1.0])  # the caller's, unchanged
    h = 1e-6

    def at(s: float) -> float:
        return scales_a_value({"w": w + s * np.array([0.5, -1.0])}, 3.0 + s * 0.25)

    assert dy == pytest.approx((at(h) - at(-h)) / (2 * h), rel=1e-7)


# --------------------------------------------------------------------------------------------
# dict(...), d.update(...), d.pop, set(...) as SciPy's decorators use them


def _central(f: t.Callable[..., float], x: np.ndarray, v: np.ndarray, *rest: t.Any) -> float:
    h = 1e-6
    return (f(x + h * v, *rest) - f(x - h * v, *rest)) / (2 * h)


def decorated(*args: t.Any, **kwds: t.Any) -> t.Any:
    """``_axis_nan_policy``'s moves: positional samples named, merged into ``**kwds`` (empty
    when the caller passed none), popped out again; a repeated key keeps its last value."""
    params = ["a", "b"]
    named = dict(zip(params, args))
    clash = set(named) & set(kwds)
    kwds.update(named)
    kwds.update([("b", kwds["b"] * 2.0)], c=kwds.get("c", 1.0))
    a, b = kwds.pop("a"), kwds.pop("b")
    return a * b * kwds.pop("c") + len(clash)


def decorated_loss(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum(decorated(x, y)))


def decorated_loss_keywords(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum(decorated(x, y, c=x[0])))


def test_an_empty_keywords_dict_written_into_is_refused() -> None:
    """(``**kwds`` made without a tangent, then given values with one: refused, not lost)"""
    x, y = np.array([0.3, 0.5]), np.array([1.5, -2.0])
    with pytest.raises(ForwardModeError, match="kwds"):
        build_frule(decorated_loss, x, y)


def test_dicts_made_updated_and_popped() -> None:
    f = decorated_loss_keywords
    x, y = np.array([0.3, 0.5]), np.array([1.5, -2.0])
    v = np.array([0.7, -1.1])
    rule = build_frule(f, x, y)
    value, dy = jvp(rule, f, (x, y), (v, np.zeros(2)))
    assert value == pytest.approx(f(x, y), rel=1e-12)
    assert dy == pytest.approx(_central(f, x, v, y), rel=1e-6)
    _, dy = jvp(rule, f, (x, y), (np.zeros(2), v))
    assert dy == pytest.approx(_central(lambda y, x: f(x, y), y, v, x), rel=1e-6)


def updating(x: np.ndarray, d: Params) -> float:
    d.update(zip(["a", "b"], (x, 2.0 * x)))
    return float(np.sum(d["a"] * d["b"] * d.pop("c")))


def test_a_dict_of_the_caller_is_left_as_one_call_leaves_it() -> None:
    x, v = np.array([0.3, 0.5]), np.array([0.7, -1.1])
    d = {"c": 1.5}
    rule = build_frule(updating, x, d)
    _, dy = jvp(rule, updating, (x, d), (v, {"c": 0.0}))
    assert sorted(d) == ["a", "b"] and np.array_equal(d["a"], x) and np.array_equal(d["b"], 2 * x)
    assert dy == pytest.approx(_central(lambda x: updating(x, {"c": 1.5}), x, v), rel=1e-6)


def test_a_set_of_floats_with_tangents_is_refused() -> None:
    x = np.array([0.3, 0.5])
    d = {0.3: x}  # (its keys are floats: a set of them would lose their derivative)

    def f(x: np.ndarray) -> float:
        return float(np.sum(x)) + len(set({k * x[0]: 1 for k in d}))

    with pytest.raises(ForwardModeError, match="set"):
        jvp(build_frule(f, x), f, (x,), (np.ones(2),))


def keywords_left_empty(x: np.ndarray, **kw: t.Any) -> t.Any:
    return x * 2.0 + len(kw)


def test_a_function_with_empty_keywords() -> None:
    def f(x: np.ndarray) -> float:
        return float(np.sum(keywords_left_empty(x)))

    x, v = np.array([0.3, 0.5]), np.array([0.7, -1.1])
    assert jvp(build_frule(f, x), f, (x,), (v,))[1] == pytest.approx(_central(f, x, v), rel=1e-6)
