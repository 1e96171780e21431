"""Central finite differences, for checking gradients in tests.

``check_gradient(f, xs, grads, rng)`` checks a gradient of a real scalar function ``f(*xs)``
along a few random unit directions: the pairing ``<grads, d>`` must agree with the central
difference ``(f(xs + h d) - f(xs - h d)) / 2h`` for at least one of a couple of step sizes
``h`` (a large step loses to truncation error, a small one to rounding).

Values are floats, complex numbers, float arrays, containers of these (tuples, lists, dicts)
and objects with such fields (perturbed as copies); ints and other values without a tangent
stay fixed.  Complex follows gibbous's convention (docs/tangents.md):
the gradient is ``dL/dRe + i dL/dIm`` and the pairing is ``Re(conj(a) * b)``.  An argument that
is the same object as an earlier one is perturbed once and paired once (an alias, not a second
variable); views of one array are not recognised as aliases.

A fuller ``gibbous.testing.test_rule`` will come later; this stays small.
"""

from __future__ import annotations

import copy
import typing as t

import numpy as np

from gibbous.tangents.model import MutableTangent, NoTangent, Tangent, randn_tangent


def inner(a: t.Any, b: t.Any) -> float:
    """The real pairing of two tangents of the same structure."""
    if isinstance(a, NoTangent) or isinstance(b, NoTangent):
        return 0.0
    if isinstance(a, np.ndarray):
        return float(np.real(np.vdot(a, b)))
    if isinstance(a, (tuple, list)):
        return sum((inner(x, y) for x, y in zip(a, b, strict=True)), 0.0)
    if isinstance(a, dict):
        return sum((inner(a[k], b[k]) for k in a), 0.0)
    if isinstance(a, (Tangent, MutableTangent)):
        # b is a tangent too, or an object (a value paired with a tangent: its fields)
        if isinstance(b, (Tangent, MutableTangent)):
            return sum((inner(v, b.fields[k]) for k, v in a.fields.items()), 0.0)
        return sum((inner(v, getattr(b, k)) for k, v in a.fields.items()), 0.0)
    return float((np.conj(a) * b).real)


def _unique(xs: t.Sequence[object]) -> list[int]:
    """Positions of the first occurrence of each object."""
    seen: set[int] = set()
    positions = []
    for i, x in enumerate(xs):
        if id(x) not in seen:
            seen.add(id(x))
            positions.append(i)
    return positions


def pairing(xs: t.Sequence[object], a: t.Sequence[t.Any], b: t.Sequence[t.Any]) -> float:
    """``<a, b>`` over arguments ``xs``, counting each argument object once."""
    return sum((inner(a[i], b[i]) for i in _unique(xs)), 0.0)


def _scale(d: t.Any, s: float) -> t.Any:
    if isinstance(d, np.ndarray):
        d *= s
        return d
    if isinstance(d, tuple):
        return tuple(_scale(v, s) for v in d)
    if isinstance(d, list):
        return [_scale(v, s) for v in d]
    if isinstance(d, dict):
        return {k: _scale(v, s) for k, v in d.items()}
    if isinstance(d, NoTangent):
        return d
    if isinstance(d, (Tangent, MutableTangent)):
        return type(d)({k: _scale(v, s) for k, v in d.fields.items()})
    return d * s


def random_direction(xs: t.Sequence[object], rng: np.random.Generator) -> list[t.Any]:
    """A random tangent of the arguments with unit norm."""
    d = [randn_tangent(x, rng) for x in xs]
    norm = pairing(xs, d, d) ** 0.5
    return [_scale(v, 1.0 / norm) for v in d] if norm > 0 else d


def perturb(x: t.Any, d: t.Any, h: float) -> t.Any:
    """``x + h d``, as a new value (arrays are copied; the original is never touched)."""
    if isinstance(d, NoTangent):
        return x
    if isinstance(x, np.ndarray):
        return x + h * d
    if isinstance(x, tuple):
        items = [perturb(v, e, h) for v, e in zip(x, d)]
        return tuple(items) if type(x) is tuple else type(x)(*items)  # a NamedTuple
    if isinstance(x, list):
        return [perturb(v, e, h) for v, e in zip(x, d)]
    if isinstance(x, dict):
        return {k: perturb(v, d[k], h) for k, v in x.items()}
    if isinstance(d, (Tangent, MutableTangent)):  # an object: a copy with perturbed fields
        new = copy.copy(x)
        for k, e in d.fields.items():
            object.__setattr__(new, k, perturb(getattr(x, k), e, h))
        return new
    return type(x)(x + h * d)


def _perturb_all(xs: t.Sequence[object], d: t.Sequence[t.Any], h: float) -> list[t.Any]:
    made: dict[int, t.Any] = {}
    out = []
    for x, e in zip(xs, d):
        if id(x) not in made:
            made[id(x)] = perturb(x, e, h)
        out.append(made[id(x)])
    return out


def central_difference(
    f: t.Callable[..., float], xs: t.Sequence[object], d: t.Sequence[t.Any], h: float
) -> float:
    return (float(f(*_perturb_all(xs, d, h))) - float(f(*_perturb_all(xs, d, -h)))) / (2 * h)


def check_gradient(
    f: t.Callable[..., float],
    xs: t.Sequence[object],
    grads: t.Sequence[t.Any],
    rng: np.random.Generator,
    *,
    directions: int = 3,
    steps: t.Sequence[float] = (1e-3, 1e-5),
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """Assert that ``grads`` (one gradient per argument) is the gradient of ``f`` at ``xs``."""
    for _ in range(directions):
        d = random_direction(xs, rng)
        claimed = pairing(xs, grads, d)
        estimates = [central_difference(f, xs, d, h) for h in steps]
        best = min(estimates, key=lambda e: abs(e - claimed))
        assert abs(best - claimed) <= atol + rtol * max(abs(best), abs(claimed)), (
            f"directional derivative {claimed!r} disagrees with finite differences "
            f"{estimates!r} (steps {list(steps)!r})"
        )
