"""How values may share memory.

``sharing`` lists which parts of several values are one object or overlap in memory, so that
the sharing of a rule's result can be compared with the sharing of ``f``'s result and with the
sharing of the fdata.  (The kinds of a rule's fdata and rdata are checked by
``gibbous.tangents.kinds``, which debug rules use too.)
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.tangents.model import NO_TANGENT, zero_tangent
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
