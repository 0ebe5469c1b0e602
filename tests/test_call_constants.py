"""Branches on a parameter that no call in the project takes (tpulint.analysis.scope
`_call_arguments`): the calls of an autograd Function's `forward` through `Fn.apply(...)`, a
helper's calls of itself made only under its own `if k is not None`, the methods of a class
nothing builds, and the calls of a module whose holders also call its other methods."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import project_model as project
from tests.helpers import scope_reason as reason_at

# A sparse normaliser: a helper with an optional partial sort over `k` largest values, run
# through an autograd Function, a public function and a module wrapper nothing builds.
_SPARSE = """\
import lightning as L
import torch
from torch import nn
from torch.autograd import Function


def _threshold(x, dim=-1, k=None):
    if k is None or k >= x.shape[dim]:
        top, _ = torch.sort(x, dim=dim, descending=True)
    else:
        top, _ = torch.topk(x, k=k, dim=dim)
    size = (top > 0).sum(dim=dim, keepdim=True)
    tau = top.gather(dim, size - 1)
    if k is not None and k < x.shape[dim]:
        unsolved = (size == k).squeeze(dim)
        if torch.any(unsolved):
            tau_, size_ = _threshold(x[unsolved], dim=-1, k=2 * k)
            tau[unsolved] = tau_
    return tau, size


class ThresholdFn(Function):
    @classmethod
    def forward(cls, ctx, x, dim=-1, k=None):
        tau, size = _threshold(x, dim=dim, k=k)
        ctx.save_for_backward(size)
        return torch.clamp(x - tau, min=0)

    @classmethod
    def backward(cls, ctx, grad):
        return grad, None, None


def sparse_norm(x, dim=-1, k=None):
    return ThresholdFn.apply(x, dim, k)


class SparseNorm(nn.Module):
    def __init__(self, dim=-1, k=None):
        super().__init__()
        self.dim = dim
        self.k = k

    def forward(self, x):
        return sparse_norm(x, dim=self.dim, k=self.k)


class Model(L.LightningModule):
    def training_step(self, batch, i):
        scores = self(batch)
        return sparse_norm(scores, dim=-1).sum()
"""


def test_a_parameter_no_call_takes_through_an_autograd_function(tmp_path: Path) -> None:
    """`sparse_norm(scores, dim=-1)` leaves `k` None; `ThresholdFn.apply(x, dim, k)` passes
    it to `forward(cls, ctx, x, dim, k)`, which passes it on; the helper's own call with `k=2
    * k` sits under `if k is not None`, and the module wrapper is built nowhere: the branch
    never runs."""
    model = project(tmp_path, {"m.py": _SPARSE})
    assert reason_at(model, tmp_path, "m.py", "torch.any(unsolved)") is not None
    assert reason_at(model, tmp_path, "m.py", "x[unsolved]") is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # one call passes k
        ("sparse_norm(scores, dim=-1)", "sparse_norm(scores, dim=-1, k=3)"),
        # a spread: what it passes is not seen
        ("sparse_norm(scores, dim=-1)", "sparse_norm(scores, **self.options)"),
        # the Function's `apply` handed on as a value
        ("def sparse_norm(x", "NORMS = {'sparse': ThresholdFn.apply}\n\n\ndef sparse_norm(x"),
        # the public function handed on as a value
        ("class Model(", "NORMS = {'sparse': sparse_norm}\n\n\nclass Model("),
        # the wrapper built with k
        (
            "    def training_step(",
            "    def __init__(self):\n        super().__init__()\n"
            "        self.norm = SparseNorm(k=4)\n\n    def training_step(",
        ),
        # the helper called where no call list is kept
        ("class Model(", "print(_threshold(torch.ones(3), k=2))\n\n\nclass Model("),
    ],
)
def test_a_call_that_may_pass_the_parameter_keeps_the_sparse_branch(
    tmp_path: Path, old: str, new: str
) -> None:
    assert old in _SPARSE
    model = project(tmp_path, {"m.py": _SPARSE.replace(old, new, 1)})
    assert reason_at(model, tmp_path, "m.py", "torch.any(unsolved)") is None


def test_a_package_export_keeps_the_branch(tmp_path: Path) -> None:
    """A package's `__init__` exports the function: its users call it as they like."""
    model = project(
        tmp_path,
        {
            "pkg/__init__.py": "from .m import sparse_norm\n",
            "pkg/m.py": _SPARSE,
        },
    )
    assert reason_at(model, tmp_path, "pkg/m.py", "torch.any(unsolved)") is None


# A module whose `forward` fills in `L` when it is left out; its holder also calls its other
# methods, asks `hasattr` of it and collects its parameters.
_KERNEL = """\
import lightning as L
import torch
from torch import nn


class Kernel(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("length", torch.tensor(n))

    def forward(self, state=None, L=None, stream=True):
        if L is None:
            L = round(self.length.item())
        if not stream:
            state = state.unique()
        return torch.ones(L), state

    def step(self, u, state):
        return u + state

    def default_state(self, n):
        return torch.zeros(n)


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.kernel = Kernel(n)

    def forward(self, x):
        k, _ = self.kernel(L=x.size(-1))
        if hasattr(self.kernel, "step"):
            x = self.kernel.step(x, self.kernel.default_state(x.size(0)))
        return x * k

    def weights(self):
        return list(self.kernel.parameters())


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def training_step(self, batch, i):
        return self.block(batch).sum()
"""


def test_a_module_whose_holder_calls_its_methods_is_still_decided(tmp_path: Path) -> None:
    """`self.kernel(L=...)` always passes `L` and never `stream`; `self.kernel.step(...)`,
    `.parameters()` and `hasattr(self.kernel, ...)` run no `forward`."""
    model = project(tmp_path, {"m.py": _KERNEL})
    assert reason_at(model, tmp_path, "m.py", "self.length.item()") is not None
    assert reason_at(model, tmp_path, "m.py", "state.unique()") is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a method of the kernel runs its own forward with arguments the model does not see
        ("        return u + state", "        return self(state)[0] + u"),
        # a method the kernel does not define, of an outside base class
        ("class Kernel(nn.Module):", "class Kernel(ExternalKernel):"),
        # the holder hands the kernel on
        ("        return list(self.kernel.parameters())", "        return wrap(self.kernel)"),
        # one call passes stream=False and leaves L out
        ("k, _ = self.kernel(L=x.size(-1))", "k, _ = self.kernel(stream=False)"),
    ],
)
def test_a_module_whose_forward_may_run_otherwise_keeps_the_branch(
    tmp_path: Path, old: str, new: str
) -> None:
    assert old in _KERNEL
    text = _KERNEL.replace(old, new, 1)
    if "ExternalKernel" in new:
        text = "from extlib import ExternalKernel\n" + text
        text = text.replace("self.kernel.step(", "self.kernel.reset(")
    model = project(tmp_path, {"m.py": text})
    assert reason_at(model, tmp_path, "m.py", "self.length.item()") is None
    assert reason_at(model, tmp_path, "m.py", "state.unique()") is None


# A codebook whose dead-code expiry and orthogonal loss are off unless the construction
# turns them on (`threshold=0`, `weight=0.0`, `active=False`).
_CODEBOOK = """\
import lightning as L
import torch
from torch import nn


class Codebook(nn.Module):
    def __init__(self, dim, size=512, threshold=0, weight=0.0, active=False):
        super().__init__()
        self.threshold = threshold
        self.weight = weight
        self.active = active
        self.register_buffer("counts", torch.zeros(size))

    def expire(self, x):
        if self.threshold == 0:
            return x
        dead = self.counts < self.threshold
        if not torch.any(dead):
            return x
        return x * 2

    def forward(self, x):
        x = self.expire(x)
        if self.weight > 0 and self.active:
            x = x[torch.unique(x.argmax(-1))]
        if 0 < self.threshold:
            x = x[x > 0]
        return x


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.codebook = Codebook(64, size=256)

    def training_step(self, batch, i):
        return self.codebook(self(batch)).sum()
"""


def test_a_constructor_parameter_kept_on_self_decides_a_number_test(tmp_path: Path) -> None:
    """`self.threshold = threshold` (default 0) and `self.weight = weight` (0.0), stored only
    in `__init__`; the only construction passes neither: `self.threshold == 0` is true, `0 <
    self.threshold` and `self.weight > 0` false."""
    model = project(tmp_path, {"m.py": _CODEBOOK})
    assert reason_at(model, tmp_path, "m.py", "torch.any(dead)") is not None
    assert reason_at(model, tmp_path, "m.py", "torch.unique(") is not None
    assert reason_at(model, tmp_path, "m.py", "x[x > 0]") is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the construction passes a threshold and a weight
        ("Codebook(64, size=256)", "Codebook(64, threshold=2, weight=0.5, active=True)"),
        # a spread: what it passes is not seen
        ("Codebook(64, size=256)", "Codebook(64, **self.options)"),
        # another method stores something else
        (
            "    def forward(self, x):\n",
            "    def tune(self, t):\n        self.threshold = t\n        self.weight = t\n\n"
            "    def forward(self, x):\n",
        ),
        # code outside the class sets the attributes
        (
            "    def training_step(",
            "    def on_fit_start(self):\n        self.codebook.threshold = 2\n"
            "        self.codebook.weight = 1.0\n\n    def training_step(",
        ),
        # the class is handed on by name: built where the arguments are not seen
        ("class Model(", "CODEBOOKS = {'vq': Codebook}\n\n\nclass Model("),
    ],
)
def test_a_construction_that_may_pass_a_number_keeps_the_branch(
    tmp_path: Path, old: str, new: str
) -> None:
    assert old in _CODEBOOK
    model = project(tmp_path, {"m.py": _CODEBOOK.replace(old, new, 1)})
    assert reason_at(model, tmp_path, "m.py", "torch.any(dead)") is None
    assert reason_at(model, tmp_path, "m.py", "x[x > 0]") is None


def test_a_package_export_keeps_the_number_test(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {"pkg/__init__.py": "from .m import Codebook\n", "pkg/m.py": _CODEBOOK},
    )
    assert reason_at(model, tmp_path, "pkg/m.py", "torch.any(dead)") is None


_WALK = """\
import lightning as L
import torch


def refine(x, deep=False):
    if deep:
        keep = x[x > 0]
        x = refine(keep, deep=deep)
    return x


class Model(L.LightningModule):
    def training_step(self, batch, i):
        return refine(self(batch)).sum()
"""


@pytest.mark.parametrize("call", ["refine(self(batch))", "refine(self(batch), deep=True)"])
def test_a_flag_only_its_own_calls_pass_on(tmp_path: Path, call: str) -> None:
    """`refine(keep, deep=deep)` under `if deep:` runs only once another call passed `deep`
    true: with none, the branch never runs."""
    model = project(tmp_path, {"m.py": _WALK.replace("refine(self(batch))", call)})
    reason = reason_at(model, tmp_path, "m.py", "x[x > 0]")
    assert (reason is not None) is (call == "refine(self(batch))")
