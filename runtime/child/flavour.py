"""The two Lightning packages: `lightning` (imported as `lightning.pytorch`) and the standalone
`pytorch_lightning`. They hold the same classes under different names, and each Trainer accepts
only its own package's modules, DataModules and callbacks, so verify trains a module with the
Trainer of the package its class derives from. Child process only.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tpulint.runtime.environment import installed_version
from tpulint.runtime.errors import VerifyError

LIGHTNING = "lightning"
PYTORCH_LIGHTNING = "pytorch_lightning"
INSTALL = {PYTORCH_LIGHTNING: "pip install pytorch-lightning", LIGHTNING: "pip install lightning"}


@dataclass(frozen=True)
class Flavour:
    """One of the two packages. `prefix` is where its PyTorch classes live."""

    distribution: str  # "lightning" or "pytorch_lightning"
    prefix: str  # "lightning.pytorch" or "pytorch_lightning"

    def module(self, name: str = "") -> ModuleType:
        return importlib.import_module(f"{self.prefix}.{name}" if name else self.prefix)

    @property
    def Trainer(self) -> type:
        return self.module().Trainer

    @property
    def LightningModule(self) -> type:
        return self.module().LightningModule

    @property
    def LightningDataModule(self) -> type:
        return self.module().LightningDataModule

    @property
    def Callback(self) -> type:
        return self.module().Callback

    @property
    def XLAAccelerator(self) -> type:
        return self.module("accelerators").XLAAccelerator

    @property
    def XLALauncher(self) -> type:
        return self.module("strategies.launchers.xla")._XLALauncher

    @property
    def version(self) -> str:
        return installed_version(self.distribution.replace("_", "-")) or "unknown"

    def trainer_name(self) -> str:
        return f"{self.prefix}.Trainer"


FLAVOURS = {
    LIGHTNING: Flavour(LIGHTNING, "lightning.pytorch"),
    PYTORCH_LIGHTNING: Flavour(PYTORCH_LIGHTNING, "pytorch_lightning"),
}


def package_of(value: Any) -> str | None:
    """Which Lightning package a class (or an instance's class) is built on, from the modules
    of its bases, without importing either package."""
    cls = value if inspect.isclass(value) else type(value)
    for base in inspect.getmro(cls):
        module = getattr(base, "__module__", "") or ""
        if module == "pytorch_lightning" or module.startswith("pytorch_lightning."):
            return PYTORCH_LIGHTNING
        if module == "lightning.pytorch" or module.startswith("lightning.pytorch."):
            return LIGHTNING
    return None


def flavour(distribution: str | None) -> Flavour:
    """The Flavour for a package name (None: `lightning`), or a VerifyError saying what to
    install when it is missing."""
    chosen = FLAVOURS[distribution or LIGHTNING]
    try:
        importlib.import_module(chosen.prefix)
    except ModuleNotFoundError as exc:
        if exc.name and chosen.prefix.startswith(exc.name):
            raise VerifyError(
                f"the module is written against `{chosen.distribution}`, which is not installed:"
                f" {INSTALL[chosen.distribution]}"
            ) from None
        raise
    major = chosen.version.split(".")[0]
    if major.isdigit() and int(major) < 2:
        raise VerifyError(
            f"{chosen.distribution} {chosen.version} is too old: verify trains with the"
            f" Lightning 2 XLA strategy ({INSTALL[chosen.distribution]}>=2.1)"
        )
    return chosen


def with_base(obj: Any, base: type) -> Any:
    """`obj` made an instance of `base` too (verify's recorder is a `lightning` Callback; the
    `pytorch_lightning` Trainer expects its own): its class becomes a subclass of both. The
    two Callback classes define the same hooks, so behaviour is unchanged."""
    if isinstance(obj, base):
        return obj
    cls = type(obj)
    obj.__class__ = type(cls.__name__, (cls, base), {"__module__": cls.__module__})
    return obj
