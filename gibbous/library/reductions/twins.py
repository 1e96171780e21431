"""NumPy's statistics whose own Python writes into an array of a type the build cannot tell,
as twins (``gibbous.infer.implementations``) that compute the same values without the write:

* ``numpy.corrcoef``: ``cov`` over the outer product of the standard deviations, clipped to
  [-1, 1] (NumPy clips in place, ``np.clip(c.real, -1, 1, out=c.real)``, into a covariance
  whose rank depends on the number of variables; a clip of the same values here).  Complex
  data is refused (NumPy clips its real and imaginary parts apart).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin
from gibbous.ir.exceptions import UnsupportedArgumentError


def corrcoef(x: t.Any, y: t.Any = None, rowvar: t.Any = True, *, dtype: t.Any = None) -> t.Any:
    """``numpy.corrcoef``: Pearson's correlation coefficients."""
    c = np.cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) != 2:  # (one variable: NumPy's ``diag`` raises, and it returns c / c)
        return c / c
    stddev = np.sqrt(np.diag(c).real)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if np.iscomplexobj(c):
        raise UnsupportedArgumentError("numpy.corrcoef of complex data: no rule")
    return np.clip(c, -1, 1)


register_twin(np.corrcoef, t.cast(types.FunctionType, corrcoef))
