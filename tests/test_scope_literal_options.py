"""Options the repository's own code or configs decide (tpulint.analysis.scope): a script's
flag bound only to one bool literal (`use_tpus = False`, never bound again), and a config
option ordered against a number (`cfg["train"]["ff_weight"] > 0`) when every shipped config
gives it numbers that agree. Made-up multi-file projects of the shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_scope import project, reason_at, with_configs

_MODEL = """\
import lightning as L
import torch


class Tagger(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 2)

    def training_step(self, batch, i):
        return self.proj(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

_SCRIPT = """\
import lightning as L

from tagger.model import Tagger


def main():
    use_tpus = False
    precision = 16 if use_tpus else 32
    if use_tpus:
        trainer = L.Trainer(accelerator="tpu", devices=8, precision=precision)  # tpu-trainer
    else:
        trainer = L.Trainer(accelerator="gpu", devices=1, precision=precision)
    trainer.fit(Tagger())


if __name__ == "__main__":
    main()
"""


def _flag_project(tmp_path: Path, script: str, extra: dict[str, str] | None = None):
    files = {"tagger/__init__.py": "", "tagger/model.py": _MODEL, "train.py": script}
    files.update(extra or {})
    return project(tmp_path, files)


def test_a_flag_bound_only_to_false_never_takes_its_branch(tmp_path: Path) -> None:
    """`use_tpus = False` in `main()`, never bound again: the TPU Trainer under `if
    use_tpus:` never runs (its name says nothing: the script runs its own literal)."""
    model = _flag_project(tmp_path, _SCRIPT)
    reason = reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"')
    assert reason == "under `if use_tpus`, and `use_tpus` is bound only to False in its scope"


def test_a_flag_bound_only_to_false_at_the_top_level(tmp_path: Path) -> None:
    script = _SCRIPT.replace(
        "def main():\n    use_tpus = False\n", "use_tpus = False\n\n\ndef main():\n"
    )
    model = _flag_project(tmp_path, script)
    assert reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"') is not None


@pytest.mark.parametrize(
    ("old", "new", "extra"),
    [
        # bound to True, to a command-line value, or bound again
        ("use_tpus = False", "use_tpus = True", {}),
        ("use_tpus = False", "use_tpus = args_tpu()", {"helpers.py": ""}),
        (
            "    precision = 16",
            "    for use_tpus in (False, True):\n        pass\n    precision = 16",
            {},
        ),
        ("    precision = 16", "    use_tpus |= bool(precision)\n    precision = 16", {}),
        ("use_tpus = False", "use_tpus = 0", {}),
    ],
)
def test_a_flag_that_may_be_on_keeps_its_branch(
    tmp_path: Path, old: str, new: str, extra: dict[str, str]
) -> None:
    script = _SCRIPT.replace(old, new)
    if "args_tpu" in new:
        script = "from helpers import args_tpu\n" + script
        extra = {"helpers.py": "import sys\n\n\ndef args_tpu():\n    return '--tpu' in sys.argv\n"}
    model = _flag_project(tmp_path, script, extra)
    assert reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"') is None


def test_a_top_level_flag_another_module_sets_stays_open(tmp_path: Path) -> None:
    script = _SCRIPT.replace(
        "def main():\n    use_tpus = False\n", "use_tpus = False\n\n\ndef main():\n"
    )
    launcher = "import train\n\ntrain.use_tpus = True\ntrain.main()\n"
    model = _flag_project(tmp_path, script, {"launch.py": launcher})
    assert reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"') is None
    global_store = script.replace(
        "def main():\n",
        "def enable():\n    global use_tpus\n    use_tpus = True\n\n\ndef main():\n",
    )
    model = _flag_project(tmp_path, global_store)
    assert reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"') is None


# --- a config option ordered against a number ---------------------------------------------

_LOSSES = """\
import torch


class SpectralLoss(torch.nn.Module):
    def forward(self, a, b):
        diff = torch.fft.fft2(a - b).abs()
        assert diff.max().item() >= 0  # spectral-sync
        return diff.mean()
"""

_TASK = """\
import lightning as L
import torch
import yaml

from restore.losses import SpectralLoss

with open("config.yaml") as handle:
    cfg = yaml.safe_load(handle)


class Restorer(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Conv2d(3, 3, 3, padding=1)
        if cfg["train"]["spectral_weight"] > 0:
            self.spectral = SpectralLoss()

    def training_step(self, batch, i):
        out = self.net(batch)
        loss = (out - batch).abs().mean()
        if cfg["train"]["spectral_weight"] > 0:
            loss = loss + cfg["train"]["spectral_weight"] * self.spectral(out, batch)
            print(loss.item())  # spectral-branch
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""

_TRAIN = """\
import lightning as L

from restore.task import Restorer

if __name__ == "__main__":
    L.Trainer(accelerator="tpu", devices=8).fit(Restorer())
"""

_CONFIG = "train:\n  lr: 0.001\n  spectral_weight: 0  # 0.1\n  l1_weight: 1\n"


def _weights(tmp_path: Path, config: str = _CONFIG, extra: dict[str, str] | None = None):
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {
        "restore/__init__.py": "",
        "restore/losses.py": _LOSSES,
        "restore/task.py": _TASK,
        "train.py": _TRAIN,
        **(extra or {}),
    }
    return with_configs(tmp_path, files, {"config.yaml": config})


def test_a_weight_every_config_sets_to_zero_turns_its_branch_off(tmp_path: Path) -> None:
    """`if cfg["train"]["spectral_weight"] > 0:` where the one shipped config says 0 (and
    nothing else sets the key): the branch never runs, nor does the loss only it builds."""
    model = _weights(tmp_path)
    reason = reason_at(model, tmp_path, "restore/task.py", "print(loss.item())")
    assert reason == (
        'under `if cfg["train"]["spectral_weight"] > 0`, and the project\'s config classes and'
        " files set `spectral_weight` only to 0, which makes `spectral_weight > 0` false"
    )
    assert reason_at(model, tmp_path, "restore/losses.py", "assert diff.max()") is not None


@pytest.mark.parametrize(
    ("config", "extra"),
    [
        # a config turns it on, or gives it no number
        ("train:\n  spectral_weight: 0.1\n", {}),
        ("train:\n  spectral_weight: ${weights.spectral}\n", {}),
        ("train:\n  spectral_weight: null\n", {}),
        # a command line or a launcher may set it, or code assigns it
        (
            _CONFIG,
            {"opts.py": "def options(p):\n    p.add_argument('--spectral_weight', type=float)\n"},
        ),
        (_CONFIG, {"run.sh": "python train.py train.spectral_weight=0.5\n"}),
        (_CONFIG, {"tweak.py": "def tweak(cfg):\n    cfg['train']['spectral_weight'] = 1\n"}),
    ],
)
def test_a_weight_that_may_be_set_keeps_its_branch(
    tmp_path: Path, config: str, extra: dict[str, str]
) -> None:
    texts = {k: v for k, v in extra.items() if k.endswith(".py")}
    for name, text in extra.items():
        if not name.endswith(".py"):
            (tmp_path / name).write_text(text, encoding="utf-8")
    model = _weights(tmp_path, config, texts)
    assert reason_at(model, tmp_path, "restore/task.py", "print(loss.item())") is None
    assert reason_at(model, tmp_path, "restore/losses.py", "assert diff.max()") is None


# --- a config-string dispatch over vendored architectures ----------------------------------

_ARCH_SLOW = """\
import torch


class Corr(torch.nn.Module):
    def forward(self, a, b):
        keep = (a * b).sum(1) > 0
        return a[keep]  # corr-mask


class SlowNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.corr = Corr()

    def forward(self, x):
        return self.corr(x, x)
"""

_ARCH_FAST = """\
import torch


class FastNet(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = torch.nn.Conv2d(3, 3, width, padding=width // 2)

    def forward(self, x):
        return self.body(x)
"""

_GENERATOR = """\
def build_generator(cfg):
    if cfg["netG"] == "fastnet":
        from zoo.fast_arch import FastNet

        return FastNet(cfg["width"])
    elif cfg["netG"] == "slownet":
        from zoo.slow_arch import SlowNet

        return SlowNet()
    raise ValueError(cfg["netG"])
"""

_DISPATCH_TASK = """\
import lightning as L
import torch
import yaml

from zoo.generator import build_generator

with open("config.yaml") as handle:
    cfg = yaml.safe_load(handle)


def pixel_loss(out, target, netG):
    return (netG(out) - target).abs().mean()


class Restorer(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.netG = build_generator(cfg["network_G"])

    def training_step(self, batch, i):
        out = self.netG(batch)
        return pixel_loss(out, batch, netG=self.netG)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""

_DISPATCH_CONFIG = (
    "network_G_teacher:\n  netG:\nnetwork_G:\n  netG: fastnet  # slownet | fastnet\n  width: 3\n"
)


def _dispatch(tmp_path: Path, config: str = _DISPATCH_CONFIG, task: str = _DISPATCH_TASK):
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {
        "zoo/__init__.py": "",
        "zoo/slow_arch.py": _ARCH_SLOW,
        "zoo/fast_arch.py": _ARCH_FAST,
        "zoo/generator.py": _GENERATOR,
        "zoo/task.py": task,
        "train.py": _TRAIN.replace("restore.task", "zoo.task"),
    }
    return with_configs(tmp_path, files, {"config.yaml": config})


def test_an_architecture_no_config_selects_is_out(tmp_path: Path) -> None:
    """`elif cfg["netG"] == "slownet":` where the one shipped config selects `fastnet` (the
    teacher's `netG` is empty): the branch never runs, the class only it builds never runs,
    and neither does a layer only that class builds. A value passed by keyword to a function
    with a parameter of that name (`pixel_loss(..., netG=self.netG)`) sets no config key."""
    model = _dispatch(tmp_path)
    assert reason_at(model, tmp_path, "zoo/generator.py", "return SlowNet()") == (
        'under `if cfg["netG"] == "slownet"`, and the project\'s config classes and files never'
        " set `netG` to 'slownet'"
    )
    reason = reason_at(model, tmp_path, "zoo/slow_arch.py", "return a[keep]")
    assert reason == (
        "its class is built only where the code never runs: in `SlowNet`, whose class is"
        " built only where the code never runs"
    )


@pytest.mark.parametrize(
    ("config", "old", "new"),
    [
        # a config selects it
        (_DISPATCH_CONFIG + "other:\n  netG: slownet\n", "", ""),
        # a value passed by keyword to something that may be a config
        (
            _DISPATCH_CONFIG,
            "self.netG = build_generator(",
            "self.opts = dict(netG=self.kind)\n        self.netG = build_generator(",
        ),
        # a keyword to a callee the model cannot resolve
        (
            _DISPATCH_CONFIG,
            "pixel_loss(out, batch, netG=self.netG)",
            "torch.compile(out, netG=self.netG)",
        ),
        # code assigns the key
        (
            _DISPATCH_CONFIG,
            "        self.netG = build_generator(",
            '        cfg["network_G"]["netG"] = self.kind\n        self.netG = build_generator(',
        ),
    ],
)
def test_an_architecture_that_may_be_selected_stays(
    tmp_path: Path, config: str, old: str, new: str
) -> None:
    task = _DISPATCH_TASK.replace(old, new) if old else _DISPATCH_TASK
    model = _dispatch(tmp_path, config, task)
    assert reason_at(model, tmp_path, "zoo/slow_arch.py", "return a[keep]") is None


def test_a_flag_named_for_cuda_keeps_the_other_branch(tmp_path: Path) -> None:
    """`use_cuda = True` hard-coded: a port to the TPU turns it off, so its `else` (the
    path that runs there) stays in the scope."""
    script = _SCRIPT.replace("use_tpus = False", "use_cuda = True").replace(
        "if use_tpus:", "if not use_cuda:"
    )
    model = _flag_project(tmp_path, script.replace("16 if use_tpus", "16 if use_cuda"))
    assert reason_at(model, tmp_path, "train.py", 'L.Trainer(accelerator="tpu"') is None
