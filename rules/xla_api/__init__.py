"""TPU5xx: torch_xla API usage and deprecations.

One module per rule, named after it (`removed_xla_api.py` is TPU501 removed-xla-api); what
several rules of the family share is in `helpers.py`.
"""
