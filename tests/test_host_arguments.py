"""Parameters every seen call passes host data (issue 21): what the project model says a
helper's parameter holds, and when it cannot say (the helper is handed on as a value, so some
of its calls are not seen); a library object the helper builds itself applied to host copies."""

from __future__ import annotations

import ast
import textwrap

from tpulint.analysis.project import build_model
from tpulint.analysis.summary import _value_references

_PANELS = textwrap.dedent(
    """
    import torch
    from torchmetrics import PearsonCorrCoef


    def caption(pred, real):
        corr = PearsonCorrCoef()
        return corr(pred.view(-1), real.view(-1))


    def mixed(pred, real):
        corr = PearsonCorrCoef()
        return corr(pred, real)


    def handed(pred):
        return pred.sum()


    def handed_elsewhere(pred):
        return pred.sum()


    def run(pred, real):
        a = caption(pred.cpu(), real.cpu())
        b = mixed(pred.cpu(), real.cpu())
        c = mixed(torch.ones(3, device="xla"), real)
        d = handed(pred.cpu())
        e = handed_elsewhere(pred.cpu())
        return a, b, c, d, e


    SCORERS = [handed]
    """
)


_HOOKS = (
    "from pkg import panels\nfrom pkg.panels import caption as cap\n\n"
    "HOOKS = [panels.handed_elsewhere]\n"
)


def _model(hooks: str = _HOOKS):
    return build_model(
        [("/p/pkg/__init__.py", ""), ("/p/pkg/panels.py", _PANELS), ("/p/pkg/hooks.py", hooks)]
    )


def test_value_references_are_functions_handed_on() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            import ops
            from lib import score as s, plain


            def f(x):
                return x


            class M:
                def hook(self, x):
                    return x

                def run(self, xs):
                    f(xs)
                    self.hook(xs)
                    plain(xs)
                    ops.norm(xs)
                    return map(f, xs), register(self.hook), s, ops.scale
            """
        )
    )
    assert _value_references(tree) == [".hook", "@ops.scale", "@s", "f"]


def test_a_parameter_every_call_passes_a_host_copy_is_on_the_cpu() -> None:
    model = _model()
    keys = {fn.summary.name: gkey for gkey, fn in model.functions.items()}
    passed = model.param_value(keys["caption"], 1)
    assert passed is not None and passed.kind == "cpu"
    # a metric the helper builds, of its parameters: where they turn out to be
    returned = model.return_value(keys["caption"])
    assert returned.kind == "unknown" and returned.params == frozenset({0, 1})
    # one call passes a device tensor: a device tensor
    mixed = model.param_value(keys["mixed"], 0)
    assert mixed is not None and mixed.kind == "device"
    # handed on as a value (`SCORERS = [handed]`): its calls are not all seen
    assert model.param_value(keys["handed"], 0) is None
    # ... or by another file, through the module it imports (an import alone hands on nothing)
    assert model.param_value(keys["handed_elsewhere"], 0) is None
    kept = _model("from pkg import panels\n\nHOOKS = [panels.caption]\n")
    assert kept.param_value(keys["handed_elsewhere"], 0).kind == "cpu"
    assert kept.param_value(keys["caption"], 0) is None
