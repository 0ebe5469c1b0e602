"""TPU104 tensor-value-control-flow."""

from __future__ import annotations

import ast

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.guards import effective
from tpulint.analysis.hot_code import HotCode
from tpulint.analysis.values import ValueKind
from tpulint.analysis.walker import iter_children
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import ImportSpec, Invalid, Rule, Valid

from ..rewrite.sync import if_fix
from ..shared.matchers import source_of
from ..shared.tensors import (
    TrackingRule,
    computed_tensor,
    is_number_literal,
    method_name,
    torch_name,
)
from .helpers import _HEAD, _LOSS, iterated_tensor, quiet

_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
_TENSOR_PREDICATES = frozenset(
    {
        "any",
        "all",
        "equal",
        "allclose",
        "isnan",
        "isinf",
        "isfinite",
        "is_nonzero",
        "isclose",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "count_nonzero",
        "sum",
        "max",
        "min",
        "numel",
    }
)


class TensorValueControlFlow(TrackingRule, Rule):
    """
    ## What it does
    Finds Python control flow decided by the value of a device tensor in code that runs
    every step: `if loss > 0:`, `while (x != 0).any():`, `assert torch.isfinite(loss)`,
    `a if score > t else b`, and `not` applied to a tensor value outside a test
    (`sparse = not mask.all()`). Python's builtin `any()` / `all()` over a generator or list
    of device tests is one too, once per element (`if any(p.grad.isnan().any() for p in
    self.parameters()):`, `assert all([torch.isfinite(t).all() for t in parts])`): the
    builtin calls `bool()` on each element, which is `Tensor.__bool__`, a host read
    (`torch.any(torch.stack([...]))` keeps it one device value); so is Python's `sum` or
    `max` of a device tensor tested (`if sum(mask) == 0:`). A membership test in a
    device tensor (`if 1 in preds:`, `hit = label in row`) is one too, wherever it stands:
    `Tensor.__contains__` computes `(element == self).any().item()` and Python takes its
    bool. It is reported when the
    tensor is computed in the code (`preds = self(x).argmax(-1)`), is a row of one
    (`for row in preds:`), a buffer of the module, or a helper's parameter tested for a
    device tensor, and what is looked for is a number or a device tensor; lists, dicts,
    sets, strings, the step's own batch (`"labels" in batch`) and CPU tensors are not; nor
    are the strings a dataset's items hold (`assert batch["id"] == other["id"]` compares lists
    of file names the collate built, not tensors).
    A count or test of a torch check (`if torch.isnan(loss).sum() > 0:`,
    `assert not torch.isinf(x).any()`) is a tensor test even where the file cannot tell how
    the checked value was made (a loss module a factory picks by name, an entry of what a
    solver returns): `torch.isnan` takes only tensors; so is torch's own reduction function
    of a comparison (`assert torch.sum(std < 0) == 0`), `torch.sum` taking only tensors (not
    the method form, `(std < 0).sum()`, which NumPy arrays have too).
    Parameters of an optimizer's parameter groups
    (`for p in group["params"]` in `step`) and values computed from them are device
    tensors. So is what a method the step calls stores from the batch it is handed
    (`self.labeled = batch["labeled"]` in a `set_input(self, batch)`, also an override
    that a base class's step calls), and what is computed from it (`bs =
    torch.sum(self.labeled)`, then `if bs > 0:`). Conditions on shapes (`x.shape[0] > 1`,
    also a comparison of dict entries the file stores only shapes in:
    `data.update({"hw0": a.shape[2:], "hw1": b.shape[2:]})` then
    `if data["hw0"] == data["hw1"]:`, `torch.Size` being a tuple of ints), flags
    (`self.training`), `None` checks, hook arguments (`batch_idx == 0`), Python numbers
    and CPU tensors are not tensor values and are not reported.

    ## Why is this bad on TPU?
    Python needs a real `bool` to take a branch, so the pending XLA graph is cut and run
    and the value copied to the host: a sync in every step. Each outcome then records a
    different graph after the branch, so data-dependent branches also multiply the graphs
    XLA must compile. `torch.where` keeps both outcomes in one static graph.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch), batch)
            if loss > 10:
                loss = loss / 10
            return loss
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch), batch)
            loss = torch.where(loss > 10, loss / 10, loss)
            return loss
    ```

    ## Fix safety
    An `if` on a tensor condition whose branches only assign values (a pure update) has an
    **unsafe** fix that chooses with `torch.where` instead of branching:

    - `if c: x = a` becomes `x = torch.where(c, a, x)` (`x += a` becomes
      `x = torch.where(c, x + a, x)`), one statement per assignment;
    - `if c: x = a` / `else: x = b` becomes `x = torch.where(c, a, b)`;
    - `not c`, `c and d`, `c or d` become `torch.logical_not(c)`, `torch.logical_and(c, d)`,
      `torch.logical_or(c, d)`.

    It is offered only when the condition and every assigned value are pure (tensor
    operations, no module calls, no random draws, no in-place methods), every part of the
    condition is a device tensor, each assigned name already has a value before the `if`,
    and each assigned value provably has the shape of the value it replaces (`torch.where`
    gives one shape whichever way the condition goes): the same tensor transformed
    elementwise (`x / 10`, `x.clamp(max=m)`, `torch.zeros_like(x)`), integer indexing of one
    tensor (`t[0]` / `t[1]`), or single values on both sides; `x = x[:, :n]` or
    `x = x.sum()` under a tensor condition get no fix. It is exact when the assigned values
    are tensors or numbers (a Python number becomes a 0-dim tensor) and are finite when the
    condition is false: both sides are now computed every step, so a division by
    zero there, harmless in the forward value, would put `nan` into the gradients.
    `x += a` on a tensor updated `x` in place; the rewrite binds a new tensor (other
    references to the old one no longer see the update). `tpulint fix --prove
    module:Class --apply --unsafe-fixes` trains the module both ways before writing it.

    For a conditional expression `a if cond else b` the suggestion is
    `torch.where(cond, a, b)` (display-only: both sides are evaluated and broadcast to one
    shape and dtype). Other statements (`while`, `assert`, an `if` that returns, logs or
    calls a module) are reported without a fix.

    ## References
    - [torch_xla: recompilation causes, "control flow depending on tensor values"](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU104"
    hot_only = True
    name = "tensor-value-control-flow"
    summary = "`if` / `while` / `assert` / ternary decided by a device tensor's value in hot code"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Use `torch.where(cond, a, b)`"
    # (" in ": a membership test's bool is taken wherever it stands, `hit = 1 in preds`.)
    requires = ("if ", "while ", "assert ", " in ")
    # The statements and expressions the handlers below test, when the test has a shape
    # `_tensor_test` can report (`_could_be_tensor_test`).
    hot_shapes = {
        ast.If: lambda node, code: _could_be_tensor_test(node.test, code),
        ast.While: lambda node, code: _could_be_tensor_test(node.test, code),
        ast.Assert: lambda node, code: _could_be_tensor_test(node.test, code),
        ast.IfExp: lambda node, code: _could_be_tensor_test(node.test, code),
        ast.comprehension: lambda node, code: any(
            _could_be_tensor_test(test, code) for test in node.ifs
        ),
        ast.UnaryOp: lambda node, code: (
            isinstance(node.op, ast.Not) and _could_be_tensor_test(node.operand, code)
        ),
        ast.Compare: lambda node, code: _could_be_membership(node),
    }

    VALID = (
        # `assert isinstance(size, int)` (or `if not isinstance(size, int): raise`): past it,
        # `size` is a Python number whatever the callers pass.
        Valid(
            _HEAD + "    def forward(self, x, rows, cols):\n"
            "        assert isinstance(rows, int)\n"
            "        assert rows % self.patch == 0\n"
            "        if not isinstance(cols, (int, float)):\n"
            "            raise TypeError('cols')\n"
            "        if cols % self.patch:\n"
            "            x = x[..., :-1]\n"
            "        return self.net(x)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, rows, cols = batch\n"
            "        return self(x, rows, cols).mean()\n"
        ),
        # Python's any() over host values (names, step counters) reads no tensor.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        if any(name.startswith('aux') for name in self.heads):\n"
            "            loss = loss * 2\n"
            "        if all(step > 0 for step in [batch_idx, self.current_epoch]):\n"
            "            loss = loss + 1\n"
            "        return loss\n"
        ),
        # The method form of a count of a comparison on a value the file cannot trace: NumPy
        # arrays have `.sum()` too, so nothing says it is a tensor.
        Valid(
            "import lightning as L\nimport torch\n\nfrom .solvers import make_solver\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.solver = make_solver()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        info = self.solver.integrate(batch)\n"
            "        assert (info['spread'] < 0).sum() == 0\n"
            "        return self(batch).sum()\n"
        ),
        # The check counted on a host copy: no device read.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.loss_fn(batch)\n"
            "        if torch.isnan(loss.detach().cpu()).sum() > 0:\n"
            "            print('nan')\n"
            "        return loss\n"
        ),
        # A list of tensors compared with a list or tuple display (`parts != []`): Python's
        # comparison (a tensor never equals a display), a plain bool with no device read.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Joiner(nn.Module):\n"
            "    def forward(self, parts):\n"
            "        if parts != []:\n"
            "            return torch.cat(parts, dim=1)\n"
            "        if parts == ():\n"
            "            return None\n"
            "        return parts[0]\n\n\n" + _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.join = Joiner()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.join([batch, batch * 2]).mean()\n"
        ),
        # A sub-module's forward handed the outer forward's optional step down the stack:
        # None in training (the step leaves it out), a loop counter only when sampling.
        Valid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Shift(nn.Module):\n"
            "    def forward(self, x, pos):\n"
            "        if pos is not None and pos > 0:\n"
            "            return x\n"
            "        return torch.roll(x, 1, dims=1)\n\n\n"
            "class Body(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.shift = Shift()\n\n"
            "    def forward(self, x, pos):\n"
            "        return self.shift(x, pos)\n\n\n"
            "class Sampler(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.body = Body()\n\n"
            "    def generate(self, x):\n"
            "        for k in range(3):\n"
            "            x = self(x, pos=k)\n"
            "        return x\n\n"
            "    def forward(self, x, pos=None):\n"
            "        if pos is None:\n"
            "            x = x * 2\n"
            "        return self.body(x, pos)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum()\n"
        ),
        # A set-up method the step hands a Python number: the attribute holds a number.
        Valid(
            _HEAD + "    def set_weight(self, weight):\n"
            "        self.weight = weight\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.set_weight(0.5 if self.current_epoch < 3 else 1.0)\n"
            "        loss = self(batch).mean()\n"
            "        if self.weight > 0.7:\n"
            "            loss = loss * 2\n"
            "        return loss\n"
        ),
        # Shapes stored in a dict and compared: `torch.Size` is a tuple of Python ints.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Matcher(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = nn.Conv2d(1, 4, 3)\n\n"
            "    def forward(self, data):\n"
            '        data.update({"n": data["left"].size(0), "hw_l": data["left"].shape[2:]})\n'
            '        data["hw_r"] = data["right"].shape[2:]\n'
            '        if data["hw_l"] == data["hw_r"]:\n'
            '            return self.net(torch.cat([data["left"], data["right"]]))\n'
            '        return self.net(data["left"])\n'
        ),
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, mask = batch\n"
            "        if x.shape[0] > 1 and self.training and mask is not None:\n"
            "            x = x * mask\n"
            "        if batch_idx == 0 or self.current_epoch > 3 or len(x) > 2:\n"
            "            pass\n"
            "        assert x.dim() == 2, x.shape\n"
            "        return self(x)\n"
        ),
        # A CPU random number decides augmentation: no device sync.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1) < 0.5:\n            batch = batch.flip(0)\n"
            "        return self(batch)\n"
        ),
        # .item() is TPU101's finding, not a second one here.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss.item() > 10:\n            print('high')\n        return loss\n"
        ),
        # Only on the first batch.
        Valid(
            _HEAD
            + "    def validation_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if batch_idx == 0 and loss > 1:\n            self.plot(batch)\n"
        ),
        # A batch field compared with a list of strings (a "missing" marker the dataset puts
        # where there is no label): Python's comparison, a bool; no tensor takes part.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        has_label = batch['label'] != ['missing']\n"
            "        if has_label:\n            self.log('seen', 1.0)\n"
            "        return self(batch['image'])\n"
        ),
        # A helper's option filled by spreading a property's dict of hyper-parameters: a
        # Python number, so a Python random draw compared with it is a Python bool.
        Valid(
            "import random\n\nimport lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(4, 4)\n\n"
            "    def forward(self, x, target, keep_prob):\n"
            "        out = self.proj(x)\n"
            "        return target if random.random() < keep_prob else out\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, keep_prob: float = 0.5):\n"
            "        super().__init__()\n"
            "        self.decoder = Decoder()\n"
            "        self.keep_prob = keep_prob\n\n"
            "    @property\n"
            "    def step_options(self):\n"
            "        return {'keep': self.keep_prob}\n\n"
            "    def run(self, x, y, keep=None):\n"
            "        return self.decoder(x, y, keep_prob=keep)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        return self.run(x, y, **self.step_options).sum()\n"
        ),
        # A sub-module's forward handed Lightning's rank by name: a Python int, not a tensor.
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Report(nn.Module):\n"
            "    def forward(self, values, tag, local_rank, global_rank):\n"
            "        if local_rank == 0 and global_rank < 1:\n"
            "            print(tag)\n"
            "        return values * 2\n"
        ),
        # A string compared with a label: Python's comparison, whatever the label is.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        images, words = batch\n"
            "        hits = 0\n"
            "        for guess, word in zip(self.codec.decode(self(images)), words):\n"
            "            if guess.strip().lower() == word or str(guess) == word:\n"
            "                hits += 1\n"
            "        return hits\n"
        ),
        # The settings of a parameter group are Python numbers, its parameters' `grad`
        # may be None: neither is a tensor value.
        Valid(
            "import torch\n\n\nclass Sgd(torch.optim.Optimizer):\n"
            "    def step(self, closure=None):\n"
            "        for group in self.param_groups:\n"
            "            for p in group['params']:\n"
            "                if p.grad is None or group['weight_decay'] == 0:\n"
            "                    continue\n"
            "                if not group['nesterov']:\n"
            "                    p.add_(p.grad, alpha=-group['lr'])\n"
        ),
        # Elements of the step's data (a list of numbers as often as a tensor), and rows of
        # a tensor used as tensors, are not tested on the host.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        for flag in batch['flags']:\n"
            "            if flag:\n"
            "                pass\n"
            "        total = 0\n"
            "        for row in self(batch):\n"
            "            total = total + row.sum()\n"
            "        return total\n"
        ),
        # Membership in the step's batch, in host containers and in a CPU tensor: Python's
        # own test, no device read.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        weight = 2.0 if 'weights' in batch else 1.0\n"
            "        seen = {0, 1}\n"
            "        bonus = 1.0 if batch_idx in seen else 0.0\n"
            "        names = ['a', 'b']\n"
            "        ids = self(batch['x']).argmax(-1)\n"
            "        if 'a' in names and batch_idx not in [3, 4]:\n"
            "            bonus += 1.0\n"
            "        allowed = torch.arange(4)\n"
            "        if 2 in allowed:\n"
            "            bonus += 1.0\n"
            "        return ids.float().mean() * weight + bonus\n"
        ),
        # A dict of outputs asked for a key: not a tensor's `__contains__`.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        for key in ('aux', 'main'):\n"
            "            if key in out:\n"
            "                out[key] = out[key] * 2\n"
            "        return out['main'].sum()\n"
        ),
        # Moved with a CUDA/MPS device chain: the CPU on a TPU host, a host tensor's test.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "def pick_device():\n"
            "    if torch.cuda.is_available():\n"
            "        return torch.device('cuda')\n"
            "    return torch.device('cpu')\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        counts = self(batch).detach().argmax(-1).to(pick_device())\n"
            "        if counts.sum() > 3:\n"
            "            print('many')\n"
            "        return self(batch).sum()\n"
        ),
        # Epoch-level hooks are not hot.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        if self.best > self.metric.compute():\n            self.best = 0\n"
        ),
        # A dict built by `dict(...)` holding a Python count: its entry is a number.
        Valid(
            _HEAD + "    def shared(self, batch):\n"
            "        return dict(loss=self(batch).mean(), count=len(batch))\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.shared(batch)\n"
            "        if out['count'] > 1:\n"
            "            print('several')\n"
            "        return out['loss']\n"
        ),
        # einops over a numpy array computes with numpy: a host test.
        Valid(
            "import numpy as np\nfrom einops import reduce\nfrom torch import nn\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        grid = np.ones((4, 3))\n"
            "        if reduce(grid > 0, 'a b -> a', 'max').all():\n"
            "            x = x * 2\n"
            "        return x\n"
        ),
    )
    INVALID = (
        # `isinstance(size, torch.Tensor)` guards nothing after it: a batch value stays one.
        Invalid(
            _HEAD + "    def forward(self, x, rows):\n"
            "        if isinstance(rows, torch.Tensor):\n"
            "            rows = rows.sum()\n"
            "        assert rows % self.patch == 0\n"
            "        return self.net(x)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, rows = batch\n"
            "        return self(x, rows).mean()\n",
            message="an `assert` on the tensor value",
        ),
        # A helper returning `dict(loss=...)` (the display it builds): its entry is the loss,
        # a device tensor the step's `if` tests.
        Invalid(
            _HEAD + "    def shared(self, batch):\n"
            "        loss = self(batch).mean()\n"
            "        return dict(loss=loss, count=len(batch))\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.shared(batch)\n"
            "        if torch.isnan(out['loss']):\n"
            "            return None\n"
            "        return out['loss']\n",
            line=12,
        ),
        # einops computes with the tensor's own library: a reduction of a device mask is a
        # device tensor, and `.all()` of it in an `if` a host read.
        Invalid(
            "from einops import reduce\nfrom torch import nn\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        hits = reduce(x > 0, 'b n -> b', 'sum').bool()\n"
            "        if hits.all():\n"
            "            x = x * 2\n"
            "        return x\n",
            line=8,
        ),
        # Python's `sum` over a device mask (one element at a time), then a test of it.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        mask = ~batch['pad']\n"
            "        if sum(mask) == 0:\n"
            "            return None\n"
            "        return self(batch['x'])[mask].mean()\n",
            line=8,
        ),
        # A count of a torch check on a loss the file cannot follow (a module a factory
        # picks by name, applied to entries of what a helper object splits).
        Invalid(
            "import lightning as L\nimport torch\n\nfrom .losses import pick_loss\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, name, post):\n"
            "        super().__init__()\n"
            "        self.criterion = pick_loss(name)\n"
            "        self.post = post\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        preds, y = self.post.split(self(x)), self.post.split(y)\n"
            "        total = 0\n"
            "        for key in self.keys:\n"
            "            loss = self.criterion(preds[key], y[key])\n"
            "            if torch.isnan(loss).sum() > 0:\n"
            "                raise RuntimeError('nan loss')\n"
            "            total += loss\n"
            "        return total\n",
            line=19,
            message="`torch.isnan(loss).sum() > 0`",
        ),
        # A count of a mask that a set-up method stores from the step's batch: the base
        # class's step calls it, only the subclass defines it.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Base(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.read_batch(batch)\n"
            "        return self.objective()\n\n\n"
            "class Semi(Base):\n"
            "    def read_batch(self, batch):\n"
            "        self.x = batch['x']\n"
            "        self.annotated = batch['annotated']\n\n"
            "    def objective(self):\n"
            "        count = torch.sum(self.annotated)\n"
            "        loss = self.net(self.x).mean()\n"
            "        if count > 0:\n"
            "            loss = loss + self.net(self.x).var()\n"
            "        return loss\n",
            line=19,
            message="`count > 0`",
        ),
        # The same when the base class defines the set-up method and the subclass overrides
        # it to store more of the batch.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Base(L.LightningModule):\n"
            "    def read_batch(self, batch):\n"
            "        self.x = batch['x']\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.read_batch(batch)\n"
            "        return self.objective()\n\n\n"
            "class Semi(Base):\n"
            "    def read_batch(self, batch):\n"
            "        self.x = batch['x']\n"
            "        self.annotated = batch['annotated']\n\n"
            "    def objective(self):\n"
            "        if self.annotated.any():\n"
            "            return self.net(self.x).var()\n"
            "        return self.net(self.x).mean()\n",
            line=20,
            message="`self.annotated.any()`",
        ),
        # Dict entries that hold tensor values, beside entries that hold shapes.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Matcher(nn.Module):\n"
            "    def forward(self, data):\n"
            '        data["hw"] = data["left"].shape[2:]\n'
            '        data["score_l"] = data["left"].mean()\n'
            '        data["score_r"] = data["right"].mean()\n'
            '        if data["score_l"] > data["score_r"]:\n'
            '            return data["left"]\n'
            '        return data["right"]\n',
            message='an `if` on the tensor value `data["score_l"] > data["score_r"]`',
        ),
        # A flag kept as a registered buffer (it lives on the device with the module).
        Invalid(
            _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer('warmed_up', torch.zeros(()))\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        if not self.warmed_up:\n"
            "            self.warmed_up.fill_(1)\n"
            "        return self(batch).sum()\n",
            line=11,
        ),
        # The same option spread from a mapping that holds a statistic of the batch.
        Invalid(
            "import random\n\nimport lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(4, 4)\n\n"
            "    def forward(self, x, target, keep_prob):\n"
            "        out = self.proj(x)\n"
            "        return target if random.random() < keep_prob else out\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, keep_prob: float = 0.5):\n"
            "        super().__init__()\n"
            "        self.decoder = Decoder()\n"
            "        self.keep_prob = keep_prob\n\n"
            "    def run(self, x, y, keep=None):\n"
            "        return self.decoder(x, y, keep_prob=keep)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        return self.run(x, y, **{'keep': y.mean()}).sum()\n",
            line=15,
        ),
        # A property whose getter builds its value on the module's device: read each step.
        Invalid(
            _HEAD + "    @property\n"
            "    def warmup(self):\n"
            "        return torch.tensor(min(1.0, self.global_step / 100)).to(self.device)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        if self.warmup < 1:\n"
            "            loss = loss * self.warmup\n"
            "        return loss\n",
            line=12,
        ),
        # A loss helper a shared step hands the batch's targets, per target slot.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "def slot_loss(pred, targets):\n"
            "    total = pred.new_zeros(())\n"
            "    for i in range(targets.shape[1]):\n"
            "        if targets[:, i].sum() == 0:\n"
            "            continue\n"
            "        total = total + (pred[:, i] - targets[:, i]).abs().mean()\n"
            "    return total\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def shared(self, batch):\n"
            "        images, targets = batch\n"
            "        return slot_loss(self(images), targets)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.shared(batch)\n",
            line=8,
        ),
        # The condition of a comprehension is control flow too, once per element.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        losses = self.heads(batch)\n"
            "        kept = {k: v for k, v in losses.items() if not torch.isnan(v)}\n"
            "        return sum(kept.values())\n",
            message="a comprehension's `if`",
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if torch.isinf(loss):\n            return None\n        return loss\n",
            line=8,
            message="in training_step",
        ),
        Invalid(
            _HEAD + "    def forward(self, x):\n"
            "        while (x > 1).any():\n            x = x / 2\n"
            "        assert (x >= 0).all()\n        return x\n",
            count=2,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        scale = 0.5 if loss > 1 else 1.0\n        return loss * scale\n",
            expected_suggestion=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        scale = torch.where(loss > 1, 0.5, 1.0)\n"
            "        return loss * scale\n",
        ),
        # A pure update under a tensor condition: torch.where.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss > 10:\n            loss = loss / 10\n"
            "        weight = 1.0\n"
            "        if not torch.isfinite(loss).all():\n            weight = 0.0\n"
            "        else:\n            weight = 2.0\n"
            "        return loss * weight\n",
            count=2,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        loss = torch.where(loss > 10, loss / 10, loss)\n"
            "        weight = 1.0\n"
            "        weight = torch.where(torch.logical_not(torch.isfinite(loss).all()), 0.0, "
            "2.0)\n"
            "        return loss * weight\n",
        ),
        # A branch that calls a module or returns is not a pure update: no fix.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if loss > 10:\n            loss = self.rescale(loss)\n"
            "        return loss\n",
        ),
        # An optimizer's step reads its parameters' norms and mask on the host: the `not`
        # is a sync where it stands, the later `if dense` tests a Python bool.
        Invalid(
            "import torch\n\n\nclass Lamb(torch.optim.Optimizer):\n"
            "    def step(self, closure=None):\n"
            "        for group in self.param_groups:\n"
            "            for p in group['params']:\n"
            "                mask = p.grad.abs().sum(dim=-1) > 0\n"
            "                dense = not mask.all()\n"
            "                w_norm = torch.norm(p)\n"
            "                if w_norm == 0:\n"
            "                    continue\n"
            "                if dense:\n"
            "                    p.add_(p.grad, alpha=-group['lr'])\n",
            count=2,
            message="in optimizer step",
        ),
        # Each element of a computed device mask tested in a loop.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        scores = self(batch)\n"
            "        keep = scores > 0.5\n"
            "        kept = 0\n"
            "        for i, k in enumerate(keep):\n"
            "            if k:\n"
            "                kept += 1\n"
            "        return scores.sum() / kept\n",
            line=11,
            message="once per element",
        ),
        # Membership in a row of a computed device tensor, once per row.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        tags = self(batch).argmax(-1)\n"
            "        complete = 0\n"
            "        for row in tags:\n"
            "            if 1 in row:\n"
            "                complete += 1\n"
            "        return self.loss_fn(tags) * complete\n",
            line=10,
            message="an `if` on the tensor value `1 in row`",
        ),
        # The bool taken where the test stands (an assignment, a comprehension's element),
        # with a device tensor looked for in a helper's parameter.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "def matched(pred_ids, gold_ids):\n"
            "    return [g in pred_ids for g in torch.unique(gold_ids)]\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        logits = self(batch['x'])\n"
            "        found = 0 not in logits.argmax(-1)\n"
            "        hits = matched(logits.argmax(-1), batch['y'])\n"
            "        return logits.sum() * found + len(hits)\n",
            count=2,
            message="tests membership in the device tensor",
        ),
        # A flag computed from tensors, then tested.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        bad = torch.isnan(loss).any()\n"
            "        if not bad:\n            self.manual_backward(loss)\n",
            line=9,
        ),
        # Python's any() over a generator of device tests: one host read per parameter.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        if any(p.grad.isnan().any() for p in self.parameters()\n"
            "               if p.grad is not None):\n"
            "            self.skipped += 1\n"
            "        return loss\n",
            line=8,
            message="each element of `any(...)`",
        ),
        # A helper annotated with an alias of Tensor (`from torch import Tensor as T`) returns
        # a device mask when handed the batch's tensors.
        Invalid(
            "import lightning as L\nfrom torch import Tensor as T\n\n\n"
            "def good_hits(*, pt, eta, threshold: float = 0.9) -> T:\n"
            "    return (pt > threshold) & (eta.abs() < 4.0)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        mask = good_hits(pt=batch['pt'], eta=batch['eta'])\n"
            "        assert mask.sum() > 0, 'no hits left'\n"
            "        return self(batch['x']).mean()\n",
            line=12,
            message="`mask.sum() > 0`",
        ),
        # A count or test of a torch check on a value the file cannot trace (an entry of what
        # a helper returns): `torch.isnan` takes only tensors.
        Invalid(
            "import lightning as L\nimport torch\n\nfrom .solvers import make_solver\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.solver = make_solver()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        info = self.solver.integrate(batch)\n"
            "        mean, spread = info['state']\n"
            "        assert not torch.isnan(mean).any()\n"
            "        return mean.sum() + spread.sum()\n",
            line=15,
            message="an `assert` on the tensor value `torch.isnan(mean).any()`",
        ),
        # torch's own count of a comparison: `torch.sum` takes only tensors.
        Invalid(
            "import lightning as L\nimport torch\n\nfrom .solvers import make_solver\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.solver = make_solver()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        info = self.solver.integrate(batch)\n"
            "        mean, spread = info['state']\n"
            "        spread = spread.abs()\n"
            "        assert torch.sum(spread < 0) == 0\n"
            "        return mean.sum() + spread.sum()\n",
            line=16,
            message="`torch.sum(spread < 0) == 0`",
        ),
        # all() over a list of device tests in an assert.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        parts = self(batch)\n"
            "        assert all([torch.isfinite(part).all() for part in parts])\n"
            "        return parts[0].mean()\n",
            message="once per element",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # The `not` operations inside the tests checked so far (reported with their test).
        self._in_tests: set[int] = set()

    def visit_If(self, node: cst.If) -> None:
        self._check(node, node.test, "if")

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.test, "while")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node, node.test, "assert")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, node.test, "ternary", node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        # `[v for v in losses if not torch.isnan(v)]`: one host read per element
        self._check(node, node.test, "comprehension")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `hit = 1 in preds`: Python takes the bool of `Tensor.__contains__` where it stands
        # (in a test, the test's own finding covers it).
        if id(node) in self._in_tests:
            return
        ctx = self.ctx
        if not ctx.in_hot_code or not self._membership(node) or quiet(ctx, node):
            return
        haystack = node.comparisons[0].comparator
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} tests membership in the device "
            f"tensor `{source_of(ctx, haystack)}` on the host (`Tensor.__contains__` reads "
            "`(element == self).any()` into a Python bool): a sync every time it runs; keep it "
            "a tensor, e.g. `(t == v).any()`, and choose with `torch.where` or masking",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _membership(self, node: cst.Comparison) -> bool:
        """`v in t` / `v not in t` where `t` is surely a device tensor (computed in the code,
        a row of one, a buffer, or a helper's parameter tested for a device tensor) and `v`
        a number or a device tensor (`Tensor.__contains__` accepts nothing else)."""
        if len(node.comparisons) != 1 or not isinstance(
            node.comparisons[0].operator, (cst.In, cst.NotIn)
        ):
            return False
        ctx = self.ctx
        needle, haystack = node.left, node.comparisons[0].comparator
        if ctx.value_kind(haystack) is not ValueKind.DEVICE or ctx.is_dict(haystack):
            return False
        needle_kind = ctx.value_kind(needle)
        if not (
            is_number_literal(needle, ctx) or needle_kind in (ValueKind.NUMBER, ValueKind.DEVICE)
        ):
            return False
        if computed_tensor(ctx, haystack, self.bindings):
            return True
        if (
            isinstance(haystack, cst.Attribute)
            and isinstance(haystack.value, cst.Name)
            and haystack.value.value == "self"
        ):
            return True  # a buffer the module keeps on the device
        if not isinstance(haystack, cst.Name):
            return False
        binding = self.bindings.lookup(haystack.value)
        if binding is not None and binding.value is None and isinstance(binding.node, cst.For):
            iterated = iterated_tensor(binding.node, haystack.value)
            return iterated is not None and computed_tensor(ctx, iterated, self.bindings)
        # A helper's parameter (the step's own batch may be a dict): only with a device tensor
        # looked for in it.
        info = ctx.function
        return (
            binding is None
            and needle_kind is ValueKind.DEVICE
            and self.bindings.is_param(haystack.value)
            and info is not None
            and info.name != info.root_hook
        )

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        # `sparse = not mask.all()`: `not` calls `bool()` on the tensor where it stands (in
        # a test, the test's own finding covers it).
        if not isinstance(node.operator, cst.Not) or id(node) in self._in_tests:
            return
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        found = self._tensor_test(node.expression, 0)
        if found is None or quiet(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} turns the tensor value "
            f"`{source_of(ctx, found)}` into a Python bool: a sync with the TPU every step; "
            "keep it a tensor (`torch.logical_not`) and choose with `torch.where` or masking",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check(
        self,
        owner: cst.CSTNode,
        test: cst.BaseExpression,
        kind: str,
        ifexp: cst.IfExp | None = None,
    ) -> None:
        ctx = self.ctx
        self._in_tests.update(id(n) for n in _taken_in_test(test))
        if not ctx.in_hot_code:
            return
        found = self._tensor_test(test, 0)
        # (The test's own nodes are not linked to their parents yet: ask about the
        # statement, and `_tensor_test` stops at `rare_flag and tensor_test`.)
        if found is None or quiet(ctx, owner):
            return
        replacement = None
        if ifexp is not None and found is test:
            replacement = cst.Call(
                func=cst.Attribute(value=cst.Name("torch"), attr=cst.Name("where")),
                args=[
                    cst.Arg(test.with_changes(lpar=[], rpar=[]), comma=_COMMA),
                    cst.Arg(ifexp.body, comma=_COMMA),
                    cst.Arg(ifexp.orelse),
                ],
                lpar=ifexp.lpar,
                rpar=ifexp.rpar,
            )
        what = {
            "if": "an `if`",
            "while": "a `while` loop",
            "assert": "an `assert`",
            "ternary": "a conditional expression",
            "comprehension": "a comprehension's `if`",
        }[kind]
        per_element = ""
        reduction = next(
            (
                call
                for call in _builtin_reductions(test)
                if any(n is found for n in _descendants(call))
            ),
            None,
        )
        if reduction is not None:
            # The builtin takes each element's bool: no `torch.where` of the whole test.
            per_element = (
                f" (each element of `{source_of(ctx, reduction.func)}(...)`: once per element)"
            )
        if isinstance(found, cst.Name):
            binding = self.bindings.lookup(found.value)
            if binding is not None and isinstance(binding.node, cst.For):
                iterated = iterated_tensor(binding.node, found.value)
                if iterated is not None:
                    per_element = f" (an element of `{source_of(ctx, iterated)}`: once per element)"
        self.report(
            found,
            f"{what} on the tensor value `{source_of(ctx, found)}`{per_element} in "
            f"{ctx.hot_reason} syncs with the TPU every step and records one graph per outcome; "
            "use `torch.where` or masking",
            fix=(
                if_fix(ctx, self.bindings, owner)
                if isinstance(owner, cst.If) and reduction is None
                else None
            ),
            replacement=replacement,
            applicability=Applicability.DISPLAY_ONLY,
            replaces=ifexp,
            add_imports=[ImportSpec("torch")] if replacement is not None else (),
        )

    def _tensor_test(self, test: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
        if depth > 6:
            return None
        ctx = self.ctx
        if isinstance(test, cst.BooleanOperation):
            left = self._tensor_test(test.left, depth + 1)
            if left is not None:
                return left
            if isinstance(test.operator, cst.And) and effective(
                ctx.condition_kinds(test.left), ctx.function.root_hook if ctx.function else None
            ):
                return None  # `batch_idx == 0 and loss > 1`: only for some batches
            return self._tensor_test(test.right, depth + 1)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._tensor_test(test.expression, depth + 1)
        if isinstance(test, cst.Comparison):
            if len(test.comparisons) == 1 and isinstance(
                test.comparisons[0].operator, (cst.In, cst.NotIn)
            ):
                return test if self._membership(test) else None
            if any(
                isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                for t in test.comparisons
            ):
                return None
            if _compares_stored_shapes(ctx, test):
                return None  # `data["hw0"] == data["hw1"]` of stored `x.shape[2:]`
            kind = ctx.value_kind(test)
            if kind is ValueKind.UNKNOWN and any(
                _counts_a_tensor_check(ctx, operand)
                for operand in (test.left, *(c.comparator for c in test.comparisons))
            ):
                # `torch.isnan(loss).sum() > 0`: `torch.isnan` takes only tensors, so the
                # count is a tensor too, however `loss` was made (as for `if torch.isnan(x)`)
                return test
            return test if kind is ValueKind.DEVICE else None
        if isinstance(test, cst.Call):
            element = _builtin_reduction_element(test)
            if element is not None and self.bindings.lookup(test.func.value) is None:  # type: ignore[attr-defined]
                # `any(p.grad.isnan().any() for p in self.parameters())`: Python's any/all
                # takes the bool of each element, one host read per element.
                return self._tensor_test(element, depth + 1)
            kind = ctx.value_kind(test)
            torch_function = (torch_name(ctx, test) or "").rsplit(".", 1)[-1]
            # `torch.isnan(x)` takes only tensors: the use says `x` is one (so does a count or
            # test of it, `torch.isnan(x).any()`).
            if kind is not ValueKind.DEVICE and not (
                kind is ValueKind.UNKNOWN
                and (torch_function in _TENSOR_PREDICATES or _counts_a_tensor_check(ctx, test))
            ):
                return None
            name = method_name(test) or torch_function
            return test if name in _TENSOR_PREDICATES else None
        if (
            isinstance(test, cst.Attribute)
            and isinstance(test.value, cst.Name)
            and test.value.value == "self"
            and ctx.value_kind(test) is ValueKind.DEVICE
        ):
            # `if self.initted:` on a buffer the module keeps on the device
            return test
        if isinstance(test, cst.Name):
            binding = self.bindings.lookup(test.value)
            if binding is not None and binding.value is None and isinstance(binding.node, cst.For):
                # `for m in keep: if m:`: each element of a device tensor tested on the host
                iterated = iterated_tensor(binding.node, test.value)
                if iterated is not None and computed_tensor(ctx, iterated, self.bindings):
                    return test
                return None
            if binding is None or binding.value is None or binding.unpack_index is not None:
                return None
            value = binding.value
            if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not):
                return None  # `flag = not t.all()`: the `not` read it (reported there)
            if isinstance(value, cst.Comparison) and _is_membership(value):
                return None  # `hit = 1 in t`: the `in` read it (reported there)
            if (
                isinstance(value, (cst.Comparison, cst.Call, cst.UnaryOperation))
                and self._tensor_test(value, depth + 1) is not None
            ):
                return test
        return None


def _builtin_reduction_element(call: cst.Call) -> cst.BaseExpression | None:
    """The element of `any(<element> for ...)` / `all([<element> for ...])`: Python's builtin
    takes the bool of each; None for other calls."""
    if not (
        isinstance(call.func, cst.Name)
        and call.func.value in ("any", "all")
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
    ):
        return None
    value = call.args[0].value
    if isinstance(value, (cst.GeneratorExp, cst.ListComp)):
        return value.elt
    return None


def _builtin_reductions(node: cst.CSTNode) -> list[cst.Call]:
    """The `any(... for ...)` / `all([...])` calls in `node` (itself included)."""
    return [
        n
        for n in _descendants(node)
        if isinstance(n, cst.Call) and _builtin_reduction_element(n) is not None
    ]


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = [node]
    stack = [node]
    while stack:
        current = stack.pop()
        for child in current.children:
            out.append(child)
            stack.append(child)
    return out


def _keyed_entry(node: cst.BaseExpression) -> tuple[str, str] | None:
    """(dict name, key) of `data["key"]`, else None."""
    if not (
        isinstance(node, cst.Subscript)
        and isinstance(node.value, cst.Name)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and isinstance(node.slice[0].slice.value, cst.SimpleString)
    ):
        return None
    return node.value.value, node.slice[0].slice.value.evaluated_value


def _is_shape(node: cst.BaseExpression) -> bool:
    """`x.shape`, `x.shape[2:]`, `x.shape[0]`, `x.size()`, `x.size(0)`: Python sizes."""
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "size"
        and len(node.args) <= 1
    )


def _stored_entries(ctx: FileContext) -> dict[tuple[str, str], list[cst.BaseExpression]]:
    """What the file stores under `name["key"]`: `name["key"] = v` and
    `name.update({"key": v})` / `name.update(key=v)`, by (dict name, key)."""
    found: dict[tuple[str, str], list[cst.BaseExpression]] = {}

    class _Stores(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                entry = _keyed_entry(target.target)
                if entry is not None:
                    found.setdefault(entry, []).append(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            entry = _keyed_entry(node.target)
            if entry is not None:
                found.setdefault(entry, []).append(node)  # never a shape

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if not (
                isinstance(func, cst.Attribute)
                and func.attr.value == "update"
                and isinstance(func.value, cst.Name)
            ):
                return
            name = func.value.value
            for arg in node.args:
                if arg.keyword is not None:
                    found.setdefault((name, arg.keyword.value), []).append(arg.value)
                elif isinstance(arg.value, cst.Dict):
                    for element in arg.value.elements:
                        if isinstance(element, cst.DictElement) and isinstance(
                            element.key, cst.SimpleString
                        ):
                            key = element.key.evaluated_value
                            found.setdefault((name, key), []).append(element.value)

    ctx.module.visit(_Stores())
    return found


def _compares_stored_shapes(ctx: FileContext, test: cst.Comparison) -> bool:
    """`data["hw0"] == data["hw1"]` where every value the file stores under each of the
    compared keys of that dict (`data["hw0"] = x.shape[2:]`, `data.update({"hw0":
    x.shape[2:]})`) is a shape or size: `torch.Size` is a tuple of Python ints."""
    sides = [test.left, *(t.comparator for t in test.comparisons)]
    entries = [_keyed_entry(side) for side in sides]
    if any(e is None for e in entries):
        return False
    cache = ctx.__dict__.get("_tpu104_stored_entries")
    if cache is None:
        cache = ctx.__dict__["_tpu104_stored_entries"] = _stored_entries(ctx)
    for entry in entries:
        values = cache.get(entry)  # type: ignore[arg-type]
        if not values or not all(_is_shape(v) for v in values):
            return False
    return True


# torch checks that take only tensors, and the reductions that count or test what they find.
_TENSOR_CHECKS = frozenset({"isnan", "isinf", "isfinite", "isneginf", "isposinf"})
_CHECK_REDUCTIONS = frozenset({"sum", "any", "all", "count_nonzero"})


def _counts_a_tensor_check(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`torch.isnan(x).sum()`, `torch.isinf(x).any()`, `torch.sum(torch.isnan(x))`: a
    reduction of a torch check whose argument must be a tensor; also torch's own reduction
    function of a comparison (`torch.sum(std < 0)`): `torch.sum` takes only tensors, so the
    compared value is one (the method form, `(std < 0).sum()`, is NumPy's too)."""
    if not isinstance(node, cst.Call):
        return False
    name = method_name(node)
    function = torch_name(ctx, node) or ""
    if function in _CHECK_REDUCTIONS and node.args:
        inner: cst.BaseExpression = node.args[0].value
        if (
            isinstance(inner, cst.Comparison)
            and not node.args[0].star
            and not any(
                isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                for c in inner.comparisons
            )
        ):
            return True
    elif name in _CHECK_REDUCTIONS and isinstance(node.func, cst.Attribute):
        inner = node.func.value
    else:
        return False
    return isinstance(inner, cst.Call) and (torch_name(ctx, inner) or "") in _TENSOR_CHECKS


def _could_be_tensor_test(test: ast.expr, code: HotCode, depth: int = 0) -> bool:
    """Whether `TensorValueControlFlow._tensor_test` can find a tensor value in `test`, read
    with `ast` from the shapes it goes on with (its screen): `and`/`or`/`not` of a comparison
    other than `is`, a membership test `_could_be_membership` lets through, a call of a
    tensor predicate, an attribute of `self` but `training` (a buffer), or a name (bound to one
    of those). Other attributes, subscripts, constants and other calls it never reports."""
    if depth > 6:
        return False
    if isinstance(test, ast.BoolOp):
        return any(_could_be_tensor_test(value, code, depth + 1) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _could_be_tensor_test(test.operand, code, depth + 1)
    if isinstance(test, ast.Compare):
        if len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.NotIn)):
            return _could_be_membership(test)
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops)
    if isinstance(test, ast.Call):
        return not code.call_names(test).isdisjoint(_TENSOR_PREDICATES)
    if isinstance(test, ast.Attribute):
        # `if self.initted:` on a buffer; `self.training` is nn.Module's own bool (a buffer
        # cannot take that name: register_buffer refuses an existing attribute).
        return (
            isinstance(test.value, ast.Name) and test.value.id == "self" and test.attr != "training"
        )
    return isinstance(test, ast.Name)


# Containers written in the code, and calls that make one: never a tensor.
_HOST_CONTAINERS = (
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.Constant,
    ast.JoinedStr,
)
_HOST_CONTAINER_CALLS = frozenset(
    {"range", "keys", "values", "items", "list", "set", "dict", "tuple", "frozenset", "str"}
)


def _could_be_membership(test: ast.Compare) -> bool:
    """Whether `TensorValueControlFlow._membership` can report `test`, read with `ast`: one
    `in`/`not in` whose left side is not a string (or None) and whose right side is not a
    container or string written in the code, nor a call that makes one."""
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.In, ast.NotIn)):
        return False
    needle, haystack = test.left, test.comparators[0]
    if isinstance(needle, ast.JoinedStr) or (
        isinstance(needle, ast.Constant) and not isinstance(needle.value, (int, float))
    ):
        return False
    if isinstance(haystack, _HOST_CONTAINERS):
        return False
    if isinstance(haystack, ast.Call):
        func = haystack.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name not in _HOST_CONTAINER_CALLS
    return True


def _is_membership(node: cst.Comparison) -> bool:
    return len(node.comparisons) == 1 and isinstance(
        node.comparisons[0].operator, (cst.In, cst.NotIn)
    )


def _taken_in_test(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The `not` operations and membership tests in an expression, whose bool the test
    takes (not inside lambdas or nested tests' own statements: an expression has none)."""
    found: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if (isinstance(current, cst.UnaryOperation) and isinstance(current.operator, cst.Not)) or (
            isinstance(current, cst.Comparison) and _is_membership(current)
        ):
            found.append(current)
        stack.extend(iter_children(current))
    return found
