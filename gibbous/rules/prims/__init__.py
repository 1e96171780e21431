"""Hand-written primitive rules: what the AD pass needs to differentiate ordinary numeric
Python and NumPy code as the frontend emits it (docs/rules.md, "Primitive rules").

Importing this package registers every rule in ``DefaultContext``:

* ``scalars``: operators, ``math`` and numeric builtins on scalars;
* ``numpy_ufuncs``: ufuncs and operators on arrays, ``clip``, ``where``, ``real``/``imag``/``conj``;
* ``numpy_reductions``: ``sum``, ``mean``, ``prod``, ``max``/``min``, ``var``, ``std``,
  ``ptp``, ``average``, ``nansum``, ``nanmean``, ``cumsum``, ``cumprod``;
* ``reductions_out``: ``sum``, ``mean``, ``cumsum`` into ``out=`` (stateful);
* ``reductions_forward``: the forward rules of ``numpy_reductions``' ``var``, ``std``, ``prod``,
  ``cumprod``, ``average``, ``nansum``, ``nanmean``, ``ptp``;
* ``sequences``: the reductions and ``np.linalg.norm`` of lists and tuples (``np.sum([a, b])``);
* ``products``: ``matmul``, ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``, ``einsum``,
  ``kron``;
* ``products_f64``: the float64 variants of ``matmul`` and ``dot`` and their array forms;
* ``norms``: ``np.linalg.norm``;
* ``diagonals``: ``diag``, ``diagflat``, ``diagonal``, ``trace``;
* ``decompositions``: ``np.linalg`` ``inv solve det slogdet pinv cholesky svd qr``;
* ``eigen``: ``np.linalg`` ``eig eigvals eigh eigvalsh``;
* ``numpy_arrays``: views, copies, joins, constructors and attributes of arrays;
* ``float_arrays``: ``np.array([a, b, c])`` of floats, as ``runtime.float_array``;
* ``numpy_gradient``: ``np.gradient`` (uniform spacings and coordinate arrays);
* ``numpy_setops``: ``append``, ``insert``, ``delete``, ``unique``;
* ``concatenators``: ``np.r_[...]`` and ``np.c_[...]``;
* ``strided``: ``as_strided`` and ``sliding_window_view`` (windows, overlapping or not);
* ``indexing``: ``x[i]`` and the stateful ``x[i] = v`` on arrays;
* ``shapes``: flips, splits, ``broadcast_to``, ``tile``, ``repeat``, ``roll``, ``pad``, ``sort``,
  ``take``, index queries and rounding (no derivative), and random numbers;
* ``containers``, ``container_methods``, ``iteration``, ``pybuiltins``: tuples, lists, dicts,
  their methods, iterators, ``sum``, ``min``, ``max``;
* ``pyrandom``: Python's ``random`` module (draws, ``choice``, ``shuffle``);
* ``queries``: comparisons, bitwise operators and other calls without derivative;
* ``objects``: ``getattr``/``setattr``/``delattr`` on objects;
* ``partials``: ``functools.partial`` (calling one: ``gibbous.rules.callables``);
* ``classes``: ``tuple.__new__`` for NamedTuples (constructing classes is derived);
* ``runtime``: the frontend's cells and nested functions, ``typing.cast``;
* ``scipy_special``, ``scipy_linalg``, ``scipy_stats``: a few SciPy functions, registered by
  ``gibbous.rules.optional`` once its subpackage is imported (the optional extra
  ``gibbous[scipy]``); ``scipy_common`` holds what they share.

Shared pieces: ``common`` (cotangents, ``unbroadcast``, rdata of scalars), ``elementwise`` (the
tables of gradient functions), ``items`` (containers taken apart with their tangents).
"""


from gibbous.rules.prims import classes as classes
from gibbous.rules.prims import concatenators as concatenators
from gibbous.rules.prims import container_methods as container_methods
from gibbous.rules.prims import containers as containers
from gibbous.rules.prims import decompositions as decompositions
from gibbous.rules.prims import diagonals as diagonals
from gibbous.rules.prims import eigen as eigen
from gibbous.rules.prims import float_arrays as float_arrays
from gibbous.rules.prims import indexing as indexing
from gibbous.rules.prims import iteration as iteration
from gibbous.rules.prims import norms as norms
from gibbous.rules.prims import numpy_arrays as numpy_arrays
from gibbous.rules.prims import numpy_gradient as numpy_gradient
from gibbous.rules.prims import numpy_reductions as numpy_reductions
from gibbous.rules.prims import reductions_out as reductions_out
from gibbous.rules.prims import reductions_forward as reductions_forward
from gibbous.rules.prims import numpy_setops as numpy_setops
from gibbous.rules.prims import numpy_ufuncs as numpy_ufuncs
from gibbous.rules.prims import objects as objects
from gibbous.rules.prims import partials as partials
from gibbous.rules.prims import products as products
from gibbous.rules.prims import products_f64 as products_f64
from gibbous.rules.prims import pybuiltins as pybuiltins
from gibbous.rules.prims import pyrandom as pyrandom
from gibbous.rules.prims import queries as queries
from gibbous.rules.prims import runtime as runtime
from gibbous.rules.prims import scalars as scalars
from gibbous.rules.prims import sequences as sequences
from gibbous.rules.prims import shapes as shapes
from gibbous.rules.prims import strided as strided

