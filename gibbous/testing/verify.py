"""What the tangent model asks of the values a rule returns, and how values may share memory.

``fdata_problem`` and ``rdata_problem`` compare a rule's fdata and rdata with the model's
(docs/tangents.md) part by part: the zero tangent of the primal says what kind each part must
be.  ``sharing`` lists which parts of several values are one object or overlap in memory, so
that the sharing of a rule's result can be compared with the sharing of ``f``'s result and with
the sharing of the fdata.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir.types import typeof
from gibbous.rules.tangents import (
    NO_TANGENT,
    MutableTangent,
    Tangent,
    fdata_of,
    zero_rdata,
    zero_tangent,
)
from gibbous.testing.structure import (
    address,
    child,
    children,
    format_key,
    has_identity,
    is_atom,
    is_inexact_scalar,
)
from gibbous.testing.memory import memory_span


def describe(x: object) -> str:
    """A value's kind for messages: ``ndarray float64[3, 4] strides (32, 8)``, ``float``..."""
    if isinstance(x, np.ndarray):
        return f"ndarray {x.dtype}{list(x.shape)} strides {x.strides}"
    if x is NO_TANGENT:
        return "NoTangent()"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    return type(x).__name__


def fdata_problem(x: object, fdata: object, path: str) -> str | None:
    """Why ``fdata`` is not a valid fdata of ``x``, or None."""
    return _mismatch(fdata_of(zero_tangent(x)), fdata, path, set())


def rdata_problem(x: object, rdata: object, path: str) -> str | None:
    """Why ``rdata`` is not a valid rdata of ``x``, or None."""
    return _mismatch(zero_rdata(x), rdata, path, set())


def _mismatch(expected: t.Any, got: t.Any, path: str, seen: set[int]) -> str | None:
    def wrong(what: str) -> str:
        return f"{path} is {describe(got)},\nwhere the tangent model wants {what}"

    if expected is NO_TANGENT:
        return None if got is NO_TANGENT else wrong("NoTangent()")
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray) or type(got) is not np.ndarray:
            return wrong(f"a plain ndarray ({describe(expected)})")
        if (got.shape, got.dtype, got.strides) != (
            expected.shape,
            expected.dtype,
            expected.strides,
        ):
            return wrong(f"{describe(expected)}, like the primal")
        return None
    if is_inexact_scalar(expected):
        if is_inexact_scalar(got) and typeof(got) == typeof(expected):
            return None
        return wrong(f"a {typeof(expected)} number ({type(expected).__name__})")
    if id(expected) in seen:
        return None
    seen.add(id(expected))
    parts: dict[t.Any, t.Any]
    if isinstance(expected, (Tangent, MutableTangent)):
        if type(got) is not type(expected):
            return wrong(type(expected).__name__)
        if got.fields.keys() != expected.fields.keys():
            return wrong(f"{type(expected).__name__} of fields {sorted(expected.fields)}")
        parts = {("attr", n): v for n, v in expected.fields.items()}
    elif isinstance(expected, (tuple, list, dict)):
        if type(got) is not type(expected) or len(got) != len(expected):
            return wrong(describe(expected))
        if isinstance(expected, dict) and t.cast(dict[t.Any, t.Any], got).keys() != expected.keys():
            return wrong(f"a dict with keys {list(expected)}")
        keys = expected if isinstance(expected, dict) else range(len(expected))
        kind = "key" if isinstance(expected, dict) else "index"
        parts = {(kind, k): expected[k] for k in keys}
    else:
        return None
    for key, value in parts.items():
        found = _mismatch(value, child(got, key), path + format_key(key), seen)
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------------------------
# Sharing


def nodes(
    roots: t.Sequence[tuple[str, object]], trees: t.Sequence[object] | None = None
) -> dict[str, tuple[object, object]]:
    """Path -> (part, the same part of the tree) for each array and each object with identity
    in ``roots``, at every path that reaches it (its parts only under the first)."""
    found: dict[str, tuple[object, object]] = {}
    seen: set[int] = set()

    def visit(path: str, x: t.Any, tree: t.Any) -> None:
        if is_inexact_scalar(x) or is_atom(x):
            return
        if isinstance(x, np.ndarray) or not isinstance(x, tuple) and has_identity(tree):
            found[path] = (x, tree)
            if id(x) in seen:
                return
            seen.add(id(x))
        for key, value in children(x):
            visit(path + format_key(key), value, child(tree, key))

    for i, (name, root) in enumerate(roots):
        visit(name, root, trees[i] if trees is not None else zero_tangent(root))
    return found


def relation(a: object, b: object) -> object:
    """How two parts share: the byte offset of ``b`` from ``a`` for arrays that overlap (an
    array and a view of it laid out alike are as good as one array), ``"same"`` for one
    object, None for nothing."""
    if a is NO_TANGENT or b is NO_TANGENT:
        return None
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return "same" if a is b else None
    if a.size == 0 or b.size == 0 or memory_span(a)[0] is not memory_span(b)[0]:
        return None
    try:
        shares = np.shares_memory(a, b, max_work=t.cast(t.Any, 100_000))
    except np.exceptions.TooHardError:
        shares = np.may_share_memory(a, b)
    return address(b) - address(a) if shares else None


def sharing(
    found: dict[str, tuple[object, object]], *, of_trees: bool = False
) -> dict[tuple[str, str], object]:
    """(path, later path) -> relation, for every pair of parts that share (the primal parts,
    or with ``of_trees`` the tree parts at the same paths)."""
    index = 1 if of_trees else 0
    paths = list(found)
    pairs: dict[tuple[str, str], object] = {}
    for i, p in enumerate(paths):
        for q in paths[i + 1 :]:
            rel = relation(found[p][index], found[q][index])
            if rel is not None:
                pairs[(p, q)] = rel
    return pairs


def format_relation(rel: object) -> str:
    if rel is None:
        return "shares nothing with"
    if rel == "same":
        return "is the same object as"
    return f"shares memory (at byte offset {rel}) with"


def alias_groups(operands: t.Sequence[t.Any]) -> list[list[int]]:
    """Operands grouped so that operands sharing an object or memory are in one group:
    perturbing one of them perturbs the others."""
    parent = list(range(len(operands)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    owners: dict[tuple[str, int], int] = {}
    keep: list[object] = []  # the owners, alive while their ids are compared
    for i, x in enumerate(operands):
        for key, obj in _identities(x):
            keep.append(obj)
            j = owners.setdefault(key, i)
            parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(operands)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _identities(
    x: object, seen: set[int] | None = None
) -> t.Iterator[tuple[tuple[str, int], object]]:
    seen = set() if seen is None else seen
    if is_inexact_scalar(x) or is_atom(x) or id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        owner = memory_span(x)[0] if x.size else x
        yield ("memory", id(owner)), owner
        return
    yield ("object", id(x)), x
    for _, value in children(x):
        yield from _identities(value, seen)
