"""TPU101 item-in-hot-path."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import OPTIMIZER_STEP
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..rewrite.deferral import defer
from ..rewrite.sync import item_fix
from ..shared.matchers import is_method_call, source_of
from .helpers import _HEAD, _LOSS, in_exception_path, logged_value


class ItemInHotPath(Rule):
    """
    ## What it does
    Finds `.item()` on tensors in code that runs for every batch: `training_step`,
    `validation_step`, `test_step`, `predict_step`, `forward`, batch-level hooks, and the
    helpers they call through `self.` or module-level functions. Values that are not device
    tensors (Python numbers, numpy and MLX arrays, CPU tensors such as `torch.rand(1)` or the
    samples of a `torch.distributions` object built from Python numbers, `Beta(0.4,
    0.4).sample()`, also
    at their key of a dict a helper returns: `out = torch.zeros(n)` filled from device results,
    `scores["mse"] = out`, `return scores`, then `scores["mse"].mean().item()`; and
    the parameters of a sub-module's `forward` that the step's code alone calls, every call
    passing a CPU tensor: `lengths.cpu().int()` and what is computed from it; the
    parameters of a helper every call of which passes host copies (`plot(pred[i].cpu(),
    y[i].cpu())`), with what a metric the helper builds itself computes from them (`corr =
    PearsonCorrCoef()`, `corr(a, b).item()`), unless the helper is also handed on as a
    callback or a registry entry (calls not seen); the rows of a CPU copy however iterated,
    `for v in reversed(sizes.cpu())`; an
    optimizer's counters kept in its state as CPU tensors, as torch's optimizers do, when
    every store of that entry in the class is one: `state = self.state[p]`, `state["step"] =
    torch.tensor(0.0)` or `self.state["k"] = torch.tensor([0])`, read in `step` as
    `self.state["k"].item()`, or appended to a list handed to a functional helper,
    `step_t = state_steps[i]`, `step_t.item()`; an entry made on the parameter's device,
    `torch.zeros_like(p)`, stays a device tensor; and the numpy arrays a collate function of
    the project returns in the batch, at a key or at a position of its tuple: `lengths =
    np.array(...)` in `return flat, lengths, names` of `collate_fn=featurize`, then `flat,
    lengths, names = batch` and `lengths.max().item()` in the step, as Lightning's batch
    transfer moves tensors only; torch's `default_collate` makes tensors of them, so a
    dataset's numpy arrays without a collate of the project stay reported; README,
    "Whole-project analysis") and
    code that only runs for some batches (`if batch_idx == 0:`, `if steps % log_freq == 0:`,
    `if self.control.should_log:`, the first steps `if self.global_step < 5:`,
    `if len(self.samples) < self.max_samples:` that collects samples, a one-time set-up
    behind a zero sentinel or a length it grows, `if self.size.item() == 0:` or `while n >
    self.size.item():` whose body, or the method it calls, sets `self.size` (the guard's
    own `.item()` runs every step and is reported), an assertion's
    message, the lines before a `raise`, an `except` handler and what it calls, a branch
    that only prints, warns or logs under a check of a tensor for bad values: `if
    torch.any(empty): print(empty.sum().item())`, whose `if` is TPU104's) are not
    reported. Each test is read on the side where it is rare: the else of `if batch_idx !=
    0:` or of `if not self.debug:` is rare and their body is not, and the rest of a step
    after `if self.global_step % n == 0: return self.log_images(x)` (an early exit on the
    rare side) runs on the other steps and is reported. In code a custom optimizer's
    `step()` reaches, `.item()` is reported only in preview mode: on code read after it
    was frozen this shape was wrong in 4 of 4 findings (step counters kept in the
    optimizer's state as CPU tensors, as torch's own optimizers keep them), so it has not
    earned the default set.

    ## Why is this bad on TPU?
    XLA builds a graph of the step lazily and runs it once per step. `.item()` needs the
    value now: it cuts the graph, runs the part computed so far, waits for the TPU and copies
    the result to the host, every step. torch_xla lists "accessing tensor values" as the main
    unexpected cause of compilations and executions, and the host waits for the device
    instead of queueing the next step.

    ## Example
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.losses.append(loss.item())
            return loss

        def on_train_epoch_end(self):
            self.log("epoch_loss", sum(self.losses) / len(self.losses))
            self.losses.clear()
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.losses.append(loss.detach())
            return loss

        def on_train_epoch_end(self):
            losses = torch.stack(self.losses).tolist()
            self.log("epoch_loss", sum(losses) / len(losses))
            self.losses.clear()
    ```

    Keep values as tensors (`self.log` accepts tensors, see TPU102), or read them in an
    epoch-level hook such as `on_train_epoch_end`, where one sync per epoch is harmless.

    ## Fix safety
    Two rewrites, both **unsafe** (`--unsafe-fixes`):

    - **Values collected for the end of the epoch.** When the number is appended to a list
      of the module (`self.losses.append(loss.item())`, also through a local, or wrapped in
      `int(...)`/`float(...)`) and that list is read only when an epoch ends or starts, the
      fix keeps the values on the device while the epoch runs and reads them once where they
      are used: the producer collects `loss.detach()` and every reader of the list in the
      project (the module's `on_*_epoch_end` hooks, callbacks reading `pl_module.losses`,
      helpers only those call, in any file) reads `torch.stack(self.losses).tolist()`
      (`... if self.losses else []` where the list may be empty), the same Python numbers
      as before. It applies when the list is filled in one place only, no code that runs
      every step reads it (a progress bar, a `print`, a `self.log` of its last value), it is
      emptied when the producer's epoch ends (`self.losses.clear()` or `self.losses = []`
      in `on_train_epoch_end`, for the module and each subclass), and its readers only
      aggregate, iterate, index or print it. The fix edits every file involved at once, or
      none; the finding says why when there is none. One number per step stays on the TPU
      until the list is emptied.
    - **Values handed to Lightning.** Where the number goes to logging or the step's outputs
      (a value of the dict a step returns, a `.log(...)` / `.log_dict(...)` call of a module
      other than `self`; `self.log` is TPU102's), or is combined with a device tensor, the
      fix replaces `.item()` with `.detach()`: the same value, as a 0-dim tensor, which
      Lightning and torchmetrics take.

    A number kept in module state (`self.avg = 0.9 * self.avg + 0.1 * loss.item()`) has no
    fix: the attribute would hold a tensor where it held a float, for every reader.
    `tpulint fix --prove module:Class --apply --unsafe-fixes` trains the module both ways and
    applies a rewrite only if the training, the module's and callbacks' state at the end of
    every epoch and the logged values (with their Python types) are the same.

    Other uses (a size, an index, `int(x.item())` used as a number, a Python branch) have a
    display-only suggestion (drop `.item()`): whether that code works with a tensor depends
    on the code.

    ## References
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU101"
    hot_only = True
    name = "item-in-hot-path"
    summary = "`.item()` on a device tensor in code that runs every step"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the value as a tensor: drop `.item()`"
    requires = (".item()",)
    screen_calls = frozenset({"item"})

    VALID = (
        # The local is bound again before the call: it no longer names the attribute.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Weigher:\n"
            "    def weigh(self, pred, target):\n"
            "        loss = torch.nn.functional.mse_loss(pred, target)\n"
            "        self.last = loss.item()\n"
            "        return loss\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.weigher = Weigher()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        weigher = self.weigher\n"
            "        weigher = torch.nn.MSELoss()\n"
            "        return weigher(self(batch), batch)\n"
        ),
        # An optimizer's counters kept in its state as CPU tensors, as torch's optimizers
        # do (`torch.tensor(0.0)`, no device), read in `step` through the dict attribute or
        # a list of them handed to a functional helper: host reads, no device sync.
        Valid(
            "import torch\n\n\n"
            "def _single_tensor_mad(params, state_steps, lr):\n"
            "    for i, param in enumerate(params):\n"
            "        step = state_steps[i].item()\n"
            "        param.add_(param.grad, alpha=-lr * step)\n\n\n"
            "class Mad(torch.optim.Optimizer):\n"
            "    def _init_state(self, p):\n"
            "        state = self.state[p]\n"
            "        state['step'] = torch.tensor(0.0)\n\n"
            "    def step(self, closure=None):\n"
            "        if 'k' not in self.state:\n"
            "            self.state['k'] = torch.tensor([0], dtype=torch.long)\n"
            "        k = self.state['k'].item()\n"
            "        for group in self.param_groups:\n"
            "            params, state_steps = [], []\n"
            "            for p in group['params']:\n"
            "                if len(self.state[p]) == 0:\n"
            "                    self._init_state(p)\n"
            "                params.append(p)\n"
            "                state_steps.append(self.state[p]['step'])\n"
            "                p.mul_(1 - self.state[p]['step'].item() / (k + 1))\n"
            "            _single_tensor_mad(params, state_steps, group['lr'])\n"
        ),
        # A branch that only prints under a check of a tensor for bad values runs when the
        # step goes wrong, not every step (the `if` itself is TPU104's).
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Mesh(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        counts = self(batch)\n"
            "        empty = counts == 0\n"
            "        if torch.any(empty):\n"
            "            print(f'{empty.sum().item()} samples have no neighbours')\n"
            "        if torch.isnan(counts).any():\n"
            "            logger.error('nan counts: %s', counts.max().item())\n"
            "        return counts.float().mean()\n"
        ),
        # A sub-module's forward only the step's forward calls, always with lengths computed
        # from `lengths.cpu()`: its `.item()` reads host tensors (the `.cpu()` is TPU103's).
        Valid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Padder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        keep = torch.ones_like(x)\n"
            "        for i, n in enumerate(lengths):\n"
            "            keep[i, n.item():] = 0\n"
            "        return x * keep\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pad = Padder()\n\n"
            "    def shorter(self, lengths):\n"
            "        return ((lengths - 1) // 2 + 1).int()\n\n"
            "    def forward(self, x, lengths):\n"
            "        lengths = lengths.cpu().int()\n"
            "        return self.pad(x, self.shorter(lengths))\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, lengths = batch\n"
            "        return self(x, lengths).sum()\n"
        ),
        # The NaN/inf recovery branch runs on a numeric anomaly, not every step (its test
        # is TPU104's finding).
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if torch.isnan(loss).any() or torch.isinf(loss).any():\n"
            "            print('bad loss', loss.item())\n"
            "        if not torch.isfinite(loss).all():\n"
            "            print('bad loss', loss.item())\n"
            "        return loss\n"
        ),
        # Read only on the error path: the message of a `raise`.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if (batch < 0).any():\n"
            "            raise ValueError(f'negative ids, min={batch.min().item()}')\n"
            "        return self(batch)\n"
        ),
        # An exception handler runs when the step failed, not every step (nor what it calls).
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        try:\n"
            "            return self(batch)\n"
            "        except RuntimeError as error:\n"
            "            if 'out of memory' not in str(error):\n"
            "                raise\n"
            "            print(f'skipped a batch, max {batch.abs().max().item()}')\n"
            "            self.report_skip(batch)\n"
            "            return None\n\n"
            "    def report_skip(self, batch):\n"
            "        print(batch.sum().item())\n"
        ),
        # A table allocated once and grown when a longer batch comes: not every step.
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Positions(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        if self.table is None or self.table.size(0) < x.size(1):\n"
            "            longest = int(lengths.max().item())\n"
            "            self.table = torch.arange(longest, device=x.device)\n"
            "        return x + self.table[: x.size(1)]\n"
        ),
        # Once per epoch is fine.
        Valid(_HEAD + "    def on_train_epoch_end(self):\n        print(self.total.item())\n"),
        # A periodic test inside `and`/`or`: one rank, every `report_freq` steps or on the
        # epoch's last batch.
        Valid(
            "import torch\n\n\ndef train_epoch(model, loader, opt, rank, report_freq):\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        loss = torch.nn.functional.mse_loss(model(x), y)\n"
            "        loss.backward()\n        opt.step()\n        opt.zero_grad()\n"
            "        if rank == 0 and (i % report_freq == 0 or i + 1 == len(loader)):\n"
            "            print(f'{i}: {loss.item():.4f}')\n"
        ),
        # CPU tensors, numpy values and MLX arrays are not device syncs.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1).item() < self.p:\n            batch = batch.flip(0)\n"
            "        return self.loss_fn(self(batch))\n"
        ),
        Valid(
            "import numpy as np\nimport lightning as L\n\n\nclass Attn(L.LightningModule):\n"
            "    def forward(self, x):\n"
            '        u = np.ceil(np.log(x.shape[1])).astype("int").item()\n'
            "        return x[:, :u]\n"
        ),
        Valid(
            "import lightning as L\nimport mlx.core as mx\n\n\nclass Plan(L.LightningModule):\n"
            "    def train_step(self, batch):\n        loss = mx.mean(mx.array(batch))\n"
            "        mx.eval(loss)\n        return {'loss': loss.item()}\n"
        ),
        # dict.items() is not Tensor.item().
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        logs = {'a': 1}\n        for k, v in logs.items():\n            pass\n"
            "        return self(batch)\n"
        ),
        # Only for the first batch: a sync per epoch, not per step.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        if batch_idx > 0:\n            return\n"
            "        self.first = self(batch).sum().item()\n"
        ),
        # Logged values are TPU102's business.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", loss.item())\n        return loss\n'
        ),
        # Not a Lightning class and not forward/step: not hot.
        Valid("import torch\n\ndef report(t):\n    return t.item()\n"),
        # A helper every call of which passes host copies (`.cpu()`): a metric it builds
        # itself (never moved) computes on the CPU, and the rows of a CPU copy iterated
        # backwards are host values (the `.cpu()` copies are TPU103's).
        Valid(
            "import lightning as L\nimport torch\nfrom torchmetrics import PearsonCorrCoef\n\n\n"
            "def caption(pred, real):\n"
            "    corr = PearsonCorrCoef()\n"
            "    return 'r=%.3f' % corr(pred.view(-1), real.view(-1)).item()\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        pred = self(x)\n"
            "        print(caption(pred[0].cpu(), y[0].cpu()))\n"
            "        gap = (pred.max() - y).detach().cpu()\n"
            "        widths = [w.item() for w in reversed(gap)]\n"
            "        for w in reversed(gap):\n"
            "            widths.append(w.item())\n"
            "        return widths\n"
        ),
    )
    INVALID = (
        # One call passes the device prediction, or the helper is also handed on as a
        # callback (calls not seen): its metric's `.item()` may read the TPU; and the rows
        # of a device tensor iterated backwards are device tensors.
        Invalid(
            "import lightning as L\nimport torch\nfrom torchmetrics import PearsonCorrCoef\n\n\n"
            "def caption(pred, real):\n"
            "    corr = PearsonCorrCoef()\n"
            "    return 'r=%.3f' % corr(pred, real).item()\n\n\n"
            "def score(pred, real):\n"
            "    corr = PearsonCorrCoef()\n"
            "    return corr(pred, real).item()\n\n\n"
            "SCORERS = {'pearson': score}\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        pred = self(x)\n"
            "        print(caption(pred[0].cpu(), y[0].cpu()), caption(pred[1], y[1]))\n"
            "        print(score(pred[0].cpu(), y[0].cpu()))\n"
            "        for w in reversed(pred.sum(dim=1)):\n"
            "            print(w.item())\n",
            count=3,
        ),
        # A state entry made on the parameter's device (`torch.zeros_like(p)`), or a
        # counter some store puts on the device: device tensors (a preview shape: the
        # optimizer's `step()`).
        Invalid(
            "import torch\n\n\n"
            "class Mad(torch.optim.Optimizer):\n"
            "    def step(self, closure=None):\n"
            "        for group in self.param_groups:\n"
            "            for p in group['params']:\n"
            "                state = self.state[p]\n"
            "                if len(state) == 0:\n"
            "                    state['avg'] = torch.zeros_like(p)\n"
            "                    self.state['k'] = torch.tensor(0.0)\n"
            "                else:\n"
            "                    self.state['k'] = p.grad.norm()\n"
            "                k = self.state['k'].item()\n"
            "                p.add_(state['avg'], alpha=-group['lr'] * k)\n"
            "                print(self.state[p]['avg'].sum().item())\n",
            count=2,
            line=14,
            config={"preview": True},
        ),
        # A branch that prints beside other work, or prints under a test that is no check
        # for bad values, runs as often as its test holds.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Mesh(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        counts = self(batch)\n"
            "        if counts.sum() > 3:\n"
            "            print(counts.max().item())\n"
            "        return counts.float().mean()\n"
        ),
        # `pad_packed_sequence`'s padded output stays on the device (only its lengths are
        # on the CPU): `.item()` on it is a read.
        Invalid(
            "import lightning as L\nfrom torch import nn\n"
            "from torch.nn.utils.rnn import pad_packed_sequence\n\n\n"
            "class Tagger(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cell = nn.GRU(8, 8)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        seq, steps = pad_packed_sequence(self.cell(batch)[0])\n"
            "        top = seq.max().item()\n"
            "        return seq.sum() * top + steps.sum()\n"
        ),
        # A helper that sets the length it is called to set, called behind `if
        # self.size.item() == 0:` (a zero sentinel) and in `while n > self.size.item():`
        # (the loop ends with the test false): it runs on the first step or when the
        # length grows. Only the guards' own reads run every step.
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Table(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer('size', torch.tensor(0))\n\n"
            "    def _resize(self, n):\n"
            "        if n > self.size.item():\n"
            "            n = max(n, 2 * self.size.item())\n"
            "        self.size = torch.tensor(n)\n\n"
            "    def forward(self, x):\n"
            "        if self.size.item() == 0:\n"
            "            self._resize(x.shape[-1])\n"
            "        while x.shape[-1] > self.size.item():\n"
            "            self._resize(x.shape[-1])\n"
            "        return x\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.table = Table()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.table(batch).mean()\n",
            count=2,
            line=17,
            message="in forward",
        ),
        # A branch that returns before the function's final `raise` is not the error path.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        if self.mode == 'trim':\n"
            "            scale = lengths.float().mean().item()\n"
            "            return x * scale\n"
            "        raise ValueError(self.mode)\n",
            line=8,
        ),
        # Module state read by other code: no fix (it would hold a tensor).
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.seen += loss.item()\n        return loss\n",
            line=8,
            message="in training_step",
            applicability=Applicability.DISPLAY_ONLY,
        ),
        # Handed to Lightning: logged by another module, returned in the step's outputs.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.task.log_dict({"loss": loss.item()})\n'
            '        return {"loss": loss, "value": loss.item()}\n',
            count=2,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.task.log_dict({"loss": loss.detach()})\n'
            '        return {"loss": loss, "value": loss.detach()}\n',
        ),
        # Collected every step, read and emptied when the epoch ends: deferred.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        loss = torch.nn.functional.cross_entropy(self(batch), batch)\n"
            + "        self.losses.append(loss.item())\n"
            "        return loss\n\n"
            "    def on_train_epoch_end(self):\n"
            '        self.log("epoch_loss", sum(self.losses) / len(self.losses))\n'
            "        self.losses.clear()\n",
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        loss = torch.nn.functional.cross_entropy(self(batch), batch)\n"
            + "        self.losses.append(loss.detach())\n"
            "        return loss\n\n"
            "    def on_train_epoch_end(self):\n"
            '        self.log("epoch_loss", sum(torch.stack(self.losses).tolist() if'
            " self.losses else []) / len(self.losses))\n"
            "        self.losses.clear()\n",
        ),
        # Also read every step: no fix, and the message says why.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.losses.append(loss.item())\n"
            '        self.log("last", self.losses[-1])\n'
            "        return loss\n\n"
            "    def on_train_epoch_end(self):\n"
            "        self.losses.clear()\n",
            applicability=Applicability.DISPLAY_ONLY,
            message="`self.losses` is read every step, in `training_step`",
        ),
        # Never emptied: the values would stay on the TPU between epochs.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.history.append(loss.item())\n"
            "        return loss\n",
            applicability=Applicability.DISPLAY_ONLY,
            message="is not emptied when the train epoch ends",
        ),
        # Used as a size: only the display-only suggestion.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        n = int(batch.sum().item())\n"
            "        return self(batch[:n])\n",
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + "        n = int(batch.sum())\n"
            "        return self(batch[:n])\n",
        ),
        # A helper called from a step method is hot too.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.shared(batch)\n\n"
            "    def shared(self, batch):\n"
            "        n = batch.sum().item()\n"
            "        return self(batch) / n\n",
            line=10,
            message="called from training_step",
        ),
        # A helper object reached through a local bound to the attribute that holds it, or
        # to a getter of the class that returns the attribute: its method runs every step.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Weigher:\n"
            "    def weigh(self, pred, target):\n"
            "        loss = torch.nn.functional.mse_loss(pred, target)\n"
            "        self.last = loss.item()\n"
            "        return loss\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.weigher = Weigher()\n\n"
            "    def _get_weigher(self):\n"
            "        if self.weigher is None:\n"
            "            raise RuntimeError('no weigher')\n"
            "        return self.weigher\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        weigher = self._get_weigher()\n"
            "        return weigher.weigh(self(batch), batch)\n",
            line=8,
            message="called from training_step",
        ),
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Weigher:\n"
            "    def weigh(self, pred, target):\n"
            "        loss = torch.nn.functional.mse_loss(pred, target)\n"
            "        self.last = loss.item()\n"
            "        return loss\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.weigher = Weigher()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        weigher = self.weigher\n"
            "        return weigher.weigh(self(batch), batch)\n",
            line=8,
            message="called from training_step",
        ),
        # forward of any nn.Module runs inside the step.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        longest = lengths.max().item()\n"
            "        return x[:, :longest]\n",
            line=7,
        ),
        # A tensor created on the device is synced.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.rand(1, device=self.device).item() < 0.5:\n"
            "            batch = batch.flip(0)\n"
            "        return self(batch)\n",
        ),
        # Returned metrics dictionaries are synced too.
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        return {"loss": loss, "value": loss.item()}\n',
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_method_call(node, "item"):
            return
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        receiver = node.func.value  # type: ignore[union-attr]
        if not ctx.value_kind(receiver).may_be_device:
            return
        if logged_value(ctx, node) or "rare" in ctx.guards(node):
            return
        if in_exception_path(ctx, node):
            return  # `raise ValueError(f"... {t.max().item()}")`: read only on failure
        function = ctx.function
        if function is not None and function.root_hook == OPTIMIZER_STEP and not self.preview_mode:
            return  # a preview shape (see the docstring): optimizers keep counters on the CPU
        where = ctx.hot_reason
        message = (
            f"`{source_of(ctx, node)}` in {where} waits for the TPU and copies the value to the "
            "host every step; keep it a tensor or read it in an epoch-end hook"
        )
        deferral = defer(ctx, node, "item")
        if deferral is None:
            fix = item_fix(ctx, node)
        else:
            fix = deferral.fix
            if deferral.reason is not None:
                message += f" (no fix: {deferral.reason})"
        self.report(
            node,
            message,
            fix=fix,
            replacement=strip_call_suffix(node),
            applicability=Applicability.DISPLAY_ONLY,
            project_dependent=deferral is not None,
        )
