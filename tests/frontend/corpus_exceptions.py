"""Exceptions and context managers in the style of real numerical code: ``try`` around an
optional fast path, ``with np.errstate``, ``finally`` clean-ups, handlers that re-raise,
context managers of the user's own.  Part of the frontend corpus (``corpus.CASES``): each runs
natively and through its IR, and its gradient is checked against finite differences."""

from __future__ import annotations

import contextlib
import math
import typing as t
import warnings

import numpy as np

from tests.frontend.samples import collector, vec

CASES, sample = collector()


SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])
INDEFINITE = np.array([[1.0, 2.0], [2.0, 1.0]])


@sample(2.0)
@sample(-1.0)
@sample(0.0)
def safe_log(x):
    try:
        return math.log(x)
    except ValueError:
        return -1e300


@sample(SPD, vec(1.0, -2.0, 0.5))
@sample(INDEFINITE, vec(1.0, 2.0))
def solve_fast_or_robust(a, b):
    """Cholesky where it works, a symmetric eigendecomposition where it does not."""
    try:
        c = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(a)
        return v @ ((v.T @ b) / w)
    y = np.linalg.solve(c, b)
    return np.linalg.solve(c.T, y)


@sample(vec(1.0, 2.0, 0.0), vec(2.0, 0.0, 0.0))
def ratio_ignoring_division_errors(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    return np.where(np.isfinite(r), r, 0.0)


@sample(vec(0.5, -1.5, 2.0))
def errstate_restored_after_the_block(x):
    with np.errstate(over="ignore"):
        y = np.exp(x) * 2.0
    return y, np.geterr()["over"]


@sample([1.0, 2.0, 3.0])
def finally_counts_every_pass(xs):
    total = 0.0
    passes = 0
    for x in xs:
        try:
            if x > 2.5:
                break
            total += x * x
        finally:
            passes += 1
    return total, passes


@sample(4.0)
@sample(0.0)
def nested_try(x):
    try:
        try:
            y = 1.0 / x
        except ZeroDivisionError:
            raise ValueError("x is zero") from None
        z = y * y
    except ValueError as e:
        z = float(len(str(e)))
    return z


@sample(vec(3.0, -1.0, 2.0))
def raise_inside_try_caught(v):
    best = 0.0
    for x in v:
        try:
            if x < 0:
                raise ArithmeticError("negative")
            best = best + math.sqrt(x)
        except ArithmeticError:
            best = best - 1.0
    return best


@sample({"a": 1.5, "b": 2.0}, "a")
@sample({"a": 1.5, "b": 2.0}, "c")
def dict_lookup_with_default(d, key):
    try:
        value = d[key]
    except KeyError:
        value = 0.5
    else:
        value = value * 2.0
    return value * d["b"]


@sample(2.0, 3.0)
@sample(2.0, "three")
def except_several_types(x, y):
    try:
        return x * y + 1.0
    except (TypeError, ValueError) as e:
        return len(type(e).__name__) * x


@sample(3.0)
def return_inside_try_with_finally(x):
    log = []
    try:
        log.append("try")
        return x * x, log
    finally:
        log.append("finally")


@sample(1.0)
@sample(0.0)
def suppress_division(x):
    y = 2.0
    with contextlib.suppress(ZeroDivisionError):
        y = y / x
    return y * x + y


class Recorder:
    """A context manager of the user's own: it records entries and exits, and can swallow
    the errors it is told to."""

    def __init__(self, swallow: bool) -> None:
        self.events: list[str] = []
        self.swallow = swallow

    def __enter__(self) -> Recorder:
        self.events.append("enter")
        return self

    def __exit__(self, kind: t.Any, exc: t.Any, tb: t.Any) -> bool:
        self.events.append("exit" if kind is None else f"exit {kind.__name__}")
        return self.swallow


@sample(2.0, True)
@sample(0.0, True)
@sample(0.0, False)
def user_context_manager(x, swallow):
    r = Recorder(swallow)
    y = 1.0
    try:
        with r as same:
            y = same.swallow + 3.0 / x
    except ZeroDivisionError:
        y = -1.0
    return y * x, r.events


@sample(2.0)
def warnings_caught(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x ** 0.5
    return y * x


def _check_positive(x):
    if x <= 0:
        raise ValueError("must be positive")
    return x


@sample(vec(1.0, -2.0, 3.0))
def skip_invalid_items(v):
    """A helper raises before it computes anything; the caller skips the item."""
    s = 0.0
    for x in v:
        try:
            s += math.log(_check_positive(x))
        except ValueError:
            continue
    return s


@sample(2.0)
@sample(-2.0)
def assert_checked(x):
    assert x > 0, "x must be positive"
    return x * 3.0


@sample(2.0)
@sample(-2.0)
def reraise_after_cleanup(x):
    state = [x]
    try:
        if x < 0:
            raise RuntimeError("negative")
        state.append(x * 2)
    except RuntimeError:
        state.append(-1.0)
        raise
    return sum(state)


@sample([1.0, 2.0, "3"])
def comprehension_inside_try(xs):
    try:
        return sum([x * 2.0 for x in xs])
    except TypeError:
        return float(len(xs))


@sample(vec(0.5, 1.5), 1)
@sample(vec(0.5, 1.5), 5)
def index_error_fallback(v, k):
    try:
        return v[k] * 2.0
    except IndexError:
        return v[-1]


@sample(3.0)
def with_in_a_loop(x):
    out = 0.0
    for k in range(3):
        with np.errstate(all="ignore"):
            out = out + x / (k + 1)
    return out


@sample(1.5)
def exception_attributes(x):
    y = x * 2.0
    try:
        raise ValueError("bad", y)  # exceptions carry no derivative (docs/decisions.md)
    except ValueError as e:
        return y + len(e.args), e.args[0]


@sample(1.5, 3.0)
@sample(20.0, 0.5)
def locals_snapshot(x, w):
    y = x * 2.0
    if x > 10:
        z = 1.0  # unbound on the other path: locals() leaves it out
    d = locals()
    return d["y"] * d["w"] + len(d)


@sample(2.0)
@sample(0.0)
def try_except_else_finally(x):
    trace = []
    try:
        r = 4.0 / x
    except ZeroDivisionError:
        trace.append("except")
        r = 0.0
    else:
        trace.append("else")
        r = r + x
    finally:
        trace.append("finally")
    return r, trace
