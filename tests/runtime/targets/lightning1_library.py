"""A package written for Lightning 1.x, as lightning-bolts 0.7 is: it imports a module Lightning
2.0 removed. Imported by lightning1_import.py, as a user imports the package."""

from pytorch_lightning.utilities.apply_func import apply_to_collection  # noqa: F401
