"""How the rules of ``scipy.special``'s elementwise functions are made: from tables, one entry
per function, naming the formula of ``gibbous.rules.formulas`` for each operand.

* ``grad(name)`` renders formula ``name`` with SciPy's functions (``NAMESPACE``, then
  ``scipy.special`` by name: a formula calls SciPy's functions by their names);
* ``register_unary`` and ``register_binary`` register a table's rules in both modes: the
  reverse rules of ``gibbous.library.elementwise`` (the general rule for every array/scalar
  mix, and a variant for float64 arrays where no operand is refused), and the forward rule of
  the same formulas (``frules.register_elementwise``);
* an operand ``Refuse``d (by its name, with why) has no derivative gibbous computes: its rules
  take it as a constant and a call in which it carries a derivative is refused by name
  (``gibbous.rules.no_derivative``);
* ``register_types``: each function's type rule and purity.

The forward rule is written out (``frules.Emit``, plain calls in the forward program) where
every function its formula calls is one of ``WRITTEN``, the functions with rules of their own
(the ones registered here, and ``zeta``): reverse mode can then differentiate it again, which
is what a Hessian-vector product does.  Where a formula calls another function (a helper, or a
function without rules) the forward rule is a tangent function, and ``hvp`` refuses the call.
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np
import scipy.special as sps

from gibbous.infer.typerules.numbers import elementwise
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.ir.names import CallableTable
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import CD, RuleResult
from gibbous.library.elementwise import tables, variants
from gibbous.library.scipy.common import TypeArgs, TypeKwargs, is_complex
from gibbous.rules import formulas, frules, no_derivative, render
from gibbous.rules.registry import primitive, registers_for_caller

registers_for_caller(__name__)  # (the rules are the table's module's)


@attrs.frozen
class Refuse:
    """An operand without a derivative gibbous computes: its parameter's ``name``, and
    ``why`` (the end of a sentence: "..., and {why}")."""

    name: str
    why: str


#: A table's entry for one operand: the name of its formula, its gradient function (rendered
#: already, with helpers of its own), or a refusal.
Operand = t.Union[str, Refuse, t.Callable[..., t.Any]]

#: Why an operand is refused: the derivative exists but SciPy has nothing to compute it with
#: (a Bessel function's in its order, ``gammainc``'s in ``a``), or the operand is an integer.
NOT_CLOSED = "no closed form of the derivative in it is available in SciPy"
INTEGER = "it is an integer (SciPy truncates a float one): the function has no derivative in it"

#: What the names of the formulas' functions mean in their NumPy renderings, besides
#: ``scipy.special``'s own names: NumPy's, and SciPy's where a formula's name is not SciPy's.
NAMESPACE: dict[str, t.Callable[..., t.Any]] = {
    **tables.NUMPY,
    "digamma": sps.digamma,  # (NumPy's namespace has a digamma of Python floats)
    "zeta": sps.zeta,
    "polygamma": sps.polygamma,
}

class _Written(t.Mapping[str, t.Callable[..., t.Any]]):
    """The functions a written tangent may call, by the formulas' names (SciPy's: ``psi`` is
    ``digamma`` too): those with rules of both modes that keep a scalar a scalar (ufuncs and
    ``zeta``; not ``polygamma``, whose result is an array)."""

    def __init__(self) -> None:
        self._fns = CallableTable[object, bool]()

    def add(self, fn: object) -> None:
        self._fns[fn] = True

    def __getitem__(self, name: str) -> t.Callable[..., t.Any]:
        fn = getattr(sps, name, None)
        if fn is None or fn not in self._fns:
            raise KeyError(name)
        return t.cast(t.Callable[..., t.Any], fn)

    def __iter__(self) -> t.Iterator[str]:
        return (getattr(fn, "__name__", "?") for fn in self._fns)

    def __len__(self) -> int:
        return len(self._fns)


WRITTEN = _Written()
WRITTEN.add(sps.zeta)


def grad(name: str, arity: int = 1, helpers: t.Mapping[str, t.Callable[..., t.Any]] = {}) -> t.Any:
    """Formula ``name`` of ``formulas.UNARY`` (arity 1) or ``BINARY`` as a gradient function
    of NumPy values; ``helpers``: what names neither NumPy nor SciPy has mean."""
    formula = (formulas.UNARY, formulas.BINARY)[arity - 1][name]
    names = {**NAMESPACE, **helpers}
    scope = {n: names[n] if n in names else getattr(sps, n) for n in formula.calls()}
    made = render.numpy_pullback(f"g_{name}", formula, arity, {**tables.NUMPY, **scope})
    tables.SHOWN_FORMULA[made] = formula
    return made


def real_only(name: str) -> t.Callable[[t.Callable[..., RuleResult]], t.Callable[..., RuleResult]]:
    """A rule that refuses complex operands (the function has no complex derivative here)."""

    def wrap(rule: t.Callable[..., RuleResult]) -> t.Callable[..., RuleResult]:
        def rrule(f: CD, *args: CD) -> RuleResult:
            if any(is_complex(a.primal) for a in args):
                raise NotImplementedError(f"{name} of complex numbers: no rule")
            return rule(f, *args)

        rrule.__qualname__ = f"real_only({name})"
        if rule in tables.RULE_FORMULAS:
            tables.RULE_FORMULAS[rrule] = tables.RULE_FORMULAS[rule]
        return rrule

    return wrap


def _name(fn: object) -> str:
    return f"scipy.special.{getattr(fn, '__name__', fn)}"


def register_unary(
    table: t.Mapping[object, Operand], complex_ok: t.Collection[object] = ()
) -> None:
    """Each function's rules from its formula (a gradient function already rendered, or the
    name of one); ``complex_ok``: the functions whose formula holds for complex operands too
    (the others refuse them, in both modes).  A refused operand has no rules at all: a call in
    which it carries no derivative needs none."""
    for fn, entry in table.items():
        if isinstance(entry, Refuse):
            no_derivative.refuse(fn, 0, entry.name, entry.why)
            continue
        g = grad(entry) if isinstance(entry, str) else entry
        ok = fn in complex_ok
        wrap = None if ok else real_only(_name(fn))
        variants.register_unary([fn], g, tables.UNARY_PATTERNS, wrap=wrap, forward=False)
        frules.register_elementwise([fn], (g,), tables.SHOWN_FORMULA, WRITTEN, complex_ok=ok)
        _written(fn)


def register_binary(
    table: t.Mapping[object, tuple[Operand, Operand]], complex_ok: t.Collection[object] = ()
) -> None:
    """The same for functions of two operands, each entry a formula (its name or its gradient
    function) or a ``Refuse``.  Functions with a refused operand have the general rule alone:
    a float64 array's variant would be a registration only a refused call could reach."""
    for fn, (x, y) in table.items():
        grads = [_operand(fn, i, entry) for i, entry in enumerate((x, y))]
        ok = fn in complex_ok
        wrap = None if ok else real_only(_name(fn))
        if None in grads:
            rule = tables.binary_rule(grads[0], grads[1])
            for pair in tables.BINARY_PATTERNS:
                primitive(fn, *pair)(rule if wrap is None else wrap(rule))
        else:
            variants.register_binary(
                [fn], grads[0], grads[1], tables.BINARY_PATTERNS, wrap=wrap, forward=False
            )
        frules.register_elementwise([fn], grads, tables.SHOWN_FORMULA, WRITTEN, complex_ok=ok)
        _written(fn)


def register(
    unary: t.Mapping[object, Operand],
    binary: t.Mapping[object, tuple[Operand, Operand]],
    complex_ok: t.Collection[object] = (),
) -> None:
    """An area's tables: every function's rules of both modes, type rule and purity."""
    register_unary(unary, complex_ok)
    register_binary(binary, complex_ok)
    register_types([*unary, *binary])


def _operand(fn: object, position: int, entry: Operand) -> t.Any:
    if isinstance(entry, Refuse):
        no_derivative.refuse(fn, position, entry.name, entry.why)
        return None
    return grad(entry, 2) if isinstance(entry, str) else entry


def _written(fn: object) -> None:
    """``fn`` may be called by a written tangent, if it keeps scalars scalars (a ufunc)."""
    if isinstance(fn, np.ufunc):
        WRITTEN.add(fn)


def _ufunc_type(ufunc: object) -> t.Callable[[TypeArgs, TypeKwargs], T.Type]:
    def rule(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
        return elementwise(t.cast(t.Callable[..., object], ufunc), args, kwargs)

    return rule


def register_types(fns: t.Iterable[object]) -> None:
    """Elementwise functions: typed as NumPy's ufuncs are, pure without ``out=``."""
    for fn in fns:
        register_type_rule(fn, fold=True)(_ufunc_type(fn))
        register_pure_array_function(fn)
