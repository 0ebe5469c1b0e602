"""The rewrites of the rewrite engine (rules/rewrite/): which forms they produce, and, as important,
where they produce none (a wrong fix is worse than no fix). tests/test_rewrites_numeric.py
runs the produced code against the original."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source

HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
STEP = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"


def module(body: str, params: str = "x, mask, y, z", init: str = "") -> str:
    ctor = ""
    if init:
        ctor = f"    def __init__(self):\n        super().__init__()\n        {init}\n\n"
    return (
        HEAD
        + f"class M(nn.Module):\n{ctor}    def forward(self, {params}):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


def step(body: str) -> str:
    return (
        STEP
        + "    def training_step(self, batch, batch_idx):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


def fixes(source: str, codes: str) -> list:
    config = Config.from_mapping({"select": codes.split(",")})
    return [d for d in check_source(source, "m.py", config) if d.code in codes.split(",")]


def fixed(source: str, codes: str) -> str:
    result = fix_source(
        source, "m.py", Config.from_mapping({"select": codes.split(",")}), unsafe=True
    )
    assert result.error is None
    return result.source


# --- where no exact rewrite exists, none is offered -------------------------------------

NO_FIX = [
    ("selection-passed-to-a-module", module("return self.proj(x[mask])\n"), "TPU202"),
    ("selection-kept", module("kept = x[mask]\nreturn torch.cat([kept, kept])\n"), "TPU202"),
    (
        "cross-entropy-reduction-none",
        module("return F.cross_entropy(z[mask], y[mask], reduction='none')\n"),
        "TPU202",
    ),
    (
        "cross-entropy-positional-weight",
        module("return F.cross_entropy(z[mask], y[mask], self.w)\n"),
        "TPU202",
    ),
    (
        "mse-with-weight",
        module("return F.binary_cross_entropy(z[mask], y[mask], weight=x)\n"),
        "TPU202",
    ),
    (
        "loss-module-built-elsewhere",
        module("return self.criterion(z[mask], y[mask])\n"),
        "TPU202",
    ),
    (
        "loss-module-reduction-computed",
        module(
            "return self.ce(z[mask], y[mask])\n", init="self.ce = nn.CrossEntropyLoss(reduction=r)"
        ),
        "TPU202",
    ),
    (
        "random-mask-read-twice",
        module("return x[torch.rand(x.shape) > 0.5].mean()\n"),
        "TPU202",
    ),
    ("sampled-value-written", module("x[mask] = self.sample(y)\nreturn x\n"), "TPU202"),
    ("augmented-write", module("x[mask] += 1\nreturn x\n"), "TPU202"),
    (
        "if-calls-a-module",
        step(
            "loss = self(batch).sum()\nif loss > 1:\n    loss = self.rescale(loss)\nreturn loss\n"
        ),
        "TPU104",
    ),
    (
        "if-returns",
        step("loss = self(batch).sum()\nif torch.isnan(loss):\n    return None\nreturn loss\n"),
        "TPU104",
    ),
    (
        "if-elif",
        step(
            "loss = self(batch).sum()\nif loss > 1:\n    loss = loss / 2\n"
            "elif loss > 0:\n    loss = loss * 2\nreturn loss\n"
        ),
        "TPU104",
    ),
    (
        "if-host-and-tensor-condition",
        step(
            "loss = self(batch).sum()\nif self.training and loss > 1:\n"
            "    loss = loss / 2\nreturn loss\n"
        ),
        "TPU104",
    ),
    (
        "if-assigns-an-unbound-name",
        step("loss = self(batch).sum()\nif loss > 1:\n    scale = 0.5\nreturn loss\n"),
        "TPU104",
    ),
    (
        "if-random-branch",
        step(
            "loss = self(batch).sum()\nif loss > 1:\n    loss = loss * torch.rand(1)\nreturn loss\n"
        ),
        "TPU104",
    ),
    (
        "if-updates-its-own-condition-first",
        step(
            "loss = self(batch).sum()\nscale = 1.0\nif loss > 1:\n    loss = loss / 2\n"
            "    scale = 0.5\nreturn loss * scale\n"
        ),
        "TPU104",
    ),
    (
        # torch.where gives one shape: a slice (swin's unpadding) would raise, a reduction
        # would broadcast back to the full shape.
        "if-slices-the-value",
        step(
            "loss = self(batch).sum()\nx = self(batch)\nif loss > 1:\n    x = x[:, :3]\nreturn x\n"
        ),
        "TPU104",
    ),
    (
        "if-reduces-the-value",
        step(
            "loss = self(batch).sum()\nx = self(batch)\nif loss > 1:\n    x = x.sum()\nreturn x\n"
        ),
        "TPU104",
    ),
    (
        "if-else-of-different-shapes",
        step(
            "loss = self(batch).sum()\nx = self(batch)\nif loss > 1:\n    y = x\n"
            "else:\n    y = x.mean()\nreturn y\n"
        ),
        "TPU104",
    ),
    ("item-as-a-size", step("n = int(batch.sum().item())\nreturn self(batch[:n])\n"), "TPU101"),
    (
        # scvi's MLX training plan: `.item()` of an MLX array has no `.detach()`
        "item-of-an-mlx-array",
        "import lightning as L\nimport mlx.core as mx\n\n\nclass Plan(L.LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        out = self.module(batch)\n        mx.eval(out.loss)\n"
        "        return {'loss': out.loss.item()}\n",
        "TPU101",
    ),
    (
        # lightly's iBOT loss: `loss` already holds the masked tokens only
        "compact-operand-in-a-region",
        module(
            "loss = -(x * y).sum(dim=-1)\nw = z.expand_as(mask)[mask]\nreturn (loss * w).sum()\n"
        ),
        "TPU202",
    ),
    (
        # glass, nemo's MoE: one value per selected row
        "compact-value-written",
        module("vals = y[mask] * 2\nx[mask] = vals\nreturn x\n"),
        "TPU202",
    ),
    ("item-in-a-local", step("v = batch.sum().item()\nreturn self(batch) * v\n"), "TPU101"),
    ("item-formatted", step("self.name = f'{batch.sum().item()}'\nreturn self(batch)\n"), "TPU101"),
    ("print-as-a-value", step("x = self(batch)\nself.p = print(x)\nreturn x\n"), "TPU103"),
    (
        "nonzero-indices-kept",
        module("idx = (y > 0).nonzero()\nreturn x[idx[:, 0]]\n"),
        "TPU201",
    ),
    (
        "nonzero-tuple-used-otherwise",
        module("idx = (y > 0).nonzero(as_tuple=True)\nreturn x[idx] + idx[0]\n"),
        "TPU201",
    ),
    ("unique-without-a-class-count", module("return x * len(torch.unique(y))\n"), "TPU201"),
    (
        # nemo's contrastive loss: the bound selection is reshaped later, in a nested block
        "bound-selection-used-again-in-a-branch",
        module(
            "out = x[mask]\nif self.group:\n    n = out.shape[0]\n"
            "    out = out.reshape(-1, 2)\nreturn out\n"
        ),
        "TPU202",
    ),
    (
        "bound-selection-rebound-in-a-branch",
        module("sel = x[mask]\nif self.flag:\n    sel = y\nreturn sel.sum()\n"),
        "TPU202",
    ),
    (
        "bound-selection-read-by-a-non-reduction",
        module("sel = x[mask]\nloss = sel.sum()\nreturn loss, self.head(sel)\n"),
        "TPU202",
    ),
    ("unique-values-kept", module("return torch.unique(y, return_counts=True)\n"), "TPU201"),
]


@pytest.mark.parametrize(("source", "codes"), [c[1:] for c in NO_FIX], ids=[c[0] for c in NO_FIX])
def test_no_rewrite_where_none_is_exact(source: str, codes: str) -> None:
    found = fixes(source, codes)
    assert found, "the rule should still report it"
    offered = [
        d for d in found if d.fix is not None and d.fix.applicability.value != "display-only"
    ]
    assert not offered, [(d.code, d.fix.message) for d in offered]


# --- the forms -------------------------------------------------------------------------


def test_the_file_s_torch_and_functional_aliases_are_used() -> None:
    source = (
        "import torch as th\nfrom torch import nn\nfrom torch.nn import functional as fn\n\n\n"
        "class M(nn.Module):\n    def forward(self, p, t, valid):\n"
        "        return fn.mse_loss(p[valid], t[valid], reduction='sum')\n"
    )
    out = fixed(source, "TPU202")
    assert "return th.where(valid.reshape(" in out
    assert 'fn.mse_loss(p, t, reduction="none")' in out
    assert "import torch\n" not in out


def test_torch_is_imported_when_the_file_has_no_import_of_it() -> None:
    source = (
        "from torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x[x > 0].sum()\n"
    )
    out = fixed(source, "TPU202")
    assert out.startswith("from torch import nn\nimport torch\n")


def test_a_mean_inside_an_expression_keeps_its_precedence() -> None:
    out = fixed(module("return 2 / x[x > 0].mean()\n"), "TPU202")
    assert "return 2 / (torch.where(x > 0, x, 0).sum() / (x > 0).sum())" in out


def test_the_mask_is_not_widened_when_it_is_computed_from_the_selected_tensor() -> None:
    out = fixed(module("t = y.mean()\nreturn x[x >= t].mean() + y[mask].sum()\n"), "TPU202")
    assert "torch.where(x >= t, x, 0).sum() / (x >= t).sum()" in out
    assert "torch.where(mask.reshape(mask.shape + (1,) * (y.dim() - mask.dim())), y, 0)" in out


def test_a_mask_from_a_rebound_tensor_is_widened() -> None:
    out = fixed(module("m2 = x > 0\nx = x.flatten(1)\nreturn x[m2].sum()\n"), "TPU202")
    assert "m2.reshape(m2.shape + (1,) * (x.dim() - m2.dim()))" in out


def test_cross_entropy_takes_the_permuted_tensor_back() -> None:
    out = fixed(module("return F.cross_entropy(z.permute(0, 2, 3, 1)[mask], y[mask])\n"), "TPU202")
    assert "F.cross_entropy(z, torch.where(mask, y, -100))" in out
    other_order = fixed(
        module("return F.cross_entropy(z.permute(0, 3, 1, 2)[mask], y[mask])\n"), "TPU202"
    )
    assert "z.permute(0, 3, 1, 2).movedim(-1, 1)" in other_order


def test_keyword_input_and_target() -> None:
    out = fixed(module("return F.nll_loss(input=z[mask], target=y[mask])\n"), "TPU202")
    assert "F.nll_loss(input=z.movedim(-1, 1), target=torch.where(mask, y, -100))" in out


def test_bce_module_with_pos_weight_reads_it_from_the_module() -> None:
    out = fixed(
        module(
            "return self.bce(z[mask], y[mask])\n",
            init="self.bce = nn.BCEWithLogitsLoss(pos_weight=torch.ones(3))",
        ),
        "TPU202",
    )
    assert (
        'F.binary_cross_entropy_with_logits(z, y, pos_weight=self.bce.pos_weight, reduction="none")'
        in out
    )


def test_a_selection_read_in_a_write_carries_the_write_s_fix() -> None:
    source = module("x[mask] = y[mask] * 2\nreturn x\n")
    found = fixes(source, "TPU202")
    # One statement, one finding (issue 21): the read is a related place of the write.
    assert len(found) == 1 and found[0].related
    assert found[0].fix is not None and "masked" in found[0].message + found[0].fix.message


def test_titles_state_the_conditions() -> None:
    found = fixes(module("return scores[mask].max()\n", params="scores, mask"), "TPU202")
    title = found[0].fix.message
    assert "`mask` is a bool mask" in title and "non-empty selection" in title
    # forward's unannotated parameters are tensors; a helper's may be numpy arrays.
    assert "a torch tensor" not in title
    helper = (
        "import torch\nfrom torch import nn\n\n\n"
        "def top(scores, mask):\n    return scores[mask].max()\n\n\n"
        "class M(nn.Module):\n    def forward(self, x, m):\n        return top(x, m)\n"
    )
    title = fixes(helper, "TPU202")[0].fix.message
    assert "`scores` a torch tensor" in title


def test_every_rewrite_parses_and_a_second_run_changes_nothing() -> None:
    source = module(
        """\
        a = x[mask].sum() + x[x > 0].max() + len(y[mask])
        b = F.cross_entropy(z[mask], y[mask]) + F.l1_loss(x[mask], z[mask])
        x[mask] = 0
        x[mask] = z[mask] / y[mask]
        return a + b
        """
    )
    once = fixed(source, "TPU201,TPU202")
    cst.parse_module(once)
    assert fixed(once, "TPU201,TPU202") == once


def test_a_bound_selection_read_by_its_own_rebinding() -> None:
    out = fixed(
        module("sel = x[mask]\na = sel.sum()\nsel = sel.mean() + 1\nreturn a + sel\n"), "TPU202"
    )
    assert "sel = x[mask]" not in out
    assert "a = torch.where(" in out and "sel = (torch.where(" in out
