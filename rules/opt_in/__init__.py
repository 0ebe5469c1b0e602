"""TPU9xx: opt-in checks (off by default).

One module per rule, named after it (`per_step_logging_frequency.py` is TPU901 per-step-logging-
frequency); the family has no helpers of its own (`tpulint.rules.shared` has those of several
families).
"""
