"""Hessian-vector products over the whole frontend corpus: they refuse clearly or they are right.

``gibbous.hvp(f, x, v, *args)`` is reverse mode over a program that forward mode wrote, two
transforms that each see real code for the first time on the corpus.  Each case of
``tests/frontend/corpus.py`` without keyword arguments whose first argument is a float or a
float64 array and whose result is a finite real scalar gets ``H v`` along a random unit ``v``.
The product may refuse what it does not take yet, with a ``ForwardModeError`` (or a ``TypeError``
of gibbous saying "build_hvp" / "hvp" / "forward mode"): the case is skipped with the refusal's
first line, so the skips list what real code runs into.  Any other exception is a crash and
fails.  A product it returns must agree with the central difference of the reverse-mode
gradient along ``v``, ``(∇f(x + h v) - ∇f(x - h v)) / 2h``, at one of two steps.

A case is skipped as having nothing to check, for a reason computed from the case: the first
argument is not a float or a float64 array, the primal raises, the result is not a finite real
scalar, reverse mode cannot give the gradient at the sample point (there is nothing to compare
with), or the gradient jumps, has a kink or changes its control flow at the sample point
(``finite_differences`` of ``tests/ad/test_corpus_gradients.py``, on the gradient, decides).
"""

from __future__ import annotations

import copy
import math
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.tangents.model import NoTangent
from tests.ad.test_corpus_gradients import finite_differences, traced
from tests.forward.test_corpus_jvp import _params, refusal
from tests.rules.fd import _perturb_all


# A difference of gradients at 1e-5 is uncertain by rounding, ~eps |∇f| / 1e-5 (allowed for
# below), at 1e-3 by truncation, ~1e-7 |f''''|: a right product agrees at one of the two.
STEPS = (1e-5, 1e-3)
RTOL, ATOL = 1e-5, 1e-8


def hessian_argument(x: object) -> bool:
    """What ``hvp`` differentiates in: a Python float or a float64 array."""
    return type(x) is float or (isinstance(x, np.ndarray) and x.dtype == np.float64)


def real_scalar(y: object) -> bool:
    if isinstance(y, np.ndarray):
        return y.ndim == 0 and y.dtype.kind == "f"
    return isinstance(y, (float, np.floating))


def norm(a: t.Any) -> float:
    return math.sqrt(float(np.sum(np.square(a))))


def first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"


def gradient(
    fn: t.Callable[..., t.Any], x: t.Any, rest: tuple[object, ...]
) -> t.Callable[[t.Any], np.ndarray]:
    """``z -> ∇f(z, *rest)`` in the first argument by reverse mode, one rule for every point
    (built for the types, as ``hvp`` builds its product)."""
    rule = gibbous.build_rrule(fn, copy.deepcopy(x), *copy.deepcopy(rest))

    def at(z: t.Any) -> np.ndarray:
        # Copies: a case may write into its arguments, and ``rest`` must stay the sample's.
        _, grads = gibbous.value_and_gradient(rule, fn, copy.deepcopy(z), *copy.deepcopy(rest))
        g = grads[1]
        return np.zeros(np.shape(x)) if isinstance(g, NoTangent) else np.asarray(g, dtype=float)

    return at


def _positional() -> list[t.Any]:
    """The corpus's cases without keyword arguments (``hvp`` takes positional ones)."""
    return [
        pytest.param(*p.values[:3], id=p.id, marks=p.marks) for p in _params() if not p.values[3]
    ]


@pytest.mark.parametrize(("n", "fn", "args"), _positional())
def test_corpus_hvp(n: int, fn: t.Callable[..., t.Any], args: tuple[object, ...]) -> None:
    rng = np.random.default_rng(n)
    xs = copy.deepcopy(args)  # (a case's arguments are shared with the other corpus tests)
    if not xs:
        pytest.skip("nothing to check: no argument")
    if not hessian_argument(xs[0]):
        kind = f"{type(xs[0]).__name__} {getattr(xs[0], 'dtype', '')}".rstrip()
        pytest.skip(f"nothing to check: the first argument is {kind}")
    x, rest = xs[0], tuple(xs[1:])
    try:
        y = fn(*copy.deepcopy(xs))
    except Exception as e:
        pytest.skip(f"nothing to check: the primal raises {first_line(e)}")
    if not real_scalar(y):
        pytest.skip(f"nothing to check: the result is {type(y).__name__}, not a real scalar")
    if not math.isfinite(float(y)):
        pytest.skip(f"nothing to check: the result is not finite: {y!r}")
    try:
        grad = gradient(fn, x, rest)
        g0 = grad(x)
    except Exception as e:
        pytest.skip(f"nothing to check: reverse mode gives no gradient: {first_line(e)}")

    if isinstance(x, float):
        v: t.Any = 1.0 if rng.standard_normal() >= 0 else -1.0
    else:
        v = rng.standard_normal(x.shape)
        v = v / norm(v) if v.size else v
    along = [v, *(NoTangent() for _ in rest)]

    # Jumps, kinks and branches of the gradient are found on a random linear functional of
    # it; the primal runs too, in Python, so that its control-flow path is traced.
    w = rng.standard_normal(np.shape(x))

    def loss(z: t.Any, *others: object) -> float:
        fn(copy.deepcopy(z), *copy.deepcopy(others))
        return float(np.sum(w * grad(z)))

    _, why = finite_differences(loss, xs, along, loss(*xs))
    if why is not None:
        pytest.skip(f"nothing to check: the gradient: {why}")

    try:
        got = gibbous.hvp(fn, copy.deepcopy(x), copy.deepcopy(v), *copy.deepcopy(rest))
    except Exception as e:
        why = refusal(e, ("build_hvp", "hvp", "forward mode"))
        if why is None:
            raise
        pytest.skip(f"refused by hvp: {why}")

    assert isinstance(got, float) if isinstance(x, float) else isinstance(got, np.ndarray), (
        f"hvp gives {type(got).__name__} {got!r:.80} for a {type(x).__name__} x"
    )
    assert np.shape(got) == np.shape(x), (np.shape(got), np.shape(x))

    # Only steps whose perturbed points take the sample point's path difference one branch.
    base = traced(lambda: fn(*copy.deepcopy(xs)))[1]
    estimates = []
    for h in STEPS:
        moved = [_perturb_all(xs, along, s) for s in (h, -h)]
        if any(traced(lambda: fn(*copy.deepcopy(m)))[1] != base for m in moved):
            continue
        fd = (grad(moved[0][0]) - grad(moved[1][0])) / (2 * h)
        tol = ATOL + 1e-13 * norm(g0) / h + RTOL * max(norm(fd), norm(got))
        estimates.append((h, fd, norm(np.asarray(got) - fd), tol))
    if not estimates:
        pytest.skip("nothing to check: the steps of the comparison change the control flow")
    if not any(err <= tol for _, _, err, tol in estimates):
        pytest.fail(
            f"hvp = {got!r} disagrees with central differences of the gradient "
            + ", ".join(f"{fd!r} (step {h:g}, error {err:.3g} > {tol:.3g})"
                        for h, fd, err, tol in estimates)
            + f" along v = {v!r}"
        )  # fmt: skip
