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
    params.update({"a": x})  # a write forward mode has no rule for
    return float(params["a"]) * 2.0


def test_a_write_without_a_rule_is_refused() -> None:
    with pytest.raises(ForwardModeError, match="update"):
        build_frule(updates, {"a": 1.0}, 2.0)


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
