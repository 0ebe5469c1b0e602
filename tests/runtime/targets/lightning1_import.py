"""A module importing a Lightning 1.x library: pytorch_lightning is installed, the library's
`pytorch_lightning.utilities.apply_func` is not in it. Installing pytorch_lightning is no help."""

import lightning1_library  # noqa: F401
from pytorch_lightning import LightningModule


class UsesLightning1Library(LightningModule):
    pass
