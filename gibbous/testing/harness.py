"""``test_rule``: the checks every rule must pass (run by ``gibbous.testing.checks``), with
their options and defaults.  See docs/testing.md."""

from __future__ import annotations

import importlib
import typing as t

import numpy as np

from gibbous.ir.types import typeof
from gibbous.rules.registry import Context, DefaultContext, build_primitive_rrule
from gibbous.testing.checks import Options, Perf, RuleTestReport, Tester, exception_text
from gibbous.testing.errors import RuleTestError
from gibbous.testing.rounds import Call, Point
from gibbous.testing.structure import children, is_atom, is_inexact_scalar

# Tolerances and finite-difference steps by the lowest float precision in the call.  Steps are
# along a unit direction and tried in this order until one agrees: a large step loses to
# truncation error, a small one to rounding.
_TOLERANCES = {"double": (1e-5, 1e-6), "single": (1e-2, 1e-3)}
_STEPS = {
    "double": (1e-3, 1e-4, 1e-5, 1e-6, 1e-2, 1e-7),
    "single": (1e-2, 3e-3, 3e-2, 1e-3, 1e-1),
}
# Two runs of the same computation may round differently where BLAS picks kernels by memory
# alignment; "identical" allows that, and nothing more.
_SAME = {"double": 1e-12, "single": 1e-5}


def test_rule(
    f: t.Any,
    *args: t.Any,
    kwargs: t.Mapping[str, t.Any] | None = None,
    is_primitive: bool = True,
    perf: Perf = "none",
    rtol: float | None = None,
    atol: float | None = None,
    output_tangent: t.Any = None,
    rule: t.Callable[..., t.Any] | None = None,
    ctx: Context | None = None,
    rng: np.random.Generator | int | None = None,
    other_args: t.Sequence[t.Any] | None = None,
    other_kwargs: t.Mapping[str, t.Any] | None = None,
    directions: int = 2,
    steps: t.Sequence[float] | None = None,
    constants: t.Sequence[int] = (),
    forward: bool = False,
) -> RuleTestReport:
    """Check the rule for ``f(*args, **kwargs)``; raise ``RuleTestError`` naming the failed
    check, or return a report of what was checked.

    * ``is_primitive``: test the rule ``build_primitive_rrule`` gives for these argument types
      (or ``rule``, if given); with False, the rule ``gibbous.build_rrule`` derives.
    * ``perf="allocs"``: also check that when the warm primal allocates no NumPy memory, a warm
      forward + reverse allocates none either.
    * ``rtol``, ``atol``, ``steps``, ``directions``: the finite-difference comparison (defaults
      by the lowest float precision in the call).  ``output_tangent``: the cotangent of the
      result, instead of a random one.  ``rng``: a generator or a seed (default 0).
    * ``other_args``, ``other_kwargs``: arguments with other shapes for the state check
      (default: every array dimension above one grown by one, when ``f`` accepts that).
    * ``constants``: positions of positional arguments a call site would have as constants
      (``x ** 2``): the rule is looked up with their type ``const<value>``, as the AD pass
      looks it up for a literal.
    * ``forward``: also check the callable's forward rule (``gibbous.testing.forward``):
      its tangent against finite differences and, against the reverse rule, the transpose
      identity; a call without one is reported reverse-only, with the reason.

    ``f`` and the arguments are never modified: every call runs on copies.
    """
    if perf not in ("none", "allocs"):
        raise ValueError(f"perf={perf!r}: must be 'none' or 'allocs'")
    kwargs = dict(kwargs or {})
    call = Call(f, len(args), tuple(kwargs))
    operands = (f, *args, *kwargs.values())
    try:
        point = Point.make(call, operands)
    except Exception as e:
        raise ValueError(f"f itself fails on these arguments: {exception_text(e)}") from e
    precision = "single" if _single_precision([*point.operands, *point.after]) else "double"
    default_rtol, default_atol = _TOLERANCES[precision]
    options = Options(
        perf,
        default_rtol if rtol is None else rtol,
        default_atol if atol is None else atol,
        tuple(_STEPS[precision] if steps is None else steps),
        _SAME[precision],
        directions,
        output_tangent,
    )
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng or 0)
    make_rule = _rule_factory(call, operands, is_primitive, rule, ctx, constants)
    other = _other_point(call, operands, other_args, other_kwargs)
    report = Tester(call, make_rule, point, options, generator).run(other)
    if forward:
        from gibbous.testing.forward import check_forward  # (it needs the whole library)

        found = check_forward(f, *args, kwargs=kwargs, ctx=ctx or DefaultContext, rng=generator)
        if found.status == "failed":
            raise RuleTestError("forward", report.subject, [found.message])
        report.results["forward"] = str(found)
    return report


test_rule.__test__ = False  # type: ignore[attr-defined]  # not a test for pytest to collect


def _rule_factory(
    call: Call,
    operands: t.Sequence[t.Any],
    is_primitive: bool,
    rule: t.Callable[..., t.Any] | None,
    ctx: Context | None,
    constants: t.Sequence[int] = (),
) -> t.Callable[[], t.Callable[..., t.Any]]:
    if rule is not None:
        return lambda: rule
    if is_primitive:
        types = [typeof(x, const=i in constants) for i, x in enumerate(operands[1:])]
        context = DefaultContext if ctx is None else ctx
        return lambda: build_primitive_rrule(context, call.fn, types, call.kwnames, debug=True)
    try:
        build_rrule = getattr(importlib.import_module("gibbous.api"), "build_rrule")
    except (ImportError, AttributeError) as e:
        raise NotImplementedError(
            "is_primitive=False tests the rule gibbous.build_rrule derives, and gibbous.api "
            "has no build_rrule yet"
        ) from e
    if call.kwnames:
        raise NotImplementedError("is_primitive=False with keyword arguments")
    options = {} if ctx is None else {"ctx": ctx}
    return lambda: t.cast(t.Callable[..., t.Any], build_rrule(call.fn, *operands[1:], **options))


def _other_point(
    call: Call,
    operands: t.Sequence[t.Any],
    other_args: t.Sequence[t.Any] | None,
    other_kwargs: t.Mapping[str, t.Any] | None,
) -> Point | str:
    """Arguments of other shapes for the state check, or why there are none."""
    f, args, kwargs = call.split(operands)
    explicit = other_args is not None or other_kwargs is not None
    memo: dict[int, t.Any] = {}
    new_args = list(other_args) if other_args is not None else [_grown(a, memo) for a in args]
    new_kwargs = (
        dict(other_kwargs)
        if other_kwargs is not None
        else {k: _grown(v, memo) for k, v in kwargs.items()}
    )
    if list(new_kwargs) != list(kwargs) or len(new_args) != len(args):
        raise ValueError("other_args and other_kwargs must match the arguments one to one")
    others = (f, *new_args, *new_kwargs.values())
    if not explicit:
        if all(a is b for a, b in zip(others, operands)):
            return "no array dimension above one to grow"
        if [typeof(x) for x in others] != [typeof(x) for x in operands]:
            return "growing the arrays changes the argument types"
    try:
        return Point.make(call, others)
    except Exception as e:
        if explicit:
            raise ValueError(f"f fails on other_args/other_kwargs: {exception_text(e)}") from e
        return f"f rejects the arguments grown by one ({type(e).__name__}: {e})"


def _grown(x: t.Any, memo: dict[int, t.Any]) -> t.Any:
    """``x`` with every array dimension above one grown by one (values repeated cyclically, so
    they stay in the domain the originals were in); the same object grows once."""
    if id(x) in memo:
        return memo[id(x)]
    new: t.Any = x
    if isinstance(x, np.ndarray) and any(n > 1 for n in x.shape) and not x.dtype.hasobject:
        new = np.pad(x, [(0, 1 if n > 1 else 0) for n in x.shape], mode="wrap")
    elif isinstance(x, (tuple, list)):
        items = [_grown(v, memo) for v in x]
        if any(a is not b for a, b in zip(items, x)):
            new = type(x)(items) if not hasattr(x, "_fields") else type(x)(*items)
    elif isinstance(x, dict):
        items_d = {k: _grown(v, memo) for k, v in x.items()}
        if any(items_d[k] is not v for k, v in x.items()):
            new = type(x)(items_d)
    memo[id(x)] = new
    return new


def _single_precision(values: t.Sequence[t.Any]) -> bool:
    low = (np.float32, np.float16, np.complex64)

    def visit(x: t.Any, seen: set[int]) -> bool:
        if isinstance(x, np.ndarray):
            return x.dtype.type in low
        if isinstance(x, low):
            return True
        if id(x) in seen or is_inexact_scalar(x) or is_atom(x):
            return False
        seen.add(id(x))
        return any(visit(v, seen) for _, v in children(x))

    seen: set[int] = set()
    return any(visit(v, seen) for v in values)
