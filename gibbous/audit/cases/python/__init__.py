"""The audit's cases of Python itself: containers, iteration, builtins, classes."""
