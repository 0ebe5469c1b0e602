"""Code the default scope (tpulint.analysis.scope) should find never runs in training: what
only a notebook-style evaluation script reaches, and the like. Made-up projects, each with a
negative that keeps the code in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import project_model as project
from tests.helpers import scope_reason as reason_at

# A sequence model whose `predict_step` runs an autoregressive `predict` (a method of its
# own, named like the Trainer's and other classes' methods), a training script that fits,
# and a notebook-style plotting script (top-level code, no `__main__` block) that only
# predicts, through a module-level Trainer used inside a helper.
_PACKAGE = {
    "setup.py": "from setuptools import setup\n\nsetup(name='seqlib')\n",
    "seqlib/__init__.py": "",
    "seqlib/net.py": """\
        import lightning as L
        import torch


        class SeqNet(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                return self.proj(batch).sum()

            @torch.inference_mode()
            def predict(self, batch):
                stop = (batch > 0).nonzero()[0][0].item()  # decode-sync
                return self.proj(batch[:stop])

            def score(self, batch):
                return (batch > 0).sum().item()  # score-sync

            def predict_step(self, batch, batch_idx):
                return self.predict(batch)


        class Ridge:
            def predict(self, x):
                return x
        """,
    "train.py": """\
        import lightning as L

        from seqlib.net import SeqNet

        if __name__ == "__main__":
            trainer = L.Trainer(accelerator="gpu", devices=1)
            trainer.fit(SeqNet(), None)
        """,
    "scripts/plot_decodes.py": """\
        import lightning as L

        from seqlib.net import SeqNet

        trainer = L.Trainer(accelerator="gpu", devices=1)


        def run_one(name):
            model = SeqNet.load_from_checkpoint(name)
            print(model.score(None))
            return trainer.predict(model, None)


        outputs = []
        for name in ["a.ckpt", "b.ckpt"]:
            outputs.append(run_one(name))
        """,
}


def test_a_notebook_evaluation_script_reaches_its_code_as_inference(tmp_path: Path) -> None:
    """A script of top-level code (no `__main__` block) that predicts and never fits runs its
    top level as inference, helpers and all: `trainer.predict` there (on a module-level
    Trainer the helper cannot type) calls no training code."""
    model = project(tmp_path, _PACKAGE)
    reason = reason_at(model, tmp_path, "seqlib/net.py", "# decode-sync")
    assert reason is not None and "inference only" in reason
    reason = reason_at(model, tmp_path, "seqlib/net.py", "# score-sync")
    assert reason == (
        "inference only (reached from `trainer.predict` in plot_decodes.py, which never fits)"
    )


def test_a_notebook_script_that_fits_stays_training(tmp_path: Path) -> None:
    files = dict(_PACKAGE)
    files["scripts/plot_decodes.py"] = _PACKAGE["scripts/plot_decodes.py"].replace(
        "print(model.score(None))", "trainer.fit(model, None); print(model.score(None))"
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "seqlib/net.py", "# score-sync") is None


# A metric computed by a base task head only in a deprecated head's `forward`, which starts
# with `assert False`; an enum member of the same name keys the output dict everywhere.
_DEPRECATED = {
    "heads/__init__.py": "",
    "heads/keys.py": """\
        import enum


        class Stat(enum.Enum):
            score = "score"
            loss = "loss"
        """,
    "heads/tasks.py": """\
        import torch
        from torch import nn

        from heads.keys import Stat


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.stats = [Stat.score, Stat.loss]

            @torch.no_grad()
            def score(self, x, mask):
                x[~mask] = 0  # score-mask
                return x.sum()


        class OldHead(Head):
            def forward(self, x, mask):
                assert False, "Deprecated"
                return {Stat.score: self.score(x, mask)}


        class NewHead(Head):
            def forward(self, x, mask):
                return {Stat.loss: x.mean()}
        """,
}


def test_a_method_only_a_deprecated_forward_calls_never_runs(tmp_path: Path) -> None:
    """`Stat.score` (an enum member of another class) is no use of `Head.score`: its only
    call sits after `assert False`, so it never runs."""
    model = project(tmp_path, _DEPRECATED)
    reason = reason_at(model, tmp_path, "heads/tasks.py", "# score-mask")
    assert reason is not None and "never runs" in reason


def test_a_method_a_live_forward_calls_runs(tmp_path: Path) -> None:
    files = dict(_DEPRECATED)
    files["heads/tasks.py"] = _DEPRECATED["heads/tasks.py"].replace(
        "return {Stat.loss: x.mean()}", "return {Stat.loss: self.score(x, mask)}"
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "heads/tasks.py", "# score-mask") is None


def test_a_reference_through_a_subclass_is_a_use_of_the_method(tmp_path: Path) -> None:
    """`NewHead.score` names the inherited method itself (handed on, it may run)."""
    files = dict(_DEPRECATED)
    files["heads/tasks.py"] = _DEPRECATED["heads/tasks.py"] + "\n\nSCORERS = [NewHead.score]\n"
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "heads/tasks.py", "# score-mask") is None
