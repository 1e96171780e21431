"""``np.trapezoid``'s twin (gibbous.library.reductions.integration): NumPy's values, and every
mode against central differences, with ``dx``, ``x`` (1-d and of ``y``'s shape) and ``axis``."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.library.reductions.integration import trapezoid
from tests.library.programs import check_program

RNG = np.random.default_rng(2)
Y = RNG.standard_normal((3, 5))
XS = np.cumsum(RNG.random(5))
X2 = np.cumsum(RNG.random((3, 5)), axis=1)
W3 = np.arange(1.0, 4.0)

CASES: list[tuple[str, t.Callable[[t.Any], t.Any], np.ndarray]] = [
    ("y", lambda y: np.trapezoid(y), RNG.standard_normal(7)),
    ("y, dx", lambda y: np.trapezoid(y, dx=0.3), RNG.standard_normal(7)),
    ("y, axis=0", lambda y: np.sum(np.trapezoid(y, axis=0) * np.arange(5.0)), Y),
    ("y, 1-d x", lambda y: np.sum(np.trapezoid(y, XS) * W3), Y),
    ("y, x of y's shape, axis=1", lambda y: np.sum(np.trapezoid(y, X2, axis=1) * W3), Y),
    ("y.T, 1-d x, axis=0", lambda y: np.sum(np.trapezoid(y.T, XS, axis=0) * W3), Y),
    ("in x", lambda v: np.trapezoid(np.sin(XS), v), XS),
    ("in y and x", lambda v: np.trapezoid(v**2, v), XS),
]


@pytest.mark.parametrize("name, f, x", CASES, ids=[c[0] for c in CASES])
def test_trapezoid_in_every_mode(name: str, f: t.Callable[[t.Any], t.Any], x: np.ndarray) -> None:
    check_program(f, x, modes="rfh")


@pytest.mark.parametrize(
    "args, kwargs",
    [((Y,), {}), ((Y, XS), {}), ((Y, X2), {"axis": 1}), ((Y.T, XS), {"axis": 0}),
     ((Y,), {"dx": 0.2, "axis": 0}), ((Y[0].tolist(),), {})],
)  # fmt: skip
def test_the_twin_computes_numpys_values(args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> None:
    np.testing.assert_allclose(trapezoid(*args, **kwargs), np.trapezoid(*args, **kwargs), rtol=1e-14)
