"""Hand-written primitive rules: what the AD pass needs to differentiate ordinary numeric
Python and NumPy code as the frontend emits it (docs/rules.md, "Primitive rules").

Importing this package registers every rule in ``DefaultContext``:

* ``scalars``: operators, ``math`` and numeric builtins on scalars;
* ``numpy_ufuncs``: ufuncs and operators on arrays, ``clip``, ``where``, ``real``/``imag``/``conj``;
* ``numpy_reductions``: ``sum``, ``mean``, ``prod``, ``max``/``min``, ``cumsum``;
* ``linalg``: ``matmul``, ``dot``, ``inner``, ``outer``, ``np.linalg.norm``;
* ``numpy_arrays``: views, copies, joins, constructors and attributes of arrays;
* ``indexing``: ``x[i]`` and the stateful ``x[i] = v`` on arrays;
* ``containers``, ``container_methods``, ``iteration``, ``pybuiltins``: tuples, lists, dicts,
  their methods, iterators, ``sum``, ``min``, ``max``;
* ``queries``: comparisons, bitwise operators and other calls without derivative;
* ``objects``: ``getattr``/``setattr``/``delattr`` on objects;
* ``runtime``: the frontend's cells and nested functions, ``typing.cast``.

Shared pieces: ``common`` (cotangents, ``unbroadcast``, rdata of scalars), ``elementwise`` (the
tables of gradient functions), ``items`` (containers taken apart with their tangents).
"""

from gibbous.rules.prims import container_methods as container_methods
from gibbous.rules.prims import containers as containers
from gibbous.rules.prims import indexing as indexing
from gibbous.rules.prims import iteration as iteration
from gibbous.rules.prims import linalg as linalg
from gibbous.rules.prims import numpy_arrays as numpy_arrays
from gibbous.rules.prims import numpy_reductions as numpy_reductions
from gibbous.rules.prims import numpy_ufuncs as numpy_ufuncs
from gibbous.rules.prims import objects as objects
from gibbous.rules.prims import pybuiltins as pybuiltins
from gibbous.rules.prims import queries as queries
from gibbous.rules.prims import runtime as runtime
from gibbous.rules.prims import scalars as scalars
