"""TPU1xx: host-device synchronisation in hot code (every step).

One module per rule, named after it (`item_in_hot_path.py` is TPU101 item-in-hot-path); what
several rules of the family share is in `helpers.py`.
"""
