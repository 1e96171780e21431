"""Python itself: containers and their methods, iteration, builtins, objects, closures, ``random``."""
