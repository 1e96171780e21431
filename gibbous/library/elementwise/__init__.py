"""Elementwise functions: the formula tables, ufuncs on arrays, scalars' operators and ``math``."""
