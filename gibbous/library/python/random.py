"""Python's ``random`` module: the functions of the module (methods bound to its hidden
``random.Random`` instance, looked up as themselves) and the methods of ``random.Random`` called
with an instance first (``rng.gauss(mu, sigma)`` is called through ``Random.gauss``).

As for NumPy's generators (``shapes``, docs/decisions.md "Random numbers"): the forward pass
draws once, like the primal, and the pullback never touches the generator, so a forward +
reverse advances it exactly as the primal does.  The draws have no derivative with respect to
the generator's state.  ``gauss``, ``normalvariate``, ``lognormvariate``, ``uniform`` and
``expovariate`` are differentiated along the path, as reparameterised samples: for the same
state of the generator, ``gauss(mu, sigma) = mu + sigma z`` has ``d/dmu = 1`` and ``d/dsigma =
z``, ``uniform(a, b) = a + (b - a) u`` has ``1 - u`` and ``u``, ``expovariate(lambd) = e /
lambd`` has ``-y / lambd``, ``lognormvariate(mu, sigma) = exp(mu + sigma z)`` has ``y`` and
``y z``; ``z``, ``u`` and ``e`` are recovered from the draw.  ``random``, ``randint``,
``randrange``, ``getrandbits``, ``randbytes`` and ``seed`` have no derivative.  Other
distributions (``triangular``, ``betavariate``, ...) and ``sample``/``choices`` have no rule.

``choice(seq)`` and ``shuffle(x)`` pick and move items, which carry tangents.  Their draws
depend on the length only (CPython's ``seq[self._randbelow(len(seq))]`` and its swaps), so the
rules make them on indices: ``choice(range(n))`` is the index of the item ``choice(seq)``
returns (its fdata and, in the pullback, its cotangent, as ``seq[i]``), and ``shuffle`` of
``list(range(n))`` the permutation, applied to the list and to its tangent together; the
pullback puts both back in their order.  Only lists are shuffled (an array's rows would be
swapped through views, which NumPy's own ``rng.shuffle`` does right).
"""

from __future__ import annotations

import math
import random
import typing as t

from gibbous.ir import types as T
from gibbous.library.common import CD, LIST, NT, RuleResult, no_derivative_rrule
from gibbous.library.items import items_of, list_tangent
from gibbous.library.arrays.shapes import Options, Pathwise, pathwise_rrule, unit
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual, MutableTangent, Tangent, zero_tangent

RANDOM: T.Type = T.Object(random.Random)


def _path_normal(y: t.Any, p: Options) -> dict[str, t.Any]:
    return {"mu": 1.0, "sigma": unit(y, p["mu"], p["sigma"])}


def _path_lognormal(y: t.Any, p: Options) -> dict[str, t.Any]:
    return {"mu": y, "sigma": y * unit(math.log(y), p["mu"], p["sigma"])}


def _path_uniform(y: t.Any, p: Options) -> dict[str, t.Any]:
    u = unit(y, p["a"], p["b"] - p["a"])
    return {"a": 1.0 - u, "b": u}


def _path_exponential(y: t.Any, p: Options) -> dict[str, t.Any]:
    return {"lambd": -y / p["lambd"]}


_NORMAL: Pathwise = (("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}, _path_normal)
PATHWISE: dict[str, Pathwise] = {
    "gauss": _NORMAL,
    "normalvariate": _NORMAL,
    "lognormvariate": (("mu", "sigma"), {}, _path_lognormal),
    "uniform": (("a", "b"), {}, _path_uniform),
    "expovariate": (("lambd",), {"lambd": 1.0}, _path_exponential),
}
ZERO = ("random", "randint", "randrange", "getrandbits", "randbytes", "seed")

# Methods that write the draw ``gauss`` caches into the instance's ``gauss_next``: part of
# the generator's state, which the pullback leaves as it is (like NumPy's, whose state is
# invisible), and whose tangent is the zero of the new value.
CACHING = ("gauss", "seed")


def _receiver_fields(f: CD, operands: tuple[CD, ...], bound: bool) -> t.Any:
    """The fields of the generator's tangent (a bound method's is its receiver's)."""
    if not bound:
        fd = operands[0].fdata
    else:
        fd = f.fdata.fields.get("__self__") if isinstance(f.fdata, Tangent) else None
    return fd.fields if isinstance(fd, MutableTangent) else None


def caching(rule: t.Callable[..., RuleResult], bound: bool) -> t.Callable[..., RuleResult]:
    """``rule`` and the tangent of the receiver's ``gauss_next`` set to a zero of its value."""

    def rrule(f: CD, *operands: CD, **kwargs: CD) -> RuleResult:
        y, pullback = rule(f, *operands, **kwargs)
        fields = _receiver_fields(f, operands, bound)
        if fields is not None and "gauss_next" in fields:
            owner = f.primal.__self__ if bound else operands[0].primal
            fields["gauss_next"] = zero_tangent(owner.gauss_next)
        return y, pullback

    return rrule


def _draw_rule(name: str, bound: bool) -> t.Callable[..., RuleResult]:
    spec = PATHWISE.get(name)
    rule = no_derivative_rrule if spec is None else pathwise_rrule(name, spec, bound)
    return caching(rule, bound) if name in CACHING else rule


for _name in (*PATHWISE, *ZERO):
    primitive(getattr(random, _name), ...)(_draw_rule(_name, True))
    primitive(getattr(random.Random, _name), RANDOM, ...)(_draw_rule(_name, False))


def _split(bound: bool, operands: tuple[CD, ...]) -> tuple[tuple[t.Any, ...], tuple[t.Any, ...]]:
    """The primal of the receiver (none for a bound method) and the rdata it gets."""
    return ((), ()) if bound else ((operands[0].primal,), (NT,))


def choice_rule(bound: bool) -> t.Callable[..., RuleResult]:
    """``choice(seq)``: the item at the index ``choice(range(len(seq)))`` draws."""

    def rrule(f: CD, *operands: CD) -> RuleResult:
        receiver, receiver_rdata = _split(bound, operands)
        seq = operands[-1]
        items = items_of(seq.primal, seq.fdata)
        i = f.primal(*receiver, range(len(items)))
        y = items.item(i)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            items.send_rdata(i, dy)
            return (NT, *receiver_rdata, items.rdata())

        return CoDual(y, items.fdata(i)), pullback

    rrule.__qualname__ = f"choice_rule({'bound' if bound else 'method'})"
    return rrule


def shuffle_rule(bound: bool) -> t.Callable[..., RuleResult]:
    """``shuffle(x)`` of a list: the permutation drawn on ``list(range(len(x)))``, applied to
    x and its tangent; the pullback applies its inverse to both."""

    def rrule(f: CD, *operands: CD) -> RuleResult:
        receiver, receiver_rdata = _split(bound, operands)
        x = operands[-1]
        xs, tangent = x.primal, list_tangent(x)
        order = list(range(len(xs)))
        f.primal(*receiver, order)
        xs[:] = [xs[k] for k in order]
        tangent[:] = [tangent[k] for k in order]

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            back = [0] * len(order)
            for position, k in enumerate(order):
                back[k] = position
            xs[:] = [xs[p] for p in back]
            tangent[:] = [tangent[p] for p in back]  # with what the items collected since
            return (NT, *receiver_rdata, NT)

        return CoDual(None, NT), pullback

    rrule.__qualname__ = f"shuffle_rule({'bound' if bound else 'method'})"
    return rrule


primitive(random.choice, T.ANY)(choice_rule(True))
primitive(random.Random.choice, RANDOM, T.ANY)(choice_rule(False))
primitive(random.shuffle, LIST)(shuffle_rule(True))
primitive(random.Random.shuffle, RANDOM, LIST)(shuffle_rule(False))
