"""Every differentiable function of the frontend corpus has a gradient that agrees with central
finite differences.

Each case of ``tests/frontend/corpus.py`` (which includes ``corpus_numeric.py`` and ``corpus_exceptions.py``) is reduced to a
real scalar by a fixed random linear functional of its result, ``L(x) = <ybar, f(x)>`` with
``ybar`` a random tangent of the result: ``value_and_pullback(rule, ybar, ...)`` gives the
gradient of ``L``, which is checked along random directions.

A case is skipped when it has nothing to differentiate, for a reason computed from the case
itself: the primal raises at the sample point, no argument has a tangent, the result has no
tangent (or is not finite), the result jumps at the sample point (the central difference does
not shrink with the step), or perturbing the arguments makes the primal raise.  A case that
fails because of a limitation of gibbous is in ``LIMITATIONS``, an ``xfail(strict=True)``
naming the missing rule or unsupported feature and the exception it raises: when a rule is
added, the case passes, the strict xfail fails, and the entry must go.
"""

from __future__ import annotations

import copy
import functools
import math
import sys
import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_pullback
from gibbous.reverse.derived import PartialCallError
from gibbous.rules.registry import MissingRuleError
from gibbous.tangents.model import NoTangent, Tangent, is_differentiable, randn_tangent
from tests.frontend import (
    corpus,
    corpus_exceptions,
    corpus_generators,
    corpus_numeric,
    corpus_style,
)
from tests.frontend.helpers import same
from tests.rules.fd import _perturb_all, _scale, inner, pairing

CASES = corpus.CASES
IDS = [f"{fn.__name__}-{n}" for n, (fn, _, _) in enumerate(CASES)]

# function name -> (the exception it fails with, why): gibbous's known limitations.
LIMITATIONS: dict[str, tuple[type[BaseException], str]] = {
    # A set keeps no derivative: a number with one is refused on its way in (docs/ad.md).
    "literals": (TypeError, "the set {x, 1} would hold a number with a derivative"),
}
if sys.version_info < (3, 12):
    # 3.11 runs a comprehension as a function of its own: the items it computed before the
    # exception are work of a call that did not complete, which cannot be undone in part.
    LIMITATIONS["comprehension_inside_try"] = (
        PartialCallError,
        "a comprehension is a nested call on 3.11, and it raised after differentiable work",
    )


def _params() -> list[t.Any]:
    out = []
    for n, ((fn, args, kwargs), id_) in enumerate(zip(CASES, IDS)):
        marks = []
        limitation = LIMITATIONS.get(fn.__name__)
        if limitation is not None:
            raises, reason = limitation
            marks.append(pytest.mark.xfail(strict=True, raises=raises, reason=reason))
        out.append(pytest.param(n, fn, args, kwargs, id=id_, marks=marks))
    return out


def call(fn: t.Callable[..., t.Any], xs: t.Sequence[object], keys: t.Sequence[str]) -> t.Any:
    """``fn`` called with the sample's values ``xs``: positional, then the keywords ``keys``."""
    n = len(xs) - len(keys)
    return fn(*xs[:n], **dict(zip(keys, xs[n:])))


def entry(fn: t.Callable[..., t.Any], xs: t.Sequence[object], keys: t.Sequence[str]) -> t.Any:
    """What gets the gradient of every value in ``xs``: the keywords bound by a partial
    (keyword arguments get no gradient of their own; a partial's arguments do)."""
    n = len(xs) - len(keys)
    return functools.partial(fn, **dict(zip(keys, xs[n:]))) if keys else fn


def gradients(grads: tuple[t.Any, ...], keys: t.Sequence[str]) -> list[t.Any]:
    """The gradients of the sample's values, from ``value_and_pullback``'s for ``entry``."""
    if not keys:
        return list(grads[1:])
    df = grads[0]
    keywords = df.fields["keywords"] if isinstance(df, Tangent) else NoTangent()
    named = [keywords.fields[k] if isinstance(keywords, Tangent) else NoTangent() for k in keys]
    return [*grads[1:], *named]


def finite(y: object) -> bool:
    if isinstance(y, np.ndarray):
        return y.dtype.kind not in "fc" or bool(np.all(np.isfinite(y)))
    if isinstance(y, (float, complex, np.floating, np.complexfloating)):
        return bool(np.isfinite(y))
    if isinstance(y, (tuple, list)):
        return all(map(finite, y))
    if isinstance(y, dict):
        return all(map(finite, y.values()))
    return True


def direction(xs: t.Sequence[object], rng: np.random.Generator) -> list[t.Any]:
    """A random tangent of the arguments, each scalar's part scaled by its magnitude (a
    tolerance of 1e-10 is not stepped through zero), with unit norm."""
    d = [randn_tangent(x, rng) for x in xs]
    for i, x in enumerate(xs):
        if isinstance(x, float) and x != 0.0 and isinstance(d[i], float):
            d[i] *= abs(x)
    norm = math.sqrt(pairing(xs, d, d))
    return [_scale(v, 1.0 / norm) for v in d] if norm > 0 else d


_CORPUS_FILES = frozenset(
    m.__file__
    for m in (corpus, corpus_numeric, corpus_exceptions, corpus_generators, corpus_style)
)
Path = tuple[tuple[str, int], ...]


def traced(run: t.Callable[[], t.Any]) -> tuple[t.Any, Path]:
    """``run()`` and the lines of corpus code it executed, in order: its control-flow path."""
    path: list[tuple[str, int]] = []

    def local(frame: t.Any, event: str, arg: object) -> t.Any:
        if event == "line":
            path.append((frame.f_code.co_name, frame.f_lineno))
        return local

    def tracer(frame: t.Any, event: str, arg: object) -> t.Any:
        return local if frame.f_code.co_filename in _CORPUS_FILES else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = run()
    finally:
        sys.settrace(previous)
    return result, tuple(path)


STEPS = (1e-3, 1e-5, 1e-7, 1e-9)


def finite_differences(
    loss: t.Callable[..., float], xs: t.Sequence[object], d: t.Sequence[t.Any], y0: float
) -> tuple[list[float], str | None]:
    """Central differences of ``loss`` at ``xs`` along ``d`` over the steps whose perturbed
    arguments take the sample point's control-flow path (a different path compares two
    branches, not a derivative), and why there is no derivative to compare with, or None."""
    base = traced(lambda: loss(*xs))[1]
    diffs: list[tuple[float, float, float]] = []
    last = ""
    for h in STEPS:
        try:
            plus, path_plus = traced(lambda: loss(*_perturb_all(xs, d, h)))
            minus, path_minus = traced(lambda: loss(*_perturb_all(xs, d, -h)))
        except Exception as e:  # the primal's own exception, on perturbed arguments
            last = f"perturbed by {h:g}, the primal raises {type(e).__name__}: {e}"
            continue
        for where in (path_plus, path_minus):
            if where != base:
                line = next((a for a, b in zip(where, base) if a != b), where[len(base) :][:1])
                last = f"perturbed by {h:g}, it takes another path (at {line})"
                break
        else:
            diffs.append((h, plus, minus))
    if not diffs:
        return [], f"its control flow changes at the sample point: {last}"
    if len(diffs) >= 2:
        (h1, p1, m1), (h2, p2, m2) = diffs[-2], diffs[-1]
        wide, narrow = p1 - m1, p2 - m2
        if abs(narrow) > 1e-6 * (1 + abs(y0)) and abs(narrow) > 0.1 * abs(wide):
            return [], (
                f"the result jumps at the sample point: a step of {h2:g} changes <ybar, f> by "
                f"{narrow:.3g}, a step of {h1:g} by {wide:.3g}"
            )
        # A kink (a maximum attained twice, an absolute value at zero): the one-sided
        # derivatives differ by an amount that does not shrink with the step.
        # Rounding makes ``(p - y0) / h`` uncertain by about eps |y0| / h.
        kinks = [((p - y0) - (y0 - m)) / h for h, p, m in (diffs[-2], diffs[-1])]
        slope = abs(p2 - m2) / (2 * h2)
        noise = 1e-13 * (1 + abs(y0)) / h2
        if abs(kinks[1]) > 1e-4 * (1 + slope) + noise and abs(kinks[1]) > 0.1 * abs(kinks[0]):
            right, left = (p2 - y0) / h2, (y0 - m2) / h2
            return [], (
                f"the result has a kink at the sample point: one-sided derivatives {left:.6g} "
                f"and {right:.6g} along a random direction (step {h2:g})"
            )
    return [(p - m) / (2 * h) for h, p, m in diffs], None


@pytest.mark.parametrize(("n", "fn", "args", "kwargs"), _params())
def test_corpus_gradient(
    n: int, fn: t.Callable[..., t.Any], args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    rng = np.random.default_rng(n)
    args, kwargs = copy.deepcopy((args, kwargs))
    keys = tuple(kwargs)
    xs = (*args, *kwargs.values())
    try:
        y = call(fn, copy.deepcopy(xs), keys)
    except Exception as e:
        pytest.skip(f"the primal raises {type(e).__name__} at the sample point: {e}")
    if not any(map(is_differentiable, xs)):
        types = ", ".join(type(x).__name__ for x in xs)
        pytest.skip(f"no argument has a tangent ({types})")
    ybar = randn_tangent(y, rng)
    if isinstance(ybar, NoTangent):
        pytest.skip(f"the result ({type(y).__name__}: {y!r:.60}) has no tangent")
    if not finite(y):
        pytest.skip(f"the result is not finite at the sample point: {y!r:.80}")

    def loss(*zs: object) -> float:
        return inner(ybar, call(fn, copy.deepcopy(zs), keys))

    y0 = loss(*xs)
    checks = []
    for _ in range(3):
        d = direction(xs, rng)
        estimates, why = finite_differences(loss, xs, d, y0)
        if why is not None:
            pytest.skip(why)
        checks.append((d, estimates))

    f = entry(fn, xs, keys)
    positional = xs[: len(xs) - len(keys)]
    rule = build_rrule(f, *positional)
    before = copy.deepcopy(xs)
    value, grads = value_and_pullback(rule, ybar, f, *positional)
    assert same(list(xs), list(before)), "the arguments were not restored"
    assert same(value, y) or _close(value, y), (value, y)
    for d, estimates in checks:
        claimed = pairing(xs, gradients(grads, keys), d)
        best = min(estimates, key=lambda e: abs(e - claimed))
        assert abs(best - claimed) <= 1e-8 + 1e-5 * max(abs(best), abs(claimed)), (
            f"directional derivative {claimed!r} disagrees with finite differences "
            f"{estimates!r}"
        )


def _close(a: object, b: object) -> bool:
    """Equal up to rounding (the derived program may associate float operations alike, but
    NumPy scalars and Python floats print and compare alike only to the last bit)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    try:
        return bool(np.allclose(a, b, rtol=1e-12, atol=0, equal_nan=True))  # type: ignore
    except (TypeError, ValueError):
        return a == b
