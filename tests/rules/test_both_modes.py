"""A callable's rules of both modes live in one file: every forward registration is made by a
module that registers the same callable's reverse rule (docs/design.md, "Where do I put a new
rule").  The exceptions are deliberate and listed here, each with its reason.

Writes into arrays (``out=``, ``z[i] = x``, in-place operators) are one model of the SDK, not
rules of particular callables: ``gibbous.rules.inplace`` (reverse) and
``gibbous.rules.inplace_forward`` (forward) hold it for every callable that writes, as twins;
the registry read here is the one of forward rules (``frules.register``)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import gibbous
from gibbous.ir.names import callable_key
from gibbous.rules import frules
from gibbous import audit
from gibbous.rules.registry import DefaultContext, callable_name

pytest.importorskip("scipy")
import scipy.linalg  # noqa: E402,F401  (their rules load once SciPy's subpackages are imported)
import scipy.special  # noqa: E402,F401
import scipy.stats  # noqa: E402,F401

#: callable name -> why its forward rule is not in the file of its reverse rule
DELIBERATE: dict[str, str] = {
    **dict.fromkeys(
        ["numpy.broadcast_arrays", "numpy.meshgrid"],
        "reverse mode derives them from twins in the same module (gibbous.library.arrays."
        "broadcasting), which are no registrations",
    ),
}


def _reverse_origins() -> dict[tuple[object, ...], set[str]]:
    gibbous.grad(lambda x: float(np.sin(x)))(1.0)  # (a build loads the library)
    found: dict[tuple[object, ...], set[str]] = collections.defaultdict(set)
    for registration in audit.registrations(DefaultContext):
        found[callable_key(registration.fn)].add(registration.origin)
    return found


def test_every_forward_rule_is_beside_its_reverse_rule() -> None:
    reverse = _reverse_origins()
    apart = {}
    for fn, origins in frules.forward_registrations():
        elsewhere = set(origins) - reverse.get(callable_key(fn), set())
        name = callable_name(fn)
        if elsewhere and name not in DELIBERATE:
            apart[name] = sorted(elsewhere)
    assert apart == {}
    assert len(frules.forward_registrations()) > 250  # (the registry was read)


def test_the_library_registers_in_library_files() -> None:
    """Forward rules are registered by the library (or by the forward transform's own run-time
    objects, or a user's module), never by the rule SDK."""
    origins = {o for _, registered in frules.forward_registrations() for o in registered}
    assert sorted(o for o in origins if o.startswith("gibbous.rules.")) == []
    assert "gibbous.library.linalg.products" in origins
