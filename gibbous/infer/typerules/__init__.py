"""The table of type rules: the result type of a call from its argument types, by area."""
