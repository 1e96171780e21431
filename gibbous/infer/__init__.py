"""Type inference: a typed copy of untyped IR, specialised on the types of its arguments.

    typed = infer_types(f, [Array("float64", 2), INT], callee_ir=function_ir)

The frontend's IR types every value ``Any``.  ``infer_types`` interprets it abstractly over the
control-flow graph, with types for values, and builds a copy in which every value has the type
it found.  Value types are frozen at creation, so inference runs once per signature and never
again after other transforms (docs/decisions.md).  docs/typeinfer.md walks through the
algorithm with an example; in short:

* **Worklist over blocks** in reverse postorder.  Block arguments join the types flowing in
  along every edge; a block is visited again whenever they grow.  After a few changes an
  argument's constants are widened to their types, and after more it becomes ``Any``, so
  inference always terminates.
* **Calls** are typed by the rule table (``gibbous.infer.typerules.table``).  A branch on a constant
  condition follows one edge; the copy jumps instead and leaves out blocks never reached.
* **Methods**: ``getattr(x, "sum")`` on an array is a ``BoundMethod``; calling it calls the rule
  for ``numpy.ndarray.sum`` with ``x`` first, and the copy calls ``numpy.ndarray.sum(%x, ...)``.
* **User functions** (``callee_ir(fn)`` gives their IR) are inferred recursively, memoised by
  function, argument types and argument aliasing; a call back into a function being inferred
  (recursion) is ``Any``.
* **Containers that mutate**: a list is not the value of one instruction but an object that
  ``append`` changes through every alias.  Each list, set and dict value is typed by the
  *allocation sites* it may come from (``Ref``); a site holds the element types stored into any
  container made there, and the type of every value from that site is read off it at the end.
  Whatever inference cannot follow (a container passed to code that has no rule, or joined
  with an unrelated type) *escapes*: its sites' element types become ``Any``.

Its modules: ``interpreter`` (the worklist and the lattice with sites), ``abstract`` (the
abstract values beyond the IR's types), ``arguments`` (sites for the containers in a
function's arguments by which may alias, and binding a call's arguments to parameters),
``handlers`` (calls on containers), ``typed_copy`` (writing the types found into a copy) and
``cache`` (typed copies and summaries of callees).
"""

from __future__ import annotations

import typing as t

from gibbous.ir import types as T
from gibbous.ir.core import Function
from gibbous.infer.cache import InferenceCache, Summary
from gibbous.infer.interpreter import Inference, InferenceError
from gibbous.infer.typed_copy import typed_copy

__all__ = ["InferenceCache", "InferenceError", "Summary", "infer_types"]


def infer_types(
    f: Function,
    arg_types: t.Sequence[T.Type],
    *,
    callee_ir: t.Callable[[object], Function | None] | None = None,
    cache: InferenceCache | None = None,
) -> Function:
    """A typed copy of ``f`` for arguments of ``arg_types``.

    ``callee_ir(fn)`` gives the untyped IR of a Python function ``f`` calls (or ``None``), so
    that calls of it are typed by inferring it too; the typed copies land in ``cache``.

    Argument types are taken as the lattice means them: an ``Int`` argument may be a bool (the
    IR has ``Bool <= Int``), which NumPy indexing treats differently from an int.
    """
    if len(arg_types) != len(f.args):
        raise ValueError(f"{f.name} takes {len(f.args)} arguments, {len(arg_types)} types given")
    inference = Inference(f, tuple(arg_types), callee_ir, cache or InferenceCache(), None)
    inference.run()
    return typed_copy(inference)
