"""A repository with a TPU entry point and, in a folder of its own, another machine's
training program (tpulint.analysis.scope `_other_programs`): a vendored project with its own
script, its own hand-written CUDA training loop and its own renderer, which the TPU script
never imports. Made-up projects of the shape."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import repository_model as project
from tests.helpers import scope_reason as reason_at

FILES = {
    "environment.yml": "name: gan\ndependencies:\n  - python=3.10\n",
    "app/train.py": """\
        import lightning as L

        from model import Denoiser

        if __name__ == "__main__":
            L.Trainer(accelerator="tpu", devices=8).fit(Denoiser())
    """,
    "app/model.py": """\
        import lightning as L
        import torch


        class Denoiser(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 4)

            def training_step(self, batch, i):
                return self.net(batch).sum()
    """,
    "vendor/environment.yml": "name: vendor\ndependencies:\n  - pytorch\n",
    "vendor/run.py": """\
        import click

        from engine import loop


        @click.command()
        @click.option("--gpus", type=int, default=1)
        def main(gpus):
            loop.train(rank=0, steps=100)


        if __name__ == "__main__":
            main()
    """,
    "vendor/engine/__init__.py": "",
    "vendor/engine/loop.py": """\
        import torch

        from engine.render import Splatter


        def train(rank, steps):
            device = torch.device("cuda", rank)
            net = Splatter().to(device)
            opt = torch.optim.Adam(net.parameters())
            for step in range(steps):
                x = torch.randn(8, 4, device=device)
                loss = net(x).sum()
                loss.backward()
                opt.step()
                print(loss.item())  # vendor-loop
    """,
    "vendor/engine/render.py": """\
        import torch


        class Splatter(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(4, 4)

            def forward(self, x):
                hit = x > 0
                x[~hit] = 0  # vendor-render
                return self.proj(x)
    """,
}


UNREACHED = "not reached from the TPU entry points (train.py)"


def test_another_machines_program_in_the_repository_is_not_the_tpus(tmp_path: Path) -> None:
    """`vendor/` (its own environment file, script, CUDA loop and renderer) beside the TPU
    script's `app/`, in one checkout: the TPU entry point says where the TPU path is, and it
    never reaches the vendored program."""
    model = project(tmp_path, FILES)
    assert reason_at(model, tmp_path, "vendor/engine/render.py", "x[~hit]") == UNREACHED
    assert reason_at(model, tmp_path, "vendor/engine/loop.py", "loss.item()") == UNREACHED


def test_a_program_the_repository_distributes_stays_a_library(tmp_path: Path) -> None:
    """Packaging that installs the folder's packages makes them a library its users import
    from anywhere: judged as before."""
    files = {**FILES, "setup.cfg": "[options]\npackages = find:\n"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "vendor/engine/render.py", "x[~hit]") is None


def test_a_program_on_xla_or_without_a_script_stays(tmp_path: Path) -> None:
    """A loop that imports torch_xla may be the TPU's, and a folder with a loop but no script
    of its own is a library of training functions: both are judged as before."""
    xla = {
        **FILES,
        "vendor/engine/loop.py": "import torch_xla.core.xla_model as xm\n"
        + textwrap.dedent(FILES["vendor/engine/loop.py"]),
    }
    model = project(tmp_path / "xla", xla)
    assert reason_at(model, tmp_path / "xla", "vendor/engine/render.py", "x[~hit]") is None
    loose = {k: v for k, v in FILES.items() if k != "vendor/run.py"}
    model = project(tmp_path / "loose", loose)
    assert reason_at(model, tmp_path / "loose", "vendor/engine/loop.py", "loss.item()") is None


def test_a_program_the_tpu_path_imports_from_stays(tmp_path: Path) -> None:
    """When the TPU script's code loads a module of the folder, the folder is shared code:
    judged as before."""
    files = {
        **FILES,
        "app/model.py": FILES["app/model.py"].replace(
            "import torch\n", "import torch\n        import engine.render\n"
        ),
        "app/engine/__init__.py": "",
    }
    files.pop("app/engine/__init__.py")
    files["app/train.py"] = FILES["app/train.py"].replace(
        "import lightning as L\n",
        "import sys\n\n        import lightning as L\n\n        sys.path.insert(0, '../vendor')\n",
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "vendor/engine/render.py", "x[~hit]") is None
