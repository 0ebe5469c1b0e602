"""Fails at import: a dependency that is not installed."""

import lightning as L
import tpulint_test_missing_dependency  # noqa: F401


class Unreachable(L.LightningModule):
    pass
