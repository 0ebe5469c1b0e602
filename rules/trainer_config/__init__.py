"""TPU0xx: Lightning and Trainer configuration for TPUs.

One module per rule, named after it (`legacy_tpu_cores.py` is TPU001 legacy-tpu-cores); what
several rules of the family share is in `helpers.py`.
"""
