"""Passes over the IR: the pass manager and registry, and the standard passes (see docs/passes.md)."""

from gibbous.passes import array_items, cse, dce, fold, simplify_cfg  # noqa: F401  (register them)
from gibbous.passes.manager import (
    Pass,
    PassError,
    PassManager,
    UnknownPassError,
    get_pass,
    parse_pipeline,
    register_pass,
    registered_passes,
)

__all__ = [
    "Pass",
    "PassError",
    "PassManager",
    "UnknownPassError",
    "get_pass",
    "parse_pipeline",
    "register_pass",
    "registered_passes",
]
