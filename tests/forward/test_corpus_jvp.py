"""Forward mode over the whole frontend corpus: it refuses clearly or it is right.

Each case of ``tests/frontend/corpus.py`` goes through ``build_frule`` and ``jvp`` along random
tangents of its positional float and float-array arguments (its keyword arguments are constants,
as ``build_frule`` takes them), and of the floats and float arrays held in its tuple and list
arguments (nested too: the tangent has the argument's structure, None for an item without one;
a dict gets no tangent, as ``jvp`` takes none for it yet).  Forward mode may refuse what it does
not take yet, with a ``ForwardModeError`` (or a ``TypeError`` of gibbous saying "forward mode" /
"jvp"): the case is skipped with the refusal's first line, so the skips list what real code runs
into.  Otherwise ``y`` must be the primal's value and ``dy`` must agree with central finite
differences along the same tangents; any other exception is a crash, not a refusal, and fails.

A tuple or list result is checked leaf by leaf: ``dy`` has its structure, each float or float
array in it has a tangent of its shape that agrees with the finite differences, and a leaf
without one (an int, a string, None) has None, ``NoTangent()`` or 0 for tangent.

A case is skipped as having nothing to differentiate, for a reason computed from the case, as
in ``tests/ad/test_corpus_gradients.py``: no float in the arguments, the primal raises at the
sample point, the result holds no finite real float or float array, or the result jumps, has a
kink or changes its control flow at the sample point (``finite_differences`` there decides, on
a random linear functional of the result's floats).
"""

from __future__ import annotations

import copy
import math
import traceback
import typing as t
from pathlib import Path

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp
from gibbous.tangents.model import NoTangent
from gibbous.testing.forward import _rebuild
from tests.ad.test_corpus_gradients import _close, finite, finite_differences
from tests.frontend import corpus
from tests.frontend.helpers import same
from tests.rules.fd import _perturb_all

CASES = corpus.CASES
IDS = [f"{fn.__name__}-{n}" for n, (fn, _, _) in enumerate(CASES)]
GIBBOUS = str(Path(gibbous.__file__).parent)

# Rounding makes a difference at 1e-6 uncertain by ~eps |f| / 1e-6, truncation at 1e-4 by
# ~1e-8 |f'''|: a right derivative agrees at one of the two.
STEPS = (1e-6, 1e-4)
RTOL, ATOL = 1e-5, 1e-7

# function name -> the bug of gibbous's its case fails on (an AssertionError of this test): a
# strict xfail, so that the entry goes when the bug is fixed.
KNOWN_BUGS: dict[str, str] = {}  # case name -> the gibbous bug it shows (a strict xfail)


def float_array(x: object) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def has_tangent(x: object) -> bool:
    """A float or a float array, or a tuple or list holding one (a dict's are not followed)."""
    if isinstance(x, (tuple, list)):
        return any(map(has_tangent, x))
    return isinstance(x, float) or float_array(x)


def real_float(y: object) -> bool:
    return isinstance(y, (float, np.floating)) or float_array(y)


def tangent_of(x: object, rng: np.random.Generator) -> t.Any:
    """A random tangent of ``x``'s structure, a scalar's scaled by its magnitude (a tolerance of
    1e-10 is not stepped through zero); None for what has none."""
    if isinstance(x, (tuple, list)):
        return _rebuild(x, [tangent_of(i, rng) for i in x]) if has_tangent(x) else None
    if isinstance(x, float):
        return float(rng.standard_normal()) * (abs(x) if x != 0.0 else 1.0)
    if float_array(x):
        return rng.standard_normal(t.cast(np.ndarray, x).shape)
    return None


def tangent_leaves(d: t.Any) -> t.Iterator[t.Any]:
    if isinstance(d, (tuple, list)):
        for i in d:
            yield from tangent_leaves(i)
    elif d is not None:
        yield d


def divided(d: t.Any, s: float) -> t.Any:
    if isinstance(d, (tuple, list)):
        return _rebuild(d, [divided(i, s) for i in d])
    return None if d is None else d / s


def tangents(xs: t.Sequence[object], rng: np.random.Generator) -> list[t.Any]:
    """Random tangents of the arguments with unit norm over all their leaves."""
    d = [tangent_of(x, rng) for x in xs]
    norm = math.sqrt(sum(float(np.sum(np.square(v))) for v in tangent_leaves(d)))
    return d if norm == 0 else [divided(v, norm) for v in d]


def along(d: t.Any) -> t.Any:
    """``d`` as ``_perturb_all`` takes it: ``NoTangent()`` for None, at any depth."""
    if isinstance(d, (tuple, list)):
        return _rebuild(d, [along(i) for i in d])
    return NoTangent() if d is None else d


def float_leaves(y: object) -> t.Iterator[object]:
    if isinstance(y, (tuple, list)):
        for i in y:
            yield from float_leaves(i)
    elif real_float(y):
        yield y


def flat(y: object) -> np.ndarray:
    """The floats of a result, its tuples' and lists' too, in one flat array."""
    parts = [np.asarray(v, dtype=float).ravel() for v in float_leaves(y)]
    return np.concatenate(parts) if parts else np.zeros(0)


def no_tangent(dy: object) -> bool:
    """A tangent that says "none" (of an int, a string, None)."""
    if dy is None or isinstance(dy, NoTangent):
        return True
    if isinstance(dy, np.ndarray) and dy.dtype.kind in "biuf":
        return not np.any(dy)
    return isinstance(dy, (int, float, np.integer, np.floating)) and dy == 0


def flat_tangent(y: t.Any, dy: t.Any, where: str = "y") -> np.ndarray:
    """``dy``'s tangents of ``y``'s floats, flat as ``flat(y)``; AssertionError where ``dy`` is
    not shaped as ``y`` or gives a tangent to a leaf without one."""
    if isinstance(y, (tuple, list)):
        if no_tangent(dy) and not flat(y).size:  # (none for the whole of what has none)
            return np.zeros(0)
        assert isinstance(dy, (tuple, list)) and len(dy) == len(y), (
            f"the tangent of {where}, a {type(y).__name__} of {len(y)} items, is {dy!r:.200}"
        )
        parts = [flat_tangent(a, b, f"{where}[{k}]") for k, (a, b) in enumerate(zip(y, dy))]
        return np.concatenate(parts) if parts else np.zeros(0)
    if real_float(y):
        numeric = isinstance(dy, (float, np.floating, np.ndarray))
        assert numeric and np.asarray(dy).dtype.kind == "f" and np.shape(dy) == np.shape(y), (
            f"the tangent of {where} ({type(y).__name__} of shape {np.shape(y)}) is {dy!r:.200}"
        )
        return np.asarray(dy, dtype=float).ravel()
    assert no_tangent(dy), f"{where} is {y!r:.80}, which has no tangent, but {dy!r:.200} is given"
    return np.zeros(0)


def describe(x: object) -> str:
    if isinstance(x, (tuple, list)) and x:
        kinds = sorted({type(i).__name__ for i in x})
        return f"{type(x).__name__} of {', '.join(kinds)}"
    return type(x).__name__


def refusal(e: Exception, words: tuple[str, ...] = ("forward mode", "jvp")) -> str | None:
    """The first line of ``e`` if it is a refusal (a ``ForwardModeError``, or a TypeError of
    gibbous's starting with ``words``), None if it is a crash."""
    line = (str(e).splitlines() or [""])[0]
    if isinstance(e, ForwardModeError):
        return line
    raised_in = traceback.extract_tb(e.__traceback__)[-1].filename
    if (
        type(e) is TypeError
        and raised_in.startswith(GIBBOUS)
        and line.startswith(words)
    ):
        return line
    return None


def _params() -> list[t.Any]:
    out = []
    for n, ((fn, args, kwargs), id_) in enumerate(zip(CASES, IDS)):
        bug = KNOWN_BUGS.get(fn.__name__)
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=bug)] if bug else []
        out.append(pytest.param(n, fn, args, kwargs, id=id_, marks=marks))
    return out


@pytest.mark.parametrize(("n", "fn", "args", "kwargs"), _params())
def test_corpus_jvp(
    n: int, fn: t.Callable[..., t.Any], args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    rng = np.random.default_rng(n)
    xs = copy.deepcopy(args)  # (a case's arguments are shared with the other corpus tests)
    if not any(map(has_tangent, xs)):
        types = ", ".join(type(x).__name__ for x in xs)
        pytest.skip(f"nothing to differentiate: no float argument ({types})")
    try:
        expected = fn(*copy.deepcopy(xs), **copy.deepcopy(kwargs))
    except Exception as e:
        pytest.skip(f"nothing to differentiate: the primal raises {type(e).__name__}: {e}")

    # Two tangents through one rule: a warm rule must be as right as a cold one.
    runs = []
    try:
        rule = build_frule(fn, *copy.deepcopy(xs), **copy.deepcopy(kwargs))
        for _ in range(2):
            d = tangents(xs, rng)
            y, dy = jvp(rule, fn, copy.deepcopy(xs), copy.deepcopy(d), **copy.deepcopy(kwargs))
            runs.append((d, y, dy))
    except Exception as e:
        why = refusal(e)
        if why is None:
            raise
        pytest.skip(f"refused by forward mode: {why}")

    for _, y, _ in runs:
        assert same(y, expected) or _close(y, expected), f"y = {y!r}, the primal gives {expected!r}"
    y0 = flat(expected)
    if not y0.size:
        pytest.skip(f"nothing to differentiate: the result is {describe(expected)}")
    if not finite(expected):
        pytest.skip(f"nothing to differentiate: the result is not finite: {expected!r:.80}")

    # Jumps, kinks and branches are found on a random linear functional of the result's floats.
    w = rng.standard_normal(y0.size)

    def loss(*zs: object) -> float:
        return float(np.sum(w * flat(fn(*copy.deepcopy(zs), **copy.deepcopy(kwargs)))))

    def at(d: t.Any, h: float) -> np.ndarray:
        return flat(fn(*copy.deepcopy(_perturb_all(xs, d, h)), **copy.deepcopy(kwargs)))

    for d, _, dy in runs:
        _, why = finite_differences(loss, xs, along(d), loss(*xs))
        if why is not None:
            pytest.skip(f"nothing to differentiate: {why}")
        got = flat_tangent(expected, dy)
        estimates = [(at(along(d), h) - at(along(d), -h)) / (2 * h) for h in STEPS]
        if not any(np.allclose(got, fd, rtol=RTOL, atol=ATOL) for fd in estimates):
            pytest.fail(
                f"dy = {dy!r} disagrees with central differences "
                + ", ".join(f"{fd!r} (step {h:g})" for h, fd in zip(STEPS, estimates))
                + f" (of the result's floats, flat) along tangents {d!r}"
            )
