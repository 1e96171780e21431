"""Test cases for the rule audit, one module per area of the rule library; each defines
``CASES: list[RuleCase]`` (``gibbous.testing.case``)."""
