"""Forward mode over the whole frontend corpus: it refuses clearly or it is right.

Each case of ``tests/frontend/corpus.py`` without keyword arguments (``build_frule`` takes
positional values only) goes through ``build_frule`` and ``jvp`` along random tangents of its
float and float-array arguments.  Forward mode may refuse what it does not take yet, with a
``ForwardModeError`` (or a ``TypeError`` of gibbous saying "forward mode" / "jvp"): the case is
skipped with the refusal's first line, so the skips list what real code runs into.  Otherwise
``y`` must be the primal's value and ``dy`` must agree with central finite differences along
the same tangents; any other exception is a crash, not a refusal, and fails.

A case is skipped as having nothing to differentiate, for a reason computed from the case, as
in ``tests/ad/test_corpus_gradients.py``: no float argument, the primal raises at the sample
point, the result is not a finite real float or float array, or the result jumps, has a kink
or changes its control flow at the sample point (``finite_differences`` there decides).
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
from gibbous.rules.tangents import NoTangent
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


def float_array(x: object) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def has_tangent(x: object) -> bool:
    return isinstance(x, float) or float_array(x)


def real_float(y: object) -> bool:
    return isinstance(y, (float, np.floating)) or float_array(y)


def tangents(xs: t.Sequence[object], rng: np.random.Generator) -> list[t.Any]:
    """Random tangents with unit norm, a scalar's scaled by its magnitude (a tolerance of
    1e-10 is not stepped through zero); None for an argument without one."""
    d: list[t.Any] = []
    for x in xs:
        if isinstance(x, float):
            d.append(float(rng.standard_normal()) * (abs(x) if x != 0.0 else 1.0))
        elif isinstance(x, np.ndarray) and float_array(x):
            d.append(rng.standard_normal(x.shape))
        else:
            d.append(None)
    norm = math.sqrt(sum(float(np.sum(np.square(v))) for v in d if v is not None))
    return [v if v is None or norm == 0 else v / norm for v in d]


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
    return [
        pytest.param(n, fn, args, id=id_)
        for n, ((fn, args, kwargs), id_) in enumerate(zip(CASES, IDS))
        if not kwargs
    ]


@pytest.mark.parametrize(("n", "fn", "args"), _params())
def test_corpus_jvp(n: int, fn: t.Callable[..., t.Any], args: tuple[object, ...]) -> None:
    rng = np.random.default_rng(n)
    xs = copy.deepcopy(args)  # (a case's arguments are shared with the other corpus tests)
    if not any(map(has_tangent, xs)):
        types = ", ".join(type(x).__name__ for x in xs)
        pytest.skip(f"nothing to differentiate: no float argument ({types})")
    try:
        expected = fn(*copy.deepcopy(xs))
    except Exception as e:
        pytest.skip(f"nothing to differentiate: the primal raises {type(e).__name__}: {e}")

    # Two tangents through one rule: a warm rule must be as right as a cold one.
    runs = []
    try:
        rule = build_frule(fn, *copy.deepcopy(xs))
        for _ in range(2):
            d = tangents(xs, rng)
            y, dy = jvp(rule, fn, copy.deepcopy(xs), copy.deepcopy(d))
            runs.append((d, y, dy))
    except Exception as e:
        why = refusal(e)
        if why is None:
            raise
        pytest.skip(f"refused by forward mode: {why}")

    for _, y, _ in runs:
        assert same(y, expected) or _close(y, expected), f"y = {y!r}, the primal gives {expected!r}"
    if not real_float(expected):
        pytest.skip(f"nothing to differentiate: the result is {type(expected).__name__}")
    if not finite(expected):
        pytest.skip(f"nothing to differentiate: the result is not finite: {expected!r:.80}")

    # Jumps, kinks and branches are found on a random linear functional of the result.
    w = rng.standard_normal(np.shape(expected))

    def loss(*zs: object) -> float:
        return float(np.sum(w * np.asarray(fn(*copy.deepcopy(zs)), dtype=float)))

    def at(d: list[t.Any], h: float) -> np.ndarray:
        moved = _perturb_all(xs, d, h)
        return np.asarray(fn(*copy.deepcopy(moved)), dtype=float)

    for d, _, dy in runs:
        along = [NoTangent() if v is None else v for v in d]
        _, why = finite_differences(loss, xs, along, loss(*xs))
        if why is not None:
            pytest.skip(f"nothing to differentiate: {why}")
        assert np.shape(dy) == np.shape(expected), (np.shape(dy), np.shape(expected))
        estimates = [(at(along, h) - at(along, -h)) / (2 * h) for h in STEPS]
        if not any(np.allclose(dy, fd, rtol=RTOL, atol=ATOL) for fd in estimates):
            pytest.fail(
                f"dy = {dy!r} disagrees with central differences "
                + ", ".join(f"{fd!r} (step {h:g})" for h, fd in zip(STEPS, estimates))
                + f" along tangents {d!r}"
            )
