"""Forward mode through methods of values whose type the build could not tell: a value made
by ``np.stack`` of a list comprehension, an item of a comprehension's list or dict.  The call
runs the method's own forward rule with the object's tangent (it gave a zero tangent: GradBench's
hand-tracking Jacobian was wrong by 7e-2).  Each is checked against central finite differences
and against reverse mode (``<w, jvp(v)> == <grad <w, f>, v>``)."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp

S = lambda T: np.stack([T[i] for i in range(2)])  # noqa: E731  (typed ``any``: a list made by a comprehension)

FORMS: dict[str, t.Callable[[np.ndarray], t.Any]] = {
    "transpose(1, 0, 2)": lambda T: np.stack([T[i] for i in range(2)]).transpose(1, 0, 2),
    "transpose()": lambda T: S(T).transpose(),
    "swapaxes(0, 1)": lambda T: S(T).swapaxes(0, 1),
    "reshape(3, 4)": lambda T: np.stack([T[i] for i in range(2)])[0].reshape(3, 4),
    "reshape(2, 12)": lambda T: np.stack([T[i] for i in range(2)]).reshape(2, 12),
    "sum(axis=0)": lambda T: np.stack([T[i] for i in range(2)]).sum(axis=0),
    "sum()": lambda T: np.stack([T[i] for i in range(2)]).sum(),
    "mean(axis=1)": lambda T: np.stack([T[i] for i in range(2)]).mean(axis=1),
    "prod(axis=0)": lambda T: np.stack([T[i] for i in range(2)]).prod(axis=0),
    "max(axis=0)": lambda T: np.stack([T[i] for i in range(2)]).max(axis=0),
    "cumsum(axis=0)": lambda T: np.stack([T[i] for i in range(2)]).cumsum(axis=0),
    "ravel()": lambda T: np.stack([T[i] for i in range(2)]).ravel(),
    "copy()": lambda T: np.stack([T[i] for i in range(2)]).copy(),
    "dot(w)": lambda T: np.stack([T[i] for i in range(2)]).dot(np.arange(4.0)),
    "std(axis=0)": lambda T: np.stack([T[i] for i in range(2)]).std(axis=0),
    "diagonal()": lambda T: np.stack([T[i] for i in range(2)]).diagonal(),
    "item(3)": lambda T: np.stack([T[i] for i in range(2)]).item(3),
    ".T (was right)": lambda T: np.stack([T[i] for i in range(2)]).T,
    "list item .sum()": lambda T: [T[i] for i in range(2)][0].sum(),
    "list item .transpose()": lambda T: [T[i] for i in range(2)][1].transpose(),
    "tuple item .sum()": lambda T: tuple(T[i] for i in range(2))[0].sum(),
    "dict item .sum(axis=1)": lambda T: {i: T[i] for i in range(2)}[0].sum(axis=1),
    "dict.get(1).sum()": lambda T: {i: T[i] for i in range(2)}.get(1).sum(),
    "np.array(list).reshape().T": lambda T: np.array([T[0, 0, i] for i in range(4)])
    .reshape(2, 2)
    .T.sum(axis=0),
}


def hand_tracking_like(T: np.ndarray) -> np.ndarray:
    """The shape of GradBench's ``ht`` code: per-bone transforms stacked, then moved."""
    bones = np.stack([T[i] @ T[(i + 1) % 2].T for i in range(2)]).transpose(1, 0, 2)
    return bones.reshape(3, -1) * 2.0


FORMS["hand tracking's stack, transpose, reshape"] = hand_tracking_like


@pytest.mark.parametrize("name", list(FORMS))
def test_methods_of_values_of_unknown_type(name: str) -> None:
    f = FORMS[name]
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    rule = build_frule(f, x)
    y, dy = jvp(rule, f, (x,), (v,))
    np.testing.assert_allclose(y, f(x))
    h = 1e-6
    fd = (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)
    assert np.max(np.abs(fd)) > 1e-3  # (a zero tangent cannot pass)
    np.testing.assert_allclose(dy, fd, rtol=1e-6, atol=1e-7)
    # reverse mode on the same code: <w, J v> == <J^T w, v>
    w = rng.standard_normal(np.shape(y))
    grad = gibbous.grad(lambda x: np.sum(w * f(x)))(x)
    assert float(np.sum(w * dy)) == pytest.approx(float(np.sum(grad * v)), rel=1e-9, abs=1e-12)


def test_a_method_without_a_forward_rule_is_refused_by_name() -> None:
    """Never a zero tangent: ``tolist`` of an array of unknown type has no forward rule."""
    f = lambda T: np.sum(np.stack([T[i] for i in range(2)]).tolist()[0][0][0])  # noqa: E731
    x = np.ones((2, 3, 4))
    with pytest.raises(ForwardModeError, match="tolist"):
        rule = build_frule(f, x)
        jvp(rule, f, (x,), (x,))


def _fills(T: np.ndarray) -> float:
    S = np.stack([T[i] for i in range(2)])
    S.fill(1.0)
    return float(np.sum(S * T))


def _puts(T: np.ndarray) -> float:
    S = np.stack([T[i] for i in range(2)])
    S.put([0, 1], [5.0, 6.0])
    return float(np.sum(S * T))


def _fills_an_item(T: np.ndarray) -> float:
    rows = [T[i].copy() for i in range(2)]
    rows[0].fill(2.0)
    return float(np.sum(rows[0] * T[0]) + np.sum(rows[1]))


def _appends_in_a_comprehension(T: np.ndarray) -> float:
    xs: list[float] = []
    [xs.append(float(T[0, k]) * k) for k in range(3)]  # type: ignore[func-returns-value]
    return sum(xs)


def _writes_a_captured_array(T: np.ndarray) -> float:
    a = np.zeros(3)

    def put(v: float) -> None:
        a[0] = v

    put(T[0, 0] * 2.0)
    return float(np.sum(a * T[1]))


@pytest.mark.parametrize(
    "f", [_fills, _puts, _fills_an_item, _appends_in_a_comprehension, _writes_a_captured_array]
)
def test_writes_forward_mode_cannot_follow_are_refused(f: t.Callable[[np.ndarray], float]) -> None:
    """Writes through a value of unknown type or a closure's cell, which forward mode does not
    follow into the tangent: refused by name.  Each gave a wrong tangent without raising (the
    write went to a tangent no one read), checked here against central differences first."""
    rng = np.random.default_rng(3)
    x, v = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    given = x.copy()
    h = 1e-6
    fd = (f(x + h * v) - f(x - h * v)) / (2 * h)
    try:
        rule = build_frule(f, x)
        _, dy = jvp(rule, f, (x,), (v,))
    except ForwardModeError:
        return
    finally:
        np.testing.assert_array_equal(x, given)  # (the argument left as one call leaves it)
    assert dy == pytest.approx(fd, rel=1e-6, abs=1e-9)  # (right, if it is not refused)
