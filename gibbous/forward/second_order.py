"""Second order and Jacobians: ``hvp``, ``build_hvp``, ``hessian``, ``jacobian``.

A Hessian-vector product is reverse mode over forward mode: the forward-mode transform
(``gibbous.forward.transform``) writes ``g(x, *args, v) = ∇f(x)·v``, the directional derivative, as
a program of plain NumPy and Python calls; ``build_rrule`` derives its reverse rule from that
program's bytecode like any user function's; the gradient of ``g`` with respect to ``x`` is
``H v`` (and with respect to ``v``, ``∇f(x)``).  docs/decisions.md, "Second order", says why
this order.
"""

from __future__ import annotations

import types as pytypes
import typing as t
import weakref

import numpy as np

from gibbous.api import (
    StaleRuleError,
    build_rrule,
    rebound_global,
    value_and_gradient,
    value_and_pullback,
)
from gibbous.backends.numpy.codegen import compile_function
from gibbous.forward.entry import ForwardModeError, build_frule, jvp
from gibbous.entry import bind, unwrap
from gibbous.forward.dynamic import bound_run
from gibbous.forward.primitive import derivable_function, primitive_program
from gibbous.forward.programs import ProgramBuilder
from gibbous.ir import types as T
from gibbous.forward.transform import jvp_transform
from gibbous.forward.activity import Default, bind_packed, bound, tangent_carrying
from gibbous.rules import frules
from gibbous.rules.emit import tangent_refused
from gibbous.rules.call_adapters import Packed
from gibbous.rules.public_names import callable_name, entry_point
from gibbous.rules.registry import DefaultContext, MissingRuleError
from gibbous.tangents.model import NoTangent
from gibbous.session import Session

__all__ = ["HessianVectorProduct", "build_hvp", "hessian", "hvp", "jacobian"]


@entry_point
class HessianVectorProduct:
    """``h = build_hvp(f, x, *args, **kwargs)``; ``h(x, v, *args, **kwargs)`` is ``H v``,
    ``H`` the Hessian of the real scalar ``f(x, *args, **kwargs)`` in its first argument ``x``
    (a float or a float64 array), the other arguments held constant.  Built once, called many
    times.

    ``f`` is any callable ``build_rrule`` takes (a bound method, a partial, a callable
    instance, a library function with a forward rule); arguments bind as Python binds them."""

    def __init__(
        self, f: t.Callable[..., object], x: t.Any, args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
    ) -> None:  # fmt: skip
        call = unwrap(f, (x, *args), kwargs)
        target, operands = call.target, (*call.args, *call.kwargs.values())
        self.f, self.target, self.kwnames = f, target, tuple(call.kwargs)
        self.hidden = len(call.args) - 1 - len(args)  # (x's operand: after a method's object)
        types = tuple(map(T.typeof, operands))
        self.operand_types = types
        if not tangent_carrying(types[self.hidden]) or isinstance(types[self.hidden], T.Any):
            raise TypeError(
                f"build_hvp: the first argument must be a float or a float64 array, not "
                f"{types[self.hidden]}"
            )
        varied = tuple(i == self.hidden for i in range(len(operands)))
        builder = ProgramBuilder(Session(DefaultContext, False, None), reversible=True)
        tangent = builder.primitive(target, types, self.kwnames, varied, None)
        self.slot: tuple[int, int | str | None]
        if isinstance(tangent, frules.Emit):  # a library function: its tangent, written out
            result = t.cast(t.Callable[..., object], target)(*_own(call.args), **call.kwargs)
            self.directional = primitive_program(
                target, types, self.kwnames, varied, tangent, T.typeof(result), True
            )
            self.slot = (self.hidden, None)
            self.parameters: t.Callable[..., tuple[t.Any, ...]] = _given
        else:
            self._derive(target, tangent, builder, types, varied, len(call.args))
        # g(*parameters, *their tangents) = ∇f·v; its gradient in x's parameter is H v
        try:
            self.rule = build_rrule(self.directional, *self.parameters(*operands, _like(x)))
        except MissingRuleError as e:
            raise self._helper(e) from e

    def _helper(self, e: MissingRuleError) -> ForwardModeError:
        """A helper of forward mode's without a reverse rule, met building the product or
        calling it (in a callee's program, found at run time): named as the construct it is;
        inside a library call's tangent function, as that call's."""
        if e.inside_tangent is not None:
            of, note = e.inside_tangent
            notes = getattr(e, "__notes__", [])
            where = notes[note].strip() if note < len(notes) else "called"
            what = f"no rule to differentiate {callable_name(e.fn)} at {e.loc}"
            return tangent_refused(callable_name(of), where, what)
        return ForwardModeError(
            f"hvp: the forward program of {callable_name(self.target)} calls "
            f"{callable_name(e.fn)}, which reverse mode cannot differentiate, at {e.loc}: "
            "a Hessian-vector product does not go through that construct yet (jvp and "
            "gradients do)"
        )

    def _derive(
        self,
        target: object,
        tangent: object,
        builder: ProgramBuilder,
        types: tuple[T.Type, ...],
        varied: tuple[bool, ...],
        n_args: int,
    ) -> None:
        """The directional derivative of the Python function ``target``, from its code."""
        if tangent is not None or not (
            isinstance(target, pytypes.FunctionType) and derivable_function(target)
        ):
            why = (
                "its forward rule is a function called at run time, which reverse mode cannot "
                "read" if tangent is not None else "it is not a Python function"
            )
            raise ForwardModeError(
                f"build_hvp: {callable_name(target)}: {why}; Hessian-vector products are "
                "derived from a Python function's code or a library function's written-out "
                "forward rule (docs/rules.md lists them)"
            )
        binding = bind_packed(target, n_args, self.kwnames)
        if binding is None:
            bind(target, types[:n_args], dict(zip(self.kwnames, types[n_args:])))
            raise TypeError(f"build_hvp: {callable_name(target)} does not take these arguments")
        full_types, full_varied = bound(binding, types, varied)
        # (a *args or **kwargs without x is a constant, as the other arguments are: their
        # tangents would all be zeros)
        full_varied = tuple(
            v and (not isinstance(w, Packed) or self.hidden in w.indices)
            for w, v in zip(binding, full_varied)
        )
        typed = builder.typed(target, full_types)
        builder.session.freeze(target)  # (the globals the frontend froze into the IR)
        directional = jvp_transform(
            typed, full_varied, builder, callable_name(target), tangent_only=True
        )
        # (a callee known only at run time was refused by the transform: no reverse rule)
        self.directional = compile_function(directional)
        self.slot = _slot(binding, self.hidden)
        if binding == list(range(len(types))):  # (each operand its parameter, as given)
            self.parameters = _given
        else:
            self.parameters = bound_run(
                target, binding, len(types), varied, full_varied, _given, False
            )
        # The globals the programs froze: the reverse rule of the compiled directional
        # derivative cannot see them (its code reads none), so this product checks them itself.
        self.frozen = builder.session.frozen

    frozen: t.Sequence[tuple[dict[str, object], str, object]] = ()

    def stale(self) -> str | None:
        """Which global ``f``'s code read has been rebound since this was built, if one has."""
        return rebound_global(self.frozen, self.target)

    def __call__(self, x: t.Any, v: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
        call = unwrap(self.f, (x, *args), kwargs)
        return self.at((*call.args, *call.kwargs.values()), tuple(call.kwargs), v)

    def at(self, operands: tuple[t.Any, ...], kwnames: tuple[str, ...], v: t.Any) -> t.Any:
        """``H v`` at ``operands`` (the unwrapped callable's, keywords' values last)."""
        stale = self.stale()
        if stale is not None:
            raise StaleRuleError(f"{stale}; build the product again (gibbous.hvp does)")
        if kwnames != self.kwnames or len(operands) != len(self.operand_types):
            raise TypeError(
                f"hvp: {self!r} was built for other arguments; build one for these"
            )
        x = operands[self.hidden]
        if np.shape(v) != np.shape(x):
            raise TypeError(
                f"hvp: v must have x's shape {np.shape(x)}; it has shape {np.shape(v)}"
            )
        v = float(v) if isinstance(x, float) else np.asarray(v, dtype=np.float64)
        others = [a for i, a in enumerate(operands) if i != self.hidden]
        v, *others = _apart(x, v, *others)
        others.insert(self.hidden, x)
        try:
            _, grads = value_and_gradient(self.rule, self.directional, *self.parameters(*others, v))
        except MissingRuleError as e:
            raise self._helper(e) from e
        where, item = self.slot
        g = grads[1 + where]
        if item is not None and not isinstance(g, NoTangent):
            g = g[item]
        return np.zeros(np.shape(x)) if isinstance(g, NoTangent) else g

    def __repr__(self) -> str:
        n = len(self.operand_types) - len(self.kwnames)
        shown = [str(ty) for ty in self.operand_types[self.hidden : n]]
        shown += [f"{k}={ty}" for k, ty in zip(self.kwnames, self.operand_types[n:])]
        return f"<Hessian-vector product of {callable_name(self.f)}({', '.join(shown)})>"


def _given(*given: t.Any) -> tuple[t.Any, ...]:
    return given


def _slot(binding: t.Sequence[int | Default | Packed], x: int) -> tuple[int, int | str | None]:
    """Where operand ``x`` is among the bound parameters: a parameter, or an item of the
    ``*args`` tuple or ``**kwargs`` dict made for the call."""
    for i, b in enumerate(binding):
        if b == x:
            return i, None
        if isinstance(b, Packed) and x in b.indices:
            j = b.indices.index(x)
            return i, (j if b.names is None else b.names[j])
    raise AssertionError("the differentiated argument is bound to no parameter")


def _own(values: t.Sequence[t.Any]) -> list[t.Any]:
    """``values`` with the arrays in them (in lists and tuples too) copied: what a function
    that writes into its arguments may write."""

    def own(v: t.Any) -> t.Any:
        if isinstance(v, np.ndarray):
            return v.copy()
        if isinstance(v, list):
            return [own(i) for i in v]
        if isinstance(v, tuple):
            items = [own(i) for i in v]
            return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
        return v

    return [own(v) for v in values]


def _apart(x: t.Any, *others: t.Any) -> list[t.Any]:
    """``others`` with each array that shares memory with ``x`` (or with an earlier one)
    copied.  The products differentiate in ``x`` alone, but reverse mode gives arguments that
    share memory one cotangent (``hvp(f, x, x)`` would get ``H x + ∇f``)."""
    out: list[t.Any] = []
    seen = [x]
    for a in others:
        if isinstance(a, np.ndarray) and any(
            isinstance(b, np.ndarray) and np.may_share_memory(a, b) for b in seen
        ):
            a = a.copy()
        out.append(a)
        seen.append(a)
    return out


def _like(x: t.Any) -> t.Any:
    return 0.0 if isinstance(x, float) else np.zeros_like(x, dtype=np.float64)


@entry_point
def build_hvp(f: t.Callable[..., object], x: t.Any, *args: t.Any, **kwargs: t.Any) -> HessianVectorProduct:
    """The Hessian-vector product of ``f`` in its first argument, for arguments of these
    types: ``h(x, v, *args, **kwargs)``."""
    return HessianVectorProduct(f, x, args, kwargs)


# ``hvp(f, x, v)``: one product per callable under its wrappers (a bound method's function, a
# partial's) and operand types, kept while that callable lives (a library function that takes
# no weak reference lives as long as its module: kept in a plain dict).
_Products = dict[tuple[tuple[T.Type, ...], tuple[str, ...]], HessianVectorProduct]
_HVPS: weakref.WeakKeyDictionary[object, _Products] = weakref.WeakKeyDictionary()
_HVPS_OF_BUILTINS: dict[object, _Products] = {}


@entry_point
def hvp(f: t.Callable[..., object], x: t.Any, v: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """``H v``: the Hessian of ``f(x, *args, **kwargs)`` in ``x`` times ``v`` (built on the
    first call for these argument types, then reused)."""
    call = unwrap(f, (x, *args), kwargs)
    operands = (*call.args, *call.kwargs.values())
    key = (tuple(map(T.typeof, operands)), tuple(call.kwargs))
    try:
        mine = _HVPS.setdefault(call.target, {})
    except TypeError:
        mine = _HVPS_OF_BUILTINS.setdefault(call.target, {})
    made = mine.get(key)
    if made is None or made.stale() is not None:  # (a rebound global: built again)
        made = mine[key] = build_hvp(f, x, *args, **kwargs)
    return made.at(operands, key[1], v)


@entry_point
def hessian(f: t.Callable[..., object], x: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """The Hessian of ``f(x, *args, **kwargs)`` in ``x``: one Hessian-vector product per
    element of ``x``, of shape ``x.shape + x.shape`` (a float for a float ``x``)."""
    made = build_hvp(f, x, *args, **kwargs)
    if isinstance(x, float):
        return float(made(x, 1.0, *args, **kwargs))
    x = np.asarray(x)
    out = np.empty((x.size, x.size))
    basis = np.zeros(x.size)
    for i in range(x.size):
        basis[i] = 1.0
        out[:, i] = np.ravel(made(x, basis.reshape(x.shape), *args, **kwargs))
        basis[i] = 0.0
    return out.reshape(x.shape + x.shape)


@entry_point
def jacobian(
    f: t.Callable[..., object], x: t.Any, *args: t.Any, mode: str = "auto", **kwargs: t.Any
) -> t.Any:
    """The Jacobian of ``f(x, *args, **kwargs)`` (a float or a real array) in ``x``, of shape
    ``y.shape + x.shape``: by forward mode, one jvp per element of ``x``, where ``x`` has
    no more elements than ``y`` (``jacfwd``); else by reverse mode, one pullback per element
    of ``y`` (``jacrev``).  ``mode`` ("forward", "reverse") chooses.  A function that writes
    into its arguments is called on copies: every column is taken at ``x``, which stays the
    caller's."""

    def owned() -> tuple[list[t.Any], dict[str, t.Any]]:
        mine = _own((x, *args, *kwargs.values()))
        return mine[: 1 + len(args)], dict(zip(kwargs, mine[1 + len(args) :]))

    given, named = owned()
    y: t.Any = f(*given, **named)
    x_size, y_size = int(np.size(x)), int(np.size(y))
    if mode == "auto":
        mode = "forward" if x_size <= y_size else "reverse"
    if mode not in ("forward", "reverse"):
        raise ValueError(f"jacobian: mode is 'auto', 'forward' or 'reverse', not {mode!r}")
    x_shape, y_shape = np.shape(x), np.shape(y)
    out = np.empty((y_size, x_size))
    if mode == "forward":
        rule = build_frule(f, x, *args, **kwargs)
        # The other arguments are constants: zero tangents where the rule gives them one.
        held = [frules.like(a, None) if varied else None for a, varied in zip(args, rule.varied[1:])]
        for i in range(x_size):
            e = np.zeros(x_size)
            e[i] = 1.0
            d = float(e[0]) if isinstance(x, float) else e.reshape(x_shape)
            given, named = owned()
            _, dy = jvp(rule, f, given, (d, *held), **named)
            out[:, i] = np.ravel(dy)
    else:
        args = tuple(_apart(x, *args))
        reverse = build_rrule(f, x, *args, **kwargs)
        for k in range(y_size):
            e = np.zeros(y_size)
            e[k] = 1.0
            ybar = float(e[0]) if np.ndim(y) == 0 else e.reshape(y_shape)
            _, grads = value_and_pullback(reverse, ybar, f, x, *args, **kwargs)
            out[k, :] = np.ravel(grads[1])
    result = out.reshape(y_shape + x_shape)
    return float(result) if result.ndim == 0 else result
