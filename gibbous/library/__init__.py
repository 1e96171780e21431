"""Every callable's rules, by library area, both modes side by side: what the AD passes need
to differentiate ordinary numeric Python, NumPy and SciPy code as the frontend emits it
(docs/rules.md, "Primitive rules"; docs/design.md, "Where do I put a new rule").

This module is the one list of what is loaded: importing it registers every hand-written rule
in ``DefaultContext`` and the forward registry (``gibbous.rules.frules``), in this order.  The
areas' own ``__init__`` modules and ``gibbous.rules`` register nothing.

* ``elementwise``: the formula tables (``tables``) and their variants, ufuncs and operators on
  arrays (``ufuncs``), their methods ``reduce``, ``accumulate``, ``outer``, ``at`` and
  ``reduceat`` (``ufunc_methods``, twins: folds of the ufunc), operators, ``math`` and numeric builtins on scalars (``scalars``);
* ``arrays``: views and copies, shapes, indexing and ``x[i] = v``, windows (``strided``),
  ``np.r_`` / ``np.c_``, set operations, ``np.array`` of floats, ``np.gradient``, diagonals;
* ``reductions``: ``sum``, ``mean``, ``prod``, ``max`` / ``min`` (``reductions``), the scans
  ``cumsum`` and ``cumprod`` (``scans``), ``var``, ``std``, ``ptp``, ``average``, ``nansum``,
  ``nanmean`` (``moments``), and into ``out=`` (``reductions_out``); ``np.trapezoid``
  (``integration``, a twin);
* ``linalg``: products (and their float64 variants), decompositions, eigenproblems, norms,
  ``lstsq`` and ``cond`` (``twins``: by the pseudo-inverse, the singular values);
* ``transforms``: the discrete Fourier transforms of ``np.fft`` and ``fftshift`` (``fft``),
  ``np.convolve`` and ``np.correlate`` (``convolve``), ``np.pad`` in every mode (``pad``);
* ``python``: tuples, lists, dicts and their methods, iteration, the reductions of sequences,
  builtins, objects, classes, partials, ``random``, queries, closures and cells;
* ``scipy``: ``special``, ``linalg``, ``stats``, ``signal``, registered by ``gibbous.optional`` once SciPy's
  subpackage is imported (the optional extra ``gibbous[scipy]``).

Shared pieces: ``common`` (cotangents, ``unbroadcast``, rdata of scalars), ``items``
(containers taken apart with their tangents).

Order: a forward rule's precedence says itself (``frules.register``: a hand-written maker
before a declaration for numbers and arrays, then the later first), so the order below matters
only between two modules registering one callable's rules of one kind (``ufuncs`` before
``scalars``: the scalars' elementwise rules are tried first) or one pattern (the later
replaces the earlier, ``rules.registry``).
"""

from gibbous.rules import inplace as inplace  # (the out= and in-place operator rules)
from gibbous.library.python import classes as classes
from gibbous.library.arrays import concatenators as concatenators
from gibbous.library.python import container_methods as container_methods
from gibbous.library.python import containers as containers
from gibbous.library.linalg import decompositions as decompositions
from gibbous.library.arrays import diagonals as diagonals
from gibbous.library.linalg import eigen as eigen
from gibbous.library.linalg import twins as linalg_twins
from gibbous.library.arrays import float_arrays as float_arrays
from gibbous.library.arrays import indexing as indexing
from gibbous.library.python import iteration as iteration
from gibbous.library.linalg import norms as norms
from gibbous.library.arrays import views_copies as views_copies
from gibbous.library.arrays import spaces as spaces
from gibbous.library.arrays import broadcasting as broadcasting
from gibbous.library.arrays import partitions as partitions
from gibbous.library.arrays import gradient as gradient
from gibbous.library.reductions import reductions as reductions
from gibbous.library.reductions import scans as scans
from gibbous.library.reductions import moments as moments
from gibbous.library.reductions import twins as reduction_twins
from gibbous.library.reductions import reductions_out as reductions_out
from gibbous.library.reductions import integration as integration
from gibbous.library.arrays import setops as setops
from gibbous.library.elementwise import ufuncs as ufuncs
from gibbous.library.elementwise import ufunc_methods as ufunc_methods
from gibbous.library.elementwise import odds as odds
from gibbous.library.python import objects as objects
from gibbous.library.python import partials as partials
from gibbous.library.linalg import products as products
from gibbous.library.linalg import products_f64 as products_f64
from gibbous.library.python import builtins as builtins
from gibbous.library.python import random as random
from gibbous.library.python import queries as queries
from gibbous.library.python import closures as closures
from gibbous.library.elementwise import scalars as scalars
from gibbous.library.python import sequences as sequences
from gibbous.library.arrays import shapes as shapes
from gibbous.library.arrays import orders as orders
from gibbous.library.arrays import picks as picks
from gibbous.library.arrays import strided as strided
from gibbous.library.transforms import fft as fft
from gibbous.library.transforms import convolve as convolve
from gibbous.library.transforms import pad as pad
from gibbous.library.transforms import polynomials as polynomials
from gibbous.library.elementwise import ufunc_options as ufunc_options  # (last: ufuncs with rules)
