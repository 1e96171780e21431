"""Second order and Jacobians: ``hvp``, ``build_hvp``, ``hessian``, ``jacobian``.

A Hessian-vector product is reverse mode over forward mode: the forward-mode transform
(``gibbous.passes.jvp``) writes ``g(x, *args, v) = ∇f(x)·v``, the directional derivative, as
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
from gibbous.forward import ForwardModeError, build_frule, jvp
from gibbous.forward.primitive import derivable_function
from gibbous.forward.programs import ProgramBuilder
from gibbous.ir import types as T
from gibbous.passes.jvp import jvp_transform
from gibbous.passes.jvp_activity import Default, bind_call, tangent_carrying
from gibbous.rules.public_names import callable_name, entry_point
from gibbous.rules.registry import DefaultContext
from gibbous.session import Session

__all__ = ["HessianVectorProduct", "build_hvp", "hessian", "hvp", "jacobian"]


@entry_point
class HessianVectorProduct:
    """``h = build_hvp(f, x, *args)``; ``h(x, v, *args)`` is ``H v``, ``H`` the Hessian of
    the real scalar ``f(x, *args)`` in its first argument ``x`` (a float or a float64
    array), the other arguments held constant.  Built once, called many times."""

    def __init__(self, f: t.Callable[..., object], x: t.Any, args: tuple[t.Any, ...]) -> None:
        if not (isinstance(f, pytypes.FunctionType) and derivable_function(f)):
            raise ForwardModeError(
                f"build_hvp: {callable_name(f)} is not a Python function; Hessian-vector "
                "products are derived from a Python function's code"
            )
        types = (T.typeof(x), *map(T.typeof, args))
        if not tangent_carrying(types[0]) or isinstance(types[0], T.Any):
            raise TypeError(
                f"build_hvp: the first argument must be a float or a float64 array, not "
                f"{types[0]}"
            )
        binding = bind_call(f, len(types), ())
        if binding is None:
            raise ForwardModeError(
                f"build_hvp({callable_name(f)}, x, ...): pass one positional value per "
                "parameter (those with defaults may be left out); *args, **kwargs and "
                "keyword-only parameters are not taken by this version"
            )
        # (parameters left to their defaults: constants after the arguments given)
        self.defaults = tuple(t.cast(Default, d).value for d in binding[len(types) :])
        args = (*args, *self.defaults)
        types = (*types, *map(T.typeof, self.defaults))
        builder = ProgramBuilder(Session(DefaultContext, False, None), reversible=True)
        typed = builder.typed(f, types)
        builder.session.freeze(f)  # (the globals the frontend froze into the IR)
        varied = (True,) + (False,) * len(args)
        directional = jvp_transform(
            typed, varied, builder, callable_name(f), tangent_only=True
        )
        # (a callee known only at run time was refused by the transform: no reverse rule)
        self.f = f
        self.arg_types = types[: len(types) - len(self.defaults)]
        # The globals f's programs froze: the reverse rule of the compiled forward program
        # cannot see them (its code reads none), so this product checks them itself.
        self.frozen = builder.session.frozen
        self.directional = compile_function(directional)  # g(x, *args, v) = ∇f(x)·v
        self.rule = build_rrule(self.directional, x, *args, _like(x))

    def stale(self) -> str | None:
        """Which global ``f``'s code read has been rebound since this was built, if one has."""
        return rebound_global(self.frozen, self.f)

    def __call__(self, x: t.Any, v: t.Any, *args: t.Any) -> t.Any:
        stale = self.stale()
        if stale is not None:
            raise StaleRuleError(f"{stale}; build the product again (gibbous.hvp does)")
        if np.shape(v) != np.shape(x):
            raise TypeError(
                f"hvp: v must have x's shape {np.shape(x)}; it has shape {np.shape(v)}"
            )
        v = float(v) if isinstance(x, float) else np.asarray(v, dtype=np.float64)
        v, *rest = _apart(x, v, *args, *self.defaults)
        _, grads = value_and_gradient(self.rule, self.directional, x, *rest, v)
        return grads[1]

    def __repr__(self) -> str:
        types = ", ".join(map(str, self.arg_types))
        return f"<Hessian-vector product of {callable_name(self.f)}({types})>"


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
def build_hvp(f: t.Callable[..., object], x: t.Any, *args: t.Any) -> HessianVectorProduct:
    """The Hessian-vector product of ``f`` in its first argument, for arguments of these
    types: ``h(x, v, *args)``."""
    return HessianVectorProduct(f, x, args)


# ``hvp(f, x, v)``: one product per function and argument types, kept while ``f`` lives.
_HVPS: weakref.WeakKeyDictionary[object, dict[tuple[T.Type, ...], HessianVectorProduct]] = (
    weakref.WeakKeyDictionary()
)


@entry_point
def hvp(f: t.Callable[..., object], x: t.Any, v: t.Any, *args: t.Any) -> t.Any:
    """``H v``: the Hessian of ``f(x, *args)`` in ``x`` times ``v`` (built on the first call
    for these argument types, then reused)."""
    types = (T.typeof(x), *map(T.typeof, args))
    mine = _HVPS.setdefault(f, {})
    made = mine.get(types)
    if made is None or made.stale() is not None:  # (a rebound global: built again)
        made = mine[types] = build_hvp(f, x, *args)
    return made(x, v, *args)


@entry_point
def hessian(f: t.Callable[..., object], x: t.Any, *args: t.Any) -> t.Any:
    """The Hessian of ``f(x, *args)`` in ``x``: one Hessian-vector product per element of
    ``x``, of shape ``x.shape + x.shape`` (a float for a float ``x``)."""
    made = build_hvp(f, x, *args)
    if isinstance(x, float):
        return float(made(x, 1.0, *args))
    x = np.asarray(x)
    out = np.empty((x.size, x.size))
    basis = np.zeros(x.size)
    for i in range(x.size):
        basis[i] = 1.0
        out[:, i] = np.ravel(made(x, basis.reshape(x.shape), *args))
        basis[i] = 0.0
    return out.reshape(x.shape + x.shape)


@entry_point
def jacobian(
    f: t.Callable[..., object], x: t.Any, *args: t.Any, mode: str = "auto"
) -> t.Any:
    """The Jacobian of ``f(x, *args)`` (a float or a real array) in ``x``, of shape
    ``y.shape + x.shape``: by forward mode, one jvp per element of ``x``, where ``x`` has
    no more elements than ``y`` (``jacfwd``); else by reverse mode, one pullback per element
    of ``y`` (``jacrev``).  ``mode`` ("forward", "reverse") chooses.  A function that writes
    into its arguments is called on copies: every column is taken at ``x``, which stays the
    caller's."""
    y: t.Any = f(*_own((x, *args)))
    x_size, y_size = int(np.size(x)), int(np.size(y))
    if mode == "auto":
        mode = "forward" if x_size <= y_size else "reverse"
    if mode not in ("forward", "reverse"):
        raise ValueError(f"jacobian: mode is 'auto', 'forward' or 'reverse', not {mode!r}")
    x_shape, y_shape = np.shape(x), np.shape(y)
    out = np.empty((y_size, x_size))
    if mode == "forward":
        rule = build_frule(f, x, *args)
        # The other arguments are constants: zero tangents where the rule gives them one.
        held = [
            (np.zeros_like(a, dtype=np.float64) if isinstance(a, np.ndarray) else 0.0)
            if varied
            else None
            for a, varied in zip(args, rule.varied[1:])
        ]
        for i in range(x_size):
            e = np.zeros(x_size)
            e[i] = 1.0
            d = float(e[0]) if isinstance(x, float) else e.reshape(x_shape)
            _, dy = jvp(rule, f, _own((x, *args)), (d, *held))
            out[:, i] = np.ravel(dy)
    else:
        args = tuple(_apart(x, *args))
        reverse = build_rrule(f, x, *args)
        for k in range(y_size):
            e = np.zeros(y_size)
            e[k] = 1.0
            ybar = float(e[0]) if np.ndim(y) == 0 else e.reshape(y_shape)
            _, grads = value_and_pullback(reverse, ybar, f, x, *args)
            out[k, :] = np.ravel(grads[1])
    result = out.reshape(y_shape + x_shape)
    return float(result) if result.ndim == 0 else result
