"""The project fact "every Trainer that fits this class runs on one device on a TPU"
(ProjectScope.trained_on_one_device, from scope_facts' `one_device`): what TPU106 and TPU310
read. Made-up projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import repository_model

MODEL = """
import lightning as L
import torch


class Net(L.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self(batch).mean()
        self.log("loss", loss, sync_dist=True)
        return loss
"""


def _one_device(tmp_path: Path, script: str, fitting: bool = True, **more: str) -> bool:
    model = repository_model(tmp_path, {"net.py": MODEL, "train.py": script, **more})
    return model.scope.trained_on_one_device("net.Net", fitting=fitting)


TEST = "    if os.environ.get('GPU'):\n"
RUN = "\n\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A TPU has no CUDA: the `else` is what runs there.
        (
            "    if torch.cuda.is_available():\n        devices = [gpu]\n"
            "    else:\n        devices = 1\n",
            True,
        ),
        ("    devices = [gpu] if torch.cuda.is_available() else 1\n", True),
        ("    devices = 8 if torch.cuda.is_available() else '1'\n", True),
        ("    devices = [gpu] if torch.cuda.is_available() else 8\n", False),
        # Unknown test: both branches must be one device.
        (TEST + "        devices = [gpu]\n    else:\n        devices = 1\n", True),
        (TEST + "        devices = 8\n    else:\n        devices = 1\n", False),
        # A later binding that may run joins the earlier one; a sure one replaces it.
        ("    devices = 1\n    if os.environ.get('GPU'):\n        devices = gpu\n", False),
        ("    devices = gpu\n    devices = 1\n", True),
        ("    devices = 1\n    for devices in range(gpu):\n        pass\n", False),
        ("    devices = gpu\n", False),
    ],
)
def test_devices_bound_before_the_trainer(tmp_path: Path, body: str, expected: bool) -> None:
    script = (
        "import os\n\nimport lightning as L\nimport torch\n\nfrom net import Net\n\n\n"
        "def main(gpu=0):\n" + body + "    L.Trainer(devices=devices).fit(Net())\n" + RUN
    )
    assert _one_device(tmp_path, script) is expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("devices=1", True),
        ("devices=[0]", True),
        ("devices='1'", True),
        ("devices=1, strategy='auto'", True),
        ("devices=8", False),
        ("devices='auto'", False),
        ("max_epochs=3", False),
        ("devices=1, strategy='xla'", False),
        ("devices=1, num_nodes=2", False),
        ("devices=1, **extra", False),
    ],
)
def test_trainer_arguments(tmp_path: Path, arguments: str, expected: bool) -> None:
    script = (
        "import lightning as L\n\nfrom net import Net\n\n\n"
        f"def main(extra=None):\n    L.Trainer({arguments}).fit(Net())\n" + RUN
    )
    assert _one_device(tmp_path, script) is expected


def test_a_trainer_the_user_sizes_keeps_it(tmp_path: Path) -> None:
    many = (
        "import argparse\n\nimport lightning as L\n\nfrom net import Net\n\n"
        "if __name__ == '__main__':\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--devices', type=int, default=1)\n"
        "    args = parser.parse_args()\n"
        "    L.Trainer(devices=args.devices).fit(Net())\n"
    )
    one = "import lightning as L\n\nfrom net import Net\n\nL.Trainer(devices=1).fit(Net())\n"
    assert _one_device(tmp_path, one) is True
    assert _one_device(tmp_path, one, **{"train_many.py": many}) is False


def test_only_trainers_that_fit_count_for_the_training_step(tmp_path: Path) -> None:
    """A one-device Trainer that only predicts says nothing about the one that fits, even in
    a function nothing runnable calls (a library's `train`)."""
    predict = (
        "import lightning as L\n\nfrom net import Net\n\nL.Trainer(devices=1).predict(Net())\n"
    )
    library = (
        "import lightning as L\n\nfrom net import Net\n\n\n"
        "def train(cfg):\n    L.Trainer(devices=cfg.devices).fit(Net())\n"
    )
    assert _one_device(tmp_path, predict, **{"fitting.py": library}) is False
    assert _one_device(tmp_path, predict, fitting=False) is True


def test_a_library_is_not_one_device(tmp_path: Path) -> None:
    assert _one_device(tmp_path, "import net\n") is False


HELPER = """
import lightning as L
import torch

from net import Net


class Launcher:
    def __init__(self, gpus):
        self.gpus = gpus

    def run(self):
        devices, strategy = self._devices_and_strategy()
        L.Trainer(devices=devices, strategy=strategy).fit(Net())

    def _devices_and_strategy(self):
{body}


def main():
    Launcher(4).run()


if __name__ == "__main__":
    main()
"""

OFF_CUDA = "        if not torch.cuda.is_available():\n"
LATER = (
    "        count = torch.cuda.device_count()\n"
    "        if count > 1:\n            return count, 'ddp'\n"
    "        return count, 'auto'\n"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # The early return a TPU takes: what follows is never reached there.
        (OFF_CUDA + "            return 1, 'auto'\n" + LATER, True),
        (
            "        if torch.cuda.device_count() == 0:\n            return [0], 'auto'\n" + LATER,
            True,
        ),
        # The TPU path itself spans the devices, or names a distributed strategy.
        (OFF_CUDA + "            return 8, 'auto'\n" + LATER, False),
        (OFF_CUDA + "            return 1, 'ddp'\n" + LATER, False),
        # A return a TPU never takes is skipped; an unknown test keeps both.
        (
            "        if torch.cuda.is_available():\n            return self.gpus, 'ddp'\n"
            "        return 1, 'auto'\n",
            True,
        ),
        (
            "        if self.gpus > 1:\n            return self.gpus, 'ddp'\n"
            "        return 1, 'auto'\n",
            False,
        ),
    ],
)
def test_devices_returned_by_a_helper_method(tmp_path: Path, body: str, expected: bool) -> None:
    script = HELPER.replace("{body}", body)
    assert _one_device(tmp_path, script) is expected


def test_an_unresolved_helper_keeps_it(tmp_path: Path) -> None:
    script = (
        "import lightning as L\n\nfrom net import Net\nfrom settings import pick\n\n\n"
        "def main():\n    devices, strategy = pick()\n"
        "    L.Trainer(devices=devices, strategy=strategy).fit(Net())\n" + RUN
    )
    assert _one_device(tmp_path, script) is False


def test_devices_returned_by_a_module_function(tmp_path: Path) -> None:
    script = (
        "import lightning as L\nimport torch\n\nfrom net import Net\n\n\n"
        "def pick():\n    if not torch.cuda.is_available():\n        return 1\n"
        "    return torch.cuda.device_count()\n\n\n"
        "def main():\n    devices = pick()\n    L.Trainer(devices=devices).fit(Net())\n" + RUN
    )
    assert _one_device(tmp_path, script) is True


def test_a_helper_importing_torch_itself(tmp_path: Path) -> None:
    script = (
        "import lightning as L\n\nfrom net import Net\n\n\n"
        "class Launcher:\n    def run(self):\n"
        "        devices, strategy = self._pick()\n"
        "        L.Trainer(devices=devices, strategy=strategy).fit(Net())\n\n"
        "    def _pick(self):\n        import torch\n\n"
        + OFF_CUDA
        + "            return 1, 'auto'\n"
        + LATER
        + "\n\ndef main():\n    Launcher().run()\n"
        + RUN
    )
    assert _one_device(tmp_path, script) is True
