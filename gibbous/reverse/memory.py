"""What a rule holds between calls: the memory report of ``rule.memory()``.

A rule keeps state per node of the computation (docs/design.md, "State between calls"): the
states of its stateful children (saved copies, scratch buffers, one per pending depth), the
buffers of its array sites (``gibbous.rules.buffers``: results, one per pending depth, and
reverse-pass scratch), its derived children (one instance per recursion level reached), and
its tape, whose entries are dropped as the reverse pass pops them.  ``memory`` walks that
tree and counts the NumPy memory reachable from it, each buffer once (a view counts its base,
once); recycled fdata in the pool (``gibbous.tangents.pool``) is shared by every rule and
reported apart.
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.tangents import pool
from gibbous.rules.buffers import SiteBuffers
from gibbous.rules.outer_sums import OuterSums
from gibbous.reverse.derived import DerivedRule, LazyDerivedRule
from gibbous.rules.call_adapters import _DELEGATES
from gibbous.rules.stateful import StatefulRRule


@attrs.frozen
class Memory:
    """Bytes of NumPy memory a rule holds between calls."""

    states: int  # stateful rules' states: saved copies and scratch buffers, every depth
    tape: int  # what the tape still references (0 after every pullback has run)
    rules: int  # rule instances walked (derived rules, stateful call sites)
    pool: int  # recycled fdata, shared by every rule of the process
    buffers: int = 0  # array sites' results and their fdata, one buffer per depth reached
    scratch: int = 0  # array sites' reverse-pass temporaries, deferred outer products' stacks

    @property
    def total(self) -> int:
        """What this rule holds: its states, its sites' buffers and scratch, and its tape
        (the pool is everyone's)."""
        return self.states + self.buffers + self.scratch + self.tape

    def __str__(self) -> str:
        return (
            f"{self.total} bytes held ({self.states} in states of stateful rules, "
            f"{self.buffers} in buffers of array sites, {self.scratch} in their scratch, "
            f"{self.tape} on the tape) over {self.rules} rule instances; {self.pool} bytes "
            "in the shared pool"
        )


def memory(rule: DerivedRule) -> Memory:
    """The memory report of one rule instance and everything below it."""
    seen: set[int] = set()  # buffers counted
    walked: set[int] = set()  # rules walked (a recursive function's instances share none)
    states = tape = rules = sites = scratch = 0
    todo: list[object] = [rule]
    while todo:
        node = todo.pop()
        while type(node) in _DELEGATES:
            node = getattr(node, "rule")
        if type(node) is LazyDerivedRule:
            node = node.instance
        if node is None or id(node) in walked:
            continue
        if isinstance(node, DerivedRule):
            walked.add(id(node))
            rules += 1
            tape += held_bytes(node.tape.items, seen)
            todo.extend(node.children)
        elif isinstance(node, StatefulRRule):
            walked.add(id(node))
            rules += 1
            states += held_bytes(node.states, seen)
        elif isinstance(node, SiteBuffers):
            walked.add(id(node))
            sites += held_bytes(node.arrays, seen) + held_bytes(node.fdatas, seen)
            scratch += held_bytes(node.scratch, seen)
        elif isinstance(node, OuterSums):  # (its target is the caller's, held for a pass)
            walked.add(id(node))
            scratch += held_bytes((node.left, node.right, node.product), seen)
    return Memory(states, tape, rules, pool.held(), sites, scratch)


def held_bytes(obj: object, seen: set[int]) -> int:
    """The bytes of the NumPy arrays reachable from ``obj`` through containers, attrs
    classes, slots and instance dictionaries, each buffer counted once (``seen``)."""
    total = 0
    todo = [obj]
    visited: set[int] = set()
    while todo:
        x = todo.pop()
        if id(x) in visited:
            continue
        visited.add(id(x))
        if isinstance(x, np.ndarray):
            base = x
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in seen:
                seen.add(id(base))
                total += base.nbytes
        elif isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
        elif isinstance(x, dict):
            todo.extend(x.values())
        elif x is None or isinstance(x, (int, float, complex, str, bytes, type)) or callable(x):
            continue  # (closures: a pullback left on the tape is counted through its cells)
        else:
            todo.extend(_fields(x))
    return total


def _fields(x: object) -> list[object]:
    kind: t.Any = type(x)
    if attrs.has(kind):
        return [getattr(x, f.name, None) for f in attrs.fields(kind)]
    out: list[object] = list(getattr(x, "__dict__", {}).values())
    for klass in type(x).__mro__:
        for name in getattr(klass, "__slots__", ()):
            out.append(getattr(x, name, None))
    return out


__all__ = ["Memory", "held_bytes", "memory"]
