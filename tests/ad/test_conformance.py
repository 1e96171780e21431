"""Every NumPy and SciPy rule, through the four ways real code reaches it.

For each registration of a NumPy or SciPy callable, one of its audit cases (``gibbous.audit``)
is differentiated through the public API (``build_rrule`` + ``value_and_pullback``) four ways:

1. the callable itself is the entry point (its registered rule, as ``LibraryRule``);
2. a closure ``def wrapper(*args, **kwargs): return fun(*args, **kwargs)`` (``*args`` binding
   at the entry, ``call_ex`` and a dynamic call site inside);
3. ``functools.partial(fun, **kwargs)`` called with the positional arguments (the keyword
   arguments' gradients come back in the partial's tangent);
4. a plain function taking every value as a parameter and calling ``fun`` with keywords
   (``def plain(x0, x1, k_axis): return fun(x0, x1, axis=k_axis)``).

Each is checked against central finite differences of ``<ybar, f(x)>`` along random
directions, for a random cotangent ``ybar`` of the result.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_pullback
from gibbous.audit import cases_by_module, covered_by, registrations
from gibbous.rules.registry import callable_name
from gibbous.tangents.model import NoTangent, Tangent, is_differentiable, randn_tangent
from gibbous.testing.cases import RuleCase
from tests.rules.fd import inner, perturb

pytest.importorskip("scipy.special")  # its rules register when SciPy is imported
import scipy.linalg  # noqa: E402, F401
import scipy.stats  # noqa: E402, F401


def _library(fn: object) -> bool:
    name = callable_name(fn)
    return name.startswith(("numpy.", "scipy.")) and "runtime.registered" not in name


def _nondeterministic(case: RuleCase) -> bool:
    """Draws from NumPy's global generator differ from call to call (a ``Generator`` passed
    in is copied with the arguments, so its draws repeat)."""
    return callable_name(case.f).startswith("numpy.random.") and not any(
        isinstance(a, (np.random.Generator, np.random.RandomState)) for a in case.args
    )


def _chosen() -> list[tuple[str, RuleCase]]:
    """One case per registration of a library callable: the first without a declared
    deviation, else the first."""
    found: dict[int, list[RuleCase]] = {}
    for _, case in cases_by_module():
        try:
            registration = covered_by(case)
        except LookupError:
            continue
        if _library(registration.fn):
            found.setdefault(id(registration), []).append(case)
    by_id = {id(r): r for r in registrations()}
    chosen = []
    for key, cases in found.items():
        plain = [c for c in cases if "deviation" not in c.options and not _nondeterministic(c)]
        if plain:
            chosen.append((by_id[key].pattern.format(by_id[key].fn), plain[0]))
    return sorted(chosen, key=lambda item: item[0])


CHOSEN = _chosen()


# --------------------------------------------------------------------------------------------
# The four entry points: each gives (callable, positional values, keywords) and how the
# gradients of the values it differentiates come back.


class Entry(t.NamedTuple):
    f: t.Any
    args: tuple[t.Any, ...]
    kwargs: dict[str, t.Any]
    # which of the case's values (positional, then keyword by name) get a gradient, and how to
    # read it from value_and_pullback's (df, *dargs)
    inputs: tuple[tuple[str, t.Any], ...]
    gradients: t.Callable[[tuple[t.Any, ...]], list[t.Any]]


def _itself(case: RuleCase, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> Entry:
    inputs = tuple(("pos", i) for i in range(len(args)))
    return Entry(case.f, args, kwargs, inputs, lambda g: list(g[1:]))


def _closure(case: RuleCase, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> Entry:
    fun = case.f

    def wrapper(*args: t.Any, **kwargs: t.Any) -> t.Any:
        return fun(*args, **kwargs)

    inputs = tuple(("pos", i) for i in range(len(args)))
    return Entry(wrapper, args, kwargs, inputs, lambda g: list(g[1:]))


def _partial(case: RuleCase, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> Entry:
    p = functools.partial(case.f, **kwargs)
    inputs = (*(("pos", i) for i in range(len(args))), *(("kw", k) for k in kwargs))

    def gradients(g: tuple[t.Any, ...]) -> list[t.Any]:
        keywords = g[0].fields["keywords"] if isinstance(g[0], Tangent) else NoTangent()
        named = [keywords.fields[k] if isinstance(keywords, Tangent) else NoTangent() for k in kwargs]
        return [*g[1:], *named]

    return Entry(p, args, {}, inputs, gradients)


def _plain(case: RuleCase, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> Entry:
    params = [f"x{i}" for i in range(len(args))] + [f"k_{k}" for k in kwargs]
    call = [f"x{i}" for i in range(len(args))] + [f"{k}=k_{k}" for k in kwargs]
    source = f"def plain({', '.join(params)}):\n    return fun({', '.join(call)})\n"
    scope: dict[str, t.Any] = {"fun": case.f}
    exec(compile(source, f"<conformance {case.id}>", "exec"), scope)
    inputs = (*(("pos", i) for i in range(len(args))), *(("kw", k) for k in kwargs))
    return Entry(scope["plain"], (*args, *kwargs.values()), {}, inputs, lambda g: list(g[1:]))


ENTRIES = {"itself": _itself, "closure": _closure, "partial": _partial, "plain": _plain}


# --------------------------------------------------------------------------------------------
# The check


def _values(case: RuleCase, inputs: t.Sequence[tuple[str, t.Any]]) -> list[t.Any]:
    return [case.args[i] if kind == "pos" else case.kwargs[i] for kind, i in inputs]


def _call(case: RuleCase, inputs: t.Sequence[tuple[str, t.Any]], values: t.Sequence[t.Any]) -> t.Any:
    args, kwargs = list(case.args), dict(case.kwargs)
    for (kind, i), v in zip(inputs, values):
        if kind == "pos":
            args[i] = v
        else:
            kwargs[i] = v
    args, kwargs = copy.deepcopy((args, kwargs))
    return case.f(*args, **kwargs)


def _float32(values: t.Iterable[t.Any]) -> bool:
    def low(x: t.Any) -> bool:
        if isinstance(x, (np.ndarray, np.generic)):
            return x.dtype in (np.float32, np.complex64, np.float16)
        if isinstance(x, (tuple, list)):
            return any(map(low, x))
        return False

    return any(map(low, values))


STEPS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def _unaliased(x: t.Any) -> t.Any:
    """``x`` with every array its own copy: aliasing is not what this test is about, and the
    finite differences below perturb each position on its own."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if type(x) in (tuple, list):
        return type(x)(map(_unaliased, x))
    if type(x) is dict:
        return {k: _unaliased(v) for k, v in x.items()}
    return copy.deepcopy(x)


def _direction(xs: t.Sequence[t.Any], rng: np.random.Generator) -> list[t.Any]:
    """A random unit direction along the numbers and arrays among ``xs`` (objects, such as
    the distribution a SciPy method is bound to, stay put)."""
    d = [randn_tangent(x, rng) if _numeric(x) else NoTangent() for x in xs]
    norm = math.sqrt(sum(inner(v, v) for v in d))
    return [_scaled(v, 1.0 / norm) for v in d] if norm else d


def _numeric(x: t.Any) -> bool:
    if isinstance(x, (np.ndarray, float, complex, np.floating, np.complexfloating)):
        return True
    return type(x) in (tuple, list) and all(map(_numeric, x))


def _scaled(d: t.Any, s: float) -> t.Any:
    if isinstance(d, NoTangent):
        return d
    if isinstance(d, np.ndarray):
        return d * s
    if isinstance(d, (tuple, list)):
        return type(d)(_scaled(v, s) for v in d)
    if isinstance(d, dict):
        return {k: _scaled(v, s) for k, v in d.items()}
    if isinstance(d, Tangent):
        return Tangent({k: _scaled(v, s) for k, v in d.fields.items()})
    return d * s


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize(("name", "case"), CHOSEN, ids=[name for name, _ in CHOSEN])
def test_rule_through_entry_point(name: str, case: RuleCase, entry: str) -> None:
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    case = RuleCase(case.f, _unaliased(case.args), _unaliased(case.kwargs), case.options)
    args, kwargs = copy.deepcopy((case.args, case.kwargs))
    made = ENTRIES[entry](case, args, kwargs)
    y = case.f(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))
    ybar = randn_tangent(y, rng)
    rule = build_rrule(made.f, *made.args, **made.kwargs)
    value, grads = value_and_pullback(rule, ybar, made.f, *made.args, **made.kwargs)
    _same_value(value, y)
    xs = _values(case, made.inputs)
    claimed_grads = made.gradients(grads)
    assert len(claimed_grads) == len(xs)
    if not any(map(is_differentiable, xs)):
        return
    low = _float32([*case.args, *case.kwargs.values(), y])
    rtol = case.options.get("rtol", 2e-3 if low else 1e-5)
    atol = case.options.get("atol", 2e-3 if low else 1e-7)
    steps = case.options.get("steps", (1e-2, 1e-3) if low else STEPS)
    for _ in range(2):
        d = _direction(xs, rng)
        claimed = sum(inner(g, e) for g, e in zip(claimed_grads, d))

        def moved(h: float) -> list[t.Any]:
            return [perturb(x, e, h) for x, e in zip(xs, d)]

        estimates = [
            (inner(ybar, _call(case, made.inputs, moved(h)))
             - inner(ybar, _call(case, made.inputs, moved(-h)))) / (2 * h)
            for h in steps
        ]
        finite = [e for e in estimates if math.isfinite(e)]
        assert finite, f"finite differences are not finite: {estimates}"
        best = min(finite, key=lambda e: abs(e - claimed))
        scale = max(abs(best), abs(claimed), 1.0)
        assert abs(best - claimed) <= atol * scale + rtol * max(abs(best), abs(claimed)), (
            f"{entry}: directional derivative {claimed!r}, finite differences {estimates!r}"
        )


def _same_value(a: t.Any, b: t.Any) -> None:
    if isinstance(b, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, equal_nan=True)
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for u, v in itertools.zip_longest(a, b):
            _same_value(u, v)
    elif isinstance(b, (float, complex, np.floating, np.complexfloating)):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-12, nan_ok=True)
