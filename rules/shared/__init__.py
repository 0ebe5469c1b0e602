"""Helpers shared by rules of several families (a helper used by one family lives in that
family's `helpers.py`; one used by one rule lives in the rule's module).

    matchers       Trainer calls, `self.log`, literals, walking a subtree, where launching
                   code runs (every family)
    configuration  what makes a Trainer a TPU one, framework files, version gates,
                   environment variables, import migrations (TPU0xx, TPU3xx, TPU4xx, TPU5xx,
                   TPU9xx)
    tensors        local bindings, boolean masks, where sizes come from, which expressions
                   are torch tensors (TPU1xx, TPU2xx and the rewrite engine, `rewrite/`)

They are one package rather than copies in each family so that every rule answers "is this
a TPU Trainer?" or "is this a mask?" the same way.
"""
