"""The typed SSA IR: types, values, operations, blocks, functions, builder, text form, verifier."""
