"""Hypothesis strategies for IR: random types, printable constants and valid functions.

``functions()`` builds functions with the ``Builder`` whose control flow respects dominance by
construction: every non-entry block has a parent block, the only block whose terminator may
enter it for the first time, so parents dominate children; other edges only go back to
ancestors (loops).  A block uses function arguments, values of its ancestors, its own
arguments and values defined above in itself; values passed to a block argument have a subtype
of its type.  Blocks are then shuffled (the entry stays first), so the text often uses values
and blocks above the lines that define them.
"""

from __future__ import annotations

import builtins
import collections
import fractions
import functools
import math
import numbers
import operator
import os
import time
import typing as t

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Block, Function, Location, Value
from gibbous.ir.types import is_subtype

# Importable objects that print as paths.  numpy.add.reduce is a bound builtin method: Python
# makes a new one on every access, so it comes back equal, not identical.
CALLABLES: list[object] = [
    operator.add,
    operator.mul,
    operator.getitem,
    operator.lt,
    np.sin,
    np.add,
    np.sum,
    np.linalg.norm,
    np.ndarray.sum,
    np.add.reduce,
    np.float32,
    builtins.len,
    builtins.getattr,
    builtins.isinstance,
    builtins.print,
    math.sqrt,
    functools.reduce,
    collections.OrderedDict,
    fractions.Fraction,
]
MODULES: list[object] = [np, math, np.linalg, operator]
CLASSES: list[type] = [
    object,
    int,
    float,
    np.ndarray,
    collections.OrderedDict,
    numbers.Number,
    ValueError,
    fractions.Fraction,
]
TUPLE_CLASSES: list[type] = [tuple, os.stat_result, time.struct_time]

# Hints that collide when uniqued (x, x.1, x.1.1), are no identifiers, or look like numbers.
NAMES: list[str | None] = [
    None,
    None,
    "x",
    "x",
    "x.1",
    "x.1.1",
    "y",
    "_",
    "a b",
    "3",
    "",
    "ünï",
    'q"uote',
    "x.",
    "entry",
    "#hash",
]
FILES = ["f.py", "dir with space/f.py", 'we"ird.py', "ünïcode.py", "<stdin>", "", "a\\b\n.py"]
FUNC_NAMES = ["f", "loss", "my func", "f.1", "3", "ü", "x.y"]
KWNAMES = ["axis", "out", "dtype", "key", "a b", "None", "b", "x.1"]

SCALAR_DTYPES = [
    "float64", "float32", "float16", "int64", "int32", "int16", "int8",
    "uint64", "uint32", "uint16", "uint8", "complex128", "complex64", "bool",
]  # fmt: skip
ARRAY_DTYPES = [None, "float64", "float32", "int64", "bool", "complex128", "longdouble",
                "object", "datetime64[ns]", "str96"]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Constants


# Strategies are built once: Hypothesis validates each new strategy object, which is slow.


def _numpy_scalar(dtype: str) -> st.SearchStrategy[object]:
    d = np.dtype(dtype)
    if d.kind == "b":
        return st.booleans().map(np.bool_)
    if d.kind in "iu":
        info = np.iinfo(d)
        return st.integers(int(info.min), int(info.max)).map(d.type)
    if d.kind == "f":
        return st.floats(width=8 * d.itemsize).map(d.type)  # type: ignore[arg-type]
    return st.complex_numbers(width=8 * d.itemsize).map(d.type)  # type: ignore[arg-type]


@functools.cache
def _numpy_scalars() -> st.SearchStrategy[object]:
    return st.one_of([_numpy_scalar(d) for d in SCALAR_DTYPES])


@functools.cache
def _arrays() -> st.SearchStrategy[object]:
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
    dtypes = ["float64", "float32", "float16", "int32", "uint8", "bool", "complex128",
              "complex64", "<U3"]  # fmt: skip
    return st.one_of([hnp.arrays(np.dtype(d), shapes) for d in dtypes])


def _texts() -> st.SearchStrategy[str]:
    # Surrogates too: JSON escapes a lone one and reads it back.
    return st.text(st.characters(codec=None, exclude_categories=()), max_size=8)


@functools.cache
def hashable_constants() -> st.SearchStrategy[object]:
    """Printable constants that ``Const`` can hold: no arrays, tuples of such."""
    leaves: st.SearchStrategy[object] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([-0.0, math.inf, -math.inf, math.nan, 1e300, 5e-324]),
        st.complex_numbers(allow_nan=True, allow_infinity=True),
        _texts(),
        st.binary(max_size=6),
        st.just(Ellipsis),
        st.builds(slice, *3 * [st.none() | st.integers(-5, 5)]),
        _numpy_scalars(),
        st.sampled_from(CALLABLES + MODULES + t.cast(list[object], CLASSES)),
    )
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


@functools.cache
def constants() -> st.SearchStrategy[object]:
    """Every printable kind of constant (arrays only at top level: a tuple holding an array is
    compared by identity, so it could never be structurally equal to its parsed copy)."""
    return st.one_of(hashable_constants(), _arrays())


# --------------------------------------------------------------------------------------------
# Types


@functools.cache
def types() -> st.SearchStrategy[T.Type]:
    scalar_types = st.sampled_from(SCALAR_DTYPES + ["longdouble", "clongdouble"]).map(
        lambda d: T.typeof(np.zeros((), d)[()]) if d not in ("longdouble", "clongdouble")
        else (T.Float(d) if d == "longdouble" else T.Complex(d))
    )
    leaves: st.SearchStrategy[T.Type] = st.one_of(
        st.sampled_from([T.ANY, T.BOTTOM, T.BOOL, T.INT, T.FLOAT, T.COMPLEX, T.STR, T.NONE]),
        scalar_types,
        st.builds(T.Array, st.sampled_from(ARRAY_DTYPES), st.none() | st.integers(0, 3)),
        st.builds(T.Object, st.sampled_from(CLASSES)),
        st.builds(T.Const, hashable_constants()),
    )

    def extend(inner: st.SearchStrategy[T.Type]) -> st.SearchStrategy[T.Type]:
        return st.one_of(
            st.builds(
                T.Tuple, st.lists(inner, max_size=3).map(tuple), st.sampled_from(TUPLE_CLASSES)
            ),
            st.builds(T.List, inner),
            st.builds(T.Set, inner),
            st.builds(T.Dict, inner, inner),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@functools.cache
def locations() -> st.SearchStrategy[Location | None]:
    return st.none() | st.builds(
        Location, st.sampled_from(FILES), st.integers(-1, 10**6)
    )


# --------------------------------------------------------------------------------------------
# Functions


@st.composite
def functions(draw: st.DrawFn, max_blocks: int = 5) -> Function:
    """A random function that the verifier accepts and whose constants all print."""
    names = st.sampled_from(NAMES)
    f = Function(
        draw(st.sampled_from(FUNC_NAMES)),
        draw(st.lists(st.tuples(names, types()), max_size=3)),
        loc=draw(locations()),
        entry_name=draw(names),
    )
    b = Builder(f)
    blocks = [f.entry]
    parent: dict[int, int] = {}
    children: dict[int, list[int]] = {0: []}
    for k in range(1, draw(st.integers(1, max_blocks))):
        p = draw(st.sampled_from([i for i in range(k) if len(children[i]) < 2]))
        parent[k], children[k] = p, []
        children[p].append(k)
        block_args = draw(st.lists(st.tuples(names, types()), max_size=3))
        blocks.append(b.add_block(draw(names), block_args))

    def ancestors(k: int) -> list[int]:
        chain = [k]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        return chain

    defined: dict[int, list[Value]] = {}
    for k, block in enumerate(blocks):
        b.at_end(block)
        visible = [v for a in reversed(ancestors(k)[1:]) for v in defined[a]]
        local: list[Value] = list(block.args)

        def available() -> list[Value]:
            return visible + local

        def operand() -> object:
            pool = available()
            if len(pool) > 0 and draw(st.booleans()):
                return draw(st.sampled_from(pool))
            return draw(constants())

        def call(ty: T.Type) -> Value:
            callee = draw(st.sampled_from(CALLABLES)) if draw(st.integers(0, 5)) else operand()
            args = [operand() for _ in range(draw(st.integers(0, 3)))]
            kwnames = draw(st.lists(st.sampled_from(KWNAMES), max_size=2, unique=True))
            result = b.call(
                callee,
                *args,
                kwargs={k: operand() for k in kwnames},
                type=ty,
                name=draw(names),
                loc=draw(locations()),
            )
            local.append(result)
            return result

        def value_of(ty: T.Type) -> object:
            """A value of a subtype of ``ty`` that dominates this point."""
            fits = [v for v in available() if is_subtype(v.type, ty)]
            if len(fits) > 0 and draw(st.integers(0, 3)):
                return draw(st.sampled_from(fits))
            if ty == T.ANY and draw(st.booleans()):
                return draw(constants())
            return call(ty)

        def edge(target: int) -> tuple[Block, list[object]]:
            return blocks[target], [value_of(a.type) for a in blocks[target].args]

        for _ in range(draw(st.integers(0, 4))):
            call(draw(types()))
        kids = children[k]
        back = [a for a in ancestors(k) if a != 0]  # loops; nothing jumps to the entry
        loc = draw(locations())
        if len(kids) == 2 or (len(kids) > 0 and len(back) > 0 and draw(st.booleans())):
            first = edge(kids[0])
            second = edge(kids[1] if len(kids) == 2 else draw(st.sampled_from(back)))
            if draw(st.booleans()):
                first, second = second, first
            cond = value_of(T.BOOL)
            b.branch(cond, first[0], first[1], second[0], second[1], loc=loc)
        elif len(kids) > 0 or (len(back) > 0 and draw(st.booleans())):
            target, args = edge(kids[0] if kids else draw(st.sampled_from(back)))
            b.jump(target, *args, loc=loc)
        elif draw(st.integers(0, 3)):
            b.ret(operand(), loc=loc)
        else:
            b.raise_(value_of(T.Object(BaseException)), loc=loc)
        defined[k] = local

    order = draw(st.permutations(range(1, len(blocks))))
    for i, k in enumerate(order, start=1):
        f.move_block(blocks[k], i)
    return f
