"""Hessian-vector products through library calls whose forward rule is a *tangent function*
(a closure its maker returns, called at run time: a formula that branches on values, an
eigen decomposition, a rule for operands of unknown type), not a written form: the product's
reverse pass derives the tangent function again, as it derives the user's code
(docs/decisions.md, "Hessian-vector products through tangent functions").  Each case is
checked in all three modes against central differences; what the reverse pass cannot
differentiate inside a tangent function is a ``ForwardModeError`` naming the user's call."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special as sps

import gibbous
from gibbous.forward import ForwardModeError
from tests.library.programs import check_program

RNG = np.random.default_rng(11)
X = np.linspace(0.1, 0.9, 6) + np.sin(np.arange(6)) * 0.05
M = RNG.standard_normal((3, 3)) + 3 * np.eye(3)  # (well conditioned)
S = M @ M.T  # (symmetric positive definite, distinct eigenvalues)
T = np.triu(RNG.standard_normal((3, 3))) + np.diag([1.0, 2.0, 3.5])  # (a real spectrum)
W6 = np.arange(1.0, 7.0)
X9 = np.linspace(0.1, 0.9, 9)
W9 = np.arange(1.0, 10.0).reshape(3, 3) / 4
B3 = np.array([0.5, -1.0, 2.0])

F = t.Callable[[np.ndarray], t.Any]


def _sym(x: np.ndarray) -> np.ndarray:
    a = x.reshape(3, 3)
    return a + a.T


# (name, f, x): every case differentiates in reverse, forward and hvp mode; those marked
# "written" had a written form (or no derivative) already: neighbours kept working
CASES: list[tuple[str, F, np.ndarray]] = [
    # elementwise
    ("clip", lambda x: np.sum(np.clip(x, 0.3, 0.7) ** 2), X),
    ("clip by keyword", lambda x: np.sum(np.clip(x, a_min=0.25, a_max=None) ** 3 * W6), X),
    ("clip, min= and max=", lambda x: np.sum(np.clip(x, max=0.6, min=0.2) ** 3 * W6), X),
    ("clip, array bounds", lambda x: np.sum(np.clip(x, x[::-1] * 0.5, 0.8) ** 2), X),
    ("sinc", lambda x: np.sum(np.sinc(x) ** 2 * W6), X),
    ("sign and floor: no derivative (written)", lambda x: np.sum(np.sign(x - 0.5) * np.floor(3 * x) * x**2), X),
    # products
    ("kron", lambda x: np.sum(np.kron(x[:3], x[3:]) ** 2), X),
    ("vdot", lambda x: np.vdot(x, x[::-1]) ** 2, X),
    ("tensordot, outer", lambda x: np.sum(np.tensordot(x[:3], x[3:], 0) ** 2), X),
    ("tensordot, axes", lambda x: np.sum(np.tensordot(x.reshape(2, 3), W9, axes=1) ** 2), X),
    ("tensordot to a number", lambda x: np.tensordot(x.reshape(2, 3), x.reshape(2, 3)) ** 2, X),
    ("tensordot, axis pairs", lambda x: np.sum(np.tensordot(W9, x.reshape(2, 3), axes=([1], [1])) ** 3), X),
    # linear algebra: decompositions and what is computed from them
    ("det", lambda x: np.linalg.det(M + x.reshape(3, 3)) ** 2, np.zeros(9) + 0.1),
    ("det, stacked", lambda x: np.sum(np.linalg.det(np.stack([M, S]) * x[0]) ** 2), X),
    ("eigh", lambda x: np.sum(np.linalg.eigh(S + _sym(x))[0] ** 3), np.zeros(9) + 0.05),
    ("eigh vectors", lambda x: np.sum(np.abs(np.linalg.eigh(S + _sym(x))[1]) * W9), np.zeros(9) + 0.05),
    ("eigvalsh, upper", lambda x: np.sum(np.linalg.eigvalsh(S + _sym(x), UPLO="U") ** 2), np.zeros(9) + 0.05),
    ("eig, real spectrum", lambda x: np.sum(np.real(np.linalg.eig(T + 0.1 * x.reshape(3, 3))[0]) ** 3), X9),
    ("eigvals", lambda x: np.sum(np.real(np.linalg.eigvals(T * x[0])) ** 2), X),
    ("svd values", lambda x: np.sum(np.linalg.svd(M + x.reshape(3, 3), compute_uv=False) ** 3), X9),
    ("svd factors", lambda x: np.sum(np.abs(np.linalg.svd(M * x[0] + np.diag(x[:3]))[0]) * W9), X),
    ("svdvals", lambda x: np.sum(np.linalg.svdvals(M + x[0] * S) ** 2), X),
    ("qr", lambda x: np.sum(np.linalg.qr(M + np.diag(x[:3]))[1] ** 3), X),
    ("lstsq", lambda x: np.sum(np.linalg.lstsq(M + np.diag(x[:3]), B3)[0] ** 2), X),
    ("cond", lambda x: np.linalg.cond(M + np.diag(x[:3])) ** 2, X),
    ("matrix_norm, nuclear", lambda x: np.linalg.matrix_norm(M + np.diag(x[:3]), ord="nuc") ** 2, X),
    ("norm, axis and keepdims", lambda x: np.sum(np.linalg.norm(x.reshape(2, 3), 3, axis=1, keepdims=True) * x.reshape(2, 3)), X),
    ("norm, matrix axes", lambda x: np.linalg.norm(x.reshape(1, 2, 3), axis=(2, 1)).sum() ** 2, X),
    ("scipy.linalg.det", lambda x: sla.det(M + np.diag(x[:3])) ** 2, X),
    ("scipy.linalg.pinv", lambda x: np.sum(sla.pinv(M + np.diag(x[:3])) ** 2), X),
    # reductions and cumulative operations, with their options
    ("cumprod", lambda x: np.sum(np.cumprod(x) * W6), X),
    ("cumprod, axis", lambda x: np.sum(np.cumprod(x.reshape(2, 3), axis=1) ** 2 * W6.reshape(2, 3)), X),
    ("cumulative_prod, initial", lambda x: np.sum(np.cumulative_prod(x, include_initial=True) ** 2), X),
    ("cumulative_sum, axis (written)", lambda x: np.sum(np.cumulative_sum(x.reshape(3, 2), axis=0) ** 3), X),
    ("trace (written)", lambda x: np.linalg.trace(np.outer(x[:3], x[3:])) ** 2, X),
    ("diagonal (written)", lambda x: np.sum(np.linalg.diagonal(np.outer(x[:3], x[3:]) ** 2) * B3), X),
    ("matrix_transpose", lambda x: np.sum(np.matrix_transpose(x.reshape(2, 3)) ** 3 * W6.reshape(3, 2)), X),
    ("real_if_close", lambda x: np.sum(np.real_if_close(x) ** 3), X),
    ("polyder (written)", lambda x: np.sum(np.polyder(x, 2) ** 2), X),
]  # fmt: skip


PARAMS = [pytest.param(*c, id=c[0]) for c in CASES]


@pytest.mark.parametrize(("name", "f", "x"), PARAMS)
def test_hvp_through_a_tangent_function(name: str, f: F, x: np.ndarray) -> None:
    check_program(f, x, modes="rfh")


def _calling(h: t.Callable[..., t.Any]) -> F:
    def f(x: np.ndarray) -> t.Any:
        return np.sum(h(x) ** 2 * W6)

    return f


@pytest.mark.parametrize("h", [np.cumprod, np.sinc, np.ceil, np.ones_like], ids=lambda h: h.__name__)
def test_called_through_a_value_known_at_run_time(h: t.Callable[..., t.Any]) -> None:
    """A callee read from a closure's cell: its forward program is made at run time, a call
    of its tangent function (or, without a derivative, of the primal alone) that reverse mode
    derives when it meets it."""
    check_program(_calling(h), X, modes="rfh")


def test_a_failure_inside_a_tangent_function_names_the_users_call() -> None:
    """``eval_chebyt``'s tangent runs a formula calling ``eval_chebyu``, which has no rules:
    named as ``scipy.special.eval_chebyt``'s, at the user's line, not as a helper of
    gibbous's."""

    def f(x: np.ndarray) -> t.Any:
        return np.sum(sps.eval_chebyt(2, x) ** 2)

    with pytest.raises(ForwardModeError, match=r"scipy\.special\.eval_chebyt's tangent") as info:
        gibbous.hvp(f, X, W6)
    assert "test_hvp_tangent_functions.py" in str(info.value)
