"""SciPy: rules for ``scipy.special``'s losses, divergences, transforms and elementary
functions, in both modes, from the formulas of ``gibbous.rules.formulas``.

* losses and divergences: ``huber(delta, r)``, ``pseudo_huber(delta, r)``, ``kl_div(x, y)``,
  ``rel_entr(x, y)``, ``entr(x)``;
* transforms: ``boxcox(x, lmbda)``, ``boxcox1p``, ``inv_boxcox(y, lmbda)``, ``inv_boxcox1p``,
  in both operands; ``log_expit``, ``ndtri_exp``, ``owens_t(h, a)``;
* SciPy's own elementary functions: ``log1p expm1 exp2 exp10 cbrt cosm1 powm1 exprel``, the
  trigonometric functions of degrees ``sindg cosdg tandg cotdg``, and ``dawsn erfi
  wrightomega``; ``round`` (no derivative).

At the edges of a domain the derivative is the one-sided one where the function is finite on
one side only (``pseudo_huber`` at ``delta = 0``: ``|r|``; ``kl_div`` and ``rel_entr`` in ``x``
at ``x = 0``: ``-inf``), and ``huber``'s is continuous where ``|r| = delta``.  Real operands,
and complex ones for ``log1p expm1`` (holomorphic there).
"""

from __future__ import annotations

import scipy.special as sps

from gibbous.library.common import NUMERIC
from gibbous.library.elementwise import tables
from gibbous.library.scipy.ufuncs import Operand, register, register_types
from gibbous.rules.registry import zero_derivative

UNARY: dict[object, Operand] = {
    # SciPy's versions of NumPy's functions: NumPy's formulas
    sps.log1p: tables.g_log1p,
    sps.expm1: tables.g_expm1,
    sps.exp2: tables.g_exp2,
    sps.cbrt: tables.g_cbrt,
    **{
        fn: fn.__name__
        for fn in (sps.exp10, sps.cosm1, sps.exprel, sps.sindg, sps.cosdg, sps.tandg, sps.cotdg,
                   sps.dawsn, sps.erfi, sps.wrightomega, sps.entr, sps.log_expit, sps.ndtri_exp)
    },
}  # fmt: skip
BINARY: dict[object, tuple[Operand, Operand]] = {
    fn: (f"{fn.__name__}_x", f"{fn.__name__}_y")
    for fn in (sps.huber, sps.pseudo_huber, sps.kl_div, sps.rel_entr, sps.boxcox, sps.boxcox1p,
               sps.inv_boxcox, sps.inv_boxcox1p, sps.owens_t, sps.powm1)
}  # fmt: skip

register(UNARY, BINARY, complex_ok=(sps.log1p, sps.expm1))

# round: to the nearest integer, locally constant
for _kind in NUMERIC:
    zero_derivative(sps.round, _kind)
register_types([sps.round])
