"""The TPU1xx/TPU2xx rewrites compute what the original computed: each case is a small
module, fixed with `--unsafe-fixes`, and both versions run on the same random tensors (torch on
CPU) with their values and gradients compared. Cases where a rewrite is exact only under a
condition (empty selections, NaN outside the mask) check that condition's two sides."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import fix_source

torch = pytest.importorskip("torch")

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"


@dataclass
class Case:
    id: str
    body: str  # forward's body; returns a tensor
    inputs: dict[str, Any]  # name -> tensor (float tensors get gradients)
    expected: str  # a line the fixed source must contain
    init: str = ""  # __init__ body after super().__init__()
    codes: tuple[str, ...] = ("TPU2",)
    nan_equal: bool = False
    constants: tuple[str, ...] = ()  # float inputs without gradients (class weights)


def _source(case: Case) -> str:
    params = ", ".join(case.inputs)
    init = ""
    if case.init:
        init = (
            "    def __init__(self):\n        super().__init__()\n"
            + textwrap.indent(textwrap.dedent(case.init), "        ")
            + "\n"
        )
    body = textwrap.indent(textwrap.dedent(case.body), "        ")
    return HEADER + f"class M(nn.Module):\n{init}    def forward(self, {params}):\n{body}"


def _run(
    source: str, inputs: dict[str, Any], constants: tuple[str, ...] = ()
) -> tuple[Any, dict[str, Any]]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<case>", "exec"), namespace)
    torch.manual_seed(0)
    module = namespace["M"]()
    args = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor):
            value = value.clone()
            if value.is_floating_point() and name not in constants:
                value.requires_grad_(True)
        args[name] = value
    out = module(**args)
    grads = {}
    if isinstance(out, torch.Tensor) and out.requires_grad:
        out.sum().backward()
        grads = {
            n: a.grad for n, a in args.items() if isinstance(a, torch.Tensor) and a.grad is not None
        }
    return out, grads


def _same(a: Any, b: Any, nan_equal: bool) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        a, b = torch.as_tensor(a).detach().double(), torch.as_tensor(b).detach().double()
        return a.shape == b.shape and torch.allclose(
            a, b, rtol=1e-5, atol=1e-6, equal_nan=nan_equal
        )
    return a == b


g = torch.Generator().manual_seed(1)


def rand(*shape: int) -> Any:
    return torch.randn(*shape, generator=g)


def mask(*shape: int, p: float = 0.6) -> Any:
    return torch.rand(*shape, generator=g) < p


def labels(*shape: int, classes: int = 5) -> Any:
    return torch.randint(0, classes, shape, generator=g)


CASES = [
    Case(
        "sum-mean-max-min",
        """\
        a = x[x > 0.2].sum() + x[x > 0.2].mean()
        return a + x[x < 1].max() - x[x > -1].min()
        """,
        {"x": rand(6, 4)},
        "a = torch.where(x > 0.2, x, 0).sum() + (torch.where(x > 0.2, x, 0).sum() / "
        "(x > 0.2).sum())",
    ),
    Case(
        "widened-mask-mean-and-count",
        "return x[mask].mean() * len(x[mask]) + x[mask].numel()\n",
        {"x": rand(6, 3), "mask": mask(6)},
        "torch.where(mask.reshape(mask.shape + (1,) * (x.dim() - mask.dim())), x, 0).sum()",
    ),
    Case(
        "elementwise-region",
        "valid = target >= 0\nreturn (pred[valid] - target[valid]).abs().mean()\n",
        {"pred": rand(8), "target": rand(8)},
        "return torch.where(valid, (pred - target).abs(), 0).sum() / valid.sum()",
    ),
    Case(
        "per-sample-loss",
        """\
        labeled = y >= 0
        loss = F.cross_entropy(z, y.clamp(min=0), reduction="none")
        return loss[labeled].mean()
        """,
        {"z": rand(10, 5), "y": labels(10) - 1},
        "return torch.where(labeled, loss, 0).sum() / labeled.sum()",
    ),
    Case(
        "cross-entropy-permuted",
        """\
        valid = y != 4
        return F.cross_entropy(z.permute(0, 2, 3, 1)[valid], y[valid], label_smoothing=0.1)
        """,
        {"z": rand(2, 5, 3, 4), "y": labels(2, 3, 4)},
        "return F.cross_entropy(z, torch.where(valid, y, -100), label_smoothing=0.1)",
    ),
    Case(
        "cross-entropy-weight-ignore-index",
        "return F.cross_entropy(z[mask], y[mask], weight=w, ignore_index=2, reduction='sum')\n",
        {"z": rand(9, 5), "y": labels(9), "mask": mask(9), "w": torch.rand(5, generator=g)},
        "return F.cross_entropy(z.movedim(-1, 1), torch.where(mask, y, 2), weight=w, "
        "ignore_index=2, reduction='sum')",
        constants=("w",),
    ),
    Case(
        "cross-entropy-tokens",
        "return F.cross_entropy(z[mask], y[mask])\n",
        {"z": rand(2, 6, 5), "y": labels(2, 6), "mask": mask(2, 6)},
        "return F.cross_entropy(z.movedim(-1, 1), torch.where(mask, y, -100))",
    ),
    Case(
        "nll-module",
        "rows = F.log_softmax(z, -1).flatten(0, -2)\n"
        "return self.nll(rows[mask.flatten()], y.flatten()[mask.flatten()])\n",
        {"z": rand(3, 4, 5), "y": labels(3, 4), "mask": mask(3, 4)},
        "return self.nll(rows, torch.where(mask.flatten(), y.flatten(), -100))",
        init="self.nll = nn.NLLLoss()",
    ),
    Case(
        "cross-entropy-module-ignore-index",
        "return self.ce(z[y != 0], y[y != 0])\n",
        {"z": rand(12, 5), "y": labels(12)},
        "return self.ce(z.movedim(-1, 1), torch.where(y != 0, y, 0))",
        init="self.ce = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.2)",
    ),
    Case(
        "smooth-l1-module",
        "near = t < 0.5\nreturn self.l1(p[near], t[near])\n",
        {"p": rand(4, 5), "t": rand(4, 5)},
        'return torch.where(near, F.smooth_l1_loss(p, t, beta=0.5, reduction="none"), 0)'
        ".sum() / near.sum()",
        init="self.l1 = nn.SmoothL1Loss(beta=0.5)",
    ),
    Case(
        "bce-with-logits-widened",
        "return F.binary_cross_entropy_with_logits(p[mask], t[mask], reduction='sum')\n",
        {"p": rand(5, 3), "t": torch.rand(5, 3, generator=g), "mask": mask(5)},
        "return torch.where(mask.reshape(mask.shape + (1,) * (p.dim() - mask.dim())), "
        'F.binary_cross_entropy_with_logits(p, t, reduction="none"), 0).sum()',
    ),
    Case(
        "mse-mean-widened",
        "return F.mse_loss(p[mask], t[mask])\n",
        {"p": rand(5, 3), "t": rand(5, 3), "mask": mask(5)},
        "(mask.sum() * (p.numel() // mask.numel()))",
    ),
    Case(
        "masked-fill-widened",
        "y = x * 1\ny[mask] = -1.5\nreturn y\n",
        {"x": rand(4, 3, 2), "mask": mask(4, 3)},
        "y.masked_fill_(mask.reshape(mask.shape + (1,) * (y.dim() - mask.dim())), -1.5)",
    ),
    Case(
        "write-expression",
        "out = x * 1\nseen = c > 0\nout[seen] = x[seen] / c[seen]\nreturn out\n",
        {"x": rand(7), "c": torch.randint(0, 3, (7,), generator=g).float()},
        "out.copy_(torch.where(seen, x / torch.where(seen, c, 1), out))",
    ),
    Case(
        "nonzero-count-and-index",
        """\
        n = len((y > 1).nonzero())
        idx = (y > 1).nonzero(as_tuple=True)
        return x[idx].sum() / n + x[torch.nonzero(y > 2, as_tuple=True)].sum()
        """,
        {"x": rand(6, 2), "y": labels(6)},
        "n = torch.count_nonzero(y > 1)",
        codes=("TPU201", "TPU202"),
    ),
    Case(
        "unique-count",
        "return x.sum() * len(torch.unique(y))\n",
        {"x": rand(3), "y": labels(10), "num_classes": 5},
        "F.one_hot",
        codes=("TPU201",),
    ),
    Case(
        "if-to-where",
        """\
        loss = (x ** 2).mean()
        if loss > 0.5:
            loss = loss / 10
        scale = 1.0
        if not torch.isfinite(loss).all():
            scale = 0.0
        else:
            scale = 2.0
        if loss < 100:
            loss += 1
        return loss * scale
        """,
        {"x": rand(6)},
        "loss = torch.where(loss > 0.5, loss / 10, loss)",
        codes=("TPU104",),
    ),
    Case(
        "selections-bound-to-locals-then-a-loss",
        """\
        keep = y_true != -1
        y_pred = torch.sigmoid(z)
        y_pred = y_pred[keep]
        y_true = y_true[keep]
        return F.binary_cross_entropy(y_pred, y_true.type(torch.float))
        """,
        {"z": rand(4, 6), "y_true": torch.randint(-1, 2, (4, 6), generator=g)},
        "return torch.where(keep, F.binary_cross_entropy(torch.where(keep, y_pred, 1), "
        'torch.where(keep, y_true, 1).type(torch.float), reduction="none"), 0).sum() / keep.sum()',
    ),
    Case(
        "selections-bound-then-an-accuracy-and-two-uses",
        """\
        preds = z.argmax(-1)
        preds = preds[y != 4]
        refs = y[y != 4]
        sim = x[y != 4]
        a = preds.eq(refs).float().mean()
        return a + torch.log(sim.abs() + 1e-3).mean() + F.relu(0.5 - sim).sum()
        """,
        {"z": rand(9, 5), "y": labels(9), "x": rand(9)},
        "a = torch.where(y != 4, preds.eq(y).float(), 0).sum() / (y != 4).sum()",
    ),
    Case(
        "slices-around-the-mask",
        "return x[:, valid].sum() + x[..., keep].mean() + x[mask, :].amax()\n",
        {"x": rand(3, 4, 5), "valid": mask(4), "keep": mask(5), "mask": mask(3)},
        "torch.where(valid.reshape(valid.shape + (1,) * (x.dim() - 1 - valid.dim())), x, 0)",
    ),
    Case(
        "write-a-scalar-expression-and-a-row-value",
        """\
        w = torch.ones_like(y).float()
        one = (y == 1).float().mean()
        w[y == 0] = one
        w[y == 1] = 1 - one
        h = x * 1
        h[valid] = self.token.to(h.dtype)
        return (w * 2).sum() + h.sum()
        """,
        {"y": labels(6, classes=2), "x": rand(6, 3), "valid": mask(6)},
        "w.masked_fill_(y == 1, 1 - one)",
        init="self.token = nn.Parameter(torch.arange(3.0))",
    ),
    Case(
        "empty-selection-mean-is-nan-in-both",
        "return x[x > 100].mean() + x[mask].mean()\n",
        {"x": rand(5), "mask": torch.zeros(5, dtype=torch.bool)},
        "torch.where(x > 100, x, 0).sum() / (x > 100).sum()",
        nan_equal=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rewrite_computes_the_same(case: Case) -> None:
    source = _source(case)
    config = Config.from_mapping({"select": list(case.codes)})
    result = fix_source(source, "model.py", config, unsafe=True)
    assert result.error is None
    assert case.expected in result.source, result.source
    before, before_grads = _run(source, case.inputs, case.constants)
    after, after_grads = _run(result.source, case.inputs, case.constants)
    assert _same(before, after, case.nan_equal), (before, after, result.source)
    assert before_grads.keys() == after_grads.keys()
    for name, grad in before_grads.items():
        assert _same(grad, after_grads[name], case.nan_equal), (name, grad, after_grads[name])


def test_max_of_an_empty_selection_is_the_stated_difference() -> None:
    """The rule page says: `x[m].max()` raises on an empty selection, the rewrite gives -inf."""
    case = Case("max-empty", "return x[x > 100].max()\n", {"x": rand(4)}, "-torch.inf")
    source = _source(case)
    fixed = fix_source(source, "model.py", Config.from_mapping({"select": ["TPU202"]}), unsafe=True)
    with pytest.raises(RuntimeError):
        _run(source, case.inputs)
    value, _ = _run(fixed.source, case.inputs)
    assert value.item() == float("-inf")


def test_values_tested_for_nan_are_guarded_inside_the_expression() -> None:
    """`t[~torch.isnan(t)]` inside an expression: the NaN outside the mask would reach the
    gradients through the outer `torch.where`, so `t` is masked first; values and gradients
    then match the original exactly."""
    case = Case(
        "nan-outside",
        "valid = ~torch.isnan(t)\nreturn (p[valid] - t[valid]).abs().mean()\n",
        {"p": rand(6), "t": torch.tensor([0.1, float("nan"), 0.3, 0.2, float("nan"), 1.0])},
        "torch.where(valid, (p - torch.where(valid, t, 1)).abs(), 0)",
    )
    source = _source(case)
    fixed = fix_source(source, "model.py", Config.from_mapping({"select": ["TPU202"]}), unsafe=True)
    assert case.expected in fixed.source, fixed.source
    before, before_grads = _run(source, case.inputs)
    after, after_grads = _run(fixed.source, case.inputs)
    assert _same(before, after, False)
    assert _same(before_grads["p"], after_grads["p"], False)
    assert not torch.isnan(after_grads["p"]).any()


def test_nan_outside_the_mask_in_an_unguarded_operand_is_the_stated_condition() -> None:
    """An operand the mask does not test and no divisor: the rewrite assumes it is finite
    outside the mask (the title says so); with a NaN there the value is right, the gradient
    is not."""
    case = Case(
        "nan-unguarded",
        "return (p[valid] * t[valid]).sum()\n",
        {
            "p": rand(4),
            "t": torch.tensor([1.0, float("nan"), 2.0, 3.0]),
            "valid": torch.tensor([True, False, True, True]),
        },
        "(p.dim() - valid.dim())), p * t, 0).sum()",
        constants=("t",),
    )
    source = _source(case)
    fixed = fix_source(source, "model.py", Config.from_mapping({"select": ["TPU202"]}), unsafe=True)
    assert case.expected in fixed.source, fixed.source
    before, before_grads = _run(source, case.inputs, case.constants)
    after, after_grads = _run(fixed.source, case.inputs, case.constants)
    assert _same(before, after, False)
    assert torch.isnan(after_grads["p"]).any() and not torch.isnan(before_grads["p"]).any()
