"""Values as the rule tests see them: trees of containers with arrays and numbers at the leaves.

A value's children are reached by keys: ``("index", i)`` for tuples and lists, ``("key", k)``
for dicts, ``("attr", name)`` for object fields, closure cells and the ``__self__``/``__func__``
of bound methods.  ``child`` reads a key from a primal *or* from a tangent (a tuple, list, dict,
``Tangent`` or ``MutableTangent``), so one walk carries a primal and several tangents of it side
by side.

Lists, dicts, mutable objects and arrays are visited once however often they are reached (they
are identified by address, as their fdata is); tuples and frozen objects are values and are
visited at every position, because their rdata is returned per position.
"""

from __future__ import annotations

import functools
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.tangents.classes import NEVER_DIFFERENTIABLE, instance_fields
from gibbous.tangents.model import NO_TANGENT, MutableTangent, Tangent

Key = tuple[str, t.Any]
Array = np.ndarray[t.Any, t.Any]

# Values without parts that may be shared as they are: immutable, and nothing in them can carry
# a tangent.  (Floats and complex numbers are immutable too but are perturbed, not shared.)
# Values without tangent that can be shared between calls as they are.  Mutable ones are not:
# each call gets its own copy (a random generator's state advances as it draws).
_MUTABLE = (bytearray, set, np.random.Generator, np.random.BitGenerator, np.random.RandomState)
_ATOMS: tuple[type, ...] = tuple(cls for cls in NEVER_DIFFERENTIABLE if cls not in _MUTABLE)

INEXACT = (float, complex, np.floating, np.complexfloating)


def is_inexact_scalar(x: object) -> bool:
    """A float or complex number: its tangent is rdata."""
    return isinstance(x, INEXACT)


def is_float_array(x: object) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def bound_self(x: object) -> object:
    """The receiver of a bound builtin method with state of its own (``[].append``), else None."""
    if isinstance(x, (pytypes.BuiltinMethodType, pytypes.MethodWrapperType)):
        owner = getattr(x, "__self__", None)
        if owner is not None and not isinstance(owner, (pytypes.ModuleType, type)):
            return owner
    return None


def address(a: Array) -> int:
    return int(a.__array_interface__["data"][0])


# One definition of an object's fields, shared with the tangent model.
object_fields = instance_fields


def is_atom(x: object) -> bool:
    if isinstance(x, _ATOMS):
        return True
    if isinstance(x, pytypes.FunctionType):
        return not x.__closure__
    if isinstance(x, (pytypes.BuiltinFunctionType, pytypes.MethodWrapperType)):
        return bound_self(x) is None or is_atom(bound_self(x))
    return False


def children(x: object) -> list[tuple[Key, t.Any]]:
    """The parts of ``x`` that may carry tangents, with their keys (nothing for leaves)."""
    if isinstance(x, (tuple, list)):
        return [(("index", i), v) for i, v in enumerate(x)]
    if isinstance(x, dict):
        return [(("key", k), v) for k, v in x.items()]
    if isinstance(x, np.ndarray) or is_inexact_scalar(x) or is_atom(x):
        return []
    if isinstance(x, pytypes.MethodType):
        return [(("attr", "__self__"), x.__self__), (("attr", "__func__"), x.__func__)]
    if isinstance(x, functools.partial):  # its keywords' tangents are a Tangent's fields
        keywords = [(("keyword", k), v) for k, v in x.keywords.items()]
        return [(("attr", "func"), x.func), (("attr", "args"), x.args), *keywords]
    owner = bound_self(x)
    if owner is not None:
        return [(("attr", "__self__"), owner)]
    if isinstance(x, pytypes.FunctionType):
        return [(("attr", name), contents) for name, contents in closure_cells(x).items()]
    return [(("attr", name), v) for name, v in object_fields(x).items()]


def closure_cells(fn: pytypes.FunctionType) -> dict[str, t.Any]:
    """The filled closure cells of ``fn`` by free variable name."""
    cells: dict[str, t.Any] = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # an empty cell: a variable not assigned yet
            pass
    return cells


def child(tree: object, key: Key) -> t.Any:
    """Part ``key`` of a primal value or of a tangent (``NoTangent()`` has only ``NoTangent()``)."""
    if tree is NO_TANGENT:
        return NO_TANGENT
    kind, k = key
    if kind == "keyword":  # of a partial
        if isinstance(tree, functools.partial):
            return tree.keywords[k]
        return child(child(tree, ("attr", "keywords")), ("attr", k))
    if kind != "attr":
        return t.cast(t.Any, tree)[k]
    if isinstance(tree, (Tangent, MutableTangent)):
        return tree.fields.get(k, NO_TANGENT)
    return dict(children(tree)).get(key, NO_TANGENT)


def format_key(key: Key) -> str:
    kind, k = key
    if kind == "keyword":
        return f".keywords[{k!r}]"
    return f".{k}" if kind == "attr" else f"[{k!r}]"


def has_identity(tangent: object) -> bool:
    """Whether the value a tangent belongs to is identified by address: visit it once."""
    return isinstance(tangent, (np.ndarray, list, dict, MutableTangent))


# --------------------------------------------------------------------------------------------
# Walking several trees side by side


@attrs.frozen
class Leaf:
    """A float array or a float/complex number reached by a walk, with the parts of the
    walked trees at the same place."""

    path: str
    primal: t.Any
    values: tuple[t.Any, ...]


def leaves(
    roots: t.Sequence[tuple[str, object]], *trees: t.Sequence[t.Any]
) -> t.Iterator[Leaf]:
    """The leaves of the primal ``roots`` (named for messages) where the first tree is not
    ``NoTangent()``, with the other trees' parts; what the first tree says has identity
    (arrays, lists, dicts, mutable objects) is visited once."""
    seen: set[int] = set()
    for i, (name, root) in enumerate(roots):
        yield from _leaves(name, root, tuple(tree[i] for tree in trees), seen)


def _leaves(path: str, x: t.Any, parts: tuple[t.Any, ...], seen: set[int]) -> t.Iterator[Leaf]:
    first = parts[0]
    if first is NO_TANGENT:
        return
    if has_identity(first):
        if id(x) in seen:
            return
        seen.add(id(x))
    if is_float_array(x) or is_inexact_scalar(x):
        yield Leaf(path, x, parts)
        return
    for key, value in children(x):
        yield from _leaves(
            path + format_key(key), value, tuple(child(p, key) for p in parts), seen
        )


# --------------------------------------------------------------------------------------------
# Comparing values


def _describe_arrays(a: Array, b: Array) -> str:
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            diff = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
        diff[np.isnan(diff) & (np.isnan(a) & np.isnan(b))] = 0.0
        diff[np.isnan(diff)] = np.inf
        at = np.unravel_index(int(np.argmax(diff)), a.shape) if a.ndim else ()
        return (
            f"max |difference| {float(diff.max()):.6g} at index {tuple(int(i) for i in at)} "
            f"({number(a[at])} vs {number(b[at])})"
        )
    unequal = np.argwhere(a != b)
    return f"differs at index {tuple(int(i) for i in unequal[0])}" if len(unequal) else "differs"


def number(x: t.Any) -> str:
    """A number for messages, without NumPy 2's ``np.float64(...)`` wrapping."""
    if isinstance(x, (complex, np.complexfloating)):
        return f"{complex(x):.10g}"
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.10g}"
    return repr(x)


def _arrays_equal(a: Array, b: Array, rtol: float, atol: float) -> bool:
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        if rtol == 0 and atol == 0:
            return bool(np.array_equal(a, b, equal_nan=True))
        # The largest finite entry: inf or nan (a gradient at a kink, an ord=inf parameter)
        # must not make the tolerance infinite or nan.
        magnitudes = np.abs(a)
        finite = np.isfinite(magnitudes)
        scale = float(np.max(magnitudes, initial=0.0, where=finite)) if a.size else 0.0
        return bool(np.allclose(a, b, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True))
    return bool(np.array_equal(a, b))


def difference(
    a: t.Any, b: t.Any, path: str, *, rtol: float = 0.0, atol: float = 0.0
) -> str | None:
    """Where and how two values (or two tangents) differ, or None if they are equal (floats to
    within ``atol + rtol |b|``; ``atol`` is relative to the largest entry for arrays)."""
    return _difference(a, b, path, rtol, atol, set())


def _difference(
    a: t.Any, b: t.Any, path: str, rtol: float, atol: float, seen: set[tuple[int, int]]
) -> str | None:
    if (id(a), id(b)) in seen:
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
        if a.dtype.hasobject:
            return None
        return None if _arrays_equal(a, b, rtol, atol) else f"{path}: {_describe_arrays(a, b)}"
    if is_inexact_scalar(a) and is_inexact_scalar(b):
        if a == b or (a != a and b != b) or abs(a - b) <= atol + rtol * abs(b):
            return None
        return f"{path}: {number(a)} vs {number(b)} (difference {abs(a - b):.6g})"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {_short(a)} vs {type(b).__name__} {_short(b)}"
    if isinstance(a, BaseException):  # equal by what they say, not by identity
        parts = ((a.args, a.__cause__), (b.args, b.__cause__))
        return _difference(*parts, path + ".(args, __cause__)", rtol, atol, seen)
    if is_atom(a):
        return None if a == b else f"{path}: {_short(a)} vs {_short(b)}"
    seen.add((id(a), id(b)))
    pa: dict[t.Any, t.Any]
    pb: dict[t.Any, t.Any]
    if isinstance(a, (Tangent, MutableTangent)):
        pa, pb = a.fields, b.fields
    else:
        pa, pb = dict(children(a)), dict(children(b))
    if isinstance(a, (Tangent, MutableTangent)) or not _is_opaque(a):
        if pa.keys() != pb.keys():
            return f"{path}: parts {_keys(pa)} vs {_keys(pb)}"
    for key, value in pa.items():
        name = key if isinstance(key, tuple) else ("attr", key)
        found = _difference(value, pb[key], path + format_key(name), rtol, atol, seen)
        if found is not None:
            return found
    return None


def _is_opaque(x: object) -> bool:
    return not children(x) and not isinstance(x, (tuple, list, dict))


def _keys(parts: dict[t.Any, t.Any]) -> str:
    keys = [format_key(k if isinstance(k, tuple) else ("attr", k)) for k in parts]
    return "[" + ", ".join(keys) + "]"


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------------------------
# Layout: what must not move


def layout(roots: t.Sequence[tuple[str, object]]) -> dict[str, tuple[object, ...]]:
    """Path -> (id, and for arrays data address, shape, strides, dtype) of everything with
    identity in the values (or tangents) ``roots``."""
    found: dict[str, tuple[object, ...]] = {}
    seen: set[int] = set()

    def visit(path: str, x: t.Any) -> None:
        if isinstance(x, np.ndarray):
            found[path] = (id(x), address(x), x.shape, x.strides, x.dtype.str)
            return
        if is_inexact_scalar(x) or is_atom(x) or isinstance(x, tuple) and not x:
            return
        if not isinstance(x, (tuple, Tangent)):
            found[path] = (id(x),)
            if id(x) in seen:
                return
            seen.add(id(x))
        parts = (
            [(("attr", n), v) for n, v in x.fields.items()]
            if isinstance(x, (Tangent, MutableTangent))
            else children(x)
        )
        for key, value in parts:
            visit(path + format_key(key), value)

    for name, root in roots:
        visit(name, root)
    return found
