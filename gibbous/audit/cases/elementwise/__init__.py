"""The audit's cases of elementwise functions: scalars' operators and ``math``, ufuncs."""
