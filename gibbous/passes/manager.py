"""Passes, the registry that names them, and the manager that runs a pipeline of them.

A pass is any object with a ``name`` and a ``run(f) -> bool`` that rewrites ``f`` in place and
says whether it changed anything.  The standard passes are small frozen attrs classes whose
``name`` and one-line ``description`` are class variables; ``register_pass`` files them under
their name so that a pipeline can be written as text (``"fold, dce, simplify-cfg"``).

``PassManager`` runs a pipeline.  On request it verifies the IR after every pass and blames the
pass that broke it, calls a dump hook after every pass, and records how long each pass took.
"""

from __future__ import annotations

import time
import typing as t

from gibbous.ir.exceptions import GibbousError
from gibbous.ir.core import Function
from gibbous.ir.verify import VerificationError
from gibbous.ir.verify import verify as verify_ir


class Pass(t.Protocol):
    """A transformation of one function, in place."""

    # A read-only property, so that a class variable (the standard passes) and an instance
    # attribute (an ad-hoc pass in a test) both satisfy the protocol.
    @property
    def name(self) -> str: ...

    def run(self, f: Function) -> bool:
        """Rewrite ``f``; True if anything changed."""
        ...


class PassError(GibbousError):
    """A pass left the IR invalid.  ``pass_name`` names it (None: the input was invalid)."""

    def __init__(self, pass_name: str | None, problems: t.Sequence[str], ir_text: str) -> None:
        self.pass_name = pass_name
        self.problems = list(problems)
        self.ir_text = ir_text
        culprit = (
            "the input IR is invalid (before any pass ran)"
            if pass_name is None
            else f"pass {pass_name!r} left the IR invalid"
        )
        lines = [f"{culprit}:", *(f"  - {p}" for p in self.problems), "IR:", ir_text.rstrip()]
        super().__init__("\n".join(lines))


class UnknownPassError(KeyError, ValueError):
    """A pipeline names a pass that is not registered."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


# --------------------------------------------------------------------------------------------
# Registry

_P = t.TypeVar("_P", bound=type)
_REGISTRY: dict[str, type] = {}


def register_pass(cls: _P) -> _P:
    """Class decorator: file ``cls`` under ``cls.name``.  Its ``description`` is one line."""
    name = getattr(cls, "name", None)
    description = getattr(cls, "description", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__} needs a class attribute 'name' (a non-empty str)")
    if not isinstance(description, str) or "\n" in description:
        raise TypeError(f"{cls.__qualname__} needs a one-line class attribute 'description'")
    previous = _REGISTRY.get(name)
    if previous is not None and previous is not cls:
        raise ValueError(
            f"pass name {name!r} is taken by {previous.__module__}.{previous.__qualname__}"
        )
    _REGISTRY[name] = cls
    return cls


def registered_passes() -> dict[str, type]:
    """Every registered pass class by name, sorted by name."""
    return dict(sorted(_REGISTRY.items()))


def get_pass(name: str) -> Pass:
    """A new instance, with default options, of the pass registered as ``name``."""
    cls = _REGISTRY.get(name.strip())
    if cls is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownPassError(f"no pass named {name.strip()!r}; registered passes: {known}")
    return t.cast(Pass, cls())


def parse_pipeline(text: str) -> list[str]:
    """``"fold, dce"`` -> ``["fold", "dce"]``; empty items are ignored."""
    return [item.strip() for item in text.split(",") if item.strip()]


# --------------------------------------------------------------------------------------------
# Running a pipeline

DumpHook = t.Callable[[str, Function], None]


class PassManager:
    """Runs passes in order over a function.

    ``pipeline`` holds pass objects and registered names; a single string is read as a
    comma-separated list of names.  Names are looked up when the manager is made, so a typo
    fails before any IR is touched.

    * ``verify``: verify the input, then the IR after each pass; raise ``PassError`` naming the
      pass that broke it, with the verifier's problems and the IR as text.
    * ``dump``: called as ``dump(pass_name, f)`` after each pass (before verifying it, so the
      broken IR is shown too).
    * ``timing``: append ``(pass_name, seconds)`` to ``timings`` for every pass run.  Records
      accumulate over calls of ``run``, so one manager can time a whole module.
    """

    def __init__(
        self,
        pipeline: t.Sequence[Pass | str] | str,
        *,
        verify: bool = False,
        dump: DumpHook | None = None,
        timing: bool = False,
    ) -> None:
        items = parse_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
        self.passes: list[Pass] = [get_pass(p) if isinstance(p, str) else p for p in items]
        self.verify = verify
        self.dump = dump
        self.timing = timing
        self.timings: list[tuple[str, float]] = []

    def run(self, f: Function) -> bool:
        """Run every pass once, in order; True if any of them changed ``f``."""
        if self.verify:
            self._check(None, f)
        changed = False
        for p in self.passes:
            start = time.perf_counter()
            try:
                changed |= p.run(f)
            except Exception as e:
                e.add_note(f"while running pass {p.name!r} on function @{f.name}")
                raise
            elapsed = time.perf_counter() - start
            if self.timing:
                self.timings.append((p.name, elapsed))
            if self.dump is not None:
                self.dump(p.name, f)
            if self.verify:
                self._check(p.name, f)
        return changed

    @staticmethod
    def _check(pass_name: str | None, f: Function) -> None:
        try:
            verify_ir(f)
        except VerificationError as e:
            raise PassError(pass_name, e.problems, _ir_text(f)) from e


def _ir_text(f: Function) -> str:
    # Broken IR may not print (a constant without a text form, a dangling value): the error
    # about it must still be raised, so fall back to saying why there is no text.
    try:
        return str(f)
    except Exception as e:
        return f"<the IR could not be printed: {type(e).__name__}: {e}>"


__all__ = [
    "DumpHook",
    "Pass",
    "PassError",
    "PassManager",
    "UnknownPassError",
    "get_pass",
    "parse_pipeline",
    "register_pass",
    "registered_passes",
]
