"""TPU3xx: data pipeline and batch geometry.

One module per rule, named after it (`manual_distributed_sampler.py` is TPU301 manual-
distributed-sampler); what several rules of the family share is in `helpers.py`.
"""
