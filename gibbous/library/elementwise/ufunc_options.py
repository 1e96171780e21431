"""Ufunc calls with NumPy's options, in reverse mode: ``out=`` (an array, ``...`` for "an
array, even 0-d", a 1-tuple), ``where=`` with an output, ``casting=`` and ``dtype=`` (of
the dtype the call computes in anyway, or any for a ufunc without derivative), as NumPy's own
Python writes them (``np.true_divide(q, 100, out=...)`` in ``percentile``, ``np.subtract(arr,
avg, out=arr, casting="unsafe", where=where)`` in ``nanvar``, ``floor(x, out=...)`` in
``_get_indexes``).

Each is the ufunc's plain rule (``np.divide(x, y)``'s), looked up for the operands at hand,
and a write: the plain call's fresh result is written into ``out`` where ``where`` holds
(``np.copyto(out, y, where=where, casting=casting)``: the ufunc's own values).  The write
saves what it overwrites, primal and fdata; the pullback restores the primal, hands the
plain rule the cotangent of the positions written, restores their fdata (positions not
written keep theirs: those values pass through) and then runs the plain pullback, which adds
into the operands' fdata, an output that is an operand too included.

The plain forms of the arithmetic with an output (``np.add(x, y, out=z)`` of one float
dtype) keep their stateful rules (``gibbous.rules.inplace``), which allocate nothing: their
patterns are narrower than this rule's, which lookup prefers.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.items import as_array
from gibbous.library.common import ANY, CD, NT, RuleResult, add_into, new_fdata, nothing
from gibbous.rules import frules
from gibbous.rules.emit import is_none
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import DefaultContext, MissingRuleError, lookup_rule, primitive
from gibbous.tangents.model import CoDual

_OPTIONS = frozenset({"out", "where", "casting", "dtype"})


def _default_where(where: object) -> bool:
    return where is True or where is np.True_ or type(where).__name__ == "_NoValueType"


def _dtype(d: t.Any) -> np.dtype[t.Any]:
    """A ``dtype=``: a dtype, a scalar type, or a DType class (``type(x.dtype)``, ``_lerp``'s)."""
    if isinstance(d, type) and issubclass(d, np.dtype):
        return t.cast(np.dtype[t.Any], t.cast(t.Any, d)())
    return t.cast(np.dtype[t.Any], np.dtype(d))


def _plain_rule(ufunc: np.ufunc, operands: tuple[CD, ...]) -> t.Callable[..., RuleResult]:
    types = tuple(T.typeof(x.primal) for x in operands)
    try:
        registration = lookup_rule(DefaultContext, ufunc, types)
    except MissingRuleError:
        raise MissingRuleError(ufunc, types) from None
    if registration.kind == "stateful" or registration.rule is ufunc_options_rrule:
        raise MissingRuleError(ufunc, types)  # (no plain rule for these operands)
    return registration.rule


def _arrays(
    operands: tuple[CD, ...],
) -> tuple[tuple[CD, ...], t.Callable[[t.Callable[..., tuple[t.Any, ...]]], t.Callable[..., tuple[t.Any, ...]]]]:
    """Lists and tuples among the operands as arrays (``as_array``), and what makes the plain
    pullback send their cotangents back to their items."""
    backs: dict[int, t.Callable[[], t.Any]] = {}
    converted = list(operands)
    for i, x in enumerate(operands):
        if isinstance(x.primal, (list, tuple)):
            converted[i], backs[i] = as_array(x)

    def pullback_of(pullback: t.Callable[..., tuple[t.Any, ...]]) -> t.Callable[..., tuple[t.Any, ...]]:
        if not backs:
            return pullback

        def sent(dy: t.Any) -> tuple[t.Any, ...]:
            rdata = list(pullback(dy))
            for i, back in backs.items():
                rdata[1 + i] = back()
            return tuple(rdata)

        return sent

    return tuple(converted), pullback_of


def ufunc_options_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``ufunc(*operands, out=..., where=..., casting=..., dtype=...)``: the plain rule, then
    the write into ``out`` (module docstring)."""
    ufunc = t.cast(np.ufunc, f.primal)
    name = callable_name(ufunc)
    if set(kwargs) - _OPTIONS or len(args) > ufunc.nin + 1 or ufunc.nout != 1:
        raise UnsupportedArgumentError(f"{name}: gibbous's rule takes out, where, casting, dtype")
    operands = args[: ufunc.nin]
    out_cd: CD | None = args[ufunc.nin] if len(args) > ufunc.nin else kwargs.get("out")
    out = None if out_cd is None else out_cd.primal
    if isinstance(out, tuple) and len(out) == 1 and out_cd is not None:
        out = out[0]
        out_cd = CoDual(out, out_cd.fdata[0] if isinstance(out_cd.fdata, tuple) else NT)
    where = kwargs["where"].primal if "where" in kwargs else True
    casting = kwargs["casting"].primal if "casting" in kwargs else "same_kind"
    operands, pullback_of = _arrays(operands)  # (a list operand: as NumPy converts it)
    rule = _plain_rule(ufunc, operands)
    y_cd, plain_pullback = rule(f, *operands)
    pullback = pullback_of(plain_pullback)
    y = y_cd.primal
    dtype = kwargs["dtype"].primal if "dtype" in kwargs else None
    if dtype is not None and type(rule).__name__ == "ZeroDerivativeRule":
        y = ufunc(*(x.primal for x in operands), dtype=dtype)  # (a mask, as bools: no derivative)
        y_cd = CoDual(y, new_fdata(y))
    elif dtype is not None and _dtype(dtype) != np.result_type(y):
        raise UnsupportedArgumentError(f"{name} with dtype={dtype!r}: a dtype of another result")
    n = 1 + len(args) + len(kwargs)
    if out is None or out is Ellipsis:
        if not _default_where(where):
            raise UnsupportedArgumentError(f"{name} with where= and no out=: values left unset")
        return _fresh(y_cd, pullback, out is Ellipsis, n, len(operands))
    if not isinstance(out, np.ndarray):
        raise UnsupportedArgumentError(f"{name}: out= must be an array")
    return _written(y_cd, pullback, t.cast(CD, out_cd), where, casting, n, len(operands))


def _fresh(y_cd: CD, pullback: t.Callable[..., tuple[t.Any, ...]], array: bool, n: int, k: int) -> RuleResult:
    """The plain call's result; with ``out=...``, a scalar one as a 0-d array."""
    rest = nothing(n - 1 - k)
    y = y_cd.primal
    if not array or isinstance(y, np.ndarray):
        return y_cd, lambda dy: (*pullback(dy), *rest)
    z = np.asarray(y)
    zf = new_fdata(z)

    def boxed(dz: t.Any) -> tuple[t.Any, ...]:
        g = zf[()] if isinstance(zf, np.ndarray) else NT
        return (*pullback(y.dtype.type(g) if g is not NT else NT), *rest)

    return CoDual(z, zf), boxed


def _written(
    y_cd: CD,
    pullback: t.Callable[..., tuple[t.Any, ...]],
    out_cd: CD,
    where: t.Any,
    casting: t.Any,
    n: int,
    k: int,
) -> RuleResult:
    """The plain result ``y`` written into ``out`` where ``where`` holds."""
    z, dz = out_cd.primal, out_cd.fdata
    mask = None if _default_where(where) else np.broadcast_to(np.asarray(where, bool), z.shape)
    saved = z.copy()
    tracked = isinstance(dz, np.ndarray)
    saved_fdata = dz.copy() if tracked else None
    y = y_cd.primal
    np.copyto(z, y, casting=casting, where=True if mask is None else mask)
    if tracked:
        if mask is None:
            dz.fill(0)
        else:
            dz[mask] = 0
    rest = nothing(n - 1 - k)

    def written_pullback(_: t.Any) -> tuple[t.Any, ...]:
        np.copyto(z, saved)
        if not tracked or saved_fdata is None:
            return (*pullback(NT), *rest)
        g = dz.copy() if mask is None else np.where(mask, dz, 0)
        np.copyto(dz, saved_fdata, where=True if mask is None else mask)
        fy = y_cd.fdata
        if isinstance(fy, np.ndarray):
            add_into(fy, g)  # (summed back over the axes ``y`` was broadcast along)
            return (*pullback(NT), *rest)
        return (*pullback(np.sum(g) if np.ndim(y) == 0 else NT), *rest)

    return out_cd, written_pullback


#: The ufuncs this rule is registered for: those with one output and a plain rule (not the
#: generalized ones, ``matmul``, whose options are their own).
REGISTERED: list[np.ufunc] = sorted(
    {
        u
        for u in vars(np).values()
        if isinstance(u, np.ufunc) and u.nout == 1 and u.signature is None
        and DefaultContext.registrations(u)
    },
    key=lambda u: u.__name__,
)
for _ufunc in REGISTERED:
    primitive(_ufunc, ANY, ...)(ufunc_options_rrule)


# --------------------------------------------------------------------------------------------
# Forward mode: the same calls' tangents, from the plain call's (an output array is a write:
# ``gibbous.forward.transform`` makes the plain call, with the options the write does not
# take, and writes its value and tangent where ``where`` holds).


def _zero_ufunc(ufunc: np.ufunc) -> bool:
    try:
        found = lookup_rule(DefaultContext, ufunc, (T.Array(None, None),) * ufunc.nin)
    except MissingRuleError:
        return False
    return found.kind == "zero_derivative"


def _default_type(ty: T.Type, default: object) -> bool:
    return isinstance(ty, T.Const) and (
        ty.value is default or type(ty.value).__name__ == "_NoValueType"
    )


def options_tangent(ufunc: np.ufunc) -> frules.Maker:
    """The tangent of ``ufunc(*operands, out=..., casting=, dtype=, where=True)``: the plain
    call's (its other forward rules'), as an array; of a ufunc without derivative, none."""
    zero = _zero_ufunc(ufunc)

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        n = len(types) - len(kwnames)
        given = dict(zip(kwnames, types[n:]))
        if not kwnames or n != ufunc.nin or not set(given) <= _OPTIONS:
            return None
        out = given.get("out")
        boxed = isinstance(out, T.Const) and out.value is Ellipsis
        if out is not None and not boxed and not is_none(out):
            return None  # (an output array: a write, not this rule's)
        if "where" in given and not _default_type(given["where"], True):
            return None
        if zero:
            return frules.Emit(lambda b, z, args, tangents, kwargs: frules.zero(b, z))
        if "dtype" in given:
            return None  # (of a float result: the plain rule's dtype is the call's own)
        plain = [m for m in frules.tried(ufunc) if m is not make]
        inner = next(
            (r for r in (m(types[:n], (), varied[:n]) for m in plain) if r is not None), None
        )
        if inner is None:
            return None
        if isinstance(inner, frules.Emit):
            return frules.Emit(_boxed_emit(inner, n) if boxed else _plain_emit(inner, n))
        tangent = inner

        def run(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            d = tangent(z[()] if boxed and np.ndim(z) == 0 else z, *a[: 2 * n])
            return np.asarray(d) if boxed else d

        return run

    return make


def _plain_emit(inner: frules.Emit, n: int) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        return inner.fn(b, z, args[:n], tangents[:n], {})

    return emit


def _boxed_emit(inner: frules.Emit, n: int) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        d = inner.fn(b, z, args[:n], tangents[:n], {})
        return b.call(np.asarray, d, type=z.type)

    return emit


for _ufunc in REGISTERED:
    frules.register(_ufunc, options_tangent(_ufunc))
