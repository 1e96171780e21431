"""SciPy, the optional extra ``gibbous[scipy]``: ``special``, ``linalg``, ``stats``, ``signal``."""
