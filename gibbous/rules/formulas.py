"""Elementwise derivatives, each written once, as data.

A *formula* is the gradient of one operand of an elementwise function, ``g * conj(f'(x))``
for a holomorphic ``f`` (docs/tangents.md), written in a tiny vocabulary: the cotangent ``g``,
the operands ``x`` and ``y``, the result ``z``; numbers; ``+ - * / **``, negation, ``conj``,
comparisons, ``where`` and calls of named elementwise functions (``cos``, ``digamma``...).
Python's operators build the tree, so a formula reads as the derivative does, evaluated in the
order Python would evaluate it (the renderings keep that order, hence their numbers).

The table is rendered, once, at import, into every form a rule needs:

* ``gibbous.rules.render.numpy_pullback``: a Python function of NumPy values (scalars or
  arrays), compiled from source;
* ``gibbous.rules.render.float_pullback``: the same on Python floats, with ``math``; it raises
  at a singular point (the rule then falls back to the NumPy form, which gives inf or nan);
* ``gibbous.rules.render.inline_adjoint``: the arithmetic written into a reverse program
  (``gibbous.rules.inline``);
* ``gibbous.rules.render.kernel``: a partial that writes into a buffer with ``out=``
  (``gibbous.rules.inplace``: allocation-free pullbacks).

A function name means what the rendering's namespace says it means (``cos`` is ``np.cos`` or
``math.cos``), so a formula names the mathematical function, and a new rendering (forward mode,
say) is one more interpreter of this table, not sixty formulas rewritten.  Ties and singular
points are part of the formula (``where``), so every rendering has the same conventions.
"""

from __future__ import annotations

import math
import typing as t

import attrs

Number = t.Union[int, float]


def _infix(op: str, reflected: bool = False) -> t.Callable[[Expr, Operand], Expr]:
    def method(self: Expr, other: Operand) -> Expr:
        return Expr(op, (lift(other), self) if reflected else (self, lift(other)))

    return method


@attrs.frozen
class Expr:
    """A node: ``op`` is ``var`` (``name`` is g, x, y or z), ``const`` (``value``), ``call``
    (``name`` is the function), or an operator: ``+ - * / ** // neg conj where == > < &``."""

    op: str
    args: tuple[Expr, ...] = ()
    name: str = ""
    value: Number = 0

    __add__, __radd__ = _infix("+"), _infix("+", reflected=True)
    __sub__, __rsub__ = _infix("-"), _infix("-", reflected=True)
    __mul__, __rmul__ = _infix("*"), _infix("*", reflected=True)
    __truediv__, __rtruediv__ = _infix("/"), _infix("/", reflected=True)
    __floordiv__, __pow__ = _infix("//"), _infix("**")

    def __neg__(self) -> Expr:
        return Expr("neg", (self,))

    def __and__(self, other: Expr) -> Expr:
        return Expr("&", (self, other))

    def eq(self, other: Operand) -> Expr:
        return Expr("==", (self, lift(other)))

    def variables(self) -> set[str]:
        if self.op == "var":
            return {self.name}
        return set().union(*[a.variables() for a in self.args])

    def calls(self) -> set[str]:
        own = {self.name} if self.op == "call" else set()
        return own.union(*[a.calls() for a in self.args])

    def ops(self) -> set[str]:
        return {self.op}.union(*[a.ops() for a in self.args])


Operand = t.Union[Expr, int, float]


def lift(v: Operand) -> Expr:
    return v if isinstance(v, Expr) else Expr("const", value=v)


def fn(name: str) -> t.Callable[..., Expr]:
    def call(*args: Operand) -> Expr:
        return Expr("call", tuple(lift(a) for a in args), name)

    return call


def conj(e: Expr) -> Expr:
    return Expr("conj", (e,))


def where(cond: Expr, then: Operand, otherwise: Operand) -> Expr:
    return Expr("where", (cond, lift(then), lift(otherwise)))


def greater(a: Expr, b: Expr) -> Expr:
    return Expr(">", (a, b))


def less(a: Expr, b: Expr) -> Expr:
    return Expr("<", (a, b))


g, x, y, z = (Expr("var", name=n) for n in "gxyz")

cos, sin, cosh, sinh, sqrt, exp, exp2, log, log1p, trunc, rint, copysign, ldexp = map(
    fn, "cos sin cosh sinh sqrt exp exp2 log log1p trunc rint copysign ldexp".split()
)
digamma, trigamma, polygamma, zeta = map(fn, "digamma trigamma polygamma zeta".split())
# Named here for what they mean at a branch or a singular point:
unit = fn("unit")  # x / |x|, 0 at 0: the sign of a real number
real_log = fn("real_log")  # log |x| of a real x (d/dy Re(x**y) at a negative base), log x else
lift_base = fn("lift_base")  # x, complex where x**y is (a negative Python float to a fraction)
stdtr_ddf, t_pdf = fn("stdtr_ddf"), fn("t_pdf")
sinc, magnitude = fn("sinc"), fn("magnitude")  # NumPy's normalised sinc; |x|
double = fn("double")  # x in double precision: where a difference cancels in single


def _sinc_slope(x: Expr) -> Expr:
    """d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, whose difference cancels near 0: there the
    series -pi^2 x / 3 + pi^4 x^3 / 30 (exact to rounding for |x| < 1e-4; 0 at 0)."""
    small = less(magnitude(x), lift(1e-4))
    far = (cos(math.pi * x) - sinc(x)) / where(small, 1, x)
    near = (math.pi**2 / 3) * x * ((math.pi * x) ** 2 / 10 - 1)
    return where(small, near, far)

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2 * math.pi)
HALF_SQRT_PI = math.sqrt(math.pi) / 2
SQRT_PI = math.sqrt(math.pi)
SQRT2 = math.sqrt(2.0)
DEGREE = math.pi / 180

# SciPy's special functions, by SciPy's names (``gibbous.library.scipy`` renders them with
# ``scipy.special``; each has rules of its own, so a written tangent can be differentiated).
j0, j1, jv, jve, y0, y1, yv, yve = map(fn, "j0 j1 jv jve y0 y1 yv yve".split())
i0, i0e, i1, i1e, iv, ive = map(fn, "i0 i0e i1 i1e iv ive".split())
k0, k0e, k1, k1e, kv, kve = map(fn, "k0 k0e k1 k1e kv kve".split())
struve, modstruve, hyp0f1 = map(fn, "struve modstruve hyp0f1".split())
gamma, gammaln, xlogy, expit, erf = map(fn, "gamma gammaln xlogy expit erf".split())
expn, exprel, sindg, cosdg = map(fn, "expn exprel sindg cosdg".split())
eval_hermite, eval_hermitenorm, eval_chebyu = map(
    fn, "eval_hermite eval_hermitenorm eval_chebyu".split()
)
multidigamma = fn("multidigamma")  # the sum of digamma(a - j / 2) for j < d


def _series(u: Expr, coefficients: t.Sequence[float]) -> Expr:
    """The polynomial ``c0 + c1 u + c2 u**2 + ...`` (Horner's order)."""
    e = lift(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        e = c + u * e
    return e


def _small(u: Expr) -> Expr:
    """|u| < 1e-2: where a difference below cancels (its error is about 2e-16 / |u|
    relative), and its series, to the 7th term, is exact to rounding."""
    return less(magnitude(u), lift(1e-2))


def _exprel_slope(u: Expr) -> Expr:
    """The derivative of exprel(u) = (e**u - 1) / u: (e**u - exprel(u)) / u, near 0 its series
    sum of n u**(n - 1) / (n + 1)!.  Also Box-Cox's slope in lambda, which is
    log(x)**2 exprel'(lambda log(x))."""
    near = _series(u, [1 / 2, 1 / 3, 1 / 8, 1 / 30, 1 / 144, 1 / 840, 1 / 5760])
    return where(_small(u), near, (exp(u) - exprel(u)) / where(_small(u), 1, u))


def _log1p_ratio_slope(u: Expr) -> Expr:
    """h(u) = (u / (1 + u) - log1p(u)) / u**2, the slope of the inverse Box-Cox transform in
    lambda over y**2 (u = lambda y): near 0 its series sum of (-1)**(k + 1) (k - 1) / k
    u**(k - 2), from -1/2."""
    near = _series(u, [-1 / 2, 2 / 3, -3 / 4, 4 / 5, -5 / 6, 6 / 7, -7 / 8, 8 / 9])
    safe = where(_small(u), 1, u)
    return where(_small(u), near, (u / (1 + u) - log1p(u)) / (safe * safe))


def _struve_term(v: Expr, x: Expr) -> Expr:
    """What the Struve functions add to the Bessel recurrence: 2 H_v' = H_(v-1) - H_(v+1) +
    (x/2)**v / (sqrt(pi) gamma(v + 3/2)) (DLMF 11.4.24; L_v's the same, 11.4.26), halved."""
    return (x / 2) ** v / (2 * SQRT_PI * gamma(v + 1.5))


def _hypot1(u: Expr) -> Expr:
    return sqrt(1 + u * u)


def _unless(cond: Expr, value: Expr, safe: Operand) -> Expr:
    """``value``, or ``safe`` where ``cond`` holds: the operand of a branch ``where`` does not
    take there, kept finite (a Hessian-vector product differentiates both branches, and the
    one not taken, if it were inf or nan there, would make 0 * inf)."""
    return where(cond, safe, value)


def _rgamma_slope(x: Expr, z: Expr) -> Expr:
    """(1 / gamma)' = -digamma(x) / gamma(x); below 1/2, where gamma has its poles (and 1 / gamma
    its zeros), the derivative of the reflection 1 / gamma(x) = sin(pi x) gamma(1 - x) / pi,
    cos(pi x) gamma(1 - x) - digamma(1 - x) / gamma(x), which holds at the poles too."""
    left = less(x, lift(0.5))
    u = where(left, x, 0)  # (0 elsewhere: gamma(1 - u) stays finite)
    reflected = cos(math.pi * u) * gamma(1 - u) - z * digamma(1 - u)
    return where(left, reflected, -z * digamma(_unless(left, x, 1)))


def _pseudo_huber_delta(delta: Expr, r: Expr, z: Expr) -> Expr:
    """d/d delta of pseudo_huber = delta**2 (s - 1), s = sqrt(1 + (r / delta)**2), as
    z**2 / (delta**3 s), written (z / delta) (z / delta**2) / s (no square of z to overflow)."""
    d = _unless(delta.eq(0), delta, 1)
    return z / d * (z / (d * d)) / _hypot1(r / d)


def ties(a: Expr, b: Expr, wins: t.Callable[[Expr, Expr], Expr]) -> Expr:
    """1 where ``a`` is chosen, 1/2 at a tie: the mean of the two one-sided derivatives, which
    is what a central difference measures there."""
    return where(wins(a, b), 1.0, where(a.eq(b), 0.5, 0.0))


def ratio(a: Expr, b: Expr) -> Expr:
    """a / b, 0 where b == 0 (the gradient of a norm at the origin: a subgradient); the
    division by 1 there keeps it from warning."""
    return where(b.eq(0), 0, a / where(b.eq(0), 1, b))


# --------------------------------------------------------------------------------------------
# The table: gradients of one-operand functions (of g, x, z) ...

UNARY: dict[str, Expr] = {
    "same": g,
    "negate": -g,
    "conj": conj(g),
    "exp": g * conj(z),
    "exp2": g * conj(z) * LN2,
    "expm1": g * conj(z + 1),
    "log": g / conj(x),
    "log2": g / (conj(x) * LN2),
    "log10": g / (conj(x) * LN10),
    "log1p": g / conj(1 + x),
    "sqrt": g / conj(2 * z),
    "cbrt": g / conj(3 * z * z),
    "square": g * conj(2 * x),
    "reciprocal": -g * conj(z * z),
    "sin": g * conj(cos(x)),
    "cos": -g * conj(sin(x)),
    "tan": g * conj(1 + z * z),
    "arcsin": g / conj(sqrt(1 - x * x)),
    "arccos": -g / conj(sqrt(1 - x * x)),
    "arctan": g / conj(1 + x * x),
    "sinh": g * conj(cosh(x)),
    "cosh": g * conj(sinh(x)),
    "tanh": g * conj(1 - z * z),
    "arcsinh": g / conj(sqrt(x * x + 1)),
    # Not sqrt(x * x - 1): that has the opposite sign on NumPy's branch for Re(x) < 0.
    "arccosh": g / conj(sqrt(x - 1) * sqrt(x + 1)),
    "arctanh": g / conj(1 - x * x),
    "deg2rad": g * (math.pi / 180),
    "rad2deg": g * (180 / math.pi),
    "abs": g * unit(x),  # not holomorphic: no conj; a subgradient 0 at 0
    "erf": g * conj(TWO_OVER_SQRT_PI * exp(-x * x)),
    "erfc": -g * conj(TWO_OVER_SQRT_PI * exp(-x * x)),
    "gamma": g * conj(z * digamma(x)),
    "lgamma": g * conj(digamma(x)),  # also log|gamma|: (log|f|)' = f'/f
    "sinc": g * conj(_sinc_slope(double(x))),
    # SciPy's
    "expit": g * (z * (1 - z)),
    "logit": g / (x * (1 - x)),
    "digamma": g * zeta(2, x),  # polygamma(1, x), keeping scalars scalars
    # The normal distribution: ndtr is its CDF Phi, log_ndtr log Phi (whose derivative
    # phi / Phi is written to stay finite far into the lower tail), ndtri Phi^-1.
    "ndtr": g * conj(exp(-x * x / 2) / SQRT_2PI),
    "log_ndtr": g * conj(exp(-x * x / 2 - z) / SQRT_2PI),
    "ndtri": g * (SQRT_2PI * exp(z * z / 2)),
    "erfcx": g * conj(2 * x * z - TWO_OVER_SQRT_PI),
    "erfinv": g * (HALF_SQRT_PI * exp(z * z)),
    "erfcinv": -g * (HALF_SQRT_PI * exp(z * z)),
    # Bessel functions of orders 0 and 1, by the recurrence of jv's (below); the exponentially
    # scaled ones (i0e = exp(-|x|) i0, k0e = exp(x) k0) with their scale's slope
    "j0": -g * j1(x),
    "j1": g * (j0(x) - jv(2, x)) / 2,
    "y0": -g * y1(x),
    "y1": g * (y0(x) - yv(2, x)) / 2,
    "i0": g * i1(x),
    "i1": g * (i0(x) + iv(2, x)) / 2,
    "i0e": g * (i1e(x) - unit(x) * z),
    "i1e": g * ((i0e(x) + ive(2, x)) / 2 - unit(x) * z),
    "k0": -g * k1(x),
    "k1": -g * (k0(x) + kv(2, x)) / 2,
    "k0e": g * (z - k1e(x)),
    "k1e": g * (z - (k0e(x) + kve(2, x)) / 2),
    # Exponential integrals, 1 / gamma (an entire function, 0 at gamma's poles), the
    # dilogarithm spence(x) = -Li2(1 - x)
    "exp1": -g * (exp(-x) / x),
    "expi": g * (exp(x) / x),
    "rgamma": g * _rgamma_slope(x, z),
    "spence": g * where(x.eq(1), -1, log(x) / (1 - _unless(x.eq(1), x, 0))),
    # Entropies, logistic and normal tails
    "entr": -g * (log(x) + 1),
    "log_expit": g * expit(-x),
    "ndtri_exp": g * (SQRT_2PI * exp(x + z * z / 2)),
    # Elementary functions: in degrees, less one, ...
    "sindg": g * (DEGREE * cosdg(x)),
    "cosdg": -g * (DEGREE * sindg(x)),
    "tandg": g * (DEGREE * (1 + z * z)),
    "cotdg": -g * (DEGREE * (1 + z * z)),
    "cosm1": -g * sin(x),
    "exp10": g * (z * LN10),
    "exprel": g * _exprel_slope(x),
    "dawsn": g * (1 - 2 * x * z),
    "erfi": g * (TWO_OVER_SQRT_PI * exp(x * x)),
    "wrightomega": g * (z / (1 + z)),
}

# ... and of two-operand functions (of g, x, y, z), by function and operand.

def _beta(a: Expr, b: Expr) -> Expr:
    return digamma(a) - digamma(a + b)


BINARY: dict[str, Expr] = {
    "first": g,
    "negate": -g,
    "times_y": g * conj(y),
    "times_x": g * conj(x),
    "over_y": g / conj(y),
    "quotient_y": -g * conj(z / y),  # -x / y**2 as -z / y: no square to overflow
    "mod_y": -g * (x // y),  # x % y = x - y * (x // y), the quotient locally constant
    "fmod_y": -g * trunc(x / y),
    "remainder_y": -g * rint((x - z) / y),  # IEEE: x - n y, n the integer nearest x / y
    # |x| sign(y): the sign of y by copysign, which sees -0.0; a subgradient at x == 0
    "copysign_x": g * unit(x) * copysign(1.0, y),
    "ldexp_x": g * ldexp(1.0, y),
    # y x**(y-1), 0 where y == 0 (x**(y-1) would be inf at x == 0)
    "pow_x": g * conj(where(y.eq(0), 0, y * lift_base(x, z) ** (y - 1))),
    "pow_y": g * conj(where(x.eq(0), 0, z * real_log(lift_base(x, z)))),
    "max_x": g * ties(x, y, greater),
    "max_y": g * ties(y, x, greater),
    "min_x": g * ties(x, y, less),
    "min_y": g * ties(y, x, less),
    # fmax, fmin: a NaN operand loses (fmin(x, nan) is x), so the other one gets g
    "fmax_x": g * where(x.eq(x), where(y.eq(y), ties(x, y, greater), 1.0), 0.0),
    "fmax_y": g * where(y.eq(y), where(x.eq(x), ties(y, x, greater), 1.0), 0.0),
    "fmin_x": g * where(x.eq(x), where(y.eq(y), ties(x, y, less), 1.0), 0.0),
    "fmin_y": g * where(y.eq(y), where(x.eq(x), ties(y, x, less), 1.0), 0.0),
    "atan2_y": g * y / (y * y + x * x),  # atan2(y, x): the first operand is y
    "atan2_x": -g * x / (y * y + x * x),
    "hypot_x": g * ratio(x, z),
    "hypot_y": g * ratio(y, z),
    "logaddexp_x": g * exp(x - z),
    "logaddexp_y": g * exp(y - z),
    "logaddexp2_x": g * exp2(x - z),
    "logaddexp2_y": g * exp2(y - z),
    "log_base_x": g / (x * log(y)),  # math.log(x, base)
    "log_base_y": -g * z / (y * log(y)),
    # SciPy's.  xlogy(x, y) = x log(y) is 0 wherever x == 0: y gets nothing there, and x gets 0
    # where log(y) = -inf (not differentiable: 0 at x == 0, -inf beside).
    "xlogy_x": g * conj(where(x.eq(0) & y.eq(0), 0, log(y))),
    "xlogy_y": g * conj(where(x.eq(0), 0, x / y)),
    "xlog1py_x": g * conj(where(x.eq(0) & y.eq(-1), 0, log1p(y))),
    "xlog1py_y": g * conj(where(x.eq(0), 0, x / (1 + y))),
    "beta_x": g * z * _beta(x, y),
    "beta_y": g * z * _beta(y, x),
    "betaln_x": g * _beta(x, y),  # log|B|: (log|f|)' = f'/f
    "betaln_y": g * _beta(y, x),
    "polygamma_y": g * polygamma(x + 1, y),
    "stdtr_x": g * stdtr_ddf(x, y),  # stdtr(df, x): the first operand is df
    "stdtr_y": g * t_pdf(y, x),
    # Bessel functions of real order x at y: 2 C_v' = C_(v-1) - C_(v+1) for J and Y, I's and
    # K's with their signs (DLMF 10.6.1, 10.29.1), scipy.special.jvp and its kin for n = 1;
    # jve and yve are jv and yv on real y; none in the order (refused)
    "jv_y": g * (jv(x - 1, y) - jv(x + 1, y)) / 2,
    "jve_y": g * (jve(x - 1, y) - jve(x + 1, y)) / 2,
    "yv_y": g * (yv(x - 1, y) - yv(x + 1, y)) / 2,
    "yve_y": g * (yve(x - 1, y) - yve(x + 1, y)) / 2,
    "iv_y": g * (iv(x - 1, y) + iv(x + 1, y)) / 2,
    "ive_y": g * ((ive(x - 1, y) + ive(x + 1, y)) / 2 - unit(y) * z),
    "kv_y": -g * (kv(x - 1, y) + kv(x + 1, y)) / 2,
    "kve_y": g * (z - (kve(x - 1, y) + kve(x + 1, y)) / 2),
    "struve_y": g * ((struve(x - 1, y) - struve(x + 1, y)) / 2 + _struve_term(x, y)),
    "modstruve_y": g * ((modstruve(x - 1, y) + modstruve(x + 1, y)) / 2 + _struve_term(x, y)),
    "hyp0f1_y": g * hyp0f1(x + 1, y) / x,
    # The regularized incomplete gamma functions P(a, y), Q(a, y) in y: -+ the gamma density
    # y**(a-1) e**-y / gamma(a); their inverses, 1 over it at the result; none in a (refused)
    "gammainc_y": g * exp(xlogy(x - 1, y) - y - gammaln(x)),
    "gammaincc_y": -g * exp(xlogy(x - 1, y) - y - gammaln(x)),
    "gammaincinv_y": g * exp(gammaln(x) + z - xlogy(x - 1, z)),
    "gammainccinv_y": -g * exp(gammaln(x) + z - xlogy(x - 1, z)),
    # E_n' = -E_(n-1), and E_0(y) = e**-y / y; zeta(x, q) in q; Pochhammer and binomial
    # through digamma; the log multivariate gamma in a (not in its integer dimension d)
    "expn_y": g * where(x.eq(0), -z * (1 + 1 / y), -expn(_unless(x.eq(0), x, 1) - 1, y)),
    "zeta_y": -g * x * zeta(x + 1, y),
    "poch_x": g * z * (digamma(x + y) - digamma(x)),
    "poch_y": g * z * digamma(x + y),
    "binom_x": g * z * (digamma(x + 1) - digamma(x - y + 1)),
    "binom_y": g * z * (digamma(x - y + 1) - digamma(y + 1)),
    "multigammaln_x": g * multidigamma(x, y),
    # Losses (x the threshold delta, y the residual r; pseudo_huber = delta**2 (s - 1) with
    # s = sqrt(1 + (r / delta)**2): d/d delta = z**2 / (delta**3 s), |r| at delta = 0, where
    # the function is 0 for every r) and divergences, -inf in x where x = 0
    "huber_x": g * where(greater(magnitude(y), x), magnitude(y) - x, 0),
    "huber_y": g * where(greater(magnitude(y), x), x * unit(y), y),
    "pseudo_huber_x": g * where(x.eq(0), magnitude(y), _pseudo_huber_delta(x, y, z)),
    "pseudo_huber_y": g * where(x.eq(0), 0, y / _hypot1(y / _unless(x.eq(0), x, 1))),
    "kl_div_x": g * log(x / y),
    "kl_div_y": g * where(x.eq(0), 1, 1 - x / _unless(x.eq(0), y, 1)),
    "rel_entr_x": g * (log(x / y) + 1),
    "rel_entr_y": g * where(x.eq(0), 0, -x / _unless(x.eq(0), y, 1)),
    # Box-Cox transforms of x (1 + x for boxcox1p) with parameter y, and their inverses
    # (inv_boxcox(x, y) = (1 + x y)**(1/y); inv_boxcox1p = inv_boxcox - 1)
    "boxcox_x": g * x ** (y - 1),
    "boxcox_y": g * (log(x) * log(x) * _exprel_slope(y * log(x))),
    "boxcox1p_x": g * (1 + x) ** (y - 1),
    "boxcox1p_y": g * (log1p(x) * log1p(x) * _exprel_slope(y * log1p(x))),
    "inv_boxcox_x": g * z / (1 + x * y),
    "inv_boxcox_y": g * z * x * x * _log1p_ratio_slope(x * y),
    "inv_boxcox1p_x": g * (z + 1) / (1 + x * y),
    "inv_boxcox1p_y": g * (z + 1) * x * x * _log1p_ratio_slope(x * y),
    # Owen's T(h, a) = int_0^a e**(-h**2 (1 + t**2) / 2) / (2 pi (1 + t**2)) dt; powm1 = x**y - 1
    "owens_t_x": -g * exp(-x * x / 2) / SQRT_2PI * erf(x * y / SQRT2) / 2,
    "owens_t_y": g * exp(-x * x * (1 + y * y) / 2) / (2 * math.pi * (1 + y * y)),
    "powm1_x": g * where(y.eq(0), 0, y * x ** (y - 1)),
    "powm1_y": g * where(x.eq(0), 0, (z + 1) * log(_unless(x.eq(0), x, 1))),
    # Orthogonal polynomials of degree x at y: H_n' = 2n H_(n-1), He_n' = n He_(n-1),
    # T_n' = n U_(n-1); none in the degree (refused)
    "eval_hermite_y": g * (2 * x * eval_hermite(_unless(x.eq(0), x, 1) - 1, y)),
    "eval_hermitenorm_y": g * (x * eval_hermitenorm(_unless(x.eq(0), x, 1) - 1, y)),
    "eval_chebyt_y": g * (x * eval_chebyu(_unless(x.eq(0), x, 1) - 1, y)),
}


# --------------------------------------------------------------------------------------------
# The tangent of a complex operand, from its gradient formula


def complex_tangent(e: Expr) -> Expr | None:
    """The tangent along ``g`` of the function whose gradient formula is ``e``, for complex
    operands (None: a formula this cannot turn).

    A formula is a real-linear map of the cotangent, ``P(g)``; the tangent is its adjoint under
    the real inner product ``Re <a, b>``.  Where ``g`` enters as ``g * c`` (never conjugated,
    ``conj(g)`` aside), that adjoint is ``conj(P(conj(d)))``: the same tree with ``conj``
    pushed down to the leaves, where two cancel (``g * conj(cos(x))`` becomes
    ``g * cos(x)``).  A real result keeps the real part of it (``abs``: ``Re(g conj(x)/|x|)``),
    which the renderer takes.  On real operands the renderings drop ``conj`` and this is the
    formula itself."""
    if "g" not in e.variables():
        return _conj(e)
    if e.op == "var":
        return e
    if e.op == "conj":
        inner = complex_tangent(e.args[0])
        return None if inner is None else _conj(inner)
    carriers = ["g" in a.variables() for a in e.args]
    linear = {"neg": 1, "+": 2, "-": 2, "*": 1, "/": 1, "where": 2}
    if e.op not in linear or sum(carriers) > linear[e.op]:
        return None
    if e.op == "/" and carriers[1] or e.op == "where" and carriers[0]:
        return None
    if e.op == "where":  # (the condition reads the operands, which the transform keeps)
        branches = [complex_tangent(a) for a in e.args[1:]]
        if None in branches:
            return None
        return Expr("where", (e.args[0], *t.cast(list[Expr], branches)))
    args = [complex_tangent(a) for a in e.args]
    if None in args:
        return None
    return Expr(e.op, tuple(t.cast(list[Expr], args)))


def _conj(e: Expr) -> Expr:
    if e.op == "conj":
        return e.args[0]
    return e if e.op == "const" else conj(e)


# Which formulas NumPy's ufuncs take, by name: for arrays and scalars (``gibbous.library.elementwise.ufuncs``) and
# with ``out=`` (``inplace``).
_SAME_NAMES = """exp exp2 expm1 log log2 log10 log1p sqrt cbrt square reciprocal sin cos tan arcsin
    arccos arctan sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg"""
UFUNCS_UNARY: dict[str, str] = {
    **{name: name for name in _SAME_NAMES.split()},
    "negative": "negate",
    "positive": "same",
    "absolute": "abs",  # also np.abs
    "fabs": "abs",
    "conjugate": "conj",  # also np.conj
}
UFUNCS_BINARY: dict[str, tuple[str, str]] = {
    "add": ("first", "first"),
    "subtract": ("first", "negate"),
    "multiply": ("times_y", "times_x"),
    "divide": ("over_y", "quotient_y"),  # also np.true_divide
    "power": ("pow_x", "pow_y"),
    "float_power": ("pow_x", "pow_y"),
    "remainder": ("first", "mod_y"),  # also np.mod
    "fmod": ("first", "fmod_y"),
    "maximum": ("max_x", "max_y"),
    "minimum": ("min_x", "min_y"),
    "fmax": ("fmax_x", "fmax_y"),
    "fmin": ("fmin_x", "fmin_y"),
    "arctan2": ("atan2_y", "atan2_x"),
    "hypot": ("hypot_x", "hypot_y"),
    "logaddexp": ("logaddexp_x", "logaddexp_y"),
    "logaddexp2": ("logaddexp2_x", "logaddexp2_y"),
}
# Python's arithmetic operators are these ufuncs' arithmetic, on scalars and arrays alike (by
# ``operator`` name; ``abs`` is also ``builtins.abs``).
OPERATORS_UNARY: dict[str, str] = {"neg": "negative", "pos": "positive", "abs": "absolute"}
OPERATORS_BINARY: dict[str, str] = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "pow": "power",
    "mod": "remainder",
}
