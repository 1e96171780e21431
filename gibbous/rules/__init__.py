"""The rule SDK, both modes: what a rule author imports (docs/rules.md).

``registry`` (``primitive``, ``stateful_primitive``, ``zero_derivative``, contexts, lookup),
``stateful`` (rules that keep state between calls), ``frules`` (forward rules:
``register_linear``, ``register_bilinear``, ``register_elementwise``, ``frule``), ``emit`` (the
forward rules' IR helpers), ``formulas`` and ``render`` (the table of elementwise derivatives
and its NumPy, float, inline and ``out=`` forms), ``inplace`` / ``inplace_forward`` (writes),
``buffers``, ``outer_sums``, ``call_adapters``, ``callables``, ``public_names``.

This package registers nothing: ``gibbous.library`` is the one list of the rules loaded.
"""
