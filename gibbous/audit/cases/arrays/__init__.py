"""The audit's cases of arrays: views, copies, shapes, indexing and the rest."""
