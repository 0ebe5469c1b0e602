"""Shapes that need a whole project to show: a CUDA device default kept by a module a training
config builds without the device, a CUDA-named callback the launcher registers by its dotted
path (TPU006), a collate lambda reaching an encoder's hand-written padding in another file
(TPU304), and a logging helper whose `on_step` is True by default on the training path, reached
through a subclass's override in a namespace folder of a package (TPU106)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import make_project, run_cli

LINE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):\d+: (?P<code>TPU\d+)")

UTIL = """import importlib


def instantiate_from_config(config):
    module, cls = config["target"].rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)(**config.get("params", {}))
"""
ENCODER = """import torch
from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, width=64, device="cuda"):
        super().__init__()
        self.embed = nn.Embedding(1000, width)
        self.device = device

    def forward(self, ids):
        return self.embed(ids.to(self.device))
"""
MODEL = """import lightning as L
from pkg.util import instantiate_from_config


class Diffusion(L.LightningModule):
    def __init__(self, encoder_config):
        super().__init__()
        self.encoder = instantiate_from_config(encoder_config)

    def training_step(self, batch, batch_idx):
        return self.encoder(batch["ids"]).mean()
"""
CALLBACKS = """import time

import lightning as L
import torch


class CUDAStatsCallback(L.Callback):
    def on_train_epoch_start(self, trainer, pl_module):
        torch.cuda.reset_peak_memory_stats()
        self.start = time.time()
"""
TRAIN = """import lightning as L
from omegaconf import OmegaConf

from pkg.util import instantiate_from_config


def main():
    config = OmegaConf.load("configs/train.yaml")
    default_callbacks = {"stats": {"target": "pkg.callbacks.%s"}}
    callbacks = [instantiate_from_config(c) for c in default_callbacks.values()]
    model = instantiate_from_config(config.model)
    L.Trainer(callbacks=callbacks, **config.lightning.trainer).fit(model)


if __name__ == "__main__":
    main()
"""
CONFIG = """model:
  target: pkg.model.Diffusion
  params:
    encoder_config:
      target: pkg.encoders.TextEncoder
      params:
        width: 128%s
lightning:
  trainer:
    max_epochs: 10
"""


def _found(root: Path, code: str, *options: str) -> list[tuple[str, int]]:
    result = run_cli(
        ["check", ".", "--preview", "--select", code, "--no-cache", "--exit-zero", *options],
        root,
    )
    return [
        (m["path"], int(m["line"]))
        for m in (LINE.match(line) for line in result.stdout.splitlines())
        if m and m["code"] == code
    ]


def _cuda_project(root: Path, registered: str, device_line: str) -> Path:
    return make_project(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": UTIL,
            "pkg/encoders.py": ENCODER,
            "pkg/model.py": MODEL,
            "pkg/callbacks.py": CALLBACKS,
            "train.py": TRAIN % registered,
            "configs/train.yaml": CONFIG % device_line,
        },
        pyproject=None,
    )


def test_cuda_default_and_registered_cuda_callback(tmp_path: Path) -> None:
    root = _cuda_project(tmp_path / "p", "CUDAStatsCallback", "")
    assert _found(root, "TPU006") == [("pkg/callbacks.py", 9), ("pkg/encoders.py", 6)]


def test_cuda_default_given_and_callback_not_registered(tmp_path: Path) -> None:
    # The config sets the device; the launcher names another callback (the CUDA one is
    # a GPU-only tool nothing registers).
    root = _cuda_project(tmp_path / "p", "Other", "\n        device: cpu")
    assert _found(root, "TPU006") == []


ENCODER_PAD = """import torch
from torch import nn


class Encoder(nn.Module):
    def tokenize(self, texts):
        ids = [self.vocab.lookup(t) for t in texts]
        %s
        out = torch.zeros(len(ids), width, dtype=torch.long)
        for i, row in enumerate(ids):
            out[i, : len(row)] = torch.tensor(row[:width])
        return out

    def prepare_sample(self, texts):
        return self.tokenize(texts)
"""
METRIC_MODEL = """import lightning as L
from torch.utils.data import DataLoader

from pkg.registry import ENCODERS


class Metric(L.LightningModule):
    def __init__(self, name):
        super().__init__()
        self.encoder = ENCODERS[name]()

    def prepare_sample(self, batch, stage="fit"):
        return self.encoder.prepare_sample([b["text"] for b in batch])

    def train_dataloader(self):
        return DataLoader(self.data, collate_fn=lambda s: self.prepare_sample(s, stage="fit"))

    def training_step(self, batch, batch_idx):
        return self.encoder(batch).mean()
"""


def test_collate_lambda_reaches_encoder_padding(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/registry.py": "from pkg.encoders import Encoder\n\nENCODERS = {'base': Encoder}\n",
        "pkg/model.py": METRIC_MODEL,
    }
    longest = make_project(
        tmp_path / "a",
        {**files, "pkg/encoders.py": ENCODER_PAD % "width = max(len(row) for row in ids)"},
        pyproject=None,
    )
    assert _found(longest, "TPU304") == [("pkg/encoders.py", 8)]
    fixed = make_project(
        tmp_path / "b",
        {**files, "pkg/encoders.py": ENCODER_PAD % "width = self.max_length"},
        pyproject=None,
    )
    assert _found(fixed, "TPU304") == []


BASE = """import lightning as L
import torch


class Base(L.LightningModule):
    def __init__(self, log_on_step: bool = True):
        super().__init__()
        self.log_on_step = log_on_step
        self.net = torch.nn.Linear(4, 1)

    def log_metrics(self, values, phase):
        on_step = self.log_on_step if phase == "train" else False
        self.log_dict(values, on_step=on_step, on_epoch=phase != "train", sync_dist=True)

    def shared_step(self, batch, batch_idx, phase, **kwargs):
        raise NotImplementedError

    def training_step(self, batch, batch_idx):
        return self.shared_step(batch, batch_idx, phase="train")

    def validation_step(self, batch, batch_idx):
        return self.shared_step(batch, batch_idx, phase="val")
"""
ALGO = """from pkg.models.rl.common.base import Base


class Algo(Base):
    def shared_step(self, batch, batch_idx, phase, dataloader_idx=None):
        loss = self.net(batch).mean()
        self.log_metrics({f"{phase}/loss": loss}, phase)
        return loss
"""


def test_log_helper_on_step_default_through_namespace_subclass(tmp_path: Path) -> None:
    # `pkg/models/rl/common/` and `pkg/models/rl/algo/` have no `__init__.py` (namespace
    # folders four levels inside the package): the subclass imports its base by the full
    # dotted name.
    root = make_project(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/models/__init__.py": "",
            "pkg/models/rl/__init__.py": "",
            "pkg/models/rl/common/base.py": BASE,
            "pkg/models/rl/algo/algo.py": ALGO,
            "train.py": "import lightning as L\nfrom pkg.models.rl.algo.algo import Algo\n\n"
            "L.Trainer(accelerator='tpu').fit(Algo())\n",
        },
        pyproject=None,
    )
    assert _found(root, "TPU106") == [("pkg/models/rl/common/base.py", 13)]
    quiet = make_project(
        tmp_path / "q",
        {
            "pkg/__init__.py": "",
            "pkg/models/__init__.py": "",
            "pkg/models/rl/__init__.py": "",
            "pkg/models/rl/common/base.py": BASE.replace("= True", "= False"),
            "pkg/models/rl/algo/algo.py": ALGO,
            "train.py": "import lightning as L\nfrom pkg.models.rl.algo.algo import Algo\n\n"
            "L.Trainer(accelerator='tpu').fit(Algo())\n",
        },
        pyproject=None,
    )
    assert _found(quiet, "TPU106") == []


SCORE = """import torch
from torchmetrics import Metric


class PeakScore(Metric):
    def __init__(self, radius=2.0, **kwargs):
        super().__init__(**kwargs)
        self.radius = radius
        self.add_state("peaks", default=[], dist_reduce_fx="cat")

    def update(self, peaks):
        self.peaks.append(peaks)

    def compute(self):
        return torch.cat(self.peaks).mean()
"""
PEAKS = """import lightning as L
import torch
from pkg.score import PeakScore


class Peaks(L.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.net = torch.nn.Conv3d(1, 2, 3)

    def setup(self, stage):
        self.score = PeakScore(compute_on_cpu=self.cfg.scoring.compute_on_cpu)
        self.spread = PeakScore(**self.cfg.scoring.metric)

    def validation_step(self, batch, batch_idx):
        peaks = self.net(batch).amax(dim=1)
        self.score(peaks)
        self.spread.update(peaks)
"""
PEAKS_CONFIG = """scoring:
  compute_on_cpu: %s
  metric:
    compute_on_cpu: %s
    radius: 3.0
"""


def _peaks_project(root: Path, setting: str) -> Path:
    return make_project(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/score.py": SCORE,
            "pkg/model.py": PEAKS,
            "configs/config.yaml": PEAKS_CONFIG % (setting, setting),
        },
        pyproject="",  # (one repository: its configs are the code's)
    )


def test_metric_computed_on_cpu_by_shipped_config(tmp_path: Path) -> None:
    # torchmetrics moves a metric's list states to the CPU after every update when its
    # configs ask for `compute_on_cpu` (a keyword read from the config, or a spread section).
    root = _peaks_project(tmp_path / "p", "true")
    assert _found(root, "TPU103", "--scope", "all") == [("pkg/model.py", 18), ("pkg/model.py", 19)]


def test_metric_not_computed_on_cpu_by_shipped_config(tmp_path: Path) -> None:
    root = _peaks_project(tmp_path / "p", "false")
    assert _found(root, "TPU103", "--scope", "all") == []
