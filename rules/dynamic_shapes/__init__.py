"""TPU2xx: dynamic shapes and recompilation.

One module per rule, named after it (`data_dependent_shape_op.py` is TPU201 data-dependent-
shape-op); what several rules of the family share is in `helpers.py`.
"""
