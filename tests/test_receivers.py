"""Receiver-sensitive `self.m()` in hot code: a base's method run for an instance of a
subclass runs that subclass's overrides only (ProjectModel._receivers)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import repository_model as _model
from tpulint.analysis.project import ProjectModel

BASE = """\
import abc

import lightning as L
import torch


class Generator(L.LightningModule):
    def sample(self, n):
        self.eval()
        return self._draw(n)

    @abc.abstractmethod
    def _draw(self, n):
        ...

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""

MODELS = """\
import torch

from pkg.base import Generator


class Sampling(Generator):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def validation_step(self, batch, batch_idx):
        return self.sample(batch.shape[0]).mean()

    def _draw(self, n):
        return torch.randn(n)


class Diffusion(Generator):
    def training_step(self, batch, batch_idx):
        return self._loss(batch)

    def validation_step(self, batch, batch_idx):
        return self._loss(batch)

    def _loss(self, batch):
        return batch.sum()

    def _draw(self, n):
        return self._denoise(torch.randn(n))

    def _denoise(self, x):
        return x


class Flow(Generator):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def _draw(self, n):
        return torch.randn(n)


class Vae(Generator):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def validation_step(self, batch, batch_idx):
        return batch.mean()

    def _draw(self, n):
        return torch.zeros(n)
"""


def _hot(model: ProjectModel, tmp_path: Path, name: str, key: str) -> str | None:
    info = model.hot.get(f"{tmp_path / name}:{key}#0")
    return None if info is None else info.reason(str(tmp_path / name))


def test_base_method_runs_the_receivers_override_only(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/models.py": MODELS}
    model = _model(tmp_path, files)
    # `Sampling.validation_step` samples: the base's `sample` runs Sampling's `_draw`.
    assert _hot(model, tmp_path, "pkg/base.py", "Generator.sample") is not None
    assert _hot(model, tmp_path, "pkg/models.py", "Sampling._draw") is not None
    # The other classes' own steps never sample: their `_draw` is not reached through
    # Sampling's validation step.
    for cold in ("Diffusion._draw", "Diffusion._denoise", "Flow._draw", "Vae._draw"):
        assert _hot(model, tmp_path, "pkg/models.py", cold) is None, cold
    assert _hot(model, tmp_path, "pkg/models.py", "Diffusion._loss") is not None


def test_override_reached_when_its_own_class_samples(tmp_path: Path) -> None:
    models = MODELS.replace(
        "    def validation_step(self, batch, batch_idx):\n        return self._loss(batch)\n",
        "    def validation_step(self, batch, batch_idx):\n        return self.sample(4).sum()\n",
    )
    files = {"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/models.py": models}
    model = _model(tmp_path, files)
    assert _hot(model, tmp_path, "pkg/models.py", "Sampling._draw") is not None
    reason = _hot(model, tmp_path, "pkg/models.py", "Diffusion._denoise")
    assert reason is not None and "validation_step" in reason
    for cold in ("Flow._draw", "Vae._draw"):
        assert _hot(model, tmp_path, "pkg/models.py", cold) is None, cold


def test_hook_of_the_base_is_a_root_for_each_class_that_inherits_it(tmp_path: Path) -> None:
    # The base's own validation step samples; Vae defines its own that does not: the base's
    # hook runs for the classes that inherit it (their overrides run), not for a Vae.
    base = BASE.replace(
        "    def configure_optimizers(self):",
        "    def validation_step(self, batch, batch_idx):\n"
        "        return self.sample(2).sum()\n\n"
        "    def configure_optimizers(self):",
    )
    models = MODELS.replace(
        "    def validation_step(self, batch, batch_idx):\n        return self._loss(batch)\n",
        "",
    )
    files = {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/models.py": models}
    model = _model(tmp_path, files)
    for hot in ("Sampling._draw", "Diffusion._draw", "Diffusion._denoise", "Flow._draw"):
        assert _hot(model, tmp_path, "pkg/models.py", hot) is not None, hot
    assert _hot(model, tmp_path, "pkg/models.py", "Vae._draw") is None


def test_abstract_root_keeps_every_override(tmp_path: Path) -> None:
    # The step is the base's and no subclass defines it again: `self` may be any of them.
    base = BASE.replace(
        "    def configure_optimizers(self):",
        "    def training_step(self, batch, batch_idx):\n"
        "        return self._draw(3).sum()\n\n"
        "    def configure_optimizers(self):",
    )
    models = MODELS.replace(
        "    def training_step(self, batch, batch_idx):\n        return batch.sum()\n\n", ""
    ).replace(
        "    def training_step(self, batch, batch_idx):\n        return self._loss(batch)\n\n", ""
    )
    files = {"pkg/__init__.py": "", "pkg/base.py": base, "pkg/models.py": models}
    model = _model(tmp_path, files)
    every = ("Sampling._draw", "Diffusion._draw", "Diffusion._denoise", "Flow._draw", "Vae._draw")
    for hot in every:
        reason = _hot(model, tmp_path, "pkg/models.py", hot)
        assert reason is not None and "training_step" in reason, hot


def test_method_of_another_model_keeps_every_override(tmp_path: Path) -> None:
    # `self.teacher.sample(...)`: the teacher is a Generator of no known class; its `sample`
    # may run any override.
    trainer = """\
    import lightning as L

    from pkg.base import Generator


    class Distill(L.LightningModule):
        def __init__(self, teacher: Generator):
            super().__init__()
            self.teacher = teacher

        def training_step(self, batch, batch_idx):
            return self.teacher.sample(4).sum()
    """
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": BASE,
        "pkg/models.py": MODELS,
        "pkg/distill.py": trainer,
    }
    model = _model(tmp_path, files)
    for hot in ("Sampling._draw", "Diffusion._draw", "Flow._draw", "Vae._draw"):
        reason = _hot(model, tmp_path, "pkg/models.py", hot)
        assert reason is not None, hot
