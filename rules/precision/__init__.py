"""TPU4xx: precision and dtypes.

One module per rule, named after it (`deprecated_bf16_env.py` is TPU401 deprecated-bf16-env);
the family has no helpers of its own (`tpulint.rules.shared` has those of several families).
"""
