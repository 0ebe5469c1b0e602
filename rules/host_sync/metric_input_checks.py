"""TPU110 metric-input-checks."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import libcst as cst

from tpulint.analysis.project import ClassKind, FileView
from tpulint.analysis.values import CPU
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import add_keywords, keyword_arg, string_value
from tpulint.rule_api.rule import Invalid, RelatedNode, Rule, Valid

from ..shared.configuration import is_framework_file
from ..shared.matchers import self_attribute_name, source_of
from .helpers import _HEAD

# torchmetrics' classification metrics of the task API (torchmetrics >= 0.11), whose
# `validate_args=True` default checks every update's inputs on the host
# (functional/classification/stat_scores.py, `_multiclass_stat_scores_tensor_validation`:
# `len(torch.unique(target))`; `_binary_...`: `if torch.any(...)`).
_TASK_METRICS = (
    r"Accuracy|Precision|Recall|F1Score|FBetaScore|AUROC|AveragePrecision|ConfusionMatrix"
    r"|JaccardIndex|MatthewsCorrCoef|CohenKappa|Specificity|StatScores|HammingDistance"
    r"|ExactMatch|CalibrationError|ROC|PrecisionRecallCurve"
)
_CLASSIFICATION = re.compile(rf"(?:(Binary|Multiclass|Multilabel))?(?:{_TASK_METRICS})")
_FUNCTIONAL = re.compile(
    r"(?:(binary|multiclass|multilabel)_)?(?:accuracy|precision|recall|f1_score|fbeta_score"
    r"|auroc|average_precision|confusion_matrix|jaccard_index|matthews_corrcoef|cohen_kappa"
    r"|specificity|stat_scores|hamming_distance|exact_match|calibration_error|roc"
    r"|precision_recall_curve)"
)
# Aggregators test every update for NaNs on the host unless `nan_strategy="disable"`
# (aggregation.py, BaseAggregator._cast_and_nan_check_input: `if nans.any() or ...`).
_AGGREGATORS = frozenset({"MeanMetric", "SumMetric", "MaxMetric", "MinMetric", "CatMetric"})
# Hooks of `trainer.test` and `trainer.predict`, which a fit never runs (a project that tests
# after fitting in the same run runs its test hooks on the TPU that trained).
_TEST = ("test_step", "on_test_")
_NOT_FIT = (*_TEST, "predict_step", "on_predict_")
# What updates a metric held in an attribute.
_UPDATES = frozenset({"update", "forward"})


@dataclass
class _Checked:
    """A metric built with its host-side input checks on."""

    call: cst.Call
    keyword: str  # the argument that turns them off
    value: str
    # A project metric class's construction: the torchmetrics metric its `__init__` builds
    # with the checks on, and where (no fix at this call)
    built: str | None = None


@dataclass
class _ClassMetrics:
    built: dict[str, list[_Checked]] = field(default_factory=dict)  # attribute -> metrics
    updated: dict[str, tuple[cst.Call, str]] = field(default_factory=dict)  # -> first hot update


class MetricInputChecks(Rule):
    """
    ## What it does
    Finds torchmetrics metrics that check their inputs on the host and are updated in code
    that runs every step: classification metrics of the task API (`Accuracy(task=...)`,
    `MulticlassF1Score(...)`, `BinaryAUROC()`, and the functional `accuracy(...,
    task=...)` called in a step) without `validate_args=False`, and aggregators
    (`MeanMetric()`, `SumMetric()`, `MaxMetric()`, `MinMetric()`, `CatMetric()`) without
    `nan_strategy="disable"`, held in an attribute (alone, in a `MetricCollection` or a
    dict, assigned by a tuple assignment `self.train_auc, self.val_auc = BinaryAUROC(),
    BinaryAUROC()` or as an entry `self.metrics["auc"] = BinaryAUROC()`), or built by the
    `__init__` of a project `MetricCollection` subclass (or a `Metric` subclass with no
    `update` of its own) held in an attribute (the construction of that class is reported,
    naming the metric), that a training
    or validation step, `forward` or a batch hook updates (not
    `test_step`, which a fit never runs), outside a guard that makes the update rare (a
    periodic or logging test: `if self.track and self.global_step % n == 0:`).

    An update whose inputs are all CPU tensors (a rank distance computed with
    `torch.tensor(list)` on the host) is not reported: torchmetrics checks a tensor input
    where it is. Python numbers are converted onto the metric's device first, so they are.

    ## Why is this bad on TPU?
    With `validate_args=True` (the default) every update checks the targets' values:
    `len(torch.unique(target))` for multiclass metrics, `if torch.any(...)` for binary ones
    (torchmetrics `functional/classification/stat_scores.py`). An aggregator's update tests
    the value for NaNs with `if nans.any():` (`aggregation.py`,
    `_cast_and_nan_check_input`). Each is a device-to-host read in the middle of the step:
    the core waits for the step so far to finish, every step; `unique` also has a
    data-dependent size. A `MeanMetric` of the training loss, the
    lightning-hydra-template default, costs one sync per step.

    ## Example
    ```python
    import lightning as L
    import torch
    from torchmetrics import Accuracy, MeanMetric


    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.train_acc = Accuracy(task="multiclass", num_classes=10)
            self.train_loss = MeanMetric()

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            self.train_acc(logits, y)
            self.train_loss(loss)
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch
    from torchmetrics import Accuracy, MeanMetric


    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.train_acc = Accuracy(task="multiclass", num_classes=10, validate_args=False)
            self.train_loss = MeanMetric(nan_strategy="disable")

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            self.train_acc(logits, y)
            self.train_loss(loss)
            return loss
    ```

    ## Fix safety
    The fix adds `validate_args=False` or `nan_strategy="disable"` to the metric's
    constructor and is unsafe: invalid targets are no longer reported (they count wrongly
    instead of raising), and a NaN reaches the aggregate instead of being dropped with a
    warning. Check the inputs once (a first batch, a unit test) before turning the checks
    off. `nan_strategy="disable"` needs torchmetrics 1.x.

    ## References
    - [torchmetrics: `validate_args`](https://lightning.ai/docs/torchmetrics/stable/classification/accuracy.html)
    - [torchmetrics: aggregation, `nan_strategy`](https://lightning.ai/docs/torchmetrics/stable/aggregation/mean.html)
    - [PyTorch/XLA: avoid device-to-host transfers in the step](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)

    ## Status
    Stable: the reads are in torchmetrics' own update code (the sources above, torchmetrics
    1.9), so a metric built this way and updated in a step reads on the host by
    construction. From two misses of the tpu5 batch (a `MeanMetric` of the loss and an
    `Accuracy` updated in `training_step`, the lightning-hydra-template layout).
    """

    code = "TPU110"
    name = "metric-input-checks"
    summary = (
        "torchmetrics metric updated every step with its host-side input checks on "
        "(`validate_args`, `nan_strategy`)"
    )
    fix_applicability = Applicability.UNSAFE
    fix_message = "Turn the metric's host-side input checks off"
    requires = ("torchmetrics",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return view.has_hot_code

    VALID = (
        # Checks off; a metric computed only at the end of the epoch.
        Valid(
            "import lightning as L\nimport torch\n"
            "from torchmetrics import Accuracy, MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            '        self.acc = Accuracy(task="multiclass", num_classes=4, validate_args=False)\n'
            '        self.loss_mean = MeanMetric(nan_strategy="disable")\n'
            "        self.epoch_acc = Accuracy(task='binary')\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        out = self(x)\n"
            "        self.acc(out, y)\n        self.loss_mean(out.mean())\n"
            "        return out.mean()\n\n"
            "    def on_train_epoch_end(self):\n"
            "        self.log('acc', self.epoch_acc.compute())\n"
        ),
        # Not torchmetrics; a metric whose checks are set from a variable.
        Valid(
            "import lightning as L\nimport torch\nimport torchmetrics\n"
            "from sklearn.metrics import accuracy_score\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, check):\n        super().__init__()\n"
            "        self.acc = torchmetrics.Accuracy(task='binary', validate_args=check)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        out = self(x)\n"
            "        self.acc(out, y)\n"
            "        return out.mean()\n"
        ),
        # Updated only under a flag and a periodic test: its checks run every
        # `stats_interval` steps.
        Valid(
            "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, track_norms=False, stats_interval=50):\n"
            "        super().__init__()\n"
            "        self.track_norms = track_norms\n"
            "        self.stats_interval = stats_interval\n"
            "        self.weight_norm = MeanMetric()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        if self.track_norms and self.global_step % self.stats_interval == 0:\n"
            "            self.weight_norm(self.layer.weight.norm())\n"
            "        return loss\n"
        ),
        # A project `MetricCollection` whose metrics have their checks off.
        Valid(
            "import lightning as L\nimport torch\nimport torchmetrics\n"
            "from torchmetrics.classification import BinaryAUROC, BinaryRecall\n\n\n"
            "class Scores(torchmetrics.MetricCollection):\n"
            "    def __init__(self, prefix=None):\n"
            "        super().__init__(\n"
            "            [BinaryRecall(validate_args=False), BinaryAUROC(validate_args=False)],\n"
            "            prefix=prefix,\n        )\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.dev_scores = Scores(prefix='dev/')\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        self.log_dict(self.dev_scores(self(x), y))\n"
        ),
        # A tuple assignment whose metric of the step has its checks off; the other one is
        # computed only when the epoch ends.
        Valid(
            "import lightning as L\nimport torch\n"
            "from torchmetrics.classification import BinaryAUROC\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.fit_auc, self.epoch_auc = (\n"
            "            BinaryAUROC(validate_args=False),\n"
            "            BinaryAUROC(),\n        )\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        p = self(x)\n"
            "        self.fit_auc(p, y)\n"
            "        return p.mean()\n"
        ),
        Valid(
            "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.val_rank = MeanMetric()\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        ranks = self(batch).argsort().cpu()\n"
            "        wanted = torch.tensor(range(len(ranks)))\n"
            "        self.val_rank.update((wanted - ranks).abs().float().mean())\n"
        ),
    )
    INVALID = (
        # A project `MetricCollection` whose `__init__` builds metrics with their checks on,
        # called in the validation step: reported where it is built, naming the metric.
        Invalid(
            "import lightning as L\nimport torch\nimport torchmetrics\n"
            "from torchmetrics.classification import BinaryAUROC, BinaryRecall\n\n\n"
            "class Scores(torchmetrics.MetricCollection):\n"
            "    def __init__(self, prefix=None):\n"
            "        super().__init__([BinaryRecall(), BinaryAUROC()], prefix=prefix)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.dev_scores = Scores(prefix='dev/')\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        self.log_dict(self.dev_scores(self(x), y))\n",
            line=15,
            message="builds `BinaryRecall()` (",
        ),
        # Built by a tuple assignment, one metric per attribute, and as an entry of a dict
        # attribute: each is the metric its attribute holds.
        Invalid(
            "import lightning as L\nimport torch\n"
            "from torchmetrics.classification import BinaryAUROC, BinaryRecall\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.fit_auc, self.dev_auc = BinaryAUROC(), BinaryAUROC()\n"
            "        self.scores = {}\n"
            "        self.scores['recall'] = BinaryRecall()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        p = self(x)\n"
            "        self.fit_auc(p, y)\n        self.scores['recall'].update(p, y)\n"
            "        return p.mean()\n",
            count=2,
            line=9,
            message="(updated in training_step) checks the targets",
        ),
        Invalid(
            "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.train_loss = MeanMetric()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n        self.train_loss(loss)\n"
            "        return loss\n",
            line=9,
            message="tests every update for NaNs on the host",
            expected_fix=(
                "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n\n\n"
                "class Model(L.LightningModule):\n"
                "    def __init__(self):\n        super().__init__()\n"
                '        self.train_loss = MeanMetric(nan_strategy="disable")\n\n'
                "    def training_step(self, batch, batch_idx):\n"
                "        loss = self(batch).mean()\n        self.train_loss(loss)\n"
                "        return loss\n"
            ),
        ),
        Invalid(
            "import lightning as L\nimport torch\n"
            "from torchmetrics import MetricCollection\n"
            "from torchmetrics.classification import MulticlassF1Score\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        metrics = MetricCollection({'f1': MulticlassF1Score(num_classes=5)})\n"
            "        self.val_metrics = metrics.clone(prefix='val/')\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        self.val_metrics.update(self(x), y)\n",
            line=10,
            message="checks the targets of every update on the host",
        ),
        Invalid(
            "import torchmetrics\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        out = self(x)\n"
            "        acc = torchmetrics.functional.accuracy(out, y, task='binary')\n"
            "        self.log('acc', acc)\n        return out.mean()\n",
            line=10,
            message="checks the targets of every update on the host",
        ),
        Invalid(
            "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.val_rank = MeanMetric()\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        ranks = self(batch).argsort()\n"
            "        wanted = torch.arange(len(ranks), device=ranks.device)\n"
            "        self.val_rank.update((wanted - ranks).abs().float().mean())\n",
            line=9,
            message="tests every update for NaNs on the host",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        # Lightning's own callbacks (SpikeDetection) choose their metrics' checks
        self._enabled = not is_framework_file(self.ctx)
        self._classes: dict[str, _ClassMetrics] = {}
        self._locals: dict[str, list[_Checked]] = {}  # the current function's metric names
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._locals = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, name: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Record the metrics `value` builds under the target they are assigned to: a local,
        an attribute (`self.acc = ...`), an entry of one (`self.metrics["acc"] = ...`), or
        each target of a tuple assignment (`self.train_acc, self.val_acc = M(), M()`)."""
        info = self.ctx.function
        if not self._enabled or info is None or info.cls is None:
            return
        if isinstance(name, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
            targets = [e.value for e in name.elements]
            values = [e.value for e in value.elements]
            starred = any(
                isinstance(e, cst.StarredElement) for e in (*name.elements, *value.elements)
            )
            if len(targets) == len(values) and not starred:
                for target, item in zip(targets, values, strict=True):
                    self._bind(target, item)
            return
        checked = self._metrics_in(value)
        if not checked:
            return
        if isinstance(name, cst.Name):
            self._locals[name.value] = checked
        attr = self_attribute_name(name.value if isinstance(name, cst.Subscript) else name)
        if attr is not None:
            entry = self._classes.setdefault(info.cls.qualname, _ClassMetrics())
            entry.built.setdefault(attr, []).extend(checked)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not self._enabled or not ctx.in_hot_code:
            return
        info = ctx.function
        root = (info.root_hook or "") if info is not None else ""
        if root.startswith(_NOT_FIT) and not (root.startswith(_TEST) and ctx.tests_after_fit()):
            return  # `trainer.test`/`predict` only: not a cost of training
        functional = self._functional(node)
        if functional is not None:
            self._report(functional, f"in {ctx.hot_reason}", None)
            return
        if info is None or info.cls is None:
            return
        attr = _updated_attribute(node)
        values = [a.value for a in node.args if a.keyword is None and not a.star]
        if values and all(ctx.value_kind(v) is CPU for v in values):
            # CPU tensors in: torchmetrics checks them where they are (`torch.isnan(x)` of a
            # CPU tensor, `aggregation.py` `_cast_and_nan_check_input`), no device read
            return
        if attr is not None and "rare" not in ctx.guards(node):
            # (an update under a periodic or logging guard checks its input only then)
            entry = self._classes.setdefault(info.cls.qualname, _ClassMetrics())
            entry.updated.setdefault(attr, (node, ctx.hot_reason or "a step"))

    def leave_Module(self, original_node: cst.Module) -> None:
        for entry in self._classes.values():
            for attr, checks in entry.built.items():
                update = entry.updated.get(attr)
                if update is None:
                    continue
                call, reason = update
                for checked in checks:
                    self._report(checked, f"(updated in {reason})", call)

    # --- what a call builds or updates ---------------------------------------------------

    def _metrics_in(self, value: cst.BaseExpression) -> list[_Checked]:
        """The metrics with their checks on that an assigned value builds, directly or in a
        collection (`MetricCollection({...})`, a dict, a list), or names through a local
        (`metrics.clone(prefix=...)`)."""
        found: list[_Checked] = []
        stack: list[cst.CSTNode] = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                checked = self._checked(node)
                if checked is not None:
                    found.append(checked)
                    continue
            if isinstance(node, cst.Name) and node.value in self._locals:
                found.extend(self._locals[node.value])
            stack.extend(node.children)
        return found

    def _checked(self, node: cst.Call) -> _Checked | None:
        qualified = self.ctx.qualify(node.func) or ""
        if not qualified.startswith("torchmetrics."):
            return self._project_metric(node, qualified)
        if ".functional." in qualified:
            return None
        last = qualified.rsplit(".", 1)[-1]
        if last in _AGGREGATORS:
            return _off(node, "nan_strategy", '"disable"', ("disable",))
        match = _CLASSIFICATION.fullmatch(last)
        if match is None or (match.group(1) is None and keyword_arg(node, "task") is None):
            return None  # the pre-0.11 API (no `task=`): no `validate_args` to turn off
        return _off(node, "validate_args", "False", ())

    def _project_metric(self, node: cst.Call, qualified: str) -> _Checked | None:
        """A metric class of the project (a torchmetrics `Metric` or `MetricCollection`
        subclass) whose `__init__` builds torchmetrics metrics with their checks on
        (`super().__init__([BinaryAUROC(), BinaryRecall()])`): reported where it is built,
        naming the first such metric; no fix here (the arguments are in its class)."""
        view = self.ctx.analysis.view
        if not qualified and isinstance(node.func, cst.Name):
            qualified = "." + node.func.value  # a class of this module
        if view is None or not qualified:
            return None
        model = view.model
        found = model.lookup(qualified, view.module)
        gkey = getattr(found, "gkey", None)
        if gkey is None or gkey not in model.classes:
            return None
        if not model.class_kind(gkey) & ClassKind.METRIC and not any(
            base.startswith("torchmetrics.") for base in model.external_bases(gkey)
        ):
            return None  # (a `MetricCollection` subclass is no METRIC kind)
        init = model.find_method(gkey, "__init__")
        if init is None or init.owner != gkey:
            return None
        if model.find_method(gkey, "update") is not None:
            # its own `update` updates what it holds: reported in its class, where they are
            # built (`self.inner = MetricCollection({...})`, updated in `update`)
            return None
        builds = init.module.scope.metric_builds.get(init.summary.key, ())
        for target, line, said, _ in sorted(builds, key=lambda build: (build[1], build[3])):
            last = target.rsplit(".", 1)[-1]
            if last in _AGGREGATORS:
                keyword, off, offs = "nan_strategy", '"disable"', ("disable",)
            else:
                match = _CLASSIFICATION.fullmatch(last)
                if match is None or (match.group(1) is None and "task" not in said):
                    continue
                keyword, off, offs = "validate_args", "False", ()
            if keyword in said:
                literal = said[keyword]
                if literal == "?" or literal is False or literal in offs:
                    continue  # off, or set from a variable: not ours to judge
            where = f"{os.path.basename(init.module.path)}:{line}"
            return _Checked(node, keyword, off, built=f"`{last}()` ({where})")
        return None

    def _functional(self, node: cst.Call) -> _Checked | None:
        qualified = self.ctx.qualify(node.func) or ""
        if not qualified.startswith("torchmetrics.functional"):
            return None
        match = _FUNCTIONAL.fullmatch(qualified.rsplit(".", 1)[-1])
        if match is None or (match.group(1) is None and keyword_arg(node, "task") is None):
            return None
        return _off(node, "validate_args", "False", ())

    def _report(self, checked: _Checked, where: str, update: cst.Call | None) -> None:
        ctx = self.ctx
        text = source_of(ctx, checked.call)
        if checked.keyword == "nan_strategy":
            what = "tests every update for NaNs on the host (`if nans.any():`)"
        else:
            what = "checks the targets of every update on the host (`torch.unique`, `torch.any`)"
        if checked.built is not None:
            self.report(
                checked.call,
                f"`{text}` {where} builds {checked.built}, which {what}: a sync every step; "
                f"pass it `{checked.keyword}={checked.value}` once the inputs are known to be "
                "valid",
                related=[RelatedNode(update, "updated here")] if update is not None else [],
            )
            return
        self.report(
            checked.call,
            f"`{text}` {where} {what}: a sync every step; pass "
            f"`{checked.keyword}={checked.value}` once the inputs are known to be valid",
            replacement=add_keywords(checked.call, [(checked.keyword, checked.value)]),
            related=[RelatedNode(update, "updated here")] if update is not None else [],
        )


def _off(node: cst.Call, keyword: str, off: str, off_strings: tuple[str, ...]) -> _Checked | None:
    """The metric, unless its `keyword` turns the checks off or is not a literal."""
    arg = keyword_arg(node, keyword)
    if arg is None:
        return _Checked(node, keyword, off)
    value = arg.value
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return None if value.value == off else _Checked(node, keyword, off)
    text = string_value(value)
    if text is not None:
        return None if text in off_strings else _Checked(node, keyword, off)
    return None  # set from a variable: not ours to judge


def _updated_attribute(node: cst.Call) -> str | None:
    """`self.m(...)`, `self.m.update(...)`, `self.m["k"](...)`, `self.m["k"].update(...)`:
    the attribute `m` a call updates."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _UPDATES:
        func = func.value
    if isinstance(func, cst.Subscript):
        func = func.value
    return self_attribute_name(func)
