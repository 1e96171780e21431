"""Linear algebra: products, decompositions, eigenproblems, norms."""
