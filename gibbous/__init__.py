"""gibbous: reverse-mode automatic differentiation of plain Python + NumPy code, derived from
CPython bytecode through a typed SSA IR.  See docs/ and DESIGN in the repository."""

__version__ = "0.1.0.dev0"
