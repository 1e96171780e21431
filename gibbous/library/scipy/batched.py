"""SciPy's batching decorator (``scipy._lib._util._apply_over_batch``) as a twin: each public
function of ``scipy.linalg`` it wraps (and which has no twin of its own) is differentiated as
``over_batch``, the decorator's steps written with NumPy (SciPy's take the array namespace of
the arguments, whose type forward mode cannot follow, and test ``any`` of their batch shapes),
around the function it wraps, which is derived from SciPy's Python as before.  The values
are the decorator's: the function itself on one matrix, stacked over a batch otherwise.

The wrapped function and its arrays' names and core dimensions are read from the wrapper's
closure (``f``, ``names``, ``ndims``); a function whose wrapper does not hold them keeps its
own Python.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import implementation, register_twin, twin_helper


@twin_helper
def over_batch(
    f: t.Any, names: t.Any, ndims: t.Any, args: t.Any, kwargs: t.Any
) -> t.Any:
    """``_apply_over_batch(*zip(names, ndims))(f)(*args, **kwargs)``."""
    args = list(args)
    kwargs = dict(kwargs)
    n_arrays = len(names)
    arrays, other_args = args[:n_arrays], args[n_arrays:]
    for i in range(n_arrays):
        if names[i] in kwargs:
            if i + 1 <= len(args):
                raise ValueError(f"{f.__name__}() got multiple values for argument `{names[i]}`.")
            arrays.append(kwargs.pop(names[i]))
    batch_shapes = []
    core_shapes = []
    batched = False
    for i in range(len(arrays)):
        array = None if arrays[i] is None else np.asarray(arrays[i])
        shape = () if array is None else np.shape(array)
        ndim = ndims[i]
        if ndim == "1|2":
            ndim = 2 if len(shape) >= 2 else 1
        arrays[i] = array
        batch = shape[: len(shape) - ndim] if ndim > 0 else shape
        core_shapes.append(shape[len(shape) - ndim :] if ndim > 0 else ())
        batch_shapes.append(batch)
        if len(batch) > 0:
            batched = True
    if not batched:
        return f(*arrays, *other_args, **kwargs)
    batch_shape = np.broadcast_shapes(*batch_shapes)
    size = 1
    for k in batch_shape:
        size *= k
    if size == 0:
        raise ValueError(f"`{f.__name__}` does not support zero-size batches.")
    # (an array without batch axes is passed as it is, the same in every call: its
    # broadcast, indexed, would be a view of stride 0 whose fdata the tangent model refuses)
    unbatched = [len(batch) == 0 for batch in batch_shapes]
    for i in range(len(arrays)):
        if arrays[i] is not None and not unbatched[i]:
            arrays[i] = np.broadcast_to(arrays[i], batch_shape + core_shapes[i])
    results = []
    for index in np.ndindex(batch_shape):
        items = [
            None if a is None else a if unbatched[i] else a[index] for i, a in enumerate(arrays)
        ]
        result = f(*items, *other_args, **kwargs)
        results.append(result if isinstance(result, tuple) else (result,))
    stacked = []
    for j in range(len(results[0])):
        part = np.stack([r[j] for r in results])
        stacked.append(np.reshape(part, batch_shape + np.shape(part)[1:]))
    return stacked[0] if len(stacked) == 1 else stacked


def _twin_of(wrapper: types.FunctionType) -> types.FunctionType | None:
    """The twin of one decorated function, from its wrapper's closure; None if it is not
    one (or holds other names)."""
    cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__ or ()))
    if not {"f", "names", "ndims"} <= set(cells):
        return None
    f, names, ndims = (cells[k].cell_contents for k in ("f", "names", "ndims"))
    if not isinstance(f, types.FunctionType):
        return None

    # Unbatched calls (every array passed by position, none with more than its core axes)
    # call ``f`` itself; the others ``over_batch``, called through a value computed at run
    # time (``_LATE[0]``) so that forward mode builds its program only when one is made (its
    # lists of shapes are of types forward mode cannot follow).
    checks = " or ".join(
        f"np.ndim(args[{i}]) > {2 if d == '1|2' else d}" for i, d in enumerate(ndims)
    )
    source = (
        "def batched(*args, **kwargs):\n"
        f"    if len(args) >= {len(names)} and not ({checks}):\n"
        "        return F(*args, **kwargs)\n"
        "    return _LATE[0](F, N, D, args, kwargs)\n"
    )
    scope = {"np": np, "F": f, "N": tuple(names), "D": tuple(ndims), "_LATE": _LATE}
    exec(compile(source, f"<gibbous: {f.__name__} over a batch>", "exec"), scope)
    return t.cast(types.FunctionType, scope["batched"])


_LATE = [over_batch]


def _decorated() -> list[tuple[object, types.FunctionType]]:
    found: list[tuple[object, types.FunctionType]] = []
    for name in sorted(getattr(sla, "__all__", ())):
        fn = getattr(sla, name, None)
        code = getattr(fn, "__code__", None)
        if not isinstance(fn, types.FunctionType) or code is None:
            continue
        if code.co_name != "wrapper" or "_util" not in code.co_filename:
            continue
        if implementation(fn) is not None:  # (a twin of its own)
            continue
        twin = _twin_of(fn)
        if twin is not None:
            found.append((fn, twin))
    return found


for _fn, _twin in _decorated():
    register_twin(_fn, _twin)
