"""Cases for ``gibbous.library.scipy``'s decompositions and matrix functions (``matfuncs``,
``lu``, ``schur``, ``hessenberg``, ``sylvester``, ``banded``) and the helpers without a
derivative that its twins call (``decomp_twins``, ``structured_twins``, ``array_api``).
Without SciPy there are none.

Matrices are well conditioned with distinct eigenvalues (real ones for ``schur``'s real
output), and not symmetric where the function reads every entry.
"""

from __future__ import annotations

import importlib.util
import typing as t

import numpy as np

from gibbous.testing import case
from gibbous.testing.cases import RuleCase

CASES: list[RuleCase] = []

if importlib.util.find_spec("scipy") is not None:
    import scipy
    import scipy.linalg as sla
    from scipy._lib import _array_api

    from gibbous.library.scipy import array_api
    from gibbous.library.scipy.array_api import HELPERS as _helpers

    from gibbous.library.scipy import decomp_twins as dt
    from gibbous.library.scipy import linalg_twins as lt
    from gibbous.library.scipy import matfuncs as mf
    from gibbous.library.scipy import structured_twins as st

    _rng = np.random.default_rng(11)
    _a = np.array([[1.2, 0.3, -0.4], [0.5, 0.9, 0.2], [-0.1, 0.4, 1.5]])
    _spd = _a @ _a.T + np.eye(3)
    _v = np.array([[1.0, 0.2, 0.1], [0.3, 1.0, -0.2], [0.1, 0.4, 1.0]])
    _real = _v @ np.diag([1.0, 2.0, 3.5]) @ np.linalg.inv(_v)  # distinct real eigenvalues
    _band = np.array([[0.0, 0.5, -0.3], [4.0, 3.5, 5.0], [0.2, 0.6, 0.0], [0.1, 0.0, 0.0]])
    _hband = np.array([[0.0, 0.0, 0.2], [0.0, 0.4, -0.3], [3.0, 3.5, 4.0]])  # upper form
    # (the state check's calls at other shapes: the default grows the matrices by repeating
    # entries, which makes them singular or their eigenvalues repeated)
    _a4 = np.array(
        [[1.3, 0.2, -0.3, 0.1], [0.4, 1.0, 0.2, -0.2], [-0.2, 0.3, 1.6, 0.3], [0.1, -0.1, 0.2, 2.1]]
    )
    _spd4 = _a4 @ _a4.T + np.eye(4)
    _v4 = np.eye(4) + 0.2 * np.triu(np.ones((4, 4)), 1) - 0.1 * np.tril(np.ones((4, 4)), -1)
    _real4 = _v4 @ np.diag([1.0, 2.0, 3.5, 5.0]) @ np.linalg.inv(_v4)
    _rhs = np.array([0.5, -1.2, 0.8])
    _rhs2 = np.array([[0.5, 1.0], [-1.2, 0.3], [0.8, -0.7]])
    # SciPy 1.18 computes expm in C, in memory NumPy's allocation tracking does not see, so
    # the warm primal appears to allocate nothing; the rule's Frechet block (twice the size)
    # is made with NumPy, and expm of it allocates in SciPy's C again (before 1.18 the primal
    # allocates visibly and the check is skipped).
    _expm: dict[str, t.Any] = {}
    if np.lib.NumpyVersion(scipy.__version__) >= "1.18.0":
        _expm["deviation"] = (
            "allocations", "SciPy's expm allocates in C, unseen; the Frechet block is NumPy's"
        )
    CASES += [
        case(sla.expm, 0.5 * _a, **_expm),
        case(sla.expm, np.stack([0.5 * _a, -0.3 * _a.T]), **_expm),
        case(sla.expm, 0.5 * _a + 0.2j * _a.T, **_expm),
        case(sla.logm, _spd, other_args=(_spd4,)),
        case(mf.principal_sqrt, _spd, other_args=(_spd4,)),
        case(sla.signm, _a - 1.0 * np.eye(3), other_args=(_a4 - 1.5 * np.eye(4),)),
        case(sla.lu, _a, other_args=(_a4,)),
        case(sla.lu, _a, kwargs={"permute_l": True}, other_args=(_a4,)),
        case(sla.lu, _a.T, kwargs={"p_indices": True}, other_args=(_a4.T,)),
        case(sla.lu_factor, _a.T, other_args=(_a4.T,)),
        case(sla.schur, _real, other_args=(_real4,)),
        case(sla.hessenberg, _a + 0.2, other_args=(_a4 + 0.2,)),
        case(sla.hessenberg, _a + 0.2, kwargs={"calc_q": True}, other_args=(_a4 + 0.2,)),
        case(sla.solve_sylvester, _a, _spd, _rhs2 @ np.ones((2, 3)), other_args=(_a4, _spd4, _a4.T)),
        case(sla.solve_banded, (2, 1), _band, _rhs),
        case(sla.solve_banded, [2, 1], _band, _rhs2),
        case(sla.solveh_banded, _hband, _rhs),
        case(sla.solveh_banded, _hband[::-1].copy(), _rhs2, kwargs={"lower": True}),
        # helpers without a derivative (signs, checks, indices, SciPy's own tests)
        case(dt.signs, _v, -_v),
        case(dt.eigh_signs, np.linalg.eigh(_spd)[1], _spd, other_args=(np.linalg.eigh(_spd4)[1], _spd4)),
        case(dt.svd_signs, np.linalg.svd(_a)[0], _a, False, "gesvd", other_args=(np.linalg.svd(_a4)[0], _a4, False, "gesvd")),
        case(dt.rq_signs, np.eye(3), _a, other_args=(np.eye(4), _a4)),
        case(dt.permutation_rows, np.array([2, 1, 2], dtype=np.int32)),
        case(dt.inverse_order, np.array([2, 0, 1]), other_args=(np.array([3, 0, 2, 1]),)),
        case(lt.finite, _a, _rhs),
        case(mf.imaginary_negligible, _a + 1e-20j, None),
        case(st.band_index, (3, 4), False),
        case(st.matrix_index, (3, 4), True),
        case(st.circulant_near_zeros, np.fft.fft(_rhs), 3, None),
        case(
            st.vector_signs, np.eye(3), sla.eigh_tridiagonal, np.array([1.0, 2.0, 3.0]),
            np.array([0.2, 0.1]), other_args=(
                np.eye(4), sla.eigh_tridiagonal, np.array([1.0, 2.0, 3.0, 4.5]),
                np.array([0.2, 0.1, -0.3]),
            ),
        ),  # fmt: skip
        case(_array_api.array_namespace, _a),
        case(array_api.numpy_namespace, _helpers.array_namespace(_a) if _helpers else np),
        *(
            case(getattr(_helpers, _name), np)
            for _name in sorted(vars(_helpers) if _helpers is not None else ())
            if _name.startswith("is_") and _name.endswith("_namespace")
        ),
    ]
