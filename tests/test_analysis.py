"""The shared analysis: Lightning classes under every import spelling, the project-wide class
index, and hot code."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from tests.helpers import make_project, run_cli
from tpulint.analysis.imports import Aliases
from tpulint.analysis.project import ClassKind, build_model, module_name_for_path
from tpulint.analysis.semantic import analyze_module
from tpulint.analysis.summary import summarize


def analyse(source: str, module: str | None = "pkg.mod", project: dict | None = None, hot=()):
    tree = cst.parse_module(textwrap.dedent(source))
    return analyze_module(tree, Aliases(module, False), project, hot)


def kinds(source: str, **kw) -> dict[str, ClassKind]:
    return {c.name: c.kind for c in analyse(source, **kw).classes.values()}


def hot(source: str, **kw) -> dict[str, str | None]:
    return {f.name: f.hot_reason for f in analyse(source, **kw).functions.values()}


@pytest.mark.parametrize(
    "header, base",
    [
        ("import lightning as L", "L.LightningModule"),
        ("import lightning.pytorch as pl", "pl.LightningModule"),
        ("import pytorch_lightning as pl", "pl.LightningModule"),
        ("from lightning.pytorch import LightningModule", "LightningModule"),
        ("from lightning.pytorch.core import LightningModule", "LightningModule"),
        ("from pytorch_lightning.core.lightning import LightningModule", "LightningModule"),
        ("from lightning import LightningModule as LM", "LM"),
        ("import lightning", "lightning.pytorch.LightningModule"),
    ],
)
def test_lightning_module_spellings(header: str, base: str) -> None:
    assert kinds(f"{header}\nclass M({base}):\n    pass\n")["M"] & ClassKind.LIGHTNING_MODULE


def test_datamodule_callback_and_local_subclasses() -> None:
    found = kinds(
        """
        import pytorch_lightning as pl
        from lightning.pytorch.callbacks import ModelCheckpoint
        from torch import nn

        class DM(pl.LightningDataModule): ...
        class CB(pl.Callback): ...
        class Ckpt(ModelCheckpoint): ...
        class Base(pl.LightningModule): ...
        class Child(Base): ...
        class Net(nn.Module): ...
        class Plain: ...
        class LightningModule: ...  # a local class with the same name is not Lightning's
        class Fake(LightningModule): ...
        """
    )
    assert found["DM"] == ClassKind.LIGHTNING_DATAMODULE
    assert found["CB"] == ClassKind.CALLBACK and found["Ckpt"] == ClassKind.CALLBACK
    assert found["Child"] & ClassKind.LIGHTNING_MODULE
    assert found["Net"] == ClassKind.TORCH_MODULE
    assert found["Plain"] == ClassKind.NONE and found["Fake"] == ClassKind.NONE


def test_project_index_resolves_bases_in_other_files(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {
            "src/acme/__init__.py": "from .core.base import AcmeModule\n",
            "src/acme/core/__init__.py": "",
            "src/acme/core/base.py": (
                "import lightning as L\n\nclass AcmeModule(L.LightningModule):\n    pass\n"
            ),
            "src/acme/models/__init__.py": "",
            "src/acme/models/cls.py": textwrap.dedent(
                """\
                from acme import AcmeModule
                from ..core.base import AcmeModule as Base2

                class Classifier(AcmeModule):
                    def training_step(self, batch, batch_idx):
                        return batch.sum().item()

                class Other(Base2):
                    def training_step(self, batch, batch_idx):
                        return batch.sum().item()
                """
            ),
            # Same class name, unrelated base: name-only resolution would mislabel it.
            "src/other/__init__.py": "",
            "src/other/pipeline.py": (
                "class Pipeline:\n    pass\n\nclass AcmeModule(Pipeline):\n    pass\n"
            ),
            "src/other/user.py": textwrap.dedent(
                """\
                from other.pipeline import AcmeModule

                class NotLightning(AcmeModule):
                    def on_train_batch_end(self, outputs, batch, batch_idx):
                        return batch.sum().item()
                """
            ),
        },
    )
    files = sorted(root.rglob("*.py"))
    table = build_model([(str(f), f.read_text()) for f in files]).lightning_table()
    assert ClassKind(table["acme.core.base.AcmeModule"]) & ClassKind.LIGHTNING_MODULE
    assert ClassKind(table["acme.AcmeModule"]) & ClassKind.LIGHTNING_MODULE  # re-export
    assert "other.pipeline.AcmeModule" not in table
    assert module_name_for_path(root / "src/acme/models/cls.py") == ("acme.models.cls", False)
    result = run_cli(["check", "src", "--select", "TPU101"], root)
    lines = [
        line.split(":")[0] + ":" + line.split(":")[1]
        for line in result.stdout.splitlines()
        if "TPU101" in line
    ]
    assert lines == ["src/acme/models/cls.py:6", "src/acme/models/cls.py:10"]


_IMPORTS = textwrap.dedent(
    """\
    from a import (b,
        c)  # import d
    import x.y as z, w
    from .sibling import helper
    from .. import parent_mod
    \"\"\"
    from doc import example
    \"\"\"
    class A(B, metaclass=M):
        class C(D):
            from .q import r
        import os
    class E(F[
        G]):
        pass
    x = 1; import late
    def f():
        import inside
    """
)


def test_summary_reads_imports_and_classes() -> None:
    summary = summarize(_IMPORTS, "pkg/sub/mod.py", "pkg.sub.mod", False)
    imports = summary.imports
    assert imports["b"] == "a.b" and imports["c"] == "a.c"
    assert imports["z"] == "x.y" and imports["w"] == "w" and imports["late"] == "late"
    assert imports["helper"] == "pkg.sub.sibling.helper"
    assert imports["parent_mod"] == "pkg.parent_mod"
    assert "example" not in imports and "d" not in imports  # a docstring, a comment
    assert "inside" not in imports and "r" not in imports  # function and class scopes
    classes = {c.qualname: c.bases for c in summary.classes}
    assert classes == {"A": [".B"], "A.C": [".D"], "E": [".F"]}


def test_a_name_bound_only_in_the_else_of_a_cuda_test_is_summarised() -> None:
    # The body of `if torch.cuda.is_available():` binds no `y`, so its value there is the
    # unbound marker, not a list of values: summarising must not take it for one.
    source = (
        "import torch\n\n\n"
        "def pick(x):\n"
        "    if torch.cuda.is_available():\n"
        "        x = x.cuda()\n"
        "    else:\n"
        "        y = x.cpu()\n"
        "    return x\n"
    )
    summary = summarize(source, "pick.py", "pick", False)
    assert [f.qualname for f in summary.functions] == ["pick"]


def test_hot_functions() -> None:
    reasons = hot(
        """
        import lightning as L
        from torch import nn

        def module_helper(x):
            return x

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                def inner(t):
                    return t
                return self.shared(batch) + module_helper(batch) + inner(batch)

            def shared(self, batch):
                return self.deeper(batch)

            def deeper(self, batch):
                return batch

            def on_train_epoch_end(self):
                self.cold_helper()

            def cold_helper(self):
                pass

            def setup(self, stage):
                pass

            def custom_step(self, batch):
                return batch

            def on_after_backward(self):
                pass

        class Net(nn.Module):
            def forward(self, x):
                return self.block(x)

            def block(self, x):
                return x

        class CB(L.Callback):
            def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
                pass

            def on_validation_epoch_end(self, trainer, module):
                pass
        """
    )
    assert reasons["training_step"] == "training_step"
    assert reasons["shared"] == "`shared` (called from training_step)"
    assert reasons["deeper"] == "`deeper` (called from training_step)"
    assert reasons["module_helper"] == "`module_helper` (called from training_step)"
    assert reasons["inner"] == "training_step"
    # Lightning never calls `custom_step`, and nothing calls or names it
    assert reasons["custom_step"] is None
    assert reasons["on_after_backward"] == "on_after_backward"
    assert reasons["forward"] == "forward" and reasons["block"] == "`block` (called from forward)"
    assert reasons["on_train_batch_end"] == "on_train_batch_end"
    for cold in ("on_train_epoch_end", "cold_helper", "setup", "on_validation_epoch_end"):
        assert reasons[cold] is None, cold


def test_configured_hot_methods() -> None:
    source = "class Runner:\n    def run_batch(self, b):\n        pass\n"
    assert hot(source)["run_batch"] is None
    assert hot(source, hot=("run_batch",))["run_batch"] == "run_batch"


def test_conditional_imports_rebind_names() -> None:
    """An MLX block that imports `mlx.nn as nn` rebinds `nn` for the code after it."""
    found = kinds(
        """
        import torch.nn as nn
        class A(nn.Module): ...
        if HAS_MLX:
            import mlx.nn as nn
            class B(nn.Module): ...
        """
    )
    assert found["A"] == ClassKind.TORCH_MODULE and found["B"] == ClassKind.NONE


def test_iteration_split_by_rank_through_helpers(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import torch.distributed as dist
        import torch_xla.runtime as xr
        from torch.utils.data import IterableDataset

        class Direct(IterableDataset):
            def __iter__(self):
                return iter(self._shard())

            def _shard(self):
                return range(xr.global_ordinal(), 100, xr.world_size())

        class DistributedOnly(IterableDataset):
            def __iter__(self):
                return iter(self._shard())

            def _shard(self):
                rank, world = dist.get_rank(), dist.get_world_size()
                return range(rank, 100, world)

        class ThroughSetup(IterableDataset):
            def __iter__(self):
                self.setup()
                return iter(self.items)

            def setup(self):
                self.items = self._shard()

            def _shard(self):
                return range(dist.get_rank(), 100, dist.get_world_size())

        class Plain(IterableDataset):
            def __iter__(self):
                return iter(self._items())

            def _items(self):
                return range(100)
        """
    )
    path = tmp_path / "data.py"
    model = build_model([(str(path), source)])
    prefix = "data."  # module name of data.py
    assert model.iteration_splits_by_rank(prefix + "Direct") is True
    # torch.distributed's rank is rank 0 of 1 on every TPU core: no split
    assert model.iteration_splits_by_rank(prefix + "DistributedOnly") is False
    assert model.iteration_splits_by_rank(prefix + "Plain") is False
    # Summaries keep no calls made in cold-named hooks (`setup`): not visible, not "unsplit".
    assert model.iteration_splits_by_rank(prefix + "ThroughSetup") is None


def test_cached_results_follow_other_files(tmp_path: Path) -> None:
    """A file whose text did not change is checked again when another file changes what the
    project model tells it (here: whether a step method calls its helper)."""
    cold = "class M(L.LightningModule):\n    def training_step(self, batch, i):\n        return 0\n"
    hot = (
        "class M(L.LightningModule):\n    def training_step(self, batch, i):\n"
        "        return scale(batch)\n"
    )
    head = "import lightning as L\n\nfrom pkg.losses import scale\n\n\n"
    root = make_project(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/losses.py": "def scale(x):\n    return x / x.max().item()\n",
            "pkg/model.py": head + cold,
        },
        pyproject='select = ["TPU101"]\n',
    )
    first = run_cli(["check", "-v", "pkg"], root)
    assert first.exit_code == 0, first.stdout
    again = run_cli(["check", "-v", "pkg"], root)
    assert "(3 from cache, 0 analysed, " in again.stderr
    (root / "pkg/model.py").write_text(head + hot, encoding="utf-8")
    warm = run_cli(["check", "-v", "pkg"], root)
    assert "pkg/losses.py:2:16: TPU101" in warm.stdout
    assert "called from training_step via pkg/model.py:8" in warm.stdout
    assert "(1 from cache, 2 analysed, " in warm.stderr  # __init__.py alone is unchanged
    (root / "pkg/model.py").write_text(head + cold, encoding="utf-8")
    back = run_cli(["check", "-v", "pkg"], root)
    assert back.exit_code == 0 and "TPU101" not in back.stdout


SAMPLER_DATAMODULE = """\
import lightning as L
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


class Data(L.LightningDataModule):
    def train_dataloader(self):
        sampler = DistributedSampler(
            self.train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank()
        )
        return DataLoader(self.train_set, batch_size=64, sampler=sampler)
"""


@pytest.mark.parametrize(
    ("other", "turned_off"),
    [
        # The project's training script turns the injection off: the sampler is needed there.
        ("train.py", "trainer = L.Trainer(use_distributed_sampler=False)\n"),
        # Lightning's own source (vendored, or a folder of packages) only names the flag in a
        # message: it turns nothing off in the user's run.
        (
            "lightning/fabric/utilities/data.py",
            'MESSAGE = "or set `.setup_dataloaders(..., use_distributed_sampler=False)`"\n',
        ),
    ],
)
def test_sampler_injection_turned_off_by_another_file(
    tmp_path: Path, other: str, turned_off: str
) -> None:
    files = {"data.py": SAMPLER_DATAMODULE, other: "import lightning as L\n" + turned_off}
    if other.startswith("lightning/"):
        files.update({"lightning/__init__.py": "", "lightning/fabric/__init__.py": ""})
        files["lightning/fabric/utilities/__init__.py"] = ""
    root = make_project(tmp_path, files, pyproject='select = ["TPU301"]')
    result = run_cli(["check", "--no-cache", "--output-format", "json", "."], root)
    (finding,) = json.loads(result.stdout)["diagnostics"]
    assert finding["path"] == "data.py"
    mentions = "`use_distributed_sampler=False` in" in finding["message"]
    assert mentions == other.endswith("train.py")
    assert (finding["fix"] is None) == other.endswith("train.py")


_CHAIN = (
    "import torch\n\n"
    + "".join(f"def f{i}(x):\n    return f{i + 1}(x)\n\n" for i in range(8))
    + "def f8(x):\n    return x\n\n\n"
    + "def g(n):\n    return h(n)[0] if n else (torch.ones(2, device='xla'), 1)\n\n"
    + "def h(n):\n    return g(n - 1) if n else (3, torch.zeros(2).cpu())\n\n"
    + "def run():\n    return f0(torch.ones(3, device='xla')), g(2), h(2)\n"
)


def _answers(order: list[str]) -> dict[str, object]:
    model = build_model([("/p/pkg/__init__.py", ""), ("/p/pkg/chain.py", _CHAIN)])
    keys = {fn.summary.name: gkey for gkey, fn in model.functions.items()}
    out: dict[str, object] = {}
    for name in order:
        out[f"param {name}"] = model.param_value(keys[name], 0)
        out[f"return {name}"] = model.return_value(keys[name])
    return out


def test_model_answers_do_not_depend_on_the_order_of_questions() -> None:
    # Worker processes ask in different orders; an answer cut short by a cycle or by the
    # depth limit once made a later question of the same thing answer differently (f3's
    # parameter was unknown after asking f8's first, a device tensor when asked first).
    names = [f"f{i}" for i in range(9)] + ["g", "h"]
    first = _answers(names)
    assert first["param f3"] is not None and first["param f3"].kind == "device"
    for order in (list(reversed(names)), names[4:] + names[:4], ["h", "f8", "g", "f3"]):
        answers = _answers(order)
        assert {k: answers[k] for k in answers} == {k: first[k] for k in answers}, order


def test_a_function_training_and_evaluation_both_reach_names_the_training_path() -> None:
    # `sample` runs every training step (and in test_step, which comes first in the file): its
    # findings say so, with the training chain, whatever order the hooks are defined in.
    source = textwrap.dedent(
        """
        import lightning as L

        class M(L.LightningModule):
            def test_step(self, batch, batch_idx):
                return self.sample(batch)

            def predict_step(self, batch, batch_idx):
                return self.sample(batch)

            def training_step(self, batch, batch_idx):
                return self.reward(batch)

            def reward(self, batch):
                return self.sample(batch).mean()

            def sample(self, batch):
                return batch.argmax(-1)
        """
    )
    model = build_model([("/p/pkg/__init__.py", ""), ("/p/pkg/mod.py", source)])
    by_name = {
        fn.summary.name: info
        for gkey, fn in model.functions.items()
        if (info := model.hot.get(gkey)) is not None
    }
    assert by_name["sample"].root == "training_step"
    assert by_name["test_step"].root == "test_step" and not by_name["test_step"].chain


def test_abstract_methods_return_what_their_overrides_return(tmp_path: Path) -> None:
    # A method that only raises (after building its message) is abstract: a call of it runs
    # an override, so it returns no `None`; a call through an attribute set from a parameter
    # annotated with the base reaches the overrides.
    source = textwrap.dedent(
        """
        import torch
        from torch import nn

        class Scorer(nn.Module):
            def score(self, x):
                msg = f"{type(self).__name__} must define score"
                raise NotImplementedError(msg)

        class Dot(Scorer):
            def score(self, x):
                return x.sum(-1)

        class Ranker(nn.Module):
            def __init__(self, scorer: Scorer):
                super().__init__()
                self.scorer = scorer

            def forward(self, x):
                return self.scorer.score(x)
        """
    )
    path = tmp_path / "rank.py"
    model = build_model([(str(path), source)])
    score = next(g for g in model.functions if g.endswith(":Scorer.score#0"))
    assert model.functions[score].summary.abstract
    assert model.return_value(score).kind == "unknown"
    dot = next(g for g in model.functions if g.endswith(":Dot.score#0"))
    assert model.hot[dot].root == "forward"


def test_star_args_are_what_the_calls_pass(tmp_path: Path) -> None:
    # `*waves` holds the calls' positional arguments after the named ones (the parameter
    # at that position, resolved from each call), not host data.
    source = textwrap.dedent(
        """
        def loudest(scale, *waves):
            return waves[0] * scale

        def quiet(scale, *waves, floor=0.0):
            return waves[0] * scale
        """
    )
    model = build_model([(str(tmp_path / "m.py"), source)])
    returns = {g.rsplit(":", 1)[1]: f.summary.returns for g, f in model.functions.items()}
    assert '["p", 1]' in json.dumps(returns["loudest#0"])
    # With keyword-only parameters the positions past the named ones are not known.
    assert '["p", 1]' not in json.dumps(returns["quiet#0"])


def test_star_imports_bind_the_imports_of_the_modules_they_read() -> None:
    # `from helpers import *` binds what `helpers` imports (its public names, or those its
    # `__all__` lists), also through its own star imports; the importer's own imports and
    # definitions win.
    files = [
        ("/p/pkg/__init__.py", ""),
        ("/p/pkg/base.py", "import numpy as np\nimport os as _os\n"),
        ("/p/pkg/helpers.py", "import torch\nfrom .base import *\n"),
        ("/p/pkg/listed.py", "import torch\nimport numpy as np\n__all__ = ['np']\n"),
        ("/p/pkg/model.py", "from .helpers import *\nimport numpy\n\ndef torch():\n    pass\n"),
        ("/p/pkg/loss.py", "from .helpers import *\n"),
        ("/p/pkg/metric.py", "from .listed import *\n"),
    ]
    model = build_model(files)
    bindings = {path.rsplit("/", 1)[1]: model.star_bindings(m) for path, m in model.modules.items()}
    assert bindings["helpers.py"] == {"np": "numpy"}
    assert bindings["model.py"] == {"np": "numpy"}  # its own `torch` function wins
    assert bindings["loss.py"] == {"torch": "torch", "np": "numpy"}
    assert bindings["metric.py"] == {"np": "numpy"}
    # A module-level lambda is a function of its module: what a call returns is its body's.
    lambdas = build_model(
        [("/q/m.py", "import numpy as np\n\nto_db = lambda x: 10.0 * np.log10(x)\n")]
    )
    (function,) = lambdas.functions.values()
    assert function.summary.name == "to_db" and function.summary.returns == [["numpy"]]


def test_helpers_reached_through_callback_stores_and_attribute_chains(tmp_path: Path) -> None:
    """A LightningModule's `self.meter.add(...)` where only a callback's hook assigns
    `pl_module.meter = Meter()`, and `self.stats.window.push(...)` through an attribute of an
    attribute: both reach the project's methods, so what they copy every step is reported.
    A module that assigns the attribute itself keeps its own class."""
    root = make_project(
        tmp_path / "p",
        {
            "lab/__init__.py": "",
            "lab/meters.py": textwrap.dedent(
                """\
                class Meter:
                    def add(self, scores):
                        self.rows.append(scores.cpu())


                class Window:
                    def push(self, values):
                        self.rows.append(values.detach().cpu())


                class Stats:
                    def __init__(self):
                        self.window = Window()


                class Quiet:
                    def add(self, scores):
                        self.rows.append(scores.cpu())  # quiet
                """
            ),
            "lab/callbacks.py": textwrap.dedent(
                """\
                import lightning as L

                from lab.meters import Meter, Quiet


                class Fresh(L.Callback):
                    def on_train_epoch_start(self, trainer, pl_module):
                        pl_module.meter = Meter()
                        pl_module.other = Quiet()
                """
            ),
            "lab/model.py": textwrap.dedent(
                """\
                import lightning as L

                from lab.meters import Meter, Stats


                class Model(L.LightningModule):
                    def __init__(self):
                        super().__init__()
                        self.stats = Stats()
                        self.other = Meter()

                    def training_step(self, batch, batch_idx):
                        out = self(batch)
                        self.meter.add(out)
                        self.stats.window.push(out)
                        self.other.add(out)
                        return out.mean()
                """
            ),
        },
        pyproject='select = ["TPU103"]\n',
    )
    result = run_cli(["check", ".", "--no-cache", "--output-format", "json", "--exit-zero"], root)
    report = json.loads(result.stdout)
    found = sorted((d["path"], d["start"]["line"]) for d in report["diagnostics"])
    assert found == [("lab/meters.py", 3), ("lab/meters.py", 8)]


def test_imports_of_a_namespace_package_find_its_modules() -> None:
    # `from model.heads import Head` of `model/heads.py` where `model/` has no `__init__.py`
    # (a namespace package the root script's folder puts on `sys.path`): the model names the
    # module `heads`, the import finds it through the folder; a name no folder holds stays
    # outside the project.
    files = [
        ("/r/train.py", "from model.heads import Head\nfrom other.heads import Gone\n"),
        ("/r/model/heads.py", "import torch\n\n\nclass Head(torch.nn.Module):\n    pass\n"),
        ("/r/model/nested/parts.py", "def part():\n    return 1\n"),
    ]
    model = build_model(files)
    near = model.modules["/r/train.py"]
    found = model.lookup("model.heads.Head", near)
    assert found is not None and found.gkey == "heads.Head"  # type: ignore[union-attr]
    assert model.lookup("other.heads.Gone", near) is None
    nested = model.lookup("model.nested.parts.part", near)
    assert nested is not None and nested.summary.name == "part"  # type: ignore[union-attr]
    # From a module inside the folder too (its parent folder holds `model/`).
    inner = model.modules["/r/model/nested/parts.py"]
    assert model.lookup("model.heads.Head", inner) is found


def test_callback_stores_answer_every_attribute_from_one_pass_over_the_modules() -> None:
    """The classes callbacks' hooks build into `pl_module.<attr>`, read from one index of every
    module's stores: for each attribute, the stored classes in the modules' order, each once,
    as a scan of the modules per attribute finds them; a stored name that is not a project
    class (a function, an unknown name) adds nothing, and an attribute nothing stores none."""
    files = [
        ("/p/lab/__init__.py", ""),
        (
            "/p/lab/meters.py",
            "class Meter:\n    pass\n\n\nclass Timer:\n    pass\n\n\n"
            "def make():\n    return Meter()\n",
        ),
        (
            "/p/lab/first.py",
            textwrap.dedent(
                """\
                import lightning as L

                from lab.meters import Meter, Timer, make


                class A(L.Callback):
                    def on_train_epoch_start(self, trainer, pl_module):
                        pl_module.meter = Timer()
                        pl_module.clock = Timer()
                        pl_module.made = make()
                """
            ),
        ),
        (
            "/p/lab/second.py",
            textwrap.dedent(
                """\
                import lightning as L

                from lab.meters import Meter, Timer


                class B(L.Callback):
                    def on_fit_start(self, trainer, pl_module):
                        pl_module.meter = Meter()
                        pl_module.meter = Timer()
                """
            ),
        ),
    ]
    model = build_model(files)

    def scanned(attr: str) -> list[str]:
        out: list[str] = []
        for module in model.modules.values():
            for name in module.scope.module_stores.get(attr, ()):
                found = model.lookup(name, module)
                gkey = getattr(found, "gkey", None)
                if gkey in model.classes and gkey not in out:
                    out.append(gkey)
        return out

    meter, timer = (next(k for k in model.classes if k.endswith(n)) for n in (".Meter", ".Timer"))
    assert model._callback_stored_classes("meter") == [timer, meter]
    assert model._callback_stored_classes("clock") == [timer]
    assert model._callback_stored_classes("made") == []
    assert model._callback_stored_classes("nothing") == []
    for attr in ("meter", "clock", "made", "nothing"):
        assert model._callback_stored_classes(attr) == scanned(attr)


SHADOWED_TRAIN = """\
import lightning as L
import torch


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 3)

    def training_step(self, batch, batch_idx):
        out = torch.nn.functional.relu(self.layer(batch))
        steps = torch.zeros(3, device=self.device)
        if out.sum() > 0:
            print(out.mean().item())
        loss = out.mean() + steps.sum()
        self.log("loss", loss.item())
        return loss
"""


def _shadow_files(with_shadow: bool) -> dict[str, str]:
    files = {
        "pkg/__init__.py": "",
        "pkg/data/__init__.py": "",
        "pkg/train.py": SHADOWED_TRAIN,
        "run.py": "import lightning as L\nfrom pkg.train import Net\n\n"
        "L.Trainer(accelerator='tpu').fit(Net())\n",
    }
    if with_shadow:
        # Folders without `__init__.py` inside the package, named like libraries.
        files["pkg/data/validators/torch/checks.py"] = "def check(x):\n    return x\n"
        files["pkg/data/validators/torch/nn.py"] = "def Linear(*args):\n    return 1\n"
        files["pkg/data/validators/torch/nn/functional.py"] = "def relu(x):\n    return 0\n"
        files["pkg/data/validators/numpy/checks.py"] = "def check(x):\n    return x\n"
    return files


def test_namespace_folders_inside_a_package_are_its_subpackages_not_top_level(
    tmp_path: Path,
) -> None:
    # `pkg/data/validators/torch/nn.py` (no `__init__.py` in validators/ nor torch/) is
    # `pkg.data.validators.torch.nn`: `torch.nn` in any module of the run is the library.
    root = make_project(tmp_path, _shadow_files(True), pyproject=None)
    files = [(str(p), p.read_text()) for p in sorted(root.rglob("*.py"))]
    model = build_model(files)
    near = model.modules[str(root / "pkg/train.py")]
    assert model.lookup("torch.nn.Linear", near) is None
    assert model.lookup("numpy.checks.check", near) is None
    inner = model.lookup("pkg.data.validators.torch.nn.Linear", near)
    assert inner is not None and inner.summary.name == "Linear"  # type: ignore[union-attr]
    # Inside the folder itself too: `import torch` there is the library.
    checks = model.modules[str(root / "pkg/data/validators/torch/checks.py")]
    assert model.lookup("torch.nn.Linear", checks) is None


def test_a_library_named_folder_inside_a_package_changes_no_finding(tmp_path: Path) -> None:
    found = []
    for with_shadow in (False, True):
        root = make_project(tmp_path / str(with_shadow), _shadow_files(with_shadow))
        result = run_cli(
            ["check", ".", "--no-cache", "--output-format", "json", "--exit-zero"], root
        )
        report = json.loads(result.stdout)
        found.append(
            sorted((d["path"], d["start"]["line"], d["code"]) for d in report["diagnostics"])
        )
    assert found[0], "the fixture should have findings"
    assert found[0] == found[1]


def test_a_library_named_folder_at_the_root_is_still_the_project(tmp_path: Path) -> None:
    # `lightning/` beside the script (no `__init__.py`): the script's folder is on `sys.path`,
    # so `lightning.utils` is the project's module.
    root = make_project(
        tmp_path,
        {
            "train.py": "from lightning.utils import helper\n\nhelper()\n",
            "lightning/utils.py": "def helper():\n    return 1\n",
        },
        pyproject=None,
    )
    files = [(str(p), p.read_text()) for p in sorted(root.rglob("*.py"))]
    model = build_model(files)
    near = model.modules[str(root / "train.py")]
    found = model.lookup("lightning.utils.helper", near)
    assert found is not None and found.summary.name == "helper"  # type: ignore[union-attr]
