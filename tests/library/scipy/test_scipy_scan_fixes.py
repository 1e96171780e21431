"""What the scan of SciPy's public callables (``gibbous.audit.scan``) found wrong or failing
with an internal error, each call in every mode it works in against central differences, and
the scan's own verdicts where the sample is not smooth (issue 31, points 4 and 6)."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

pytest.importorskip("scipy")

import scipy.integrate  # noqa: E402
import scipy.interpolate  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

from gibbous.audit.scan import scan_one  # noqa: E402
from tests.library.programs import at_least, check_mode, check_program  # noqa: E402

X = np.array([0.21, 0.35, 0.42, 0.58, 0.66, 0.83])
W = np.cos(np.arange(6) + 0.5)


def test_barycentric_interpolate_at_and_off_the_nodes() -> None:
    """Where a point is a node the interpolant returns ``yi`` outright (a branch on
    ``x == xi``, whose derivative in ``xi`` is zero): the scan's samples avoid such ties, and
    off them reverse mode matches central differences."""
    y, z = X[::-1].copy(), X * 0.5 + 0.003
    check_program(lambda xi: np.sum(scipy.interpolate.barycentric_interpolate(xi, y, z) * W), X, modes="r")
    row = scan_one("scipy.interpolate.barycentric_interpolate", scipy.interpolate.barycentric_interpolate)
    assert row.reverse == "yes"


def test_a_rank_statistic_at_ties_is_not_smooth_there() -> None:
    """``anderson_ksamp`` of a matrix whose rows share values: central differences grow as
    ``1 / h``, so the scan says "not smooth here", not ``wrong``."""
    row = scan_one("scipy.stats.anderson_ksamp", scipy.stats.anderson_ksamp)
    assert (row.reverse, row.forward, row.hvp, row.why) == ("skipped",) * 3 + ("not smooth here",)


def _cumulative_simpson(x: np.ndarray) -> t.Any:
    return np.sum(scipy.integrate.cumulative_simpson(x) * W[:5])  # (dx broadcast, swapped)


def _sos2tf(x: np.ndarray) -> t.Any:
    b, a = scipy.signal.sos2tf(x.reshape(1, 6) + np.array([0, 0, 0, 1.0, 0, 0]))
    return np.sum(b * W[:3]) + np.sum(a * W[3:])  # (an empty slice of a trimmed polynomial)


def _pearsonr(x: np.ndarray) -> t.Any:
    return scipy.stats.pearsonr(x, X[::-1] ** 2)[0]  # (names set in one with block, read in another)


@pytest.mark.parametrize("f", [_cumulative_simpson, _sos2tf])
def test_calls_that_failed_with_internal_errors(f: t.Callable[[np.ndarray], t.Any]) -> None:
    check_program(f, X, modes="r")


@pytest.mark.parametrize("mode", "rfh")
def test_pearsonr_is_refused_by_a_gibbous_exception_or_works(mode: str) -> None:
    check_mode("pearsonr", _pearsonr, X, mode, works=False)


_SCIPY_118 = at_least("scipy", "1.18.0")


@pytest.mark.xfail(_SCIPY_118, reason="SciPy 1.18: _specfun.bernob(i64) gets no rule (found, not fixed)", strict=True)
@pytest.mark.parametrize("fn", [scipy.special.bernoulli, scipy.special.euler])
def test_integer_sequences_have_zero_derivatives_in_every_mode(fn: t.Any) -> None:
    """``bernoulli(n)``: numbers of ``int(n)``; its forward program gives zeros as the
    tangent (under hvp too), not None."""
    check_program(lambda s: np.sum(fn(s[0]) * 0.5) + s[0] ** 2, np.array([4.6]))


@pytest.mark.parametrize(
    "name", ["scipy.integrate.cumulative_simpson", "scipy.signal.sos2tf", "scipy.special.bernoulli"]
)
def test_the_scan_finds_no_internal_error(name: str) -> None:
    module, attr = name.rsplit(".", 1)
    import importlib

    row = scan_one(name, getattr(importlib.import_module(module), attr))
    assert "internal" not in (row.reverse, row.forward, row.hvp) and "wrong" not in (
        row.reverse, row.forward, row.hvp
    ), row


def _reads_its_signature(x: np.ndarray) -> t.Any:
    import inspect

    params = list(inspect.signature(_reads_its_signature).parameters)
    spec = inspect.getfullargspec(_reads_its_signature)
    return np.sum(x**2) * len(params) * (1 if spec.varargs is None else 2)


def test_inspect_signature_has_no_derivative() -> None:
    """``inspect.signature``/``getfullargspec``: facts about a function, run as they are
    (SciPy's ``_axis_nan_policy`` reads them on every call)."""
    check_program(_reads_its_signature, X, modes="r")


@pytest.mark.parametrize("fn", [scipy.stats.boxcox_llf])
def test_axis_nan_policy_functions_build(fn: t.Any) -> None:
    """Their gradients build (a quadratic folding of constant block arguments took 150 s of a
    180 s build) and match central differences."""
    check_program(lambda x: fn(0.6, x), X, modes="r")


@pytest.mark.parametrize("mode", "rfh")
def test_iirfilter_takes_arange_by_keyword(mode: str) -> None:
    def f(x: np.ndarray) -> t.Any:
        b, a = scipy.signal.iirfilter(2, x[:2] * 0.5 + 0.1)
        return np.sum(b * W[:5]) + np.sum(a * W[1:])

    check_mode("iirfilter", f, X, mode, works=mode == "r")


@pytest.mark.parametrize("fn", [scipy.signal.welch, scipy.signal.periodogram])
def test_a_property_setter_is_a_gibbous_refusal(fn: t.Any) -> None:
    # (ShortTimeFFT's property setters are followed now; what stops it next, ndarray.setflags,
    # is refused by name)
    from gibbous.ir.exceptions import GibbousError

    import gibbous

    with pytest.raises(GibbousError, match="setflags"):
        gibbous.grad(lambda x: np.sum(fn(x)[1]))(X)


class _Box:
    def __init__(self, v: t.Any) -> None:
        self.v = v


def _attributes_with_defaults(x: np.ndarray) -> t.Any:
    box = _Box(x * 2.0)
    kept = getattr(box, "v", None)
    missing = getattr(box, "w", x**2)
    dtype = getattr(x, "dtype", None)
    return np.sum(kept * missing) + np.sum(getattr(x, "T", None) * x) * (dtype == np.float64)


def test_getattr_with_a_default_in_both_modes() -> None:
    """``getattr(obj, name, default)`` in forward mode: the attribute's tangent, else the
    default's (SciPy's ``getattr(arg_array, 'dtype', arg)``)."""
    check_program(_attributes_with_defaults, X, modes="rf")


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(scipy.integrate.cumulative_trapezoid(x) * W[:5]),
        lambda x: np.sum(scipy.integrate.cumulative_trapezoid(x, dx=0.3, initial=0) * W),
        lambda x: scipy.integrate.simpson(x),
    ],
)
def test_integrate_in_forward_mode(f: t.Any) -> None:
    """SciPy's array-API dispatch (``array_namespace``, ``is_numpy_namespace``) has no
    derivative: forward mode runs it instead of refusing inside it."""
    check_program(f, X, modes="f")


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.vecdot(x, x[::-1] ** 2),
        lambda x: np.sum(
            np.vecdot(x.reshape(2, 3), (x**2).reshape(2, 3), axis=0) * np.array([1.0, -2.0, 0.5])
        ),
        lambda x: np.vecdot(x + 1j * x[::-1], x**2 - 0.5j).real,
        lambda x: np.sum(np.vecdot(x.reshape(2, 3), x[:3] ** 2)),  # (broadcast)
    ],
)
def test_vecdot(f: t.Any) -> None:
    """``np.vecdot`` (a gufunc, pearsonr's correlation): a twin, in every mode."""
    check_program(f, X)


@pytest.mark.parametrize(
    "logpdf",
    [
        lambda x: scipy.stats.gamma.logpdf(x, 2.0),
        lambda x: scipy.stats.expon.logpdf(x),
        lambda x: scipy.stats.chi2.logpdf(x, 3.0),
    ],
)
def test_distributions_through_argsreduce(logpdf: t.Any) -> None:
    """``rv_continuous.logpdf`` reads its arguments through ``np.atleast_1d(*args)`` (in
    ``argsreduce``): its gradient was silently 0 while a rule for one array took the call."""
    check_program(lambda x: np.sum(logpdf(x[:5] * 0.8 + 0.1) * W[:5]), X, modes="r")
