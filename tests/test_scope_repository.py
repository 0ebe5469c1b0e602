"""Classes nothing in a repository that trains builds (tpulint.analysis.scope `_unbuilt`,
`repository`): its installed package's too, beside the scripts that train it. Made-up
projects of the shape: a package the repository distributes, an `experiments/` script that
fits a model of it, and classes kept beside the ones it builds (an old variant, a layer
registered under a key no config selects, a loss of a looked-up module no config names, a
vendored package whose `train()` nothing calls)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import repository_model as project
from tests.helpers import scope_reason as reason_at
from tpulint.analysis.project import build_model

FILES = {
    "setup.cfg": "[options]\npackages = find:\n",
    "experiments/train.py": """\
        import lightning as L

        from geo.nets import GraphNet
        from geo.registry import build

        if __name__ == "__main__":
            net = GraphNet(norm=build(dict(module="layer_norm")))
            L.Trainer().fit(net)
    """,
    "geo/__init__.py": "from geo.layers import ExportedBlock\n",
    "geo/registry.py": """\
        REGISTRY = {}


        def register(name):
            def wrap(cls):
                REGISTRY[name] = cls
                return cls
            return wrap


        def build(spec):
            spec = dict(spec)
            return REGISTRY[spec.pop("module")](**spec)
    """,
    "geo/layers.py": """\
        import torch

        from geo.registry import register

        KEY = "dyn_norm"


        @register("layer_norm")
        class LayerNorm(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # chosen-norm


        @register("flat_norm")
        class FlatNorm(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # flat-norm


        @register(KEY)
        class DynNorm(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # dyn-norm


        class ExportedBlock(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # exported


        class Meta(type):
            def __call__(cls, *args):
                return super().__call__(*args)  # meta
    """,
    "geo/nets.py": """\
        import lightning as L
        import torch


        class Head(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # head


        class GraphNet(L.LightningModule):
            def __init__(self, norm):
                super().__init__()
                self.norm = norm

            def training_step(self, batch, i):
                return self.norm(batch).sum()


        class GraphNet_old(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.head = Head()

            def training_step(self, batch, i):
                return self.head(batch).sum()  # old-net
    """,
    "vendor/__init__.py": "",
    "vendor/model.py": """\
        import torch


        class Scorer(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # scorer


        def make_model():
            return Scorer()
    """,
    "vendor/training.py": """\
        import lightning as L

        from vendor.model import make_model


        def train(config):
            L.Trainer().fit(make_model(), config)
    """,
}


def why(name: str, scripts: str = "train.py, training.py") -> str:
    return (
        f"in `{name}`, a class nothing in its repository builds (no code that runs, config, "
        "registry key or string of the repository names it, tests aside; the repository "
        f"trains in {scripts})"
    )


def test_classes_nothing_in_a_training_repository_builds(tmp_path: Path) -> None:
    """An old variant nobody builds, and the head only it builds; a layer registered under
    a key nothing selects; a vendored package's model only its uncalled `train()` builds
    (through `make_model`, which only that calls)."""
    model = project(tmp_path, FILES)
    assert reason_at(model, tmp_path, "geo/nets.py", "# old-net") == why("GraphNet_old")
    assert reason_at(model, tmp_path, "geo/nets.py", "# head") == why("Head")
    assert reason_at(model, tmp_path, "geo/layers.py", "# flat-norm") == why("FlatNorm")
    assert reason_at(model, tmp_path, "vendor/model.py", "# scorer") == why("Scorer")


def test_what_may_be_built_stays(tmp_path: Path) -> None:
    """The selected registry key, a key the facts do not see (`@register(KEY)`), a class
    the package exports (its API), a metaclass (a class statement builds it)."""
    model = project(tmp_path, FILES)
    for marker in ("# chosen-norm", "# dyn-norm", "# exported", "# meta"):
        assert reason_at(model, tmp_path, "geo/layers.py", marker) is None, marker


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # A shell script selects the registry key.
        ("run.sh", "python experiments/train.py --norm flat_norm\n"),
        # A config names the class.
        ("configs/net.json", '{"norm": "FlatNorm"}\n'),
    ],
)
def test_keys_and_names_spelled_outside_the_code_select(
    tmp_path: Path, name: str, text: str
) -> None:
    model = project(tmp_path, {**FILES, name: text})
    assert reason_at(model, tmp_path, "geo/layers.py", "# flat-norm") is None


def test_a_function_spelled_or_called_keeps_what_it_builds(tmp_path: Path) -> None:
    """`train()` named in a string (a CLI's table of commands), or `make_model` called from a
    module's top level: the vendored model may be built."""
    files = dict(FILES)
    files["geo/registry.py"] = textwrap.dedent(files["geo/registry.py"]) + 'COMMANDS = ["train"]\n'
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "vendor/model.py", "# scorer") is None
    files = dict(FILES)
    files["vendor/training.py"] = (
        textwrap.dedent(files["vendor/training.py"]) + "M = make_model()\n"
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "vendor/model.py", "# scorer") is None


def test_a_looked_up_package_builds_only_the_names_spelled(tmp_path: Path) -> None:
    """`for name, cls in losses.__dict__.items()` registers every name of the package,
    its exports too: a loss no config or string names is built by none."""
    files = dict(FILES)
    files["geo/losses/__init__.py"] = "from geo.losses.hinge import HingeLoss, SoftLoss\n"
    files["geo/losses/hinge.py"] = """\
        import torch


        class HingeLoss(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # hinge


        class SoftLoss(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # soft
    """
    files["geo/losses_registry.py"] = """\
        import geo.losses

        LOSSES = {}
        for name, cls in geo.losses.__dict__.items():
            LOSSES[name] = cls


        def get_loss(name):
            return LOSSES[name]()
    """
    files["experiments/loss.sh"] = "python experiments/train.py --loss SoftLoss\n"
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "geo/losses/hinge.py", "# hinge") == why("HingeLoss")
    assert reason_at(model, tmp_path, "geo/losses/hinge.py", "# soft") is None


@pytest.mark.parametrize("where", ["none", "examples"])
def test_a_library_keeps_todays_scope(tmp_path: Path, where: str) -> None:
    """A library with no training script, or whose training script shows its users how to
    train (`examples/train.py`): its classes are its users' to build."""
    files = {k: v for k, v in FILES.items() if not k.startswith("vendor/")}
    script = files.pop("experiments/train.py")
    if where == "examples":
        files["examples/train.py"] = script
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "geo/nets.py", "# head") is None
    assert reason_at(model, tmp_path, "geo/layers.py", "# flat-norm") is None


def test_registry_keys_and_dict_lookups_are_facts(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(
        textwrap.dedent(
            """\
            import losses

            @register("flat_norm", aliases=("fn",))
            class A:
                pass

            @register(KEY)
            class B:
                pass

            @REGISTRY.register
            class C:
                pass

            TABLE = dict(losses.__dict__.items())
            """
        ),
        encoding="utf-8",
    )
    facts = build_model([(str(path), path.read_text(encoding="utf-8"))]).modules[str(path)].scope
    assert facts.registered_keys == {"A": ["flat_norm", "?"], "B": ["?"]}
    assert "flat_norm" not in facts.strings  # the decorator's key selects nothing
    assert "losses" in facts.lookups


def test_configs_the_checkout_does_not_hold_may_name_any_class(tmp_path: Path) -> None:
    """A repository that builds from configs (gin, a LightningCLI, `instantiate`) none of
    which the checkout holds or its text files name a class of (the configs folder left
    out, user configs): any class may be named; one that names a class shows its configs."""
    files = dict(FILES)
    files["experiments/train.py"] = "import gin\n" + textwrap.dedent(files["experiments/train.py"])
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "geo/nets.py", "# head") is None
    assert reason_at(model, tmp_path, "geo/layers.py", "# flat-norm") is None
    shown = tmp_path / "shown"
    model = project(shown, {**files, "configs/net.gin": "train.model = @GraphNet\n"})
    assert reason_at(model, shown, "geo/layers.py", "# flat-norm") == why("FlatNorm")


@pytest.mark.parametrize("packaging", [False, True])
def test_a_setup_module_inside_a_package_marks_no_repository(
    tmp_path: Path, packaging: bool
) -> None:
    """`pkg/setup.py` that sets up a training run (a module of the package, imported by
    the root's `main.py`) is no packaging script: the repository is the checkout, whose
    classes nothing builds are judged (a model of the root's script). A `setup.py`
    that imports setuptools there still marks its folder."""
    setup = (
        "from setuptools import setup\n\nsetup(name='geo')\n"
        if packaging
        else """\
            import lightning as L

            from .nets import GraphNet


            def main_train():
                L.Trainer().fit(GraphNet())
        """
    )
    files = {
        "main.py": """\
            import torch

            from geo.setup import main_train


            class Probe(torch.nn.Module):
                def forward(self, x):
                    return x[x > 0]  # probe


            main_train()
        """,
        "geo/__init__.py": "",
        "geo/setup.py": setup,
        "geo/nets.py": """\
            import lightning as L


            class GraphNet(L.LightningModule):
                def training_step(self, batch, i):
                    return batch[batch > 0].sum()
        """,
        "geo/train_loop.py": """\
            import lightning as L

            from geo.nets import GraphNet

            if __name__ == "__main__":
                L.Trainer().fit(GraphNet())
        """,
    }
    model = project(tmp_path, files)
    found = reason_at(model, tmp_path, "main.py", "# probe")
    if packaging:
        assert found is None
    else:
        assert found is not None and found.startswith("in `Probe`, a class nothing"), found
