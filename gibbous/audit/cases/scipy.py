"""Cases for ``gibbous.library.scipy.special``, ``scipy_linalg``, ``scipy_stats`` and ``signal``:
SciPy's special functions, triangular and Cholesky solves, and the distributions' methods.
Without SciPy there are none.

Arguments are in each function's smooth domain: ``logit`` and ``gammaln`` away from their
poles, positive-definite matrices for Cholesky, well-conditioned triangles, positive scales.
Matrices of the linear-algebra rules are not symmetric: the check perturbs every entry, so the
gradient of the entries a function does not read (zero) is checked too.
"""

from __future__ import annotations

import importlib.util
import re
import typing as t

import numpy as np

from gibbous.testing import case
from gibbous.testing.cases import RuleCase

CASES: list[RuleCase] = []

if importlib.util.find_spec("scipy") is not None:
    import scipy.linalg as sla
    import scipy.special as sps
    import scipy.stats as sst

    from gibbous.library.scipy import stats

    _rng = np.random.default_rng(5)

    def _f32(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float32)

    # Points inside (0, 1) for logit, positive for gammaln/digamma, any for the others.
    _unit = np.array([0.2, 0.45, 0.7, 0.85])
    _pos = np.array([[0.6, 1.3, 2.2], [3.1, 0.9, 4.5]])
    _any = np.array([[-1.2, 0.3, 0.8], [0.5, -0.4, 1.7]])
    _cplx = np.array([0.3 + 0.2j, -0.5 + 0.4j, 0.7 - 0.3j])

    # ufuncs: arrays of float64 and float32, 0-d arrays, Python floats, NumPy scalars.
    for _fn, _x in (
        (sps.expit, _any), (sps.logit, _unit), (sps.gammaln, _pos), (sps.digamma, _pos),
        (sps.erf, _any), (sps.erfc, _any),
    ):  # fmt: skip
        CASES += [
            case(_fn, _x),
            case(_fn, _f32(_x)),
            case(_fn, np.array(_x.flat[1])),
            case(_fn, float(_x.flat[2])),
            case(_fn, np.float32(_x.flat[0])),
        ]
    CASES += [case(sps.erf, _cplx), case(sps.erfc, complex(_cplx[1]))]

    # The functions scipy.stats reaches, in their domains: ndtri in (0, 1), erfinv in (-1, 1),
    # erfcinv in (0, 2); gamma also at negative non-integers, log_ndtr far in the lower tail.
    for _fn, _x in (
        (sps.ndtr, _any), (sps.log_ndtr, _any), (sps.ndtri, _unit), (sps.erfcx, _any),
        (sps.erfinv, 2 * _unit - 1), (sps.erfcinv, 2 * _unit), (sps.gamma, _pos),
        (sps.loggamma, _pos),
    ):  # fmt: skip
        CASES += [
            case(_fn, _x),
            case(_fn, _f32(_x)),
            case(_fn, float(_x.flat[2])),
            case(_fn, np.float32(_x.flat[0])),
        ]
    CASES += [
        case(sps.log_ndtr, np.array([-30.0, -8.5, 12.0])),
        case(sps.gamma, np.array([-0.5, -1.5, -2.3])),
        *(case(_fn, _cplx) for _fn in (sps.ndtr, sps.log_ndtr, sps.erfcx, sps.gamma)),
        case(sps.loggamma, _cplx + 1.0),
        case(sps.loggamma, complex(_cplx[1])),
    ]
    # beta, betaln, stdtr(df, x): every array/scalar mix; stdtr in df too (numerically), and
    # with an integer df (no gradient for it).
    _df = np.array([0.7, 2.5, 10.0])
    for _fn in (sps.beta, sps.betaln):
        CASES += [
            case(_fn, _pos, _pos[::-1]),
            case(_fn, _pos, _df),
            case(_fn, 1.3, _pos),
            case(_fn, _f32(_pos), 2.5),
            case(_fn, 0.8, 3.1),
        ]
    CASES += [
        case(sps.betaln, np.array([-0.5, -1.7]), np.array([2.2, 3.4])),
        case(sps.stdtr, _df, _any),
        case(sps.stdtr, 3.5, _any),
        case(sps.stdtr, _df, 0.6),
        case(sps.stdtr, 4, _any),
        case(sps.stdtr, 2.5, -1.2),
        case(sps.stdtr, _f32(_df), _f32(_any)),
    ]

    # xlogy / xlog1py: every array/scalar mix, broadcasting, and x == 0 (y gets nothing there).
    _xs = np.array([[0.0, 0.7, -1.3], [2.1, 0.0, 0.4]])
    _ys = np.array([0.8, 1.9, 0.35])
    for _fn in (sps.xlogy, sps.xlog1py):
        CASES += [
            case(_fn, _xs, np.array([[0.5, 1.2, 2.4], [0.9, 3.0, 0.6]])),
            case(_fn, _xs, _ys),
            case(_fn, _f32(_xs), _f32(_ys)),
            case(_fn, 1.3, _ys),
            case(_fn, _xs, 0.75),
            case(_fn, 0.0, 0.6),
            case(_fn, 1.1, 0.6),
            case(_fn, _cplx, _cplx + 1.5),
        ]
    # Every array/scalar mix the general rule and its float64 variants take: a float or an
    # int with an array on either side, and float32 operands (the general rule's).
    for _fn, _x, _y in (
        (sps.beta, _pos, _pos[::-1]), (sps.betaln, _pos, _pos[::-1]), (sps.stdtr, _df, _any),
        (sps.xlogy, _xs, _ys), (sps.xlog1py, _xs, _ys),
    ):  # fmt: skip
        CASES += [
            case(_fn, _x, 2.5),
            case(_fn, _x, 2),
            case(_fn, 3, _y),
            case(_fn, _f32(_x), _f32(_y)),
            case(_fn, _f32(_x), np.float32(1.5)),
            case(_fn, np.float32(1.5), _f32(_y)),
        ]
    CASES += [
        case(sps.polygamma, 1, _pos),
        case(sps.polygamma, np.array([0, 1, 2]), _pos[0]),
        case(sps.polygamma, 2, 1.7),
        case(sps.polygamma, np.array([1, 2]), 0.8),
    ]

    # logsumexp, softmax, log_softmax: every axis form, keepdims, weights, signs, scalars.
    _a = np.array([[0.3, -1.1, 2.0, 0.5], [1.4, 0.2, -0.6, 0.9], [-0.3, 0.8, 1.1, -1.5]])
    _b = np.array([0.5, 1.5, 0.25, 2.0])
    CASES += [
        case(sps.logsumexp, _a),
        case(sps.logsumexp, _f32(_a)),
        case(sps.logsumexp, _a, kwargs={"axis": (0, 1), "keepdims": True}),
        case(sps.logsumexp, _a, 0, kwargs={"keepdims": True}),
        case(sps.logsumexp, _a, kwargs={"axis": -1, "b": _b}),
        case(
            sps.logsumexp,
            _a,
            kwargs={"axis": 1, "b": np.array([1.0, -2.0, 0.5, 0.1]), "return_sign": True},
        ),
        case(sps.logsumexp, _a[1], kwargs={"b": -_b, "return_sign": True}),
        case(sps.logsumexp, _b, kwargs={"b": _b}),  # one array as both operands
        case(sps.logsumexp, 1.3),
        case(sps.logsumexp, 0.4, kwargs={"b": 2.5}),
    ]
    for _fn in (sps.softmax, sps.log_softmax):
        CASES += [
            case(_fn, _a),
            case(_fn, _f32(_a)),
            case(_fn, _a, kwargs={"axis": 1}),
            case(_fn, _a, 0),
            case(_fn, _a, kwargs={"axis": (0, 1)}),
            case(_fn, 0.7),
        ]

    # Linear algebra: well-conditioned triangles, a positive-definite matrix plus junk in the
    # triangle not read.
    _n = 4
    _t = np.array(
        [[2.0, 0.3, -0.5, 0.2], [0.4, 1.5, 0.7, -0.3], [-0.6, 0.2, 2.5, 0.1], [0.3, -0.8, 0.5, 1.8]]
    )
    _rhs = np.array([0.5, -1.2, 0.8, 2.0])
    _rhs2 = np.array([[0.5, 1.0], [-1.2, 0.3], [0.8, -0.7], [2.0, 0.4]])
    _m = np.array(
        [[1.0, 0.2, -0.4, 0.3], [0.5, 1.1, 0.1, -0.2], [0.3, -0.6, 0.9, 0.4], [0.1, 0.2, 0.7, 1.2]]
    )
    _spd = _m @ _m.T + _n * np.eye(_n)
    _junk = _spd + np.triu(_rng.standard_normal((_n, _n)), 1) * 0.5  # upper triangle differs
    _herm = _spd + 0.4j * (np.triu(_m, 1) - np.triu(_m, 1).T)  # Hermitian, positive definite
    _tc = _t + 0.3j * np.array(
        [[0.5, 0.1, -0.3, 0.2], [0.2, -0.4, 0.6, 0.1], [0.3, 0.2, 0.1, -0.5], [0.4, 0.1, -0.2, 0.3]]
    )
    CASES += [
        case(sla.solve_triangular, _t, _rhs),
        case(sla.solve_triangular, _t, _rhs2, kwargs={"trans": 1, "lower": True}),
        case(sla.solve_triangular, _t, _rhs, kwargs={"trans": "T"}),
        case(sla.solve_triangular, _t, _rhs, 2, True),
        case(sla.solve_triangular, _t, _rhs2, kwargs={"unit_diagonal": True, "lower": True}),
        case(sla.solve_triangular, _f32(_t), _f32(_rhs2), kwargs={"lower": True}),
        case(sla.solve_triangular, _tc, _rhs2 + 0.5j, kwargs={"trans": "C"}),
        case(sla.solve_triangular, _tc, _rhs2 - 0.2j, kwargs={"trans": 1, "lower": True}),
        case(sla.cholesky, _junk),
        case(sla.cholesky, _junk.T, kwargs={"lower": True}),
        case(sla.cholesky, _f32(_junk)),
        case(sla.cholesky, _herm),
        case(sla.cho_factor, _junk),
        case(sla.cho_factor, _junk.T, kwargs={"lower": True}),
        case(sla.cho_factor, _f32(_junk), True),
    ]
    for _lower in (False, True):
        _c = sla.cho_factor(_junk.T if _lower else _junk, lower=_lower)
        CASES += [
            case(sla.cho_solve, _c, _rhs),
            case(sla.cho_solve, _c, _rhs2),
        ]
    CASES += [
        case(sla.cho_solve, (_f32(_c[0]), _c[1]), _f32(_rhs2)),
        case(sla.cho_factor, _herm, kwargs={"lower": True}),
        case(sla.cho_solve, sla.cho_factor(_herm), _rhs2 + 0.3j),
    ]

    # Normal log-densities: the functions with the instance first, and the bound method of
    # ``multivariate_normal``.  The rule of ``norm_gen`` instances is tested on one with a
    # finite support: ``norm``'s infinite bounds are fields of an operand, which no finite
    # difference can pair (the rule zeroes the gradient outside a finite support).
    _norm = stats.NORM_GEN(a=-40.0, b=40.0, badvalue=-1.0e3, name="norm")
    _x = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    _loc = np.array([0.2, -0.3, 0.5])
    _scales = np.array([[0.8], [2.5]])
    for _name in stats.NORM_METHODS:
        _method = getattr(stats.RV_CONTINUOUS, _name)
        _at = _x / 5 + 0.5 if _name == "ppf" else _x  # ppf of probabilities
        CASES += [
            case(_method, _norm, _at),
            case(_method, _norm, _at, _loc, 1.7),
            case(_method, _norm, _f32(_at), kwargs={"loc": 0.3, "scale": _scales}),
            case(_method, _norm, float(_at[0, 0]), kwargs={"scale": 1.3}),
            case(_method, _norm, np.float32(_at[1, 2]), -0.5, 2.0),
        ]
    # Student's t, in the degrees of freedom too (by position or keyword), on an instance with
    # a finite support for the same reason as norm's.
    _t = stats.T_GEN(a=-40.0, b=40.0, badvalue=-1.0e3, name="t")
    CASES += [
        case(stats.NORM_LOGPDF, _t, _x, 3.5),
        case(stats.NORM_LOGPDF, _t, _x, np.array([0.8, 2.5, 12.0]), _loc, 1.7),
        case(stats.NORM_LOGPDF, _t, _f32(_x), kwargs={"df": 4.0, "loc": 0.3, "scale": _scales}),
        case(stats.NORM_LOGPDF, _t, 0.7, 5, kwargs={"scale": 1.3}),
        case(stats.NORM_LOGPDF, _t, -0.4, kwargs={"df": 2.5}),
    ]
    _cov = _spd[:3, :3] + np.tril(np.array([[0.0, 0, 0], [0.3, 0, 0], [-0.2, 0.4, 0]]))
    _mean = np.array([0.1, -0.2, 0.3])
    _pts = np.array([[0.5, -0.3, 1.2], [0.1, 0.4, -0.8], [1.1, 0.9, 0.2], [-0.6, 0.2, 0.3]])
    CASES += [
        case(sst.multivariate_normal.logpdf, _pts, _mean, _cov),
        case(sst.multivariate_normal.logpdf, _pts[0], kwargs={"mean": _mean, "cov": _cov}),
        case(sst.multivariate_normal.logpdf, _pts, _mean, np.array([0.5, 1.2, 2.0])),
        case(sst.multivariate_normal.logpdf, _f32(_pts), kwargs={"mean": _mean, "cov": 1.7}),
        case(sst.multivariate_normal.logpdf, np.array([0.3, -0.2, 0.9]), 0.4, 2.1),
        case(sst.multivariate_normal.logpdf, 0.3, 0.4, 2.1),
        case(stats.MVN_LOGPDF, sst.multivariate_normal, _pts, _mean, _cov),
        case(stats.MVN_LOGPDF, sst.multivariate_normal, 0.3, kwargs={"cov": 1.5}),
    ]

    # scipy.signal: the convolutions (every family, mode, boundary; complex too) and lfilter
    # (in the signal and both coefficient vectors)
    import scipy.signal as ssg

    def _s(*shape: int) -> np.ndarray:
        return _rng.uniform(-1.0, 1.0, shape)

    _sig, _taps = _s(7), _s(3)
    for _fn in (ssg.convolve, ssg.correlate):
        CASES += [
            case(_fn, _sig, _taps),
            case(_fn, _s(4, 5), _s(2, 3), "same", kwargs={"method": "fft"}),
            case(_fn, _s(3), _s(5) + 1j * _s(5), "valid", "direct"),
        ]
    for _fn in (ssg.fftconvolve, ssg.oaconvolve):
        CASES += [
            case(_fn, _sig, _taps),
            case(_fn, _s(3, 6), _s(1, 2), "same", kwargs={"axes": 1}),
        ]
    for _fn in (ssg.convolve2d, ssg.correlate2d):
        CASES += [
            case(_fn, _s(5, 4), _s(3, 2)),
            case(_fn, _s(4, 4), _s(2, 3), "same", "wrap"),
            case(_fn, _s(2, 3), _s(4, 5), kwargs={"boundary": "symm"}),
            case(_fn, _s(5, 4), _s(3, 2), "valid"),
            case(_fn, _s(4, 3), _s(2, 2), "same", "fill", 0.7),
        ]
    CASES += [
        case(ssg.lfilter, _taps, np.array([1.2, -0.4, 0.3]), _s(10)),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(3, 6), kwargs={"axis": 0}),
        case(ssg.lfilter, _taps + 1j * _s(3), np.array([2.0]), _s(8)),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(3, 6), 0),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(3, 6), 0, None),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(6), kwargs={"zi": None}),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(3, 6), kwargs={"axis": 0, "zi": None}),
        case(ssg.lfilter, _s(2), np.array([1.0, 0.5]), _s(3, 6), 0, kwargs={"zi": None}),
    ]
    # SciPy's array-API dispatch: no derivative (a module, a bool)
    _NAMESPACE_TEST = re.compile(r"is_\w+_namespace")
    from gibbous.library.scipy import array_api

    CASES += [
        # (a namespace is read for its __name__: a function stands in, which pickles)
        case(_fn, np.asarray if _NAMESPACE_TEST.fullmatch(_fn.__name__) else _s(3))
        for _fn in t.cast(list[t.Any], array_api._DISPATCH)
    ]

    # scipy.interpolate's LAPACK banded solve (the LU factors have no derivative: the cotangent
    # reaches the solution only), ndarray.view.
    import scipy.linalg.lapack as _lapack

    from gibbous.tangents.model import NO_TANGENT as _NT

    _ab = np.array([[0.0] * 5] * 2 + [[0.0, 0.3, 0.1, 0.2, 0.4], [4.0, 5.0, 4.5, 6.0, 5.0], [0.7, 0.2, 1.0, 0.4, 0.0], [0.1, 0.3, 0.2, 0.0, 0.0]])
    _b5 = np.array([1.0, -0.5, 0.3, 2.0, 0.7])
    _gx = np.array([0.3, -1.2, 0.8, 0.5, -0.4])
    _dl, _d5, _du = np.array([0.3, 0.1, 0.2, 0.4]), np.array([4.0, 5.0, 4.5, 6.0, 5.0]), np.array([0.7, 0.2, 1.0, 0.4])
    sla.get_lapack_funcs(("gtsv",), (_d5,)), sla.get_blas_funcs(("gemv",), (_d5,))
    _MEMO = ("mutation", "a routine SciPy's memo holds as well: no tangent on either side")
    CASES += [
        case(_lapack.dgbsv, 2, 1, _ab, _b5, output_tangent=(0 * _ab, _NT, _gx, _NT)),
        case(_lapack.sgbsv, 2, 1, _f32(_ab), _f32(_b5), output_tangent=(_f32(0 * _ab), _NT, _f32(_gx), _NT)),
        # (?gtsv: (du2, d, du, x, info), the factors without derivatives)
        # (the state check's other arguments keep the shapes: the output tangent is given)
        case(
            _lapack.dgtsv, _dl, _d5, _du, _b5, output_tangent=(0 * _du, 0 * _d5, 0 * _du, _gx, _NT),
            other_args=(_dl * 1.1, _d5 + 0.5, _du * 0.9, _b5[::-1].copy()),
        ),  # fmt: skip
        case(
            _lapack.sgtsv, _f32(_dl), _f32(_d5), _f32(_du), _f32(_b5),
            output_tangent=(_f32(0 * _du), _f32(0 * _d5), _f32(0 * _du), _f32(_gx), _NT),
            other_args=(_f32(_dl * 1.1), _f32(_d5 + 0.5), _f32(_du * 0.9), _f32(_b5[::-1])),
        ),  # fmt: skip
        # (SciPy keeps a memo on these functions: the routine returned is an object the memo
        # holds too, both without tangents, which the mutation check's aliasing rule does not
        # tell from a value that shares memory with its fdata apart; filled first, so that the
        # call does not change it)
        case(sla.get_lapack_funcs, ("gtsv",), (_d5,), deviation=_MEMO),
        case(sla.get_blas_funcs, ("gemv",), (_d5,), deviation=_MEMO),
        case(np.ndarray.view, _any),
        case(np.ndarray.view, _any, np.float64),
        case(np.ndarray.view, _cplx, np.float64),
    ]
