"""Elementwise rules from tables of gradient functions.

One rule serves a callable on scalars and on arrays alike: the forward pass calls the callee
itself (``operator.add``, ``np.add``, ``math.sin``), so Python and NumPy keep their own
semantics (a Python float stays a float, ``-8.0 ** (1/3)`` is complex in Python and nan in
NumPy), and the pullback applies a *gradient function* to the cotangent:

    unary:  grad(g, x, z) -> the gradient for x          (z = f(x))
    binary: grad(g, x, y, z) -> the gradient for x or y  (z = f(x, y))

``g`` is the cotangent of ``z`` (an array, or a NumPy scalar: see ``numpy_scalar``).  For a
holomorphic function the gradient is ``g * conj(f'(x))`` (docs/tangents.md), which the
functions below spell out; ``common.send`` sums it back over broadcast axes and takes the real
part for real operands.
"""

from __future__ import annotations

import math
import types
import typing as t

import numpy as np

from gibbous.ir.names import CallableTable
from gibbous.infer.implementations import twin_helper
from gibbous.rules import formulas
from gibbous.tangents import pool
from gibbous.rules import render
from gibbous.library.common import (
    CD,
    NT,
    NUMERIC,
    Array,
    RuleResult,
    add_into,
    conj,
    cotangent,
    needs,
    new_fdata,
    quotient,
    scalar_rdata,
    send,
    zero_for,
)
from gibbous.rules.registry import PatternItem, primitive, registers_for_caller
from gibbous.tangents.model import CoDual

UnaryGrad = t.Callable[[t.Any, t.Any, t.Any], t.Any]
BinaryGrad = t.Callable[[t.Any, t.Any, t.Any, t.Any], t.Any]
FloatUnary = t.Callable[[float, float, float], t.Any]
FloatBinary = t.Callable[[float, t.Any, t.Any, float], t.Any]

registers_for_caller(__name__)  # register_all: the rules are its caller's

#: The formula of each gradient function, SciPy's included (``FORMULA``, below, holds only
#: those NumPy's namespace renders), and the formulas each rule of this module applies, by
#: operand (None: no gradient): for showing what a rule computes (``gibbous.inspect.facts``).
SHOWN_FORMULA: dict[t.Any, formulas.Expr] = {}
RULE_FORMULAS: CallableTable[t.Callable[..., t.Any], tuple[formulas.Expr | None, ...]] = CallableTable()


def numpy_scalar(g: t.Any) -> t.Any:
    """A Python scalar cotangent as a NumPy scalar: gradient functions then divide by zero the
    NumPy way (inf, nan) instead of raising ZeroDivisionError at a singular point whose primal
    was fine (``sqrt(0.0)``)."""
    if type(g) is float:
        return np.float64(g)
    if type(g) is complex:
        return np.complex128(g)
    return g


def unary_rule(grad: UnaryGrad) -> t.Callable[[CD, CD], RuleResult]:
    """The general rule: any operand, scalar or array, of any dtype.  Calls whose static types
    say more take a variant of it (``gibbous.library.elementwise.variants``)."""

    def rrule(f: CD, x: CD) -> RuleResult:
        xp = x.primal
        z = f.primal(xp)
        zf = new_fdata(z)

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            return unary_generic(grad, x, xp, z, zf, dz)

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"unary_rule({grad.__name__})"
    RULE_FORMULAS[rrule] = (SHOWN_FORMULA.get(grad),)
    return rrule


def unary_generic(
    grad: UnaryGrad, x: CD, xp: t.Any, z: t.Any, zf: t.Any, dz: t.Any
) -> tuple[t.Any, ...]:
    g = cotangent(zf, dz)
    if g is None or not needs(x):
        return NT, zero_for(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return NT, send(x, grad(numpy_scalar(g), xp, z))


def binary_rule(
    grad_x: BinaryGrad | None, grad_y: BinaryGrad | None
) -> t.Callable[[CD, CD, CD], RuleResult]:
    """The general rule (``None`` for an operand that never gets a gradient); calls whose
    static types say more take a variant (``elementwise_variants``)."""

    def rrule(f: CD, x: CD, y: CD) -> RuleResult:
        xp, yp = x.primal, y.primal
        z = f.primal(xp, yp)
        zf = new_fdata(z)

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            return binary_generic(grad_x, grad_y, x, y, xp, yp, z, zf, dz)

        return CoDual(z, zf), pullback

    names = [getattr(fn, "__name__", "-") for fn in (grad_x, grad_y)]
    rrule.__qualname__ = f"binary_rule({', '.join(names)})"
    RULE_FORMULAS[rrule] = tuple(SHOWN_FORMULA.get(g) for g in (grad_x, grad_y))
    return rrule


def binary_generic(
    grad_x: BinaryGrad | None,
    grad_y: BinaryGrad | None,
    x: CD,
    y: CD,
    xp: t.Any,
    yp: t.Any,
    z: t.Any,
    zf: t.Any,
    dz: t.Any,
) -> tuple[t.Any, ...]:
    g = cotangent(zf, dz)
    if g is None:
        return NT, zero_for(x), zero_for(y)
    g = numpy_scalar(g)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gx = send(x, grad_x(g, xp, yp, z)) if grad_x and needs(x) else zero_for(x)
        gy = send(y, grad_y(g, xp, yp, z)) if grad_y and needs(y) else zero_for(y)
    return NT, gx, gy


def register_all(
    fns: t.Iterable[object],
    rule: t.Callable[..., t.Any],
    patterns: t.Iterable[tuple[PatternItem, ...]],
) -> None:
    for fn in fns:
        for pattern in patterns:
            primitive(fn, *pattern)(rule)


UNARY_PATTERNS = [(kind,) for kind in NUMERIC]
BINARY_PATTERNS = [(a, b) for a in NUMERIC for b in NUMERIC]
SCALAR_UNARY = [NUMERIC[1:]]
SCALAR_BINARY = [(NUMERIC[1], NUMERIC[1])]

# --------------------------------------------------------------------------------------------
# Gradient functions shared by operators, ufuncs and math: the formulas of
# ``gibbous.rules.formulas`` rendered for NumPy values (``g`` is the cotangent) and, for the
# scalar fast paths of ``unary_rule`` and ``binary_rule``, for Python floats ``(dz, x, z)`` and
# ``(dz, x, y, z)``: plain float arithmetic, no NumPy scalars, no errstate.  Where Python raises
# (a division by zero, a domain error, an overflow) the rules fall back to the NumPy versions,
# which give the inf or nan NumPy would.


def _is_complex(x: t.Any) -> bool:
    """Whether ``x`` is a complex scalar or array: ``np.iscomplexobj`` without the array it
    makes of a Python scalar (a rule on scalars must allocate no NumPy memory)."""
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "c")
    return isinstance(x, (complex, np.complexfloating))


def _where(cond: t.Any, then: t.Any, otherwise: t.Any) -> t.Any:
    """``np.where`` that keeps scalars scalars."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, then, otherwise)
    return then if cond else otherwise


def _power(x: t.Any, p: t.Any) -> t.Any:
    # ``h ** 2``'s gradient is 2 h: no np.power(h, 1) over a large array
    if type(p) is int or type(p) is float:
        if p == 1:
            return x
        if p == 2 and type(x) is np.ndarray:
            return np.square(x)
    return np.power(x, p)


def _unit(x: t.Any) -> t.Any:
    if not _is_complex(x):
        return np.sign(x)
    a = np.abs(x)
    if isinstance(x, np.ndarray):
        return quotient(x, a)
    return x / a if a != 0 else x * 0


def _real_log(x: t.Any) -> t.Any:
    return np.log(x if _is_complex(x) else np.abs(x))


def _lift_base(x: t.Any, z: t.Any) -> t.Any:
    return x + 0j if _is_complex(z) and not _is_complex(x) else x


def _float_unit(x: float) -> float:
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    if x == 0:
        return 0.0
    raise ValueError("nan")  # the NumPy version: nan


_FUNCTIONS = tuple("cos sin cosh sinh sqrt exp exp2 log log1p copysign ldexp".split())
NUMPY: dict[str, t.Callable[..., t.Any]] = {
    **{name: getattr(np, name) for name in _FUNCTIONS + ("trunc", "rint")},
    "conj": conj,
    "where": _where,
    "power": _power,
    "unit": _unit,
    "real_log": _real_log,
    "lift_base": _lift_base,
    "digamma": lambda x: digamma(float(x)),  # math.gamma and math.lgamma: scalars
    "sinc": np.sinc,
    "magnitude": np.abs,
    "double": lambda x: np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64),
}
FLOAT: dict[str, t.Callable[..., t.Any]] = {
    **{name: getattr(math, name) for name in _FUNCTIONS},
    "trunc": math.trunc,
    "rint": round,
    "unit": _float_unit,
    "real_log": lambda x: math.log(abs(x)),
    "lift_base": lambda x, z: x,
    "digamma": lambda x: digamma(x),
}


for _fn in (*NUMPY.values(), *FLOAT.values()):  # (tangent functions run the formulas:
    if isinstance(_fn, types.FunctionType):  # derived again in a Hessian-vector product)
        twin_helper(_fn)

FORMULA: dict[t.Any, formulas.Expr] = {}  # of each gradient function below


def _render(table: dict[str, formulas.Expr], arity: int) -> tuple[dict[str, t.Any], dict[t.Any, t.Any]]:
    """The formulas of NumPy's and Python's functions (not SciPy's: ``scipy_special``)."""
    grads: dict[str, t.Any] = {}
    floats: dict[t.Any, t.Any] = {}
    for name, formula in table.items():
        if not formula.calls() <= set(NUMPY):
            continue
        grads[name] = render.numpy_pullback(f"g_{name}", formula, arity, NUMPY)
        FORMULA[grads[name]] = SHOWN_FORMULA[grads[name]] = formula
        fast = render.float_pullback(f"g_{name}", formula, arity, FLOAT)
        if fast is not None:
            floats[grads[name]] = fast
    return grads, floats


UNARY, FLOAT_UNARY = _render(formulas.UNARY, 1)
BINARY, FLOAT_BINARY = _render(formulas.BINARY, 2)

g_same, g_negate, g_conj, g_abs = (UNARY[n] for n in ("same", "negate", "conj", "abs"))
g_exp, g_exp2, g_expm1 = (UNARY[n] for n in ("exp", "exp2", "expm1"))
g_log, g_log2, g_log10, g_log1p = (UNARY[n] for n in ("log", "log2", "log10", "log1p"))
g_sqrt, g_cbrt = UNARY["sqrt"], UNARY["cbrt"]
g_square, g_reciprocal = UNARY["square"], UNARY["reciprocal"]
g_sin, g_cos, g_tan = (UNARY[n] for n in ("sin", "cos", "tan"))
g_arcsin, g_arccos, g_arctan = (UNARY[n] for n in ("arcsin", "arccos", "arctan"))
g_sinh, g_cosh, g_tanh = (UNARY[n] for n in ("sinh", "cosh", "tanh"))
g_arcsinh, g_arccosh, g_arctanh = (UNARY[n] for n in ("arcsinh", "arccosh", "arctanh"))
g_deg2rad, g_rad2deg = UNARY["deg2rad"], UNARY["rad2deg"]
g_erf, g_erfc, g_gamma, g_lgamma = (UNARY[n] for n in ("erf", "erfc", "gamma", "lgamma"))

g_first, g_negate2 = BINARY["first"], BINARY["negate"]
g_times_y, g_times_x, g_over_y, g_quotient_y = (
    BINARY[n] for n in ("times_y", "times_x", "over_y", "quotient_y")
)
g_mod_y, g_fmod_y, g_remainder_y = (BINARY[n] for n in ("mod_y", "fmod_y", "remainder_y"))
g_copysign_x, g_ldexp_x = BINARY["copysign_x"], BINARY["ldexp_x"]
g_pow_x, g_pow_y = BINARY["pow_x"], BINARY["pow_y"]
g_max_x, g_max_y, g_min_x, g_min_y = (BINARY[n] for n in ("max_x", "max_y", "min_x", "min_y"))
g_atan2_y, g_atan2_x = BINARY["atan2_y"], BINARY["atan2_x"]
g_hypot_x, g_hypot_y = BINARY["hypot_x"], BINARY["hypot_y"]
g_logaddexp_x, g_logaddexp_y = BINARY["logaddexp_x"], BINARY["logaddexp_y"]
g_logaddexp2_x, g_logaddexp2_y = BINARY["logaddexp2_x"], BINARY["logaddexp2_y"]
g_log_base_x, g_log_base_y = BINARY["log_base_x"], BINARY["log_base_y"]


_B12 = 691 / 32760  # the x**-12 coefficient of digamma's asymptotic series


def digamma(x: float) -> float:
    """The digamma function psi = Gamma'/Gamma of a real ``x`` (ValueError at its poles, the
    integers <= 0): for the gradients of ``math.gamma`` and ``math.lgamma`` without SciPy.

    Reflection below 1/2, the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the
    asymptotic series through x**-12, whose first omitted term is below 1e-15 there.
    """
    if x <= 0 and x == math.floor(x):
        raise ValueError("digamma has a pole at a non-positive integer")
    if x < 0.5:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    r = 1 / (x * x)
    series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132 - r * _B12)))))
    return shift + math.log(x) - 0.5 / x - series
