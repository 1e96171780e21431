"""A rewrite pass: ``x ** 2`` becomes ``x * x`` where that computes exactly the same thing.

Run it: ``python examples/square_to_mul.py`` prints a function's IR before and after the pass,
derives its gradient with the pass in the pipeline, and runs the pass under the pass manager.

Where the rewrite is exact is a question about NumPy and libm, answered by the operand types
the typed IR carries (``f64[:]``, ``i64``, ``any``...):

* **float and integer arrays** (``float16``/``float32``/``float64``, signed and unsigned
  integers): ``a ** 2``, ``pow(a, 2)`` and ``np.power(a, 2)`` give the same bits as ``a * a``,
  including ``inf``, ``nan`` and ``-0.0``; integers wrap the same way.  The exponent ``2.0``
  (a Python float) qualifies on float arrays only: on an integer array it makes the result
  ``float64``, where ``a * a`` stays integer.
* **float scalars** do not qualify: a Python float's ``x ** 2`` raises ``OverflowError`` where
  ``x * x`` gives ``inf``, and it calls libm's ``pow``, which need not be correctly rounded
  (with glibc about 1 in 1000 random doubles square to a different last bit than ``x * x``).
* **integer scalars** do not either: the IR's ``i64`` is a Python int or an ``np.int64``, and
  NumPy's scalar multiply warns on overflow where its scalar power silently wraps.
* **complex arrays**, ``bool`` arrays (``**`` promotes them to ``int8``), ``longdouble``,
  ``object`` arrays, arrays of unknown dtype and ``any`` operands: not rewritten.
* only the exponents ``2`` and ``2.0`` as Python constants: ``np.float64(2.0)`` would promote a
  ``float32`` array to ``float64``; ``math.pow`` always returns a float and raises on
  overflow, so it is never rewritten.

``tests/examples/test_square_to_mul.py`` checks the array claims against the NumPy that is
installed, so a NumPy that changes them fails a test instead of changing results.
"""

from __future__ import annotations

import builtins
import operator
import re
import sys
import typing as t
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout: import gibbous from it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gibbous.ir.core import Call, Constant, Function, Value  # noqa: E402
from gibbous.ir.types import Array, Type, widen  # noqa: E402
from gibbous.passes import register_pass  # noqa: E402
from gibbous.passes.rewrite import Match, PatternPass, Rewriter, pattern  # noqa: E402

#: The callables that square their first argument when called as ``f(x, 2)``.
SQUARING_CALLEES: tuple[object, ...] = (operator.pow, builtins.pow, np.power)

#: Array dtypes on which ``x ** 2`` and ``x * x`` agree bit for bit (see the module docstring).
FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})
INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


def squared_operand(call: Call) -> Value | None:
    """``x`` if ``call`` computes ``x ** 2`` in a way that ``x * x`` reproduces exactly."""
    callee = call.callee
    if not isinstance(callee, Constant) or not any(callee.value is c for c in SQUARING_CALLEES):
        return None  # (the pattern's match says so too; the test suite calls this directly)
    if call.kwargs or len(call.args) != 2:
        return None  # pow(x, 2, mod), np.power(x, 2, out=buf): something else
    base, exponent = call.args
    if not isinstance(exponent, Constant):
        return None
    return base if _exact_on(widen(base.type), exponent.value) else None


def _exact_on(base: Type, exponent: object) -> bool:
    if not isinstance(base, Array) or base.dtype is None:
        return False
    # type() is not isinstance(): True == 1 and np.float64(2.0) == 2, but they promote
    # differently, and only the Python int 2 and float 2.0 were checked.
    if type(exponent) is int and exponent == 2:
        return base.dtype in FLOAT_DTYPES or base.dtype in INT_DTYPES
    if type(exponent) is float and exponent == 2.0:
        return base.dtype in FLOAT_DTYPES
    return False


@pattern(Match(callees=SQUARING_CALLEES))
def square(call: Call, rw: Rewriter) -> bool:
    """``x ** 2`` -> ``x * x``.  The new call keeps the old one's result type and name (and
    the rewriter gives it its location): it computes the same value, so every use stays as
    well typed as it was."""
    x = squared_operand(call)
    if x is None:
        return False
    rw.replace(rw.call(operator.mul, x, x, type=call.type, name=call.result.name))
    return True


@register_pass
class SquareToMul(PatternPass):
    """Rewrite exact squarings ``x ** 2`` into ``x * x``."""

    name = "square-to-mul"
    description = "x ** 2 -> x * x on float and integer arrays (bit-exact)"
    patterns = (square,)


# --------------------------------------------------------------------------------------------
# Running the example


def energy(x: np.ndarray[t.Any, np.dtype[np.float64]], k: int) -> float:
    """A function with one squaring the pass rewrites and two it must leave alone."""
    spring = np.sum(x**2)  # f64[:] ** 2: rewritten
    cubic = np.sum(x**3)  # exponent 3: not a square
    scale = float(k) ** 2  # a float scalar: libm's pow, kept
    return float(scale * spring + 0.1 * cubic)


def main() -> None:
    import gibbous
    from gibbous.inspect import code_ir, format_rule_table, rule_table
    from gibbous.passes import Pass, PassManager

    x, k = np.array([0.5, -1.5, 2.0]), 3
    before = code_ir(energy, x, k, stage="typed")
    print("typed IR of energy(x, k), before the pass:\n")
    print(_without_locations(before))
    after = code_ir(energy, x, k, stage="typed")
    changed = SquareToMul().run(after)
    print(f"after square-to-mul (changed: {changed}):\n")
    print(_without_locations(after))

    # In build_rrule: the pipeline is replaced, so keep the standard passes and add ours.
    pipeline: list[Pass | str] = ["fold", SquareToMul(), "dce", "cse", "simplify-cfg"]
    rule = gibbous.build_rrule(energy, x, k, passes=pipeline)
    y, (_, dx, _) = gibbous.value_and_gradient(rule, energy, x, k)
    fd = _central_differences(lambda: energy(x, k), x)
    print("gradient with the pass in build_rrule's pipeline:")
    print(f"  value {y:.12g}")
    print(f"  gibbous      {np.array2string(dx, precision=9)}")
    print(f"  finite diff  {np.array2string(fd, precision=9)}")
    print(f"  max |difference| {np.max(np.abs(dx - fd)):.1e}\n")

    rows = rule_table(energy, x, k, passes=pipeline)
    print("the rules the derived gradient uses (gibbous.inspect.rule_table, same pipeline):")
    print(format_rule_table(rows, inactive=False))

    pm = PassManager(pipeline, verify=True, timing=True)
    pm.run(code_ir(energy, x, k, stage="typed"))
    print("the same pipeline under PassManager(verify=True, timing=True): the IR verified")
    print("after every pass; the time each took:")
    for name, seconds in pm.timings:
        print(f"  {name:14} {seconds * 1e6:8.1f} us")


def _central_differences(
    f: t.Callable[[], float], x: np.ndarray[t.Any, np.dtype[np.float64]]
) -> np.ndarray[t.Any, np.dtype[np.float64]]:
    eps = 1e-6
    out = np.empty_like(x)
    for i in range(x.size):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        out[i] = (up - down) / (2 * eps)
    return out


def _without_locations(f: Function) -> str:
    # Source locations name this file's absolute path; they are noise in a printed example.
    return re.sub(r' loc\("(?:[^"\\]|\\.)*":\d+\)', "", str(f))


if __name__ == "__main__":
    main()
