"""The tangent model: the tangent type of every value type, tangent values, pools of buffers."""
