"""A gradient the user holds: the rule and the arrays the gradients are written into.

    grad_f = gibbous.prepare_gradient(loss, W, x)     # builds the rule for these types
    y, (dloss, dW, dx) = grad_f(W, x)                  # as value_and_gradient, but ...

``value_and_gradient`` returns fresh arrays on every call, because a caller may keep them.  A
training loop does not: it reads the gradients, updates the weights, and calls again.  A
``PreparedGradient`` keeps the fdata it made for each array argument and, on the next call with
an argument of the same shape and dtype, zeroes that array in place and hands it to the rule
again, so the gradients it returns are **its own arrays, overwritten by its next call** (copy
what you keep).  Its calls also have array sites compute into buffers they keep
(``gibbous.rules.buffers.MODE``; ``value_and_gradient`` does not).  So with an
allocation-free primal (the seed's ``np.matmul(A, B, out=C)``, a tanh MLP, Rosenbrock) a warm
call allocates no NumPy memory at all; with others, what remains is the temporaries of rules
that are called rather than written inline (docs/ad.md, "Per-node buffers").

The arrays are kept per thread: two threads calling one ``PreparedGradient`` each get their
own, as each gets its own rule state (``gibbous.toplevel``).  Arguments that are not plain
(lists of arrays, objects, a closure's cells) get fresh fdata on every call, as with
``value_and_gradient``.
"""

from __future__ import annotations

import threading
import typing as t

import numpy as np

from gibbous.api import Rule, _direct, _Run, build_rrule, scalar_seed
from gibbous.rules import buffers
from gibbous.rules.public_names import entry_point
from gibbous.toplevel import EntryRule


@entry_point
class PreparedGradient:
    """``f``'s rule and, per thread, the fdata of its array arguments, reused call after call."""

    def __init__(self, f: t.Callable[..., object], rule: Rule) -> None:
        self.f, self.rule = f, rule
        self._local = threading.local()

    def __call__(self, *args: object, **kwargs: object) -> tuple[t.Any, tuple[t.Any, ...]]:
        """``f(*args, **kwargs)`` and its gradient ``(df, *dargs)``, as ``value_and_gradient``
        gives them, but array gradients are this object's arrays: the next call overwrites
        them."""
        previous: tuple[t.Any, ...] | None = getattr(self._local, "fdatas", None)
        rule, f = self.rule, self.f
        mode = buffers.MODE
        outer = mode.keep  # (a prepared gradient may call another)
        mode.keep = True  # array sites compute into buffers they keep
        try:
            if (
                type(rule) is EntryRule
                and rule.direct is f
                and len(args) == rule.arity
                and not kwargs
            ):
                return _direct(rule, f, args, previous, self._local)
            run = _Run(rule, f, args, kwargs, previous)
            self._local.fdatas = run.fdatas
            value = run.y.primal
            return value, run.gradients(run.pullback(scalar_seed(self.f, value)))
        finally:
            mode.keep = outer

    def held(self) -> int:
        """Bytes of gradient arrays this thread's calls keep for the next call."""
        fdatas = getattr(self._local, "fdatas", None) or ()
        return sum(a.nbytes for a in fdatas if type(a) is np.ndarray)

    def __repr__(self) -> str:
        return f"<prepared gradient of {getattr(self.f, '__qualname__', self.f)!r}>"


@entry_point
def prepare_gradient(f: t.Callable[..., object], *args: t.Any, **kwargs: t.Any) -> PreparedGradient:
    """Build ``f``'s rule for these arguments (as ``build_rrule``, whose own keywords ``ctx``,
    ``debug`` and ``passes`` it takes too) and return a callable that computes ``(value,
    gradients)`` into arrays it keeps between calls."""
    return PreparedGradient(f, build_rrule(f, *args, **kwargs))
