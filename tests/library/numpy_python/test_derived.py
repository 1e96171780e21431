"""NumPy's and SciPy's own Python, derived where no rule is registered (issue 31, point 1):
each function here has no hand rule; its derivatives come from its source (behind an
array-function dispatcher, a plain function of NumPy's), in the modes listed, against
central differences.  A mode not listed is refused with a gibbous exception naming the
function the user called, at the user's line, never a wrong number."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from tests.library.programs import check_mode

X = np.linspace(0.1, 0.9, 6) + np.sin(np.arange(6)) * 0.05
A = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
W6 = np.arange(1.0, 7.0)

F = t.Callable[[np.ndarray], t.Any]

# (name, f, modes that differentiate it: r reverse, f forward, h hvp)
CASES: list[tuple[str, F, str]] = [
    ("median", lambda x: np.median(x), "rfh"),
    ("trapezoid", lambda x: np.trapezoid(x), "rfh"),
    ("trapezoid with x", lambda x: np.trapezoid(x**2, x), "rfh"),
    ("polyval", lambda x: np.polyval(x, 0.7), "rfh"),
    ("polyval at x", lambda x: np.sum(np.polyval([1.0, -2.0, 0.5], x)), "rfh"),
    ("polyder", lambda x: np.sum(np.polyder(x) * np.arange(5.0)), "rfh"),
    ("vander", lambda x: np.sum(np.vander(x[:3]) * A), "rfh"),
    ("hsplit", lambda x: np.sum(np.hsplit(x, 2)[0] ** 2), "rfh"),
    ("vsplit", lambda x: np.sum(np.vsplit(x.reshape(2, 3), 2)[1] ** 2), "rfh"),
    ("i0", lambda x: np.sum(np.i0(x)), "rfh"),
    ("sinc", lambda x: np.sum(np.sinc(x)), "rfh"),
    ("matrix_power", lambda x: np.sum(np.linalg.matrix_power(A * x[0], 3)), "rfh"),
    ("nanmax", lambda x: np.nanmax(x * np.arange(6.0)), "rf"),
    ("nanmin", lambda x: np.nanmin(x * np.arange(6.0)), "rf"),
    ("nanmedian", lambda x: np.nanmedian(x), "rfh"),
    ("piecewise", lambda x: np.sum(np.piecewise(x, [x < 0.5], [lambda v: v**2, lambda v: 2 * v])), "rfh"),
    ("resize", lambda x: np.sum(np.resize(x, 8) * np.arange(8.0)), "rfh"),
    ("real_if_close", lambda x: np.sum(np.real_if_close(x + 0j) ** 2), "rfh"),
    ("matrix_transpose", lambda x: np.sum(np.matrix_transpose(x.reshape(2, 3)) * A[:, :2]), "rfh"),
    ("cumulative_sum", lambda x: np.sum(np.cumulative_sum(x) * W6), "rfh"),
    ("cumulative_prod", lambda x: np.sum(np.cumulative_prod(x) * W6), "rfh"),
    ("cond", lambda x: np.linalg.cond(A * x[0] + np.diag(x[:3])), "rfh"),
    ("tensorinv", lambda x: np.sum(np.linalg.tensorinv(A + np.diag(x[:3]), ind=1)), "rfh"),
]  # fmt: skip

MODES = [(name, f, m, m in modes) for name, f, modes in CASES for m in "rfh"]


@pytest.mark.parametrize(
    "name, f, mode, works", MODES, ids=[f"{n}-{m}" for n, _, m, _ in MODES]
)
def test_numpy_python_derived(name: str, f: F, mode: str, works: bool) -> None:
    check_mode(name, f, X, mode, works)


def test_a_refusal_inside_numpy_names_the_users_call() -> None:
    def f(x: np.ndarray) -> t.Any:
        return np.sum(np.apply_along_axis(np.sum, 0, x.reshape(2, 3)))

    with pytest.raises(gibbous.MissingRuleError) as info:
        gibbous.grad(f)(X)
    first = str(info.value).splitlines()[0]
    assert "numpy.apply_along_axis(" in first and f"{__file__}:" in first
    assert "NumPy's own Python" in str(info.value)
