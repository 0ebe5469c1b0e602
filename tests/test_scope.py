"""The default scope (tpulint.analysis.scope): which code trains on a TPU. Each test builds a
small made-up project and asks why a line is (or is not) outside the scope; the multi-file
behaviour through the real runner is in tests/projects/tpu_scope (a snapshot)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import project_model as project
from tests.helpers import scope_reason as reason_at
from tpulint.analysis.project import ProjectModel

# --- branches that cannot run on XLA ---------------------------------------------------------

MODULE_HEAD = """\
import lightning as L
import torch


"""


@pytest.mark.parametrize(
    ("condition", "where"),
    [
        ("torch.cuda.is_available()", "under"),
        ("x.is_cuda", "under"),
        ('self.device.type == "cuda"', "under"),
        ('str(x.device).startswith("cuda")', "under"),
        ('"cuda" in str(x.device)', "under"),
        ("torch.cuda.device_count() > 1", "under"),
        ("self.trainer.num_gpus > 0", "under"),
        ("self.use_gpu", "under"),
        ("isinstance(self.trainer.accelerator, CUDAAccelerator)", "under"),
        ("torch.backends.cudnn.is_available() and x.sum() > 0", "under"),
        # Lightning's XLA strategy creates no torch.distributed process group.
        ("torch.distributed.is_initialized()", "under"),
        ("torch.distributed.is_available() and torch.distributed.is_initialized()", "under"),
    ],
)
def test_a_branch_false_on_xla_is_outside(tmp_path: Path, condition: str, where: str) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        if {condition}:
            print(x.item())  # marker
        return x.sum()
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "print(")
    assert reason is not None and reason.startswith(where)
    assert "false on a TPU" in reason


@pytest.mark.parametrize(
    "condition",
    [
        'self.device.type == "xla"',
        "not torch.cuda.is_available()",
        "x.sum() > 0",
        "self.training",
        # a tensor's device may be the host's; the module's own is XLA's in a step
        'batch.device.type == "cpu"',
        "not torch.distributed.is_initialized()",
        "torch.distributed.is_available()",
    ],
)
def test_a_branch_that_may_run_on_xla_stays(tmp_path: Path, condition: str) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        if {condition}:
            print(x.item())
        return x.sum()
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "print(") is None


def test_the_else_of_a_tpu_flag_and_code_after_a_cuda_exit(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
def fused_ok():
    return torch.cuda.is_available() and torch.version.cuda is not None


class Model(L.LightningModule):
    def __init__(self, use_tpu=True):
        super().__init__()
        self.use_fused = torch.cuda.is_available() and torch.__version__ >= "2"

    def training_step(self, batch, i):
        x = self(batch)
        if args.use_tpu:
            y = x
        else:
            y = x.cuda()  # else-branch
        if self.use_fused:
            print(y.item())  # flag-branch
        if fused_ok() and x.sum() != 0:  # and-operand
            pass
        return y.sum()

    def setup_kernels(self):
        if not fused_ok():
            return
        props = torch.cuda.get_device_properties(0)  # after-exit
"""
        },
    )
    assert "in the `else` of `if args.use_tpu`" in reason_at(model, tmp_path, "m.py", "x.cuda()")
    assert "under `if self.use_fused`" in reason_at(model, tmp_path, "m.py", "print(y")
    assert "after `fused_ok() and`" in reason_at(model, tmp_path, "m.py", "x.sum() != 0")
    after = reason_at(model, tmp_path, "m.py", "props =")
    assert after is not None and after.startswith("after `if not fused_ok(): return`")


def test_a_flag_set_by_another_file_is_resolved_across_files(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": """\
                import torch

                def cuda_fp16_autocast_on():
                    return torch.is_autocast_enabled() and torch.cuda.is_available()
            """,
            "pkg/model.py": MODULE_HEAD
            + """\
from pkg.util import cuda_fp16_autocast_on


class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        if cuda_fp16_autocast_on() and x.sum() != 0.0:
            x = x.half()
        return x.sum()
""",
        },
    )
    reason = reason_at(model, tmp_path, "pkg/model.py", "x.sum() != 0.0")
    assert reason is not None and "cuda_fp16_autocast_on()" in reason


def test_a_helper_built_from_a_cuda_autocast_query_decides_a_file_naming_no_device(
    tmp_path: Path,
) -> None:
    """`torch.is_autocast_enabled()` without a device type asks about CUDA autocast only; a
    helper that builds its answer in steps (`on = a`, `on = on and b`) returns that; the
    caller's file names no device at all, and its `and` still short-circuits on a TPU."""
    model = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/amp.py": """\
                import torch

                def half_autocast_on():
                    on = torch.get_autocast_dtype("cpu") == torch.float16
                    on = on and torch.is_autocast_enabled()
                    return on

                def any_autocast_on(kind):
                    return torch.is_autocast_enabled(kind)
            """,
            "pkg/model.py": """\
import lightning as L

from pkg.amp import any_autocast_on, half_autocast_on


class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        scale = x.std()
        if half_autocast_on() and scale != 0.0:
            x = x / scale
        if any_autocast_on("xla") and scale > 1.0:
            x = x * 2
        return x.sum()
""",
        },
    )
    reason = reason_at(model, tmp_path, "pkg/model.py", "scale != 0.0")
    assert reason is not None and "half_autocast_on()" in reason
    assert reason_at(model, tmp_path, "pkg/model.py", "scale > 1.0") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "x / scale") is not None


def test_a_branch_assignment_keeps_a_flag_unknown(tmp_path: Path) -> None:
    """Only a statement of the function's own body replaces what a name held; one in a
    branch may not run, so the name is unknown after it."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
def fast_path(flag):
    ok = torch.cuda.is_available()
    if flag:
        ok = True
    return ok


class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        if fast_path(self.flag) and x.sum() > 0:
            x = x * 2
        return x.sum()
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "x.sum() > 0") is None


def test_a_branch_importing_a_cuda_only_package(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
def merge(layer, delta):
    if layer.weight.dtype == torch.uint8:
        import bitsandbytes as bnb

        layer.weight.cuda()  # marker
    else:
        layer.weight.data += delta
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "layer.weight.cuda()")
    assert reason is not None and "CUDA-only package" in reason
    assert reason_at(model, tmp_path, "m.py", "layer.weight.data") is None


def test_a_function_calling_a_cuda_only_package_cannot_run(tmp_path: Path) -> None:
    """A function whose body calls a CUDA-only package on every run is not TPU code; a
    method calling it through an attribute of a class the project builds is not either."""
    model = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/raster.py": """\
import torch
import tinycudann as tcnn


class GridContext:
    def __init__(self, device):
        self.device = device

    def encode(self, points):
        keep = points[points[:, 0] > 0]  # encode marker
        return tcnn.Encoding(3, {"otype": "Grid"})(keep)
""",
            "pkg/model.py": MODULE_HEAD
            + """\
from pkg.raster import GridContext


class Renderer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = GridContext("cuda")

    def forward(self, points):
        features = self.grid.encode(points)
        features[features < 0] = 0  # forward marker
        return features


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.renderer = Renderer()

    def training_step(self, batch, i):
        return self.renderer(batch).sum()
""",
        },
    )
    reason = reason_at(model, tmp_path, "pkg/raster.py", "points[:, 0] > 0")
    assert reason is not None and "`tinycudann.Encoding`" in reason, reason
    reason = reason_at(model, tmp_path, "pkg/model.py", "features < 0")
    assert reason is not None and "`self.grid.encode`" in reason, reason
    assert "`tinycudann.Encoding`" in reason
    # The step calls the renderer as a module: porting replaces the kernel, and the step is
    # the TPU's again, so it stays (a Lightning hook is judged by its own calls only).
    assert reason_at(model, tmp_path, "pkg/model.py", "self.renderer(batch)") is None


def test_a_guarded_cuda_only_call_keeps_its_function(tmp_path: Path) -> None:
    """A call of a CUDA-only package under a branch, or in a `try` with a fallback, or after
    an early `return`, may not run: the function (and its callers) stay TPU code."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
import nvdiffrast.torch as dr


def guarded(pos, use_raster):
    mask = pos[:, 3] > 0  # guarded marker
    if use_raster:
        return dr.rasterize(pos)
    return pos * mask


def with_fallback(pos):
    mask = pos[:, 2] > 0  # fallback marker
    try:
        out = dr.rasterize(pos)
    except ImportError:
        out = pos * mask
    return out


def unguarded(pos):
    mask = pos[:, 0] > 0  # unguarded marker
    return dr.rasterize(pos * mask)


def returns_early(pos, cheap):
    mask = pos[:, 1] > 0  # early marker
    if cheap:
        return pos * mask
    return dr.rasterize(pos)


class Model(L.LightningModule):
    def training_step(self, batch, i):
        return guarded(batch, False).sum() + with_fallback(batch).sum()
"""
        },
    )
    for marker in ("pos[:, 3] > 0", "pos[:, 2] > 0", "pos[:, 1] > 0"):
        assert reason_at(model, tmp_path, "m.py", marker) is None, marker
    reason = reason_at(model, tmp_path, "m.py", "pos[:, 0] > 0")
    assert reason is not None and "`nvdiffrast.torch.rasterize`" in reason, reason


def test_a_function_on_a_package_with_no_xla_backend(tmp_path: Path) -> None:
    """DGL imports on a TPU VM but its graphs live on the CPU or CUDA only: a model step on
    DGL graphs cannot run on a TPU."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
import dgl


class TreeDecoder(torch.nn.Module):
    def forward(self, graph, scores):
        trees = dgl.unbatch(graph)
        scores[scores < 0.5] = 0.0  # tree marker
        return trees, scores
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "scores < 0.5")
    assert reason is not None and "`dgl.unbatch` (DGL" in reason, reason


def test_a_dgl_step_and_what_only_it_calls_leave_the_scope(tmp_path: Path) -> None:
    """A Lightning step whose batches are DGL graphs cannot run on a TPU (unlike a step whose
    model needs one CUDA kernel, no kernel replaced ports its data): the step, and a helper
    only such steps call, leave the scope; a graph's `num_nodes()` is a Python int."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """import dgl


def hits_at(order, labels, k):
    return labels[order[:k]].sum().item()  # helper marker


class GraphModel(L.LightningModule):
    def encode(self, graph):
        for layer in self.layers:
            graph = layer(graph)
        parts = dgl.unbatch(graph)
        return [p.ndata["h"] for p in parts]

    def training_step(self, batch, i):
        feats = self.encode(batch[0])
        return torch.cat(feats).pow(2).mean()  # step marker

    def validation_step(self, batch, i):
        graph, labels = batch
        feats = torch.cat(self.encode(graph))
        k = min(graph.num_nodes(), 10)
        return hits_at(feats.argsort(), labels, k)
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "pow(2)")
    assert reason is not None and "which calls `dgl.unbatch` (DGL" in reason, reason
    reason = reason_at(model, tmp_path, "m.py", ".item()")
    assert reason is not None and reason.startswith("called only where it cannot run"), reason


CUDA_EXTENSION_FILES = {
    "kern/__init__.py": "",
    "kern/ops.py": """\
import os

from torch.utils.cpp_extension import load, load_inline

here = os.path.dirname(__file__)
march_cuda = None
scan_sources = ["scan.cpp", "scan_kernel.cu"]
scan_cuda = load(name="scan_cuda", sources=[os.path.join(here, p) for p in scan_sources])
host_ops = load(name="host_ops", sources=[os.path.join(here, "host.cpp")])
fused = load_inline(name="fused", cpp_sources="", cuda_sources="__global__ void k() {}")


def init():
    global march_cuda
    march_cuda = load(name="march_cuda", sources=["march.cpp", "march_kernel.cu"])
""",
    "kern/model.py": MODULE_HEAD
    + """\
from kern.ops import host_ops


class Composite(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha, ids):
        from kern.ops import march_cuda

        return march_cuda.composite(alpha, ids)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class Field(torch.nn.Module):
    def sample(self, rays):
        from kern import ops

        pts = ops.scan_cuda.sample(rays)
        return pts[pts[:, 0] > 0]  # sample marker

    def forward(self, rays):
        pts = self.sample(rays)
        dens = pts[pts[:, 1] > 0]  # forward marker
        return Composite.apply(dens, rays)

    def blend(self, alpha, ids):
        weights = Composite.apply(alpha, ids)
        return weights[weights > 0.5]  # blend marker

    def guarded(self, rays):
        if rays.is_cuda:
            from kern import ops

            return ops.scan_cuda.sample(rays)
        return rays[rays[:, 2] > 0]  # fallback marker

    def on_host(self, rays):
        out = host_ops.run(rays)
        return out[out > 0]  # host marker

    def strict(self, rays):
        assert rays.is_cuda and rays.dim() == 2, "the fused kernel needs CUDA"
        return rays[rays[:, 3] > 0]  # strict marker

    def loose(self, rays):
        assert rays.dim() == 2 or rays.is_cuda
        return rays[rays[:, 4] > 0]  # loose marker
""",
}


@pytest.mark.parametrize(
    ("marker", "named"),
    [
        # an op of an extension `load(...)` builds from `.cu` sources, at the top level or in
        # an `init()` that declares the name `global`
        ("pts[:, 0] > 0", "calls `ops.scan_cuda.sample` (a CUDA extension"),
        ("pts[:, 1] > 0", "calls `self.sample`, which calls `ops.scan_cuda.sample`"),
        # an autograd Function whose forward calls one
        ("weights > 0.5", "calls `Composite.apply`, which calls `march_cuda.composite`"),
        # `assert x.is_cuda` (a part of a conjunction) fails on an XLA device
        ("rays[:, 3] > 0", "asserts `rays.is_cuda and rays.dim() == 2`"),
        # a pure-PyTorch fallback, an extension of C++ sources only, an `or` stay
        ("rays[:, 2] > 0", None),
        ("out > 0", None),
        ("rays[:, 4] > 0", None),
    ],
)
def test_project_cuda_extensions_cannot_run_on_xla(
    tmp_path: Path, marker: str, named: str | None
) -> None:
    """The project's own CUDA extensions (torch.utils.cpp_extension `load` of `.cu` sources,
    `load_inline` with `cuda_sources`) take CUDA tensors only: a function that calls one of
    their ops on every run, or asserts a tensor is on CUDA, cannot complete on a TPU."""
    model = project(tmp_path, CUDA_EXTENSION_FILES)
    reason = reason_at(model, tmp_path, "kern/model.py", marker)
    if named is None:
        assert reason is None, reason
    else:
        assert reason is not None and named in reason, reason


def test_a_setup_script_cuda_extension_cannot_run_on_xla(tmp_path: Path) -> None:
    """A module a setup script builds with `CUDAExtension(...)` is the project's CUDA code."""
    model = project(
        tmp_path,
        {
            "setup.py": """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="voxels",
    ext_modules=[CUDAExtension("voxels._C", ["voxels/grid.cpp", "voxels/grid_kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
""",
            "voxels/__init__.py": "",
            "voxels/grid.py": MODULE_HEAD
            + """\
from voxels import _C


def trilerp(grid, pts):
    out = _C.trilerp(grid, pts)
    return out[out > 0]  # grid marker
""",
        },
    )
    reason = reason_at(model, tmp_path, "voxels/grid.py", "out > 0")
    assert reason is not None and "calls `_C.trilerp` (a CUDA extension" in reason, reason


@pytest.mark.parametrize(
    ("imports", "call", "named"),
    [
        # NVIDIA Warp: kernels on its "cpu" and "cuda:i" devices only
        ("import warp as wp", "wp.from_torch(points)", "`warp.from_torch` (NVIDIA Warp"),
        # a package of Warp kernels (NVIDIA ALCHEMI Toolkit-Ops)
        (
            "from nvalchemiops.neighborlist import cell_list",
            "cell_list(points, 2.0)",
            "`nvalchemiops.neighborlist.cell_list` (NVIDIA ALCHEMI",
        ),
    ],
)
def test_a_function_on_warp_kernels_cannot_run_on_xla(
    tmp_path: Path, imports: str, call: str, named: str
) -> None:
    """Warp's devices are the CPU and CUDA GPUs: a neighbour search on its kernels cannot
    take XLA tensors, so the function that calls one on every run is off the TPU path."""
    text = f"""\
{imports}


def pair_search(points, cutoff):
    found = {call}
    if torch.any(points > cutoff):  # pairs marker
        return found
    return None
"""
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    reason = reason_at(model, tmp_path, "m.py", "torch.any(points")
    assert reason is not None and named in reason, reason


# --- inference, kernels, dead hooks (no entry point: a library) --------------------------------


def test_predict_and_generation_are_inference(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
class Model(L.LightningModule):
    def training_step(self, batch, i):
        return self.shared(batch)

    def shared(self, batch):
        return self(batch).sum()  # shared-body

    def predict_step(self, batch, i):
        return self.decode(self.shared(batch))

    def decode(self, scores):
        return scores.max().item()  # decode-body

    def validation_step(self, batch, i):
        tokens = self.sample(batch, 8)
        return tokens.float().mean()

    @torch.no_grad()
    def sample(self, prompt, steps):
        x = prompt
        for _ in range(steps):
            nxt = self(x)[:, -1:].argmax(-1)
            x = torch.cat([x, nxt], dim=1)  # sample-body
        return x
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "# shared-body") is None
    assert "inference only (reached from `predict_step`)" in reason_at(
        model, tmp_path, "m.py", "# decode-body"
    )
    assert "`sample` (a generation loop)" in reason_at(model, tmp_path, "m.py", "# sample-body")
    assert reason_at(model, tmp_path, "m.py", "tokens = self.sample") is None


def test_methods_named_for_inference_without_gradients_are_inference(tmp_path: Path) -> None:
    """`def predict(self, x): with torch.no_grad(): ...` that no training code calls is
    inference, and so is what only it (and evaluation hooks) reach; a `predict_*` method a
    training step calls, one that keeps gradients, and one a validation step calls (it runs
    during fit) stay."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
class Writer:
    def rows(self, scores):
        return scores.detach().cpu()  # writer-body


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.writer = Writer()

    def training_step(self, batch, i):
        return self.predict_noise(batch).sum()

    def predict_noise(self, x):
        return self(x).max().item()  # noise-body

    def test_step(self, batch, i):
        self.writer.rows(self(batch))

    def predict(self, batch):
        \"\"\"Scores for a batch, for the serving script.\"\"\"
        with torch.no_grad():
            out = self(batch)
        return self.writer.rows(out)

    def inference(self, batch):
        return self(batch).argmax().item()  # grad-body

    def validation_step(self, batch, i):
        return self.infer(batch)

    @torch.no_grad()
    def infer(self, batch):
        return self(batch).argmax().item()  # validated-body
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "# writer-body")
    assert reason is not None and "`predict` (named for inference, run without gradients)" in reason
    assert reason_at(model, tmp_path, "m.py", "# noise-body") is None
    assert reason_at(model, tmp_path, "m.py", "# grad-body") is None
    assert reason_at(model, tmp_path, "m.py", "# validated-body") is None


TEST_HOOKS_MODEL = {
    "pkg/__init__.py": "",
    "pkg/scores.py": """\
        def shared_score(pred, target):
            return (pred[target > 0] - 1).abs().mean()  # shared-score


        def test_only_score(pred, target):
            return pred[target > 0].mean().item()  # test-score


        class Writer:
            def write(self, wav):
                return wav.cpu().numpy()  # writer
    """,
    "pkg/model.py": """\
        import lightning as L

        from .scores import Writer, shared_score, test_only_score


        class Model(L.LightningModule):
            def training_step(self, batch, i):
                return self(batch[0]).sum()

            def validation_step(self, batch, i):
                self.log("val", shared_score(self(batch[0]), batch[1]))

            def test_step(self, batch, i):
                pred = self(batch[0])
                Writer().write(pred)
                self.log("sisdr", test_only_score(pred, batch[1]))
                return shared_score(pred, batch[1]).item()  # test-step

            def on_test_epoch_end(self):
                self.summary(self.outputs)

            def summary(self, outputs):
                return outputs.max().item()  # test-summary

            def test_dataloader(self):
                return self.loader.dataset.tensors[0].nonzero()  # test-loader
    """,
}


@pytest.mark.parametrize("with_test_step", [False, True])
def test_a_generation_loop_a_training_step_runs_trains(
    tmp_path: Path, with_test_step: bool
) -> None:
    """Online preference optimisation samples from the model in every training step: the
    generation loop (and what it calls) runs every step, whoever else calls it."""
    test_step = (
        "\n    def test_step(self, batch, i):\n        return self.generate(batch, 8)\n"
        if with_test_step
        else ""
    )
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def training_step(self, batch, i):
        return self.rewarded(batch)

    def rewarded(self, batch):
        with torch.no_grad():
            samples = self.generate(batch, 8)
        return (self(samples) - samples.float()).pow(2).mean()

    @torch.no_grad()
    def generate(self, prompt, steps):
        x = prompt
        for _ in range(steps):
            nxt = self(x)[:, -1:].argmax(-1)
            x = torch.cat([x, nxt], dim=1)
        return self.trim(x)

    def trim(self, x):
        return x[:, : int(x.ne(0).sum(-1).max())]  # trim
{test_step}"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "# trim") is None


# A switch between training and testing a checkpoint: the test loop runs in another run.
TRAIN_OR_TEST = """\
    import sys

    import lightning as L

    from pkg.model import Model

    if __name__ == "__main__":
        trainer = L.Trainer(accelerator="tpu")
        if "--test" in sys.argv:
            trainer.test(Model.load_from_checkpoint(sys.argv[-1]))
        else:
            trainer.fit(Model())
"""


@pytest.mark.parametrize("with_entry", [False, True])
def test_what_only_the_test_hooks_reach_is_evaluation(tmp_path: Path, with_entry: bool) -> None:
    """`trainer.test`'s hooks (`test_step`, `on_test_*`, `test_dataloader`) never run in
    `trainer.fit`: what only they reach is evaluation, in a library and under TPU entry
    points alike. What validation also reaches stays; breakage stays (`per_step=False`)."""
    files = dict(TEST_HOOKS_MODEL)
    if with_entry:
        files["train_tpu.py"] = TRAIN_OR_TEST
    model = project(tmp_path, files)
    assert bool(model.scope.entries) == with_entry
    for name, marker, hook in [
        ("pkg/scores.py", "# test-score", "test_step"),
        ("pkg/scores.py", "# writer", "test_step"),
        ("pkg/model.py", "# test-step", "test_step"),
        ("pkg/model.py", "# test-summary", "on_test_epoch_end"),
        ("pkg/model.py", "# test-loader", "test_dataloader"),
    ]:
        assert reason_at(model, tmp_path, name, marker) == (
            f"reached only from `{hook}` (evaluation, not training)"
        ), marker
    assert reason_at(model, tmp_path, "pkg/scores.py", "# shared-score") is None
    path = str(tmp_path / "pkg/scores.py")
    lines = Path(path).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "# test-score" in text)
    assert model.scope.reason(path, line, 5, per_step=False) is None


@pytest.mark.parametrize(
    "script",
    [
        "trainer.fit(model)\n    trainer.test(model)",
        "trainer.fit(model)\n    if not quick:\n        trainer.test(ckpt_path='best')",
        "for fold in range(5):\n        trainer.fit(model)\n        trainer.test(model)",
        "runner = trainer\n    runner.fit(model)\n    runner.test(model)",
    ],
)
@pytest.mark.parametrize("accelerator", ["tpu", "gpu"])
def test_test_hooks_of_a_run_that_tests_after_fitting_stay(
    tmp_path: Path, script: str, accelerator: str
) -> None:
    """A script that fits and then tests in the same run runs the test loop on the machine
    it trained on: the test hooks are in scope as the validation hooks are."""
    files = dict(TEST_HOOKS_MODEL)
    files["train.py"] = f"""\
import lightning as L

from pkg.model import Model

quick = False
model = Model()
trainer = L.Trainer(accelerator="{accelerator}")
if __name__ == "__main__":
    {script}
"""
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/scores.py", "# test-score") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "# test-step") is None


CONFIGURED_TEST_RUN = """\
import os
import sys

import hydra
import lightning as L

from pkg.model import Model


def quick():
    return "--quick" in sys.argv


@hydra.main(version_base="1.3", config_path="configs", config_name="config")
def main(cfg):
    model = Model()
    trainer = L.Trainer(accelerator="tpu")
    {script}


if __name__ == "__main__":
    main()
"""

TRAIN_EVAL_HELPERS = """\
import lightning as L


def fit_model(model):
    trainer = L.Trainer(accelerator="tpu")
    trainer.fit(model)
    return trainer


def evaluate(model):
    trainer = L.Trainer(accelerator="tpu")
    trainer.test(model)
"""


def _fit_then_test_if(condition: str, fit: str = "trainer.fit", test: str = "trainer.test") -> str:
    return f"{fit}(model)\n    if {condition}:\n        {test}(model)"


@pytest.mark.parametrize(
    ("script", "config", "tests"),
    [
        # the shipped config turns testing off: the test hooks never run after the fit
        (_fit_then_test_if('cfg.get("test")'), "false", False),
        (_fit_then_test_if("cfg.test"), "false", False),
        # or training off (the test after it still tests, but nothing trained on the TPU)
        ("if cfg.train:\n        trainer.fit(model)\n    trainer.test(model)", "false", False),
        (_fit_then_test_if('cfg.get("test")'), "true", True),
        # an option the configs leave unset is off, as for the findings in its branch
        (_fit_then_test_if('cfg.get("evaluate")'), "true", False),
        # a value the scope does not decide keeps the test
        (_fit_then_test_if('os.environ.get("TEST")'), "false", True),
        (_fit_then_test_if('cfg.get("test") or quick()'), "false", True),
        # through the project's helpers
        (_fit_then_test_if('cfg.get("test")', "fit_model", "evaluate"), "false", False),
        (_fit_then_test_if('cfg.get("test")', "fit_model", "evaluate"), "true", True),
    ],
)
def test_a_test_after_fit_under_an_option_the_configs_turn_off_does_not_count(
    tmp_path: Path, script: str, config: str, tests: bool
) -> None:
    """`trainer.test(...)` after `trainer.fit(...)` under a branch the project decides off
    (every shipped config's `test: false`, as for the findings in such a branch) is no test
    of the trained model in the TPU run: the test hooks stay evaluation. An option nobody
    sets keeps the test."""
    files = dict(TEST_HOOKS_MODEL)
    if "fit_model" in script:
        files["pkg/runs.py"] = TRAIN_EVAL_HELPERS
    files["train.py"] = CONFIGURED_TEST_RUN.format(script=script)
    if "fit_model" in script:
        files["train.py"] = "from pkg.runs import evaluate, fit_model\n" + files["train.py"]
    config_text = f"train: {config}\ntest: {config}\nlr: 0.1\n"
    model = with_configs(tmp_path, files, {"configs/config.yaml": config_text})
    expected = None if tests else "reached only from `test_step` (evaluation, not training)"
    assert reason_at(model, tmp_path, "pkg/scores.py", "# test-score") == expected


MODE_RUN = """\
import sys

import lightning as L

from pkg.model import Model


def train(model, trainer):
    trainer.fit(model)


def evaluate(model, trainer):
    trainer.test(model)


if __name__ == "__main__":
    mode = sys.argv[1]
    model = Model()
    trainer = L.Trainer(accelerator="tpu")
    {script}
"""


@pytest.mark.parametrize(
    ("script", "tests"),
    [
        # one mode switch: a run fits or tests, never both
        (
            'if mode == "train":\n        trainer.fit(model)\n'
            '    if mode in ("test", "tune-test"):\n        trainer.test(model)',
            False,
        ),
        (
            'if mode == "train":\n        train(model, trainer)\n'
            '    if mode == "test" or mode == "eval":\n        evaluate(model, trainer)',
            False,
        ),
        (
            'if mode in ["train"]:\n        train(model, trainer)\n'
            '    elif mode == "test":\n        evaluate(model, trainer)',
            False,
        ),
        # fit then test in sequence, or a test after the switch whatever the mode
        ("train(model, trainer)\n    evaluate(model, trainer)", True),
        (
            'if mode == "train":\n        trainer.fit(model)\n    trainer.test(model)',
            True,
        ),
        (
            'if mode == "train":\n        train(model, trainer)\n    evaluate(model, trainer)',
            True,
        ),
        # values that meet: `train-test` fits and then tests
        (
            'if mode in ("train", "train-test"):\n        trainer.fit(model)\n'
            '    if mode in ("test", "train-test"):\n        trainer.test(model)',
            True,
        ),
        # tests of two names say nothing of each other
        (
            'if mode == "train":\n        trainer.fit(model)\n'
            '    if sys.argv[-1] == "test":\n        trainer.test(model)',
            True,
        ),
    ],
)
def test_fit_and_test_under_one_mode_switch_do_not_run_in_one_run(
    tmp_path: Path, script: str, tests: bool
) -> None:
    """Two ifs one after the other that test one name for values apart (`if mode ==
    "train": fit` then `if mode in ("test", ...): test`) are one mode switch: no run tests
    after fitting, so the test hooks stay evaluation. A test after the switch, or values that
    meet, keep the test in the fitting run."""
    files = dict(TEST_HOOKS_MODEL)
    files["run.py"] = MODE_RUN.format(script=script)
    model = project(tmp_path, files)
    expected = None if tests else "reached only from `test_step` (evaluation, not training)"
    assert reason_at(model, tmp_path, "pkg/scores.py", "# test-score") == expected


@pytest.mark.parametrize(
    "validation",
    [
        "return self.test_step(batch, i)",
        "return super().test_step(batch, i)",
    ],
)
def test_a_test_step_that_validation_calls_stays(tmp_path: Path, validation: str) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Base(L.LightningModule):
    def test_step(self, batch, i):
        return batch[0][batch[1] > 0].sum()  # test-step


class Model(Base):
    def training_step(self, batch, i):
        return self(batch[0]).sum()

    def validation_step(self, batch, i):
        {validation}
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "# test-step") is None


@pytest.mark.parametrize("with_entry", [False, True])
def test_a_validation_step_that_test_step_calls_stays(tmp_path: Path, with_entry: bool) -> None:
    """`test_step` returning `self.validation_step(...)`: Lightning still runs the
    validation step (and what it calls) in fit."""
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": """\
            import lightning as L


            class Base(L.LightningModule):
                def validation_step(self, batch, i):
                    return self._validation_step(batch, i)

                def test_step(self, batch, i):
                    return self.validation_step(batch, i)


            class Model(Base):
                def training_step(self, batch, i):
                    return self(batch[0]).sum()

                def _validation_step(self, batch, i):
                    if min(batch[1]) < 4:  # validation-only
                        return batch[0].sum()
        """,
    }
    if with_entry:
        files["train_tpu.py"] = """\
            import lightning as L

            from pkg.model import Model

            L.Trainer(accelerator="tpu").fit(Model())
        """
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "# validation-only") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "return self.validation_step") == (
        "reached only from `test_step` (evaluation, not training)"
    )


@pytest.mark.parametrize(
    "exit_statement",
    ['assert False, "not tested"', "assert 0", 'raise NotImplementedError("full res")'],
)
def test_code_after_a_statement_that_always_raises_never_runs(
    tmp_path: Path, exit_statement: str
) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def training_step(self, batch, i):
        if self.full_res:
            {exit_statement}
            masks = batch[0][batch[1] > 0]  # dead
            return masks.sum()
        assert batch[0].dim() == 2, "flat batches"
        return batch[0][batch[1] > 0].sum()  # live
"""
        },
    )
    text = exit_statement[:57] + "..." if len(exit_statement) > 60 else exit_statement
    assert reason_at(model, tmp_path, "m.py", "# dead") == (
        f"after `{text}`, which always raises: never runs"
    )
    assert reason_at(model, tmp_path, "m.py", "return masks.sum()") is not None
    assert reason_at(model, tmp_path, "m.py", "# live") is None


def test_a_training_loop_named_sample_is_not_generation(tmp_path: Path) -> None:
    """A reparameterised `sample` has no loop feeding its output back: it trains."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
class VAE(L.LightningModule):
    def training_step(self, batch, i):
        mu, logvar = self.encode(batch)
        return self.sample(mu, logvar).sum()

    def sample(self, mu, logvar):
        return mu + torch.randn_like(mu) * (0.5 * logvar).exp()  # marker
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "# marker") is None


def test_kernels_of_other_compilers_and_lightning1_hooks(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
import numba


@numba.njit
def count(a):
    return a.nonzero()[0].size  # kernel


class Model(L.LightningModule):
    def on_keyboard_interrupt(self, trainer, pl_module):
        torch.cuda.synchronize()  # dead-hook

    def on_train_epoch_end(self):
        torch.cuda.synchronize()  # live-hook
"""
        },
    )
    assert (
        reason_at(model, tmp_path, "m.py", "# kernel")
        == "compiled by `@numba.njit`, not PyTorch code"
    )
    assert "not a hook Lightning 2 calls" in reason_at(model, tmp_path, "m.py", "# dead-hook")
    assert reason_at(model, tmp_path, "m.py", "# live-hook") is None


def test_kernels_handed_to_their_compiler_by_a_call(tmp_path: Path) -> None:
    """No decorator: a kernel factory passes its nested function to the compiler, or a module
    rebinds a function to its compiled form; or the decorator is a module-level alias of the
    compiler. A function given to `torch.compile` stays."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
import numba
import warp as wp


def make_scatter(dtype):
    def scatter(src: wp.array(dtype=dtype), out: wp.array(dtype=dtype)):
        i = wp.tid()
        if src[i] > dtype(0):  # factory-kernel
            out[i] = src[i]

    return wp.Kernel(scatter, key=f"scatter_{dtype}")


def runs(lengths):
    total = 0
    for n in lengths:
        if n > 3:  # rebound-kernel
            total += n
    return total


try:
    runs = numba.jit(nopython=True)(runs)
except ImportError:
    pass


def fused(x):
    if x.sum() > 0:  # torch-compiled
        return x
    return -x


fused_step = torch.compile(fused)

device_kernel = wp.kernel


@device_kernel
def clamp(values: wp.array(dtype=float)):
    i = wp.tid()
    if values[i] > 1.0:  # aliased-kernel
        values[i] = 1.0
"""
        },
    )
    assert (
        reason_at(model, tmp_path, "m.py", "# factory-kernel")
        == "compiled by `warp.Kernel(...)`, not PyTorch code"
    )
    assert (
        reason_at(model, tmp_path, "m.py", "# rebound-kernel")
        == "compiled by `numba.jit(...)`, not PyTorch code"
    )
    assert reason_at(model, tmp_path, "m.py", "# torch-compiled") is None
    assert (
        reason_at(model, tmp_path, "m.py", "# aliased-kernel")
        == "compiled by `@warp.kernel`, not PyTorch code"
    )


EPOCH_END = {
    "pkg/__init__.py": "",
    "pkg/align.py": """\
        import torch
        from torch import nn


        class _Align(torch.autograd.Function):
            @staticmethod
            def forward(ctx, d):
                return torch.tensor(d.cpu().numpy().cumsum())  # function-forward


        class SoftAlign(nn.Module):
            def __init__(self):
                super().__init__()
                self.fn = _Align.apply

            def forward(self, a, b):
                return self.fn(a - b).sum().item()  # module-forward


        class Shared(nn.Module):
            def forward(self, a):
                return a[a > 0]  # shared-forward


        def score(table):
            return table.max().item()  # epoch-helper
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.align import Shared, SoftAlign, score


        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.shared = Shared()

            def training_step(self, batch, i):
                return self.shared(batch).sum()

            def on_validation_epoch_end(self):
                print(SoftAlign()(self.table, self.table), score(self.table))
                Shared()(self.table).tolist()  # the-hook
    """,
}


def test_what_only_an_epoch_end_hook_reaches_runs_once_per_epoch(tmp_path: Path) -> None:
    """A class only an epoch-end hook builds (and the autograd Function it applies), and a
    helper only it calls: per-step costs there are paid once per epoch. A class also built
    for the model, and the hook's own code, stay."""
    model = project(tmp_path, EPOCH_END)
    for marker in ("# function-forward", "# module-forward", "# epoch-helper"):
        reason = reason_at(model, tmp_path, "pkg/align.py", marker)
        assert reason == "once per epoch (reached only from `on_validation_epoch_end`)"
    assert reason_at(model, tmp_path, "pkg/align.py", "# shared-forward") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "# the-hook") is None
    path = str(tmp_path / "pkg/align.py")
    lines = Path(path).read_text().splitlines()
    line = lines.index("    return table.max().item()  # epoch-helper")
    assert model.scope.reason(path, line + 1, 5, per_step=False) is None


def test_a_class_named_elsewhere_too_is_not_epoch_only(tmp_path: Path) -> None:
    files = dict(EPOCH_END)
    files["pkg/extra.py"] = "from pkg.align import SoftAlign\n\nDEFAULT = SoftAlign\n"
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/align.py", "# module-forward") is None
    assert reason_at(model, tmp_path, "pkg/align.py", "# epoch-helper") is not None


def test_epoch_end_reach_under_tpu_entry_points(tmp_path: Path) -> None:
    files = dict(EPOCH_END)
    files["train_tpu.py"] = """\
        import lightning as L

        from pkg.model import Model

        if __name__ == "__main__":
            L.Trainer(accelerator="tpu").fit(Model())
    """
    model = project(tmp_path, files)
    assert model.scope.entries
    assert reason_at(model, tmp_path, "pkg/align.py", "# module-forward") == (
        "once per epoch (reached only from `on_validation_epoch_end`)"
    )
    assert reason_at(model, tmp_path, "pkg/align.py", "# shared-forward") is None


# --- entry points ------------------------------------------------------------------------------

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import lightning as L
        from torch import nn

        from .losses import focal


        class Block(nn.Module):
            def forward(self, x):
                return x * x.sum().item()  # unused-block


        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)

            def training_step(self, batch, i):
                return focal(self.net(batch[0]), batch[1])  # step
    """,
    "pkg/losses.py": """\
        def focal(logits, target):
            return logits[target > 0].mean()  # focal


        def dice(logits, target):
            return logits[target > 0].sum()  # dice
    """,
    "pkg/data.py": """\
        import lightning as L
        from torch.utils.data import DataLoader


        class TpuData(L.LightningDataModule):
            def train_dataloader(self):
                return DataLoader(self.ds, batch_size=16)  # tpu-data


        class GpuData(L.LightningDataModule):
            def train_dataloader(self):
                return DataLoader(self.ds, batch_size=16)  # gpu-data
    """,
    "train_gpu.py": """\
        import lightning as L

        from pkg.data import GpuData
        from pkg.model import Model

        trainer = L.Trainer(accelerator="gpu", devices=2)  # gpu-trainer
        trainer.fit(Model(), datamodule=GpuData())
    """,
}


def tpu_script(accelerator: str) -> str:
    return f"""\
        import lightning as L

        from pkg.data import TpuData
        from pkg.model import Model


        def build():
            return L.Trainer({accelerator + ", " if accelerator else ""}max_epochs=1)


        def main():
            build().fit(Model(), datamodule=TpuData())


        if __name__ == "__main__":
            main()
    """


def test_tpu_entry_points_reach_call_by_call(tmp_path: Path) -> None:
    model = project(tmp_path, {**PACKAGE, "train_tpu.py": tpu_script('accelerator="tpu"')})
    assert [(Path(e.path).name, e.verdict) for e in model.scope.entries] == [
        ("train_tpu.py", "tpu")
    ]
    unreached = "not reached from the TPU entry points (train_tpu.py)"
    assert reason_at(model, tmp_path, "pkg/model.py", "# step") is None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# focal") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") == unreached
    assert reason_at(model, tmp_path, "pkg/model.py", "# unused-block") == unreached
    assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") == unreached
    assert reason_at(model, tmp_path, "train_gpu.py", "# gpu-trainer") == unreached


@pytest.mark.parametrize(
    ("binding", "returned"),
    [
        ("accelerator, devices = hardware(args)", '"tpu", 8'),
        ("accelerator = hardware(args)", '"tpu"'),
    ],
)
def test_an_accelerator_a_module_function_returns_decides_the_entry_point(
    tmp_path: Path, binding: str, returned: str
) -> None:
    """`accelerator, devices = hardware(args)` with `hardware` a function of the script's
    module returning `("tpu", 8)` in one branch: the Trainer asks for TPUs there, so the
    script is a TPU entry point (and the GPU script is not reached)."""
    other = returned.replace('"tpu"', '"gpu"').replace("8", "1")
    script = f"""\
        import lightning as L

        from pkg.data import TpuData
        from pkg.model import Model


        def main(args):
            {binding}
            trainer = L.Trainer(accelerator=accelerator, max_epochs=1)
            trainer.fit(Model(), datamodule=TpuData())


        def hardware(args):
            if args.tpu:
                return {returned}
            return {other}


        if __name__ == "__main__":
            main(parse())
    """
    model = project(tmp_path, {**PACKAGE, "train_hw.py": script})
    verdicts = sorted((Path(e.path).name, e.verdict) for e in model.scope.entries)
    assert verdicts == [("train_hw.py", "tpu")]
    unreached = "not reached from the TPU entry points (train_hw.py)"
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") == unreached


@pytest.mark.parametrize("accelerator", ["", 'accelerator="auto"', "strategy=XLAStrategy()"])
def test_auto_entry_points_count_once_a_project_targets_tpus(
    tmp_path: Path, accelerator: str
) -> None:
    """With no TPU entry point, the "auto" and GPU scripts that train are the roots (the
    scripts a port moves: `test_a_project_without_tpu_entry_points_is_scoped_by_its_training
    _scripts`); next to a TPU one, an "auto" script runs on the same TPU VMs and its reach is
    in scope, and the GPU script is not."""
    files = {**PACKAGE, "train_auto.py": tpu_script(accelerator)}
    model = project(tmp_path, files)
    if accelerator.startswith("strategy"):
        assert [e.verdict for e in model.scope.entries] == ["tpu"]
    else:
        assert sorted(e.verdict for e in model.scope.entries) == ["auto", "other"]
        assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") == (
            "not reached from the training entry points (train_auto.py, train_gpu.py)"
        )
        assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") is None
    # A TPU script that trains the model on another data module: the "auto" script's data
    # module is in scope only because the "auto" script counts.
    files["other/train_tpu.py"] = tpu_script('accelerator="tpu"').replace("TpuData", "GpuData")
    model = project(tmp_path, files)
    expected = ["tpu", "tpu"] if accelerator.startswith("strategy") else ["auto", "tpu"]
    assert sorted(e.verdict for e in model.scope.entries) == expected
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") is not None


# --- a project with no TPU entry point: its training scripts are the roots -------------------

PORTED = {
    "train.py": """\
        import lightning as L

        from lab.data import Frames
        from lab.model import WorldModel

        if __name__ == "__main__":
            trainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp")
            trainer.fit(WorldModel(), datamodule=Frames())
    """,
    "evaluate.py": """\
        import lightning as L

        from lab.model import WorldModel

        if __name__ == "__main__":
            L.Trainer(gpus=1).test(WorldModel.load_from_checkpoint("last.ckpt"))
    """,
    # Scripts that never train: a rollout collector and a preprocessing step.
    "collect.py": """\
        import torch

        from lab.expert import ExpertPolicy

        if __name__ == "__main__":
            policy = ExpertPolicy()
            for _ in range(100):
                policy(torch.zeros(8))
    """,
    "preprocess.py": """\
        import torch

        from lab.prior import PhysicsPrior

        if __name__ == "__main__":
            torch.save(PhysicsPrior()(torch.load("raw.pt")), "prior.pt")
    """,
    "lab/__init__.py": "",
    "lab/losses.py": """\
        def masked_mse(x, y):
            return ((x - y)[y > 0] ** 2).mean()  # train-loss
    """,
    "lab/model.py": """\
        import lightning as L
        from torch import nn

        from lab.losses import masked_mse


        class WorldModel(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(8, 8)

            def training_step(self, batch, i):
                return masked_mse(self.net(batch[0]), batch[1])  # train-step

            def test_step(self, batch, i):
                return batch[0][batch[1] > 0].sum()  # test-step
    """,
    "lab/data.py": """\
        import lightning as L
        from torch.utils.data import DataLoader


        class Frames(L.LightningDataModule):
            def train_dataloader(self):
                return DataLoader(self.ds, batch_size=16)  # frames
    """,
    "lab/expert.py": """\
        import torch
        from torch import nn


        class ExpertPolicy(nn.Module):
            @torch.no_grad()
            def forward(self, obs):
                return obs.argmax().cpu()  # expert
    """,
    "lab/prior.py": """\
        from torch import nn


        class PhysicsPrior(nn.Module):
            def forward(self, x):
                return x[x > 0]  # prior
    """,
}


def test_a_project_without_tpu_entry_points_is_scoped_by_its_training_scripts(
    tmp_path: Path,
) -> None:
    """Its scripts for another accelerator are the ones a port moves to the TPU: what they
    reach is in scope, an evaluation script reaches its code as inference, and a policy only
    a rollout collector builds or a module only preprocessing uses is not reached."""
    model = project(tmp_path, PORTED)
    assert [(Path(e.path).name, e.verdict) for e in model.scope.entries] == [
        ("evaluate.py", "other"),
        ("train.py", "other"),
    ]
    unreached = "not reached from the training entry points (train.py)"
    assert reason_at(model, tmp_path, "lab/model.py", "# train-step") is None
    assert reason_at(model, tmp_path, "lab/losses.py", "# train-loss") is None
    assert reason_at(model, tmp_path, "lab/data.py", "# frames") is None
    assert reason_at(model, tmp_path, "lab/model.py", "# test-step") == (
        "reached only from `test_step` (evaluation, not training)"
    )
    assert reason_at(model, tmp_path, "lab/expert.py", "# expert") == unreached
    assert reason_at(model, tmp_path, "lab/prior.py", "# prior") == unreached
    assert reason_at(model, tmp_path, "collect.py", "policy(") == unreached


@pytest.mark.parametrize(
    "change",
    [
        # A library: no script trains (an evaluation script alone is no training entry point).
        lambda files: files.pop("train.py"),
        # The training script builds its model from a config the model does not see.
        lambda files: files.__setitem__(
            "train.py",
            files["train.py"]
            .replace("from lab.model import WorldModel\n", "import hydra\n")
            .replace("WorldModel()", "hydra.utils.instantiate(cfg.model)"),
        ),
        # A TPU entry point says where the TPU path is: the GPU scripts stay outside, and what
        # only they reach is judged by the TPU script (here it reaches everything).
        lambda files: files.__setitem__(
            "train_tpu.py",
            "import lightning as L\n\nfrom lab.expert import ExpertPolicy\n"
            "from lab.prior import PhysicsPrior\n\n"
            "if __name__ == '__main__':\n"
            "    L.Trainer(accelerator='tpu').fit(ExpertPolicy(), PhysicsPrior())\n",
        ),
    ],
)
def test_training_scripts_are_roots_only_when_they_say_what_trains(
    tmp_path: Path, change: Any
) -> None:
    files = dict(PORTED)
    change(files)
    model = project(tmp_path, files)
    assert all(e.verdict == "tpu" for e in model.scope.entries)
    assert "not reached" not in (reason_at(model, tmp_path, "lab/prior.py", "# prior") or "")


def test_a_package_distributed_beside_training_examples_stays_a_library(tmp_path: Path) -> None:
    """`examples/train.py` beside `lab/`, which the repository installs: the examples do not
    speak for what the library's users build, so its modules are judged as a library's; the
    examples' own folder is theirs."""
    files = {
        "setup.py": (
            "from setuptools import find_packages, setup\n\nsetup(packages=find_packages())\n"
        ),
        **{name: text for name, text in PORTED.items() if name.startswith("lab/")},
        "examples/train.py": PORTED["train.py"],
        "examples/collect_demo.py": """\
            import torch


            def collect(policy):
                return policy(torch.zeros(8)).sum().item()  # demo


            if __name__ == "__main__":
                print(collect(torch.nn.Identity()))
        """,
    }
    model = project(tmp_path, files)
    assert [Path(e.path).name for e in model.scope.entries] == ["train.py"]
    assert reason_at(model, tmp_path, "lab/prior.py", "# prior") is None
    assert reason_at(model, tmp_path, "examples/collect_demo.py", "# demo") == (
        "not reached from the training entry points (train.py)"
    )


def test_each_project_of_a_run_has_its_own_roots(tmp_path: Path) -> None:
    """Two repositories checked in one run: one with a TPU entry point, one whose scripts
    train on GPUs. Each is judged by its own roots, and its reasons name them."""
    files = {f"gpu/{name}": text for name, text in PORTED.items()}
    files["gpu/pyproject.toml"] = "[project]\nname = 'gpu'\n"
    files.update({f"tpu/{name}": text for name, text in PACKAGE.items()})
    files["tpu/train_tpu.py"] = tpu_script('accelerator="tpu"')
    files["tpu/pyproject.toml"] = "[project]\nname = 'tpu'\n"
    model = project(tmp_path, files)
    assert sorted((Path(e.path).name, e.verdict) for e in model.scope.entries) == [
        ("evaluate.py", "other"),
        ("train.py", "other"),
        ("train_tpu.py", "tpu"),
    ]
    assert reason_at(model, tmp_path, "gpu/lab/prior.py", "# prior") == (
        "not reached from the training entry points (train.py)"
    )
    assert reason_at(model, tmp_path, "tpu/pkg/losses.py", "# dice") == (
        "not reached from the TPU entry points (train_tpu.py)"
    )
    assert reason_at(model, tmp_path, "gpu/lab/losses.py", "# train-loss") is None
    assert reason_at(model, tmp_path, "tpu/pkg/losses.py", "# focal") is None


def test_reached_code_keeps_the_library_s_epoch_end_roles(tmp_path: Path) -> None:
    """A metric module built in `__init__` and called only from an epoch-end hook: the call
    graph reaches its forward through the construction, but it runs once per epoch."""
    files = dict(PORTED)
    files["lab/model.py"] = (
        textwrap.dedent(PORTED["lab/model.py"])
        .replace(
            "        self.net = nn.Linear(8, 8)\n",
            "        self.net = nn.Linear(8, 8)\n"
            "        self.score = Score()\n\n"
            "    def on_validation_epoch_end(self):\n"
            '        self.log("score", self.score(self.net.weight))\n',
        )
        .replace(
            "from lab.losses import masked_mse\n",
            "from lab.losses import masked_mse\n\n\n"
            "class Score(nn.Module):\n"
            "    def forward(self, w):\n"
            "        return w.abs().max().item()  # score\n",
        )
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "lab/model.py", "# score") == (
        "once per epoch (reached only from `on_validation_epoch_end`)"
    )


def test_the_last_line_names_the_training_entry_points(tmp_path: Path) -> None:
    from tests.helpers import make_project, run_cli

    root = make_project(
        tmp_path / "p",
        {name: textwrap.dedent(text) for name, text in PORTED.items()},
        pyproject='select = ["TPU202"]\n',
    )
    out = run_cli(["check", "."], root).stdout
    assert "lab/losses.py" in out and "lab/prior.py" not in out
    assert "code not reached from the training entry points (train.py)) not shown" in out
    assert "the scope follows the scripts that train it today" in out
    everything = run_cli(["check", ".", "--scope", "all"], root).stdout
    assert (
        "lab/prior.py:6:16: TPU202" in everything
        and "[outside the TPU scope: not reached from the training entry points (train.py)]"
        in everything
    )


GPU_LOOP = {
    "pkg/gpu_loop.py": """\
        class GpuLoop:
            def __init__(self, net, optimizer):
                self.net = net
                self.optimizer = optimizer

            def run(self, loader):
                self.net.train()
                for batch in loader:
                    loss = self.net(batch).sum()
                    loss.backward()
                    self.optimizer.step()
                    print(loss.item())  # gpu-loop
    """,
    "train_gpu_loop.py": """\
        from pkg.gpu_loop import GpuLoop
        from pkg.model import Model


        def make_loop():
            return GpuLoop(Model(), None)


        if __name__ == "__main__":
            loop = make_loop()
            loop.run([])
    """,
}


def test_calls_on_values_of_unknown_class_that_cannot_reach_an_entry_point(
    tmp_path: Path,
) -> None:
    """Climbing from a TPU Trainer to the scripts that run it, `v.train(...)` on a value of
    unknown class may call a method named `train`, but not a module's function of that name,
    and `v.train()` without arguments (`nn.Module.train`) not one that needs arguments: a
    plain GPU loop that switches its network to training mode is no TPU entry point."""
    runner_method = """\
        import lightning as L

        from pkg.data import TpuData
        from pkg.model import Model


        class TpuRunner:
            def train(self, epochs):
                L.Trainer(accelerator="tpu", max_epochs=epochs).fit(Model(), TpuData())


        if __name__ == "__main__":
            TpuRunner().train(1)
    """
    files = {**PACKAGE, **GPU_LOOP, "train_tpu.py": runner_method}
    model = project(tmp_path, files)
    unreached = "not reached from the TPU entry points (train_tpu.py)"
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/gpu_loop.py", "# gpu-loop") == unreached
    # With an argument (`self.net.train(3)`), the call may be the runner's method; never a
    # module's function named `train`.
    calls_it = GPU_LOOP["pkg/gpu_loop.py"].replace("self.net.train()", "self.net.train(3)")
    model = project(
        tmp_path,
        {**PACKAGE, **GPU_LOOP, "pkg/gpu_loop.py": calls_it, "train_tpu.py": runner_method},
    )
    assert reason_at(model, tmp_path, "pkg/gpu_loop.py", "# gpu-loop") is None
    module_function = """\
        import lightning as L

        from pkg.data import TpuData
        from pkg.model import Model


        def train(epochs):
            L.Trainer(accelerator="tpu", max_epochs=epochs).fit(Model(), TpuData())


        if __name__ == "__main__":
            train(1)
    """
    model = project(
        tmp_path,
        {**PACKAGE, **GPU_LOOP, "pkg/gpu_loop.py": calls_it, "train_tpu.py": module_function},
    )
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/gpu_loop.py", "# gpu-loop") == unreached


@pytest.mark.parametrize(
    "arguments",
    [
        "gpus=[0]",
        "gpus=args.gpus, distributed_backend='ddp' if args.gpus > 1 else None",
        "amp_backend='apex'",
        "amp_level='O2'",
    ],
)
def test_lightning1_gpu_trainers_are_not_entry_points(tmp_path: Path, arguments: str) -> None:
    """Once a project has a TPU entry point, a script whose Trainer names GPUs the Lightning 1
    way (a list of GPU ids, `distributed_backend="ddp"`, apex's AMP) is not another one."""
    files = {
        **PACKAGE,
        "train_tpu.py": tpu_script('accelerator="tpu"'),
        "train_gpu.py": PACKAGE["train_gpu.py"].replace('accelerator="gpu", devices=2', arguments),
    }
    model = project(tmp_path, files)
    assert [e.verdict for e in model.scope.entries] == ["tpu"]
    assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") is not None


def test_an_evaluation_script_reaches_its_code_as_inference(tmp_path: Path) -> None:
    """An entry point that tests and never fits runs inference on the TPU: per-step costs only
    it reaches cost no training (breakage there still counts: `per_step=False`)."""
    files = {
        **PACKAGE,
        "pkg/losses.py": PACKAGE["pkg/losses.py"]
        + """\


        def report(logits):
            return logits.max().item()  # report
        """,
        "train_tpu.py": tpu_script('accelerator="tpu"'),
        "evaluate_tpu.py": """\
            import lightning as L

            from pkg.losses import report
            from pkg.model import Model


            def main():
                trainer = L.Trainer(accelerator="tpu", max_epochs=0)
                trainer.test(Model())
                report(None)


            if __name__ == "__main__":
                main()
        """,
    }
    model = project(tmp_path, files)
    assert len(model.scope.entries) == 2
    reason = reason_at(model, tmp_path, "pkg/losses.py", "# report")
    assert reason == (
        "inference only (reached from `trainer.test` in evaluate_tpu.py, which never fits)"
    )
    path = str(tmp_path / "pkg/losses.py")
    line = Path(path).read_text().splitlines().index("    return logits.max().item()  # report")
    assert model.scope.reason(path, line + 1, 5, per_step=False) is None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# focal") is None  # trains too


def test_an_entry_point_whose_model_is_not_visible_says_nothing(tmp_path: Path) -> None:
    """`trainer.fit(load_model(name))` through a registry: the reach shows no model, so the
    project is judged as a library (nothing is left out for being unreached)."""
    files = {
        **PACKAGE,
        "train_tpu.py": """\
            import importlib

            import lightning as L

            cls = getattr(importlib.import_module("pkg.model"), "Model")
            L.Trainer(accelerator="tpu").fit(cls())
        """,
    }
    model = project(tmp_path, files)
    assert model.scope.entries == []
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") is None


def test_entry_points_speak_only_for_their_own_folders(tmp_path: Path) -> None:
    files = {f"proj/{name}": text for name, text in PACKAGE.items()}
    files["proj/train_tpu.py"] = tpu_script('accelerator="tpu"')
    files["other/lib/__init__.py"] = ""
    files["other/lib/ops.py"] = """\
        def helper(x, m):
            return x[m]  # other-project
    """
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "proj/pkg/losses.py", "# dice") is not None
    assert reason_at(model, tmp_path, "other/lib/ops.py", "# other-project") is None


def test_torch_xla_launchers_and_fabric_loops_are_entry_points(tmp_path: Path) -> None:
    files = {
        **PACKAGE,
        "train_xla.py": """\
            import torch_xla
            import torch_xla.distributed.xla_multiprocessing as xmp

            from pkg.losses import focal
            from pkg.model import Block


            def _mp_fn(index):
                net = Block()
                for batch in loader:
                    focal(net(batch), batch).backward()


            if __name__ == "__main__":
                xmp.spawn(_mp_fn, args=())
        """,
    }
    model = project(tmp_path, files)
    assert [e.kind for e in model.scope.entries] == ["xla-spawn"]
    assert reason_at(model, tmp_path, "pkg/losses.py", "# focal") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "# unused-block") is None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") is not None


def test_a_script_that_takes_an_xla_device_and_never_trains_is_inference(
    tmp_path: Path,
) -> None:
    """A demo or self-test that takes an XLA device to run a model forward (no training loop,
    no `backward`, no optimizer step, no `fit`) reaches its code as inference; the script
    that trains on the device reaches its own as training."""
    files = {
        **PACKAGE,
        "train_xla.py": """\
            import torch_xla.core.xla_model as xm

            from pkg.losses import focal
            from pkg.model import Model


            def main():
                device = xm.xla_device()
                net = Model().to(device)
                for batch in loader:
                    loss = focal(net(batch), batch)
                    loss.backward()
                    xm.optimizer_step(opt)


            if __name__ == "__main__":
                main()
        """,
        "demo_xla.py": """\
            import torch_xla.core.xla_model as xm

            from pkg.losses import dice
            from pkg.model import Block


            def main():
                device = xm.xla_device()
                print(dice(Block().to(device)(x), x))


            if __name__ == "__main__":
                main()
        """,
    }
    model = project(tmp_path, files)
    assert sorted(Path(e.path).name for e in model.scope.entries) == ["demo_xla.py", "train_xla.py"]
    assert reason_at(model, tmp_path, "pkg/losses.py", "# focal") is None
    inference = (
        "inference only (reached from demo_xla.py, which takes an XLA device and never trains)"
    )
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") == inference
    assert reason_at(model, tmp_path, "pkg/model.py", "# unused-block") == inference
    # The demo trains once it takes a backward pass: its reach is training code.
    files["demo_xla.py"] = files["demo_xla.py"].replace(
        "print(dice(Block().to(device)(x), x))", "dice(Block().to(device)(x), x).backward()"
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") is None


def test_tests_are_never_entry_points(tmp_path: Path) -> None:
    files = {
        **PACKAGE,
        "tests/test_tpu.py": """\
            import lightning as L

            from pkg.model import Model


            def test_fit_on_tpu():
                L.Trainer(accelerator="tpu").fit(Model())
        """,
    }
    model = project(tmp_path, files)
    assert [Path(e.path).name for e in model.scope.entries] == ["train_gpu.py"]


# --- configs --------------------------------------------------------------------------------


def with_configs(tmp_path: Path, files: dict[str, str], configs: dict[str, str]) -> ProjectModel:
    from tpulint.analysis.config_facts import config_facts

    model = project(tmp_path, files)
    facts = []
    for name, text in configs.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        facts.append(config_facts(str(path), path.read_text(encoding="utf-8")))
    return ProjectModel(model.modules.values(), configs=facts)


def test_a_lightning_cli_whose_configs_select_the_tpu(tmp_path: Path) -> None:
    files = {
        **PACKAGE,
        "main.py": """\
            from lightning.pytorch.cli import LightningCLI

            if __name__ == "__main__":
                LightningCLI()
        """,
    }
    configs = {
        "configs/tpu.yaml": """\
            trainer:
              accelerator: tpu
              devices: auto
            model:
              class_path: pkg.model.Model
            data:
              class_path: pkg.data.TpuData
        """,
        "configs/gpu.yaml": """\
            trainer:
              accelerator: gpu
            model:
              class_path: pkg.model.Model
            data:
              class_path: pkg.data.GpuData
        """,
    }
    model = with_configs(tmp_path, files, configs)
    assert [(Path(e.path).name, e.kind, e.verdict) for e in model.scope.entries] == [
        ("main.py", "cli", "tpu")
    ]
    assert reason_at(model, tmp_path, "pkg/model.py", "# step") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") is not None
    assert reason_at(model, tmp_path, "pkg/losses.py", "# dice") is not None


def test_configs_do_not_decide_an_accelerator_the_script_computes(tmp_path: Path) -> None:
    """A config naming another accelerator speaks for `Trainer(accelerator=cfg.accelerator)`,
    not for a Trainer whose accelerator the script's own code picks (`accelerator=
    device_kind()`, "tpu" on a TPU VM): that script stays an "auto" entry point. (A function
    whose returns spell "tpu", `return "tpu" if has_tpu() else "cuda"`, makes it a TPU one, as
    the same choice written in the call does.)"""
    picked = """\
        import os

        import lightning as L

        from pkg.data import TpuData
        from pkg.model import Model


        def device_kind():
            return os.environ.get("ACCELERATOR_KIND") or detect()


        if __name__ == "__main__":
            kind = device_kind()
            L.Trainer(accelerator=kind).fit(Model(), TpuData())
    """
    files = {
        **PACKAGE,
        "train_tpu.py": tpu_script('accelerator="tpu"').replace("TpuData", "GpuData"),
        "train_any.py": picked,
    }
    configs = {"configs/old.yaml": "trainer:\n  accelerator: gpu\n"}
    model = with_configs(tmp_path, files, configs)
    assert sorted(e.verdict for e in model.scope.entries) == ["auto", "tpu"]
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    # Read from a config instead, the accelerator is the configs' (another one here).
    from_config = picked.replace("accelerator=kind", "accelerator=cfg.accelerator")
    model = with_configs(tmp_path, {**files, "train_any.py": from_config}, configs)
    assert [e.verdict for e in model.scope.entries] == ["tpu"]
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is not None
    spelled = picked.replace(
        'os.environ.get("ACCELERATOR_KIND") or detect()', '"tpu" if has_tpu() else "cuda"'
    )
    model = with_configs(tmp_path, {**files, "train_any.py": spelled}, configs)
    assert [e.verdict for e in model.scope.entries] == ["tpu", "tpu"]
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None


def test_classes_a_script_builds_from_its_configs(tmp_path: Path) -> None:
    """`instantiate_from_config(config.model)`: the classes the configs name are built."""
    files = {
        **PACKAGE,
        "pkg/util.py": """\
            import importlib


            def instantiate_from_config(config):
                module, name = config["target"].rsplit(".", 1)
                return getattr(importlib.import_module(module), name)(**config.get("params", {}))
        """,
        "main_tpu.py": """\
            import lightning as L
            import yaml

            from pkg.util import instantiate_from_config

            if __name__ == "__main__":
                config = yaml.safe_load(open("configs/caption.yaml"))
                model = instantiate_from_config(config["model"])
                data = instantiate_from_config(config["data"])
                L.Trainer(strategy="xla").fit(model, datamodule=data)
        """,
    }
    configs = {
        "configs/caption.yaml": """\
            model:
              target: pkg.model.Model
            data:
              target: pkg.data.TpuData
        """
    }
    model = with_configs(tmp_path, files, configs)
    assert [Path(e.path).name for e in model.scope.entries] == ["main_tpu.py"]
    assert reason_at(model, tmp_path, "pkg/losses.py", "# focal") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# tpu-data") is None
    assert reason_at(model, tmp_path, "pkg/data.py", "# gpu-data") is not None


# --- torch modules that are data code -------------------------------------------------------

TRANSFORMS = {
    "chem/__init__.py": "",
    "chem/transforms.py": """\
        import torch
        from torch import nn


        class Transform(nn.Module):
            pass


        class DropSelfPairs(Transform):
            def forward(self, sample):
                keep = [k for k in range(len(sample)) if sample[k].item() != 0]  # drop-pairs
                return sample[keep]


        class CastTo32(Transform):
            def forward(self, sample):
                return sample.float() if sample.sum().item() else sample  # cast


        class Scale(Transform):
            def forward(self, x):
                return x / x.abs().max().item()  # scale
    """,
    "chem/data.py": """\
        from torch import nn
        from torch.utils.data import Dataset


        class Molecules(Dataset):
            def __init__(self, rows, transforms):
                self.rows = rows
                self.tf = nn.Sequential(*transforms)

            def __getitem__(self, n):
                return self.tf(self.rows[n])
    """,
    "chem/model.py": """\
        import lightning as L
        from torch import nn

        from chem.transforms import Scale


        class Potential(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.scale = Scale()
                self.net = nn.Linear(8, 1)

            def training_step(self, batch, i):
                return self.net(self.scale(batch)).sum()
    """,
    "train.py": """\
        from chem.data import Molecules
        from chem.transforms import CastTo32, DropSelfPairs, Scale

        rows = []
        data = Molecules(rows, transforms=[DropSelfPairs(), CastTo32(), Scale()])
    """,
}


def hot_names(model: ProjectModel) -> set[str]:
    return {model.functions[g].summary.qualname for g in model.hot}


def test_modules_built_only_for_the_data_pipeline_are_not_hot(tmp_path: Path) -> None:
    model = project(tmp_path, TRANSFORMS)
    hot = hot_names(model)
    assert "DropSelfPairs.forward" not in hot
    assert "CastTo32.forward" not in hot
    # Also a layer of the model (built in its __init__): hot.
    assert "Scale.forward" in hot
    assert "Potential.training_step" in hot


def test_modules_a_config_names_under_data_transforms(tmp_path: Path) -> None:
    files = dict(TRANSFORMS)
    files["train.py"] = "rows = []\n"
    configs = {
        "configs/train.yaml": """\
            data:
              _target_: chem.data.Molecules
              transforms:
                - _target_: chem.transforms.DropSelfPairs
            model:
              postprocessors:
                - _target_: chem.transforms.CastTo32
        """
    }
    model = with_configs(tmp_path, files, configs)
    hot = hot_names(model)
    assert "DropSelfPairs.forward" not in hot
    assert "CastTo32.forward" in hot  # a model's postprocessor too


def test_modules_gathered_into_a_transforms_list_are_data_code(tmp_path: Path) -> None:
    """`transforms = [...]`, `transforms.append(...)` and `transform = Cls(...)` build for the
    data pipeline as a `transforms=` argument does; a test building one by hand says nothing,
    a model's method building one still makes it a layer."""
    files = dict(TRANSFORMS)
    files["train.py"] = """\
        from chem.data import Molecules
        from chem.transforms import CastTo32, DropSelfPairs, Scale


        def default_transforms(cutoff):
            transforms = [DropSelfPairs()]
            if cutoff:
                transforms.append(CastTo32())
            return transforms


        def sanitize(sample):
            transform = Scale()
            return transform(sample)


        data = Molecules([], default_transforms(3.0))
    """
    files["chem/tests/__init__.py"] = ""
    files["chem/tests/test_transforms.py"] = """\
        from chem.transforms import CastTo32, DropSelfPairs


        def test_cast(sample):
            assert DropSelfPairs()(CastTo32()(sample)) is not None
    """
    model = project(tmp_path, files)
    hot = hot_names(model)
    assert "DropSelfPairs.forward" not in hot
    assert "CastTo32.forward" not in hot
    assert "Scale.forward" in hot  # also built in Potential.__init__


PIPELINE_MODULES = {
    "ev/__init__.py": "",
    "ev/base.py": """\
        from torch import nn


        class Part(nn.Module):
            pass
    """,
    "ev/graphs.py": """\
        import torch

        from ev.base import Part


        class Edges(Part):
            def forward(self, pos):
                return torch.cdist(pos, pos).lt(1.0).nonzero()


        class Builder(Part):
            def __init__(self, edges: Edges):
                super().__init__()
                self.edges = edges

            def forward(self, hits):
                return hits[hits[:, 0] > 0], self.edges(hits)


        class KnnBuilder(Builder):
            def forward(self, hits):
                return super().forward(hits)
    """,
    "ev/data.py": """\
        from copy import deepcopy

        import torch
        from torch.utils.data import Dataset

        from ev.graphs import Builder


        class Events(Dataset):
            def __init__(self, rows, builder: Builder):
                self.rows = rows
                self.builder = deepcopy(builder)

            def __getitem__(self, i):
                return self.builder(torch.as_tensor(self.rows[i]))
    """,
    "ev/model.py": """\
        import lightning as L

        from ev.base import Part
        from ev.graphs import Builder


        class Net(L.LightningModule):
            def __init__(self, net: Part, builder: Builder):
                super().__init__()
                self.net = net
                self.builder = builder

            def training_step(self, batch, i):
                return self.net(batch).sum()
    """,
}


def test_modules_only_the_dataset_calls_are_not_hot(tmp_path: Path) -> None:
    """A module a Dataset's `__getitem__` calls through an attribute typed as its class (a
    copy of an annotated parameter), the subclasses, and the modules they call the same way:
    host code of the loader. The model stores one and calls its backbone typed as the base
    of every module: neither reaches them."""
    hot = hot_names(project(tmp_path, PIPELINE_MODULES))
    assert "Net.training_step" in hot
    assert not {"Builder.forward", "KnnBuilder.forward", "Edges.forward"} & hot


def test_modules_the_dataset_and_a_step_call_stay_hot(tmp_path: Path) -> None:
    files = dict(PIPELINE_MODULES)
    files["ev/model.py"] = files["ev/model.py"].replace(
        "self.net(batch).sum()", "self.net(self.builder(batch)[0]).sum()"
    )
    hot = hot_names(project(tmp_path, files))
    assert {"Builder.forward", "KnnBuilder.forward", "Edges.forward"} <= hot


def test_pipeline_modules_read_by_a_step_stay_hot(tmp_path: Path) -> None:
    """An attribute of the model the step reads (and may hand on) holds one: hot. So is one
    a class with hot code builds, or one a config names under the model."""
    files = dict(PIPELINE_MODULES)
    files["ev/model.py"] = files["ev/model.py"].replace(
        "self.net(batch).sum()", "self.net(batch, self.builder).sum()"
    )
    assert "Builder.forward" in hot_names(project(tmp_path, files))
    files = dict(PIPELINE_MODULES)
    files["ev/model.py"] = (
        files["ev/model.py"]
        .replace(
            "self.builder = builder", "self.builder = builder\n                self.graph = Edges()"
        )
        .replace("from ev.graphs import Builder", "from ev.graphs import Builder, Edges")
    )
    hot = hot_names(project(tmp_path / "built", files))
    assert "Edges.forward" in hot and "Builder.forward" not in hot
    configs = {"conf/train.yaml": "model:\n  graph:\n    _target_: ev.graphs.KnnBuilder\n"}
    hot = hot_names(with_configs(tmp_path / "config", PIPELINE_MODULES, configs))
    assert {"KnnBuilder.forward", "Edges.forward"} <= hot  # (the edges it calls run there too)


def test_pipeline_modules_a_construction_hands_the_model_stay_hot(tmp_path: Path) -> None:
    """The step calls an attribute of no known class, an `__init__` parameter the script
    passes a pipeline module: hot."""
    files = dict(PIPELINE_MODULES)
    files["ev/model.py"] = (
        files["ev/model.py"]
        .replace("builder: Builder", "builder")
        .replace("self.net(batch).sum()", "self.net(self.builder(batch)[0]).sum()")
    )
    files["train.py"] = """\
        from ev.graphs import Edges, KnnBuilder
        from ev.model import Net

        if __name__ == "__main__":
            net = Net(None, KnnBuilder(Edges()))
    """
    assert "KnnBuilder.forward" in hot_names(project(tmp_path, files))


def test_modules_called_through_the_pipeline_type_by_a_step_stay_hot(tmp_path: Path) -> None:
    """The step calls a module typed as the class the dataset calls through: it may be one."""
    files = dict(PIPELINE_MODULES)
    files["ev/model.py"] = files["ev/model.py"].replace("net: Part", "net: Builder")
    hot = hot_names(project(tmp_path, files))
    assert {"Builder.forward", "KnnBuilder.forward"} <= hot


_FEATURE_FILES = {
    "speech/__init__.py": "",
    "speech/features.py": """\
        import torch
        from torch import nn


        class PitchTracker(nn.Module):
            def forward(self, wave):
                return torch.from_numpy(wave.cpu().numpy() * 2)  # pitch


        class Spectrum(nn.Module):
            def forward(self, wave):
                return wave.abs().max().item()  # spectrum


        class Settings:  # (no torch module: named by a data module, tried once)
            rate = 16000


        class FeatureExtractor(nn.Module):
            def __init__(self, pitch):
                super().__init__()
                self.settings = Settings()
                self.pitch = PitchTracker() if pitch else None

            def forward(self, wave):
                return self.pitch(wave)


        def make_features(kind):
            if kind == "pitch":
                return FeatureExtractor(pitch=True)
            return Spectrum()
    """,
    "speech/data.py": """\
        import lightning as L

        from speech.features import make_features


        class SpeechData(L.LightningDataModule):
            def __init__(self, kind):
                super().__init__()
                self.features = make_features(kind)
    """,
    "speech/model.py": """\
        import lightning as L
        from torch import nn


        class Recognizer(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(8, 1)

            def training_step(self, batch, i):
                return self.net(batch).sum()
    """,
    "train.py": """\
        import lightning as L

        from speech.data import SpeechData
        from speech.model import Recognizer

        L.Trainer(accelerator="tpu").fit(Recognizer(), SpeechData("pitch"))
    """,
}


def test_modules_a_function_builds_only_for_the_data_pipeline(tmp_path: Path) -> None:
    """`make_features(kind)`, called only by a DataModule's `__init__`, builds data code, and
    so are the modules such a transform builds in its own methods (`PitchTracker` held by
    `FeatureExtractor`); a script that builds one as a model's layer keeps it a layer."""
    files = dict(_FEATURE_FILES)
    files["sample.py"] = """\
        from speech.features import make_features


        if __name__ == "__main__":
            make_features("pitch")(None)
    """
    hot = hot_names(project(tmp_path / "a", files))
    assert "PitchTracker.forward" not in hot
    assert "FeatureExtractor.forward" not in hot
    assert "Spectrum.forward" not in hot
    assert "Recognizer.training_step" in hot
    # also called by a model's code, or built by one: a layer
    files["speech/model.py"] = (
        files["speech/model.py"]
        .replace(
            "        from torch import nn\n",
            "        from torch import nn\n\n        from speech.features import make_features\n",
        )
        .replace("nn.Linear(8, 1)", 'make_features("pitch")')
    )
    hot = hot_names(project(tmp_path / "b", files))
    assert "PitchTracker.forward" in hot
    files = dict(_FEATURE_FILES)
    files["speech/model.py"] += """\

        from speech.features import PitchTracker


        class Tagger(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.pitch = PitchTracker()

            def training_step(self, batch, i):
                return self.pitch(batch).sum()
    """
    hot = hot_names(project(tmp_path / "c", files))
    assert "PitchTracker.forward" in hot
    assert "FeatureExtractor.forward" not in hot


def test_transforms_of_a_project_that_transforms_batches_on_the_device(tmp_path: Path) -> None:
    """A DataModule that applies transforms in `on_after_batch_transfer` runs them on the
    device every step: the project's `transforms` are not taken for host code."""
    files = dict(TRANSFORMS)
    files["chem/datamodule.py"] = """\
        import lightning as L


        class MoleculeData(L.LightningDataModule):
            def __init__(self, transforms):
                super().__init__()
                self.transforms = transforms

            def on_after_batch_transfer(self, batch, dataloader_idx):
                for transform in self.transforms:
                    batch = transform(batch)
                return batch
    """
    hot = hot_names(project(tmp_path, files))
    assert "DropSelfPairs.forward" in hot
    assert "CastTo32.forward" in hot


def test_a_module_a_test_and_a_model_both_build_stays_hot(tmp_path: Path) -> None:
    files = dict(TRANSFORMS)
    files["chem/model.py"] = files["chem/model.py"].replace("Scale", "CastTo32")
    files["chem/tests/__init__.py"] = ""
    files["chem/tests/test_model.py"] = """\
        from chem.transforms import CastTo32


        def test_cast(sample):
            assert CastTo32()(sample) is not None
    """
    hot = hot_names(project(tmp_path, files))
    assert "CastTo32.forward" in hot
    assert "DropSelfPairs.forward" not in hot


def test_breakage_in_inference_code_stays_in_scope(tmp_path: Path) -> None:
    """A removed API breaks inference on a TPU too; a per-step sync there costs no training."""
    from tpulint.config.settings import Config
    from tpulint.runner.paths import check_paths

    root = tmp_path / "proj"
    project(
        root,
        {
            "model.py": """\
                import lightning as L
                import torch
                import torch_xla.core.xla_model as xm


                class Model(L.LightningModule):
                    def training_step(self, batch, i):
                        return self(batch).sum()

                    def predict_step(self, batch, i):
                        scale = xm.xrt_world_size()  # removed in torch_xla 2.7
                        return self(batch).max().item() * scale
            """
        },
    )
    config = Config.from_mapping({"select": ["TPU101", "TPU501"]}, root=root)
    run = check_paths([str(root)], config, use_cache=False, jobs=1)
    found = {d.code: d.scope for d in run.diagnostics}
    assert found["TPU501"] is None
    assert found["TPU101"] == "inference only (reached from `predict_step`)"


def statement_reason(
    model: ProjectModel, tmp_path: Path, name: str, marker: str, per_step: bool = True
) -> str | None:
    """The scope reason of the statement on the first line of `name` that contains `marker`
    (a comment after it)."""
    path = str(tmp_path / name)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if marker in line:
            column = len(line) - len(line.lstrip()) + 1
            return model.scope.reason(path, number, column, per_step=per_step)
    raise AssertionError(f"{marker!r} not in {name}")


INFERENCE_FLAGS = {
    "pkg/__init__.py": "",
    "pkg/layers.py": """\
        from torch import nn


        class Block(nn.Module):
            def forward(self, z, mask, _offload_inference: bool = False, *, predict=None):
                if _offload_inference and z.dim() > 2:
                    z = z.cpu()  # offload
                if not predict:
                    return z[mask]  # training-branch
                return z.tolist()  # after-predict


        class Stack(nn.Module):
            def forward(self, z, mask, _offload_inference=False):
                return Block()(z, mask, _offload_inference=_offload_inference)  # handed on
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.layers import Block


        class Model(L.LightningModule):
            def __init__(self, predict_mode=False, inference=False):
                super().__init__()
                self.block = Block()
                self.predict_mode = predict_mode
                self.inference = inference
                self.predicting = False

            def set_predicting(self):
                self.predicting = True

            def training_step(self, batch, batch_idx):
                out = self.block(batch, batch > 0)
                if self.inference:
                    out.tolist()  # inference-attribute
                if self.predicting:
                    out.tolist()  # predicting-set-on
                if not self.predict_mode:
                    return out.sum()
                else:
                    print(out.tolist())  # predict-mode-else

            def validation_step(self, batch, batch_idx, inference=False):
                inference = batch_idx > 3
                if inference:
                    batch.tolist()  # reassigned
    """,
}


def test_branches_of_inference_flags_that_training_leaves_off(tmp_path: Path) -> None:
    """A parameter named for inference that defaults to False (or an attribute set only from
    one) is off while training: its branches are inference, unless a flag is reassigned,
    set on by the class, or passed on by code that may train."""
    model = project(tmp_path, dict(INFERENCE_FLAGS))
    offload = statement_reason(model, tmp_path, "pkg/layers.py", "# offload")
    assert offload == (
        "inference only (under `if _offload_inference and z.dim() > 2`, an inference flag"
        " that training leaves off)"
    )
    assert statement_reason(model, tmp_path, "pkg/layers.py", "# training-branch") is None
    after = statement_reason(model, tmp_path, "pkg/layers.py", "# after-predict")
    assert after is not None and after.startswith("inference only (after `if not predict: ")
    assert statement_reason(model, tmp_path, "pkg/model.py", "# inference-attribute") is not None
    assert statement_reason(model, tmp_path, "pkg/model.py", "# predict-mode-else") is not None
    assert statement_reason(model, tmp_path, "pkg/model.py", "# predicting-set-on") is None
    assert statement_reason(model, tmp_path, "pkg/model.py", "# reassigned") is None


@pytest.mark.parametrize(
    ("caller", "kept"),
    [
        # A script (it may train) turns the flag on: the branch stays.
        ("if __name__ == '__main__':\n    Model(predict_mode=True)\n", "# predict-mode-else"),
        ("if __name__ == '__main__':\n    m = Model()\n    m.inference = True\n", None),
        ("def run(block, x):\n    return block(x, x, _offload_inference=flag)\n", "# offload"),
    ],
)
def test_an_inference_flag_turned_on_by_code_that_may_train(
    tmp_path: Path, caller: str, kept: str | None
) -> None:
    files = dict(INFERENCE_FLAGS)
    files["run.py"] = "from pkg.layers import Block\nfrom pkg.model import Model\n\n" + caller
    model = project(tmp_path, files)
    if kept is None:
        assert statement_reason(model, tmp_path, "pkg/model.py", "# inference-attribute") is None
        assert statement_reason(model, tmp_path, "pkg/model.py", "# predict-mode-else") is not None
    else:
        name = "pkg/layers.py" if kept == "# offload" else "pkg/model.py"
        assert statement_reason(model, tmp_path, name, kept) is None


def test_an_inference_flag_turned_on_in_a_validation_step(tmp_path: Path) -> None:
    """Validation runs on the TPU during fit: a flag it turns on keeps the branch in scope,
    whichever file's finding the project's flags are first looked up for."""
    files = dict(INFERENCE_FLAGS)
    files["pkg/model.py"] = files["pkg/model.py"].replace(
        "                inference = batch_idx > 3",
        "                self.block(batch, batch, predict=True)\n"
        "                inference = batch_idx > 3",
    )
    files["other/lib/__init__.py"] = ""  # another project, read last
    files["other/lib/ops.py"] = "def identity(x):\n    return x\n"
    model = project(tmp_path, files)
    assert statement_reason(model, tmp_path, "pkg/layers.py", "# after-predict") is None
    assert statement_reason(model, tmp_path, "pkg/model.py", "# predict-mode-else") is not None


def test_an_inference_flag_turned_on_only_by_inference_code(tmp_path: Path) -> None:
    """`predict_step` passing the flag on is inference: the branch stays out; findings about
    breakage in it stay in (inference runs on the TPU too)."""
    files = dict(INFERENCE_FLAGS)
    files["pkg/model.py"] = files["pkg/model.py"].replace(
        "def validation_step",
        "def predict_step(self, batch, batch_idx):\n"
        "                return self.block(batch, batch, _offload_inference=True)\n\n"
        "            def validation_step",
    )
    model = project(tmp_path, files)
    assert statement_reason(model, tmp_path, "pkg/layers.py", "# offload") is not None
    assert statement_reason(model, tmp_path, "pkg/layers.py", "# offload", per_step=False) is None


# --- hot code the call graph reaches through hooks, attributes and loops ----------------------


def test_hot_code_reached_through_references_mixins_optimizers_and_loops(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
from functools import partial


def focal(logits, target):
    return logits.mean()


def dice(logits, target):
    return logits.sum()


def block(x):
    return x


class SignSGD(torch.optim.Optimizer):
    def step(self, closure=None):
        return None


class EmaMixin:
    def on_train_batch_end(self, outputs, batch, i):
        self.update_ema()

    def update_ema(self):
        return None


class Model(EmaMixin, L.LightningModule):
    def __init__(self):
        super().__init__()
        self.loss_fn = focal
        self.aux = partial(dice, smooth=1.0)

    def training_step(self, batch, i):
        h = torch.utils.checkpoint.checkpoint(block, batch)
        return self.loss_fn(h, batch) + self.aux(h, batch)


def train(model, optimizer, loader):
    setup_logging()
    for x, y in loader:
        loss = focal(model(x), y)
        loss.backward()
        optimizer.step()


def setup_logging():
    return None
"""
        },
    )
    hot = hot_names(model)
    for name in ("focal", "dice", "block", "SignSGD.step", "EmaMixin.on_train_batch_end"):
        assert name in hot, name
    assert "EmaMixin.update_ema" in hot
    assert "train" in hot  # a training loop
    assert "setup_logging" not in hot  # called before the loop, not in it


def test_loops_that_are_not_generation(tmp_path: Path) -> None:
    """A list of per-parameter numbers under no_grad, a chain of tensor operations, and a
    step hook that samples are not generation functions (the hook stays validation code)."""
    from tpulint.analysis.summary import summarize

    source = textwrap.dedent(
        """\
        import torch
        import torch.nn.functional as F


        class Model:
            @torch.no_grad()
            def norms(self, groups):
                out = []
                for group in groups:
                    values = []
                    for p in group:
                        values.append(p.norm().item())
                    out.extend(values)
                return out

            @torch.no_grad()
            def sample_noise(self, noise, steps):
                for _ in range(steps):
                    noise = F.interpolate(noise, scale_factor=2)
                return noise

            @torch.no_grad()
            def validation_step(self, batch, i):
                x = batch
                for _ in range(4):
                    x = torch.cat([x, self(x)[:, -1:]], dim=1)
                return x

            @torch.no_grad()
            def sample(self, x, steps):
                for _ in range(steps):
                    nxt = self(x)[:, -1:]
                    x = torch.cat([x, nxt], dim=1)
                return x
        """
    )
    facts = summarize(source, str(tmp_path / "m.py"), "m", False).scope
    assert facts.generation == ["Model.sample#0"]


def test_a_project_helper_asking_for_a_process_group_is_false_on_xla(tmp_path: Path) -> None:
    model = project(
        tmp_path,
        {
            "dist_utils.py": """\
                import torch.distributed as dist


                def is_dist_avail_and_initialized():
                    return dist.is_available() and dist.is_initialized()
                """,
            "m.py": MODULE_HEAD
            + """\
from dist_utils import is_dist_avail_and_initialized


class Model(L.LightningModule):
    def training_step(self, batch, i):
        x = self(batch)
        if is_dist_avail_and_initialized():
            print(x.item())
        return x.sum()
""",
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "print(")
    assert reason is not None and "false on a TPU" in reason


# --- pytest tests beside the library code -----------------------------------------------------

LOOP_MODULE = """\
import torch


def {name}(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        assert torch.isfinite(loss)
"""


@pytest.mark.parametrize(
    ("name", "hot"), [("train", True), ("fit_model", True), ("test_fit", False)]
)
def test_a_pytest_tests_loop_is_not_a_training_loop(tmp_path: Path, name: str, hot: bool) -> None:
    model = project(tmp_path, {"lib.py": LOOP_MODULE.format(name=name)})
    hot_names = {info.root for info in model.hot.values()}
    assert any(name in root for root in hot_names) is hot


# --- parameters no call passes -----------------------------------------------------------------

_MASKED_HELPER = """\
def pooled(x, mask=None, *, weights=None):
    if mask is not None:
        x = x[mask]
    if weights is None:
        return x.mean()
    return (x * weights[x > 0]).sum()


class Model(L.LightningModule):
    def training_step(self, batch, i):
        return pooled(self(batch))
"""


def test_a_parameter_every_call_leaves_to_none_never_runs_its_branch(tmp_path: Path) -> None:
    """`if mask is not None:` in a function every visible call of which leaves `mask` out:
    the branch never runs; nor does the code after `if weights is None: return`."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _MASKED_HELPER})
    reason = reason_at(model, tmp_path, "m.py", "x[mask]")
    assert reason == (
        "under `if mask is not None`, and every call of the function leaves `mask` to its "
        "default None"
    )
    after = reason_at(model, tmp_path, "m.py", "x * weights")
    assert after is not None and after.startswith("after `if weights is None: return`")


@pytest.mark.parametrize(
    "call",
    [
        "pooled(self(batch), batch > 0)",  # by position
        "pooled(self(batch), mask=batch > 0)",  # by keyword
        "pooled(self(batch), *self.extra)",  # spread: not visible
        "pooled(self(batch), **self.options)",
    ],
)
def test_a_call_that_may_pass_the_parameter_keeps_the_branch(tmp_path: Path, call: str) -> None:
    text = _MASKED_HELPER.replace("pooled(self(batch))", call)
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "x[mask]") is None


@pytest.mark.parametrize(
    "extra",
    [
        # handed elsewhere as a value: who calls it, with what, is not visible
        "\n\nPOOLS = {'mean': pooled}\n",
        # called from code outside any function (the model keeps no call list there)
        "\n\nprint(pooled(torch.ones(3), torch.ones(3) > 0))\n",
    ],
)
def test_a_function_used_where_calls_are_not_seen_keeps_the_branch(
    tmp_path: Path, extra: str
) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _MASKED_HELPER + extra})
    assert reason_at(model, tmp_path, "m.py", "x[mask]") is None


def test_no_call_seen_or_a_reassigned_parameter_keeps_the_branch(tmp_path: Path) -> None:
    """A function no call of which is seen keeps today's behaviour; so does a parameter the
    body reassigns (`mask = mask or default`), and the `forward` of a module handed on as a
    value (`apply(self.head, batch)`: who calls it, with what, is not seen)."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + """\
def unused(x, mask=None):
    if mask is not None:
        x = x[mask]
    return x


def filled(x, mask=None):
    if mask is None:
        mask = x > 0
    if mask is not None:
        x = x[mask]
    return x


class Head(torch.nn.Module):
    def forward(self, x, mask=None):
        if mask is not None:
            x = x[mask]
        return x


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def training_step(self, batch, i):
        return filled(apply(self.head, batch)).sum()


def apply(module, x):
    return module(x)
"""
        },
    )
    for marker in ("x = x[mask]",):
        lines = (tmp_path / "m.py").read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if marker in line:
                column = line.index("x[mask]") + 1
                assert model.scope.reason(str(tmp_path / "m.py"), number, column) is None, line


# --- parameters every call passes ---------------------------------------------------------------

_SIZED_HELPER = """\
def kernel(x, length=None):
    if length is None:
        length = x.sum().item()
    return x[:length]


def guarded(x, scale=None):
    if scale is None:
        return x
    return x * scale.item()


class Model(L.LightningModule):
    def training_step(self, batch, i):
        n = batch.shape[-1]
        return kernel(self(batch), length=n).sum() + guarded(batch, batch.max())
"""


def test_a_parameter_every_call_passes_never_runs_its_none_branch(tmp_path: Path) -> None:
    """`if length is None:` in a function every visible call of which passes `length` (by
    keyword or position) something that is not None: the branch never runs; the code after
    `if scale is None: return` always does."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _SIZED_HELPER})
    reason = reason_at(model, tmp_path, "m.py", "x.sum().item()")
    assert reason == (
        "under `if length is None`, and every call of the function passes `length` a value "
        "that is not None"
    )
    assert reason_at(model, tmp_path, "m.py", "scale.item()") is None


@pytest.mark.parametrize(
    "call",
    [
        "kernel(self(batch))",  # one call leaves it out
        "kernel(self(batch), length=None)",  # one passes the literal None
        "kernel(self(batch), *self.extra)",  # spread: not visible
        "kernel(self(batch), **self.options)",
        "kernel(self(batch), length=self.length)",  # an attribute: not judged, a value
    ],
)
def test_a_call_that_may_leave_the_parameter_none_keeps_the_branch(
    tmp_path: Path, call: str
) -> None:
    text = _SIZED_HELPER + (
        "\n\ndef other(batch):\n    return " + call.replace("self(batch)", "batch") + "\n"
    )
    text = text.replace("return kernel(", "return other(batch) + kernel(")
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    reason = reason_at(model, tmp_path, "m.py", "x.sum().item()")
    if "self.length" in call:
        assert reason is not None  # passes a value: still decided (only literals say None)
    else:
        assert reason is None, call


@pytest.mark.parametrize(
    "extra",
    [
        "\n\nKERNELS = {'plain': kernel}\n",  # handed elsewhere as a value
        "\n\nprint(kernel(torch.ones(3), 2))\n",  # called from a module's top level
    ],
)
def test_a_function_used_where_calls_are_not_seen_keeps_the_none_branch(
    tmp_path: Path, extra: str
) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _SIZED_HELPER + extra})
    assert reason_at(model, tmp_path, "m.py", "x.sum().item()") is None


def test_a_forwarded_optional_parameter_may_be_none(tmp_path: Path) -> None:
    """`kernel(x, length=length)` from a function whose own `length` defaults to None
    passes None whenever its caller leaves it out: the branch stays."""
    text = (
        _SIZED_HELPER.replace("kernel(self(batch), length=n)", "wrapper(self(batch))")
        + "\n\ndef wrapper(x, length=None):\n    return kernel(x, length=length)\n"
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "x.sum().item()") is None


_FLAG_HELPER = """\
def encode(x, cartesian=False):
    if cartesian:
        return x * 2
    else:
        return x[x > 0]


class Model(L.LightningModule):
    def training_step(self, batch, i):
        return encode(batch, cartesian=True).sum() + encode(batch, True).sum()
"""


def test_a_flag_every_call_passes_as_the_same_literal_decides_its_branch(
    tmp_path: Path,
) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _FLAG_HELPER})
    reason = reason_at(model, tmp_path, "m.py", "x[x > 0]")
    assert reason == (
        "in the `else` of `if cartesian`, and `cartesian` is true in every call of the function"
    )
    assert reason_at(model, tmp_path, "m.py", "x * 2") is None


@pytest.mark.parametrize(
    "calls",
    [
        "encode(batch, cartesian=True).sum() + encode(batch).sum()",  # one leaves the default
        "encode(batch, cartesian=True).sum() + encode(batch, False).sum()",
        "encode(batch, cartesian=self.cartesian).sum()",  # not a literal
        "encode(batch, **self.options).sum()",
    ],
)
def test_a_flag_calls_pass_differently_keeps_both_branches(tmp_path: Path, calls: str) -> None:
    text = _FLAG_HELPER.replace(
        "encode(batch, cartesian=True).sum() + encode(batch, True).sum()", calls
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "x[x > 0]") is None
    assert reason_at(model, tmp_path, "m.py", "x * 2") is None


def test_a_flag_left_to_its_default_everywhere_decides_its_branch(tmp_path: Path) -> None:
    text = _FLAG_HELPER.replace(
        "encode(batch, cartesian=True).sum() + encode(batch, True).sum()",
        "encode(batch).sum()",
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    reason = reason_at(model, tmp_path, "m.py", "x * 2")
    assert reason == (
        "under `if cartesian`, and `cartesian` is false in every call of the function"
    )
    assert reason_at(model, tmp_path, "m.py", "x[x > 0]") is None


def test_a_tests_call_does_not_keep_the_flags_other_branch(tmp_path: Path) -> None:
    """A test that tries the other way runs under pytest, not in training: training's
    calls alone decide (and a function only tests call stays undecided)."""
    test_module = (
        "import torch\nfrom m import encode\n\n\n"
        "def test_encode():\n    assert encode(torch.ones(3)).shape == (3,)\n"
    )
    files = {"m.py": MODULE_HEAD + _FLAG_HELPER, "test_m.py": test_module}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "m.py", "x[x > 0]") is not None
    only_tests = _FLAG_HELPER.replace(
        "encode(batch, cartesian=True).sum() + encode(batch, True).sum()", "batch.sum()"
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + only_tests, "test_m.py": test_module})
    assert reason_at(model, tmp_path, "m.py", "x * 2") is None


# --- modules no script imports -----------------------------------------------------------------

APPLICATION = {
    "train.py": """\
        import sys

        import lightning as L

        sys.path.insert(0, "third_party/ops")
        from model import Net  # noqa: E402

        if __name__ == "__main__":
            L.Trainer(accelerator="gpu").fit(Net())
    """,
    "model.py": """\
        import lightning as L
        from ops_utils import gather

        from losses.focal import focal


        class Net(L.LightningModule):
            def training_step(self, batch, i):
                return focal(gather(batch[0], batch[1]), batch[1])
    """,
    "losses/__init__.py": "",
    "losses/focal.py": """\
        def focal(x, t):
            return x[t > 0].mean()  # focal
    """,
    "losses/old_dice.py": """\
        def dice(x, t):
            return x[t > 0].sum()  # dropped-loss
    """,
    "third_party/ops/setup.py": """\
        from setuptools import setup

        setup(name="ops")
    """,
    "third_party/ops/ops_utils.py": """\
        def gather(x, idx):
            return x[idx.nonzero()]  # vendored-used
    """,
    "third_party/ops/ops_modules.py": """\
        from ops_utils import gather


        def group(x, m):
            return gather(x, m)[m.nonzero()]  # vendored-unused
    """,
    "third_party/ops/ops_test.py": """\
        from ops_modules import group


        def test_group():
            group(None, None)
    """,
    "tools/convert.py": """\
        from losses.old_dice import dice

        print(dice)
    """,
}


def test_a_module_no_script_of_an_application_imports_is_out(tmp_path: Path) -> None:
    """An application (a script that trains, on any accelerator): a module none of its
    scripts imports, directly or not, runs on no machine; a name imported after a
    `sys.path` insert counts by its file's name."""
    files = dict(APPLICATION)
    del files["tools/convert.py"]
    model = project(tmp_path, files)
    why = "imported by no script of its project (its training entry points: train.py)"
    assert reason_at(model, tmp_path, "losses/old_dice.py", "# dropped-loss") == why
    assert reason_at(model, tmp_path, "third_party/ops/ops_modules.py", "# vendored-unused") == why
    assert reason_at(model, tmp_path, "third_party/ops/ops_utils.py", "# vendored-used") is None
    assert reason_at(model, tmp_path, "losses/focal.py", "# focal") is None
    # Tests stay out of the question (they are test code, a reason of their own).
    assert reason_at(model, tmp_path, "third_party/ops/ops_test.py", "group(None") == (
        "test code (ops_test.py)"
    )


def test_relative_imports_above_a_package_root_keep_what_they_name(tmp_path: Path) -> None:
    """Folders without `__init__.py` are namespace packages: `from ...heads.yolo import
    Head` in `nets/ext/blocks/build.py` (only `blocks/` and `heads/` hold one) climbs above
    what the model takes for the package root; the module it names can run. One that names
    no module of the application leaves it unknown."""
    files = {
        "train.py": """\
            import lightning as L

            from nets.ext.blocks.build import Net

            if __name__ == "__main__":
                L.Trainer().fit(Net())
        """,
        "nets/ext/blocks/__init__.py": "",
        "nets/ext/blocks/build.py": """\
            import lightning as L

            from ...heads.yolo import head_loss


            class Net(L.LightningModule):
                def training_step(self, batch, i):
                    return head_loss(batch)
        """,
        "nets/heads/__init__.py": "",
        "nets/heads/yolo.py": """\
            def head_loss(x):
                return x[x > 0].sum()  # head
        """,
        "nets/heads/unused.py": """\
            def other(x):
                return x[x > 0].mean()  # unused
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "nets/heads/yolo.py", "# head") is None
    why = "imported by no script of its project (its training entry points: train.py)"
    assert reason_at(model, tmp_path, "nets/heads/unused.py", "# unused") == why
    files["nets/ext/blocks/build.py"] = files["nets/ext/blocks/build.py"].replace(
        "from ...heads.yolo", "from ...missing.yolo"
    )
    model = project(tmp_path / "unknown", files)
    assert reason_at(model, tmp_path / "unknown", "nets/heads/unused.py", "# unused") is None


def test_a_script_that_imports_a_module_keeps_it(tmp_path: Path) -> None:
    """`tools/convert.py` runs code at its top level (no `__main__` block): a script, so the
    module it imports can run; the training script does not reach it (a conversion tool is
    not what a port moves to the TPU)."""
    model = project(tmp_path, APPLICATION)
    assert reason_at(model, tmp_path, "losses/old_dice.py", "# dropped-loss") == (
        "not reached from the training entry points (train.py)"
    )


@pytest.mark.parametrize(
    "change",
    [
        # a library: no script trains
        lambda files: files.pop("train.py"),
        # modules imported by computed names
        lambda files: files.__setitem__(
            "train.py",
            files["train.py"] + "            importlib.import_module(sys.argv[1])\n",
        ),
        # objects built from configs the project model has not seen
        lambda files: files.__setitem__(
            "train.py",
            files["train.py"].replace("Net()", "hydra.utils.instantiate(cfg.model)"),
        ),
    ],
    ids=["library", "import-module", "instantiate"],
)
def test_what_keeps_every_module_in_scope(tmp_path: Path, change: Any) -> None:
    files = dict(APPLICATION)
    del files["tools/convert.py"]
    change(files)
    model = project(tmp_path, files)
    assert all(str(tmp_path / name) in model.modules for name in files)  # all parsed
    assert reason_at(model, tmp_path, "losses/old_dice.py", "# dropped-loss") is None


def test_a_package_beside_an_examples_folder_is_a_library(tmp_path: Path) -> None:
    """A training script in `examples/` speaks for its own folder: the package beside it may
    be imported by its users from anywhere."""
    files = {
        "mylib/__init__.py": "",
        "mylib/model.py": """\
            import lightning as L


            class Net(L.LightningModule):
                def training_step(self, batch, i):
                    return batch[0].sum()
        """,
        "mylib/extra.py": """\
            def pick(x, m):
                return x[m]  # library-extra
        """,
        "examples/train.py": """\
            import lightning as L

            from mylib.model import Net

            L.Trainer().fit(Net())
        """,
        "examples/plot.py": """\
            def pick(x, m):
                return x[m]  # example-helper
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "mylib/extra.py", "# library-extra") is None
    assert reason_at(model, tmp_path, "examples/plot.py", "# example-helper") == (
        "imported by no script of its project (its training entry points: train.py)"
    )


# --- flags held in attributes ------------------------------------------------------------------

_ATTRIBUTE_FLAG = """\
def contract(x, unbounded=False):
    if unbounded:
        x = x[x.norm(dim=-1) > 1]
    return x


class Field(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unbounded = False

    def forward(self, x):
        return contract(x, self.unbounded) + contract(x)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.field = Field()

    def training_step(self, batch, i):
        return self.field(batch).sum()
"""


def test_a_flag_passed_as_an_attribute_its_class_leaves_off_decides_its_branch(
    tmp_path: Path,
) -> None:
    """`contract(x, self.unbounded)` where every assignment of `self.unbounded` in the
    class (and its bases and subclasses) is False, and every other call leaves the flag to
    its default False: the branch never runs."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _ATTRIBUTE_FLAG})
    reason = reason_at(model, tmp_path, "m.py", "x[x.norm")
    assert reason == "under `if unbounded`, and `unbounded` is false in every call of the function"


@pytest.mark.parametrize(
    "extra",
    [
        # a subclass turns it on: `self` may be one
        "\n\nclass Unbounded(Field):\n    def __init__(self):\n        super().__init__()\n"
        "        self.unbounded = True\n",
        # set from outside the class
        "\n\ndef unbound(model):\n    model.field.unbounded = True\n",
        "\n\ndef unbound(model):\n    setattr(model.field, 'unbounded', True)\n",
        # set from something the code does not show
        "\n\nclass Configured(Field):\n    def __init__(self, cfg):\n        super().__init__()\n"
        "        self.unbounded = cfg.unbounded\n",
        "\n\nclass Loaded(Field):\n    def load(self, options):\n"
        "        for name, value in options.items():\n            setattr(self, name, value)\n",
        "\n\nclass Toggled(Field):\n    def flip(self, on):\n        self.unbounded |= on\n",
    ],
)
def test_an_attribute_flag_set_elsewhere_keeps_the_branch(tmp_path: Path, extra: str) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _ATTRIBUTE_FLAG + extra})
    assert reason_at(model, tmp_path, "m.py", "x[x.norm") is None


_CONSTRUCTOR_FLAG = """\
class Encoder(torch.nn.Module):
    def __init__(self, dim, fused=False):
        super().__init__()
        self.fused = fused
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, longer):
        if self.fused and longer.sum() == 0:
            longer = longer + 1
        return self.proj(x) * longer


class Tower(torch.nn.Module):
    def __init__(self, dim, fused=False):
        super().__init__()
        self.encoder = Encoder(dim, fused=fused)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder(8)
        self.other = Encoder(8, fused=False)
        self.third = Tower(8)

    def training_step(self, batch, i):
        x, longer = batch
        return self.encoder(x, longer).sum()
"""


def test_a_constructor_flag_every_construction_leaves_off_decides_its_test(
    tmp_path: Path,
) -> None:
    """`self.fused = fused` of a constructor parameter defaulting to False, which every
    construction in the project passes False or leaves out (also through a class that
    passes its own flag on): `self.fused and <tensor test>` never evaluates the test."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _CONSTRUCTOR_FLAG})
    reason = reason_at(model, tmp_path, "m.py", "longer.sum() == 0")
    assert reason is not None and reason.startswith("after `self.fused and`")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # one construction turns it on, directly or through the factory
        ("Encoder(8, fused=False)", "Encoder(8, fused=True)"),
        ("Tower(8)", "Tower(8, fused=True)"),
        # a value the code does not show, or spread arguments
        ("Encoder(8, fused=False)", "Encoder(8, fused=self.hparams.fused)"),
        ("Encoder(8, fused=False)", "Encoder(8, **self.options)"),
        # handed on as a value: who builds it, with what, is not visible
        ("self.third = Tower(8)", "self.third = ENCODERS['plain'](8)"),
        # a classmethod builds its own class with what it reads
        (
            "        return self.proj(x) * longer\n",
            "        return self.proj(x) * longer\n\n"
            "    @classmethod\n    def from_options(cls, options):\n"
            "        return cls(options.dim, options.fused)\n",
        ),
        (
            "        return self.proj(x) * longer\n",
            "        return self.proj(x) * longer\n\n"
            "    def widened(self):\n        return type(self)(16, True)\n",
        ),
    ],
)
def test_a_constructor_flag_some_construction_may_turn_on_keeps_its_test(
    tmp_path: Path, old: str, new: str
) -> None:
    text = _CONSTRUCTOR_FLAG.replace(old, new)
    if "ENCODERS" in new:
        text += "\n\nENCODERS = {'plain': Encoder}\n"
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "longer.sum() == 0") is None


def test_a_project_that_builds_objects_from_names_keeps_constructor_flags_open(
    tmp_path: Path,
) -> None:
    """`instantiate(cfg.encoder, fused=True)` (or `eval(name)(...)`) may build any class
    of the project with any arguments: no construction the code shows decides."""
    for builder in (
        "from hydra.utils import instantiate\n\n\ndef build(cfg):\n"
        "    return instantiate(cfg.encoder, fused=True)\n",
        "def build(name):\n    return eval(name)(8, fused=True)\n",
    ):
        files = {"m.py": MODULE_HEAD + _CONSTRUCTOR_FLAG, "factory.py": builder}
        model = project(tmp_path, files)
        assert reason_at(model, tmp_path, "m.py", "longer.sum() == 0") is None, builder


def test_a_class_a_package_exports_keeps_its_constructor_flags_open(tmp_path: Path) -> None:
    """A class its package's `__init__.py` imports is API: users build it as they like."""
    files = {
        "pkg/__init__.py": "from .m import Encoder\n",
        "pkg/m.py": MODULE_HEAD + _CONSTRUCTOR_FLAG,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/m.py", "longer.sum() == 0") is None
    files["pkg/__init__.py"] = ""
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/m.py", "longer.sum() == 0") is not None


def test_code_after_a_return_in_its_block_never_runs(tmp_path: Path) -> None:
    files = {
        "m.py": """\
            import lightning as L


            def show(x):
                return
                print(x.norm().item())  # after-return


            def keep(x):
                if x.ndim > 1:
                    return x.sum().item()  # before-return
                return x.mean()


            class M(L.LightningModule):
                def training_step(self, batch, i):
                    show(batch)
                    return keep(batch)
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "m.py", "x.norm()") == (
        "after `return` in the same block: never runs"
    )
    assert reason_at(model, tmp_path, "m.py", "x.sum()") is None


# --- options no run sets: `is None` of attributes, string options, CUDA error handlers --------

_OPTIONAL_ATTRIBUTE = """\
class Mixed(torch.nn.Module):
    def __init__(self, first, second, ignore=None):
        super().__init__()
        self.first = first
        self.second = second
        self.ignore = ignore

    def forward(self, x, y):
        if self.ignore is not None:
            keep = y != self.ignore
            x, y = x[keep], y[keep]
        return self.first(x, y) + self.second(x, y)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.loss = Mixed(torch.nn.functional.mse_loss, torch.nn.functional.l1_loss)

    def training_step(self, batch, i):
        x, y = batch
        return self.loss(x, y)
"""


def test_an_attribute_every_construction_leaves_none_never_runs_its_branch(
    tmp_path: Path,
) -> None:
    """`self.ignore = ignore` of a constructor parameter defaulting to None that every
    construction leaves out: `if self.ignore is not None:` never runs."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _OPTIONAL_ATTRIBUTE})
    reason = reason_at(model, tmp_path, "m.py", "x[keep]")
    assert reason == (
        "under `if self.ignore is not None`, and `self.ignore` is None in every "
        "construction of its class"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("torch.nn.functional.l1_loss)", "torch.nn.functional.l1_loss, ignore=-1)"),
        ("torch.nn.functional.l1_loss)", "torch.nn.functional.l1_loss, self.hparams.ignore)"),
        ("torch.nn.functional.l1_loss)", "torch.nn.functional.l1_loss, **self.options)"),
        (
            "        self.ignore = ignore\n",
            "        self.ignore = ignore\n        self.ignore = 3\n",
        ),
    ],
)
def test_an_attribute_a_construction_may_set_keeps_its_none_branch(
    tmp_path: Path, old: str, new: str
) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _OPTIONAL_ATTRIBUTE.replace(old, new)})
    assert reason_at(model, tmp_path, "m.py", "x[keep]") is None


_STRING_OPTION = """\
def _exact(x, t):
    return x.sum()


def _approximate(x, t):
    order = torch.argsort(t)
    return x[order][x[order] > 0].sum()


def likelihood(x, t, ties="exact"):
    if ties == "exact":
        return _exact(x, t)
    elif ties == "approximate":
        return _approximate(x, t)
    raise ValueError(ties)


class Model(L.LightningModule):
    def training_step(self, batch, i):
        x, t = batch
        return likelihood(self(x), t)
"""


def test_a_string_option_every_call_leaves_to_its_default_decides_its_branch(
    tmp_path: Path,
) -> None:
    """`ties == "approximate"` of a parameter defaulting to "exact" that every call leaves
    out: the branch never runs, and a function called only from it never does either."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _STRING_OPTION})
    reason = reason_at(model, tmp_path, "m.py", "x[order]")
    assert reason is not None and reason.startswith("called only where it never runs")
    assert 'ties == "approximate"' in reason


@pytest.mark.parametrize(
    "call",
    [
        'likelihood(self(x), t, ties="approximate")',
        "likelihood(self(x), t, self.hparams.ties)",
        "likelihood(self(x), t, **self.options)",
    ],
)
def test_a_string_option_a_call_may_pass_keeps_its_branch(tmp_path: Path, call: str) -> None:
    text = _STRING_OPTION.replace("likelihood(self(x), t)", call)
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "x[order]") is None


def test_a_function_also_called_outside_the_dead_branch_stays(tmp_path: Path) -> None:
    text = _STRING_OPTION.replace(
        "        return likelihood(self(x), t)",
        "        return likelihood(self(x), t) + _approximate(x, t)",
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "x[order]") is None


_CUDA_RETRY = """\
class Head(torch.nn.Module):
    def assign(self, boxes, scores, mode="device"):
        if mode == "host":
            boxes = boxes.cpu().float()
            scores = scores.cpu().float()
        return boxes[scores > 0.5]

    def forward(self, boxes, scores):
        try:
            picked = self.assign(boxes, scores)
        except RuntimeError as error:
            if "CUDA out of memory" not in str(error):
                raise
            picked = self.assign(boxes, scores, "host")
        return picked


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def training_step(self, batch, i):
        return self.head(*batch).sum()
"""


def test_a_cuda_out_of_memory_retry_never_runs_on_a_tpu(tmp_path: Path) -> None:
    """The retry in a handler that re-raises unless the error names CUDA never runs on a
    TPU; the only call that passes `mode="host"` is that retry, so the host branch never
    runs either."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _CUDA_RETRY})
    retry = reason_at(model, tmp_path, "m.py", 'picked = self.assign(boxes, scores, "host")')
    assert retry is not None and retry.startswith('after `if "CUDA out of memory" not in')
    reason = reason_at(model, tmp_path, "m.py", "boxes.cpu()")
    assert reason == 'under `if mode == "host"`, and no call of the function passes `mode` "host"'


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a message that is no CUDA error's: XLA runs out of memory too
        ('"CUDA out of memory"', '"out of memory"'),
        # a call outside the handler that asks for the host path
        ("picked = self.assign(boxes, scores)\n", 'picked = self.assign(boxes, scores, "host")\n'),
        # the mode comes from an option the code does not show
        (
            "picked = self.assign(boxes, scores)\n",
            "picked = self.assign(boxes, scores, self.hparams.mode)\n",
        ),
    ],
)
def test_a_retry_that_may_run_on_a_tpu_keeps_its_branch(tmp_path: Path, old: str, new: str) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _CUDA_RETRY.replace(old, new)})
    assert reason_at(model, tmp_path, "m.py", "boxes.cpu()") is None


def test_a_handler_of_a_cuda_error_class_never_runs_on_a_tpu(tmp_path: Path) -> None:
    text = _CUDA_RETRY.replace(
        "        except RuntimeError as error:\n"
        '            if "CUDA out of memory" not in str(error):\n'
        "                raise\n",
        "        except torch.cuda.OutOfMemoryError:\n",
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    retry = reason_at(model, tmp_path, "m.py", 'picked = self.assign(boxes, scores, "host")')
    assert (
        retry == "in the handler of `torch.cuda.OutOfMemoryError`, a CUDA error a TPU never raises"
    )
    assert reason_at(model, tmp_path, "m.py", "boxes.cpu()") is not None


def test_a_parameter_replaced_before_it_is_passed_on_is_not_none(tmp_path: Path) -> None:
    """`lengths = compute(x)` before `helper(x, lengths=lengths)`: the caller's own
    None-default parameter no longer holds what its callers passed, so the helper's
    `lengths is None` branch never runs."""
    text = """\
def helper(x, lengths=None):
    if lengths is not None:
        top = lengths.max()
    else:
        top = x.sum(1).max().item()
    return x[:, :top]


class Model(L.LightningModule):
    def forward(self, x, lengths=None):
        lengths = x.sum(-1).long()
        return helper(x, lengths=lengths)

    def training_step(self, batch, i):
        return self(batch).sum()
"""
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    reason = reason_at(model, tmp_path, "m.py", "x.sum(1).max().item()")
    assert reason is not None and reason.startswith("in the `else` of `if lengths is not None`")
    kept = text.replace("        lengths = x.sum(-1).long()\n", "")
    model = project(tmp_path, {"m.py": MODULE_HEAD + kept})
    assert reason_at(model, tmp_path, "m.py", "x.sum(1).max().item()") is None


_CONFIG_OPTION = """\
from dataclasses import dataclass


class Encoder(torch.nn.Module):
    @dataclass
    class Config:
        dim: int = 8
        interleave: bool = False

    def __init__(self, config):
        super().__init__()
        self.config = config

    def forward(self, a, b):
        if self.config.interleave:
            a = a[a.sum(-1) > 0]
            merge = self.interleaved
        else:
            merge = self.concatenated
        return merge(a, b)

    @staticmethod
    def interleaved(a, b):
        out = torch.zeros_like(a)
        for i in range(a.shape[0]):
            out[i, : int(b[i].sum().item())] = a[i, : int(b[i].sum().item())]
        return out

    @staticmethod
    def concatenated(a, b):
        return torch.cat([a, b], 1)


class Model(L.LightningModule):
    def __init__(self, dim):
        super().__init__()
        self.encoder = Encoder(Encoder.Config(dim=dim))

    def training_step(self, batch, i):
        return self.encoder(*batch).sum()
"""
_CONFIG_FILE = "model:\n  dim: 16\n  interleave: false\n"


def test_a_config_option_no_config_turns_on_decides_its_branch(tmp_path: Path) -> None:
    """`self.config.interleave` of a config class field defaulting to False that no config
    file of the project sets otherwise (and no command line declares): the branch never runs,
    nor does a method only that branch hands on."""
    model = with_configs(
        tmp_path, {"m.py": MODULE_HEAD + _CONFIG_OPTION}, {"configs/train.yaml": _CONFIG_FILE}
    )
    reason = reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]")
    assert reason == (
        "under `if self.config.interleave`, and the project's config classes and files leave "
        "`interleave` false"
    )
    handed = reason_at(model, tmp_path, "m.py", "b[i].sum().item()")
    assert handed == "called only where it never runs: under `if self.config.interleave`"


@pytest.mark.parametrize(
    ("code", "config"),
    [
        # a config file turns it on, or sets it from elsewhere
        ("", "model:\n  interleave: true\n"),
        ("", "model:\n  interleave: ${shared.interleave}\n"),
        # a command line declares it: users set it
        (
            "\n\ndef options(parser):\n"
            "    parser.add_argument('--interleave', action='store_true')\n",
            "",
        ),
        # code passes it a value it does not show, or assigns it
        ("\n\ndef build(flag):\n    return Encoder.Config(interleave=flag)\n", ""),
        ("\n\ndef switch(cfg):\n    cfg.interleave = True\n", ""),
        ("\n\ndef switch(cfg):\n    cfg['interleave'] = True\n", ""),
    ],
)
def test_a_config_option_that_may_be_on_keeps_its_branch(
    tmp_path: Path, code: str, config: str
) -> None:
    model = with_configs(
        tmp_path,
        {"m.py": MODULE_HEAD + _CONFIG_OPTION + code},
        {"configs/train.yaml": config or _CONFIG_FILE},
    )
    assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None
    assert reason_at(model, tmp_path, "m.py", "b[i].sum().item()") is None


def test_a_command_line_option_is_no_config_option(tmp_path: Path) -> None:
    """`args.interleave` is what a user typed: never decided by defaults."""
    text = _CONFIG_OPTION.replace("self.config.interleave", "self.args.interleave")
    model = with_configs(
        tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/train.yaml": _CONFIG_FILE}
    )
    assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None


def test_a_method_also_handed_on_where_it_runs_stays(tmp_path: Path) -> None:
    text = _CONFIG_OPTION.replace(
        "            merge = self.concatenated\n",
        "            merge = self.concatenated\n        self.fallback = self.interleaved\n",
    )
    model = with_configs(
        tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/train.yaml": _CONFIG_FILE}
    )
    assert reason_at(model, tmp_path, "m.py", "b[i].sum().item()") is None


def test_a_module_put_in_eval_mode_is_no_build_by_name(tmp_path: Path) -> None:
    """`model.eval()` is `nn.Module.eval`, not the builtin that evaluates a name: the
    constructions the code shows still decide a constructor's flag."""
    extra = "\n\ndef evaluate(model, batch):\n    model.eval()\n    return model(batch)\n"
    model = project(tmp_path, {"m.py": MODULE_HEAD + _OPTIONAL_ATTRIBUTE + extra})
    assert reason_at(model, tmp_path, "m.py", "x[keep]") is not None
    builtin = "\n\ndef build(name):\n    return eval(name)(None, None, ignore=1)\n"
    model = project(tmp_path, {"m.py": MODULE_HEAD + _OPTIONAL_ATTRIBUTE + builtin})
    assert reason_at(model, tmp_path, "m.py", "x[keep]") is None


def test_a_config_option_read_by_key_is_decided_the_same_way(tmp_path: Path) -> None:
    text = _CONFIG_OPTION.replace("self.config.interleave", 'self.config["interleave"]')
    model = with_configs(
        tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/train.yaml": _CONFIG_FILE}
    )
    reason = reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]")
    assert reason is not None and reason.endswith("leave `interleave` false")
    on = with_configs(
        tmp_path,
        {"m.py": MODULE_HEAD + text},
        {"configs/train.yaml": _CONFIG_FILE, "configs/big.yaml": "model:\n  interleave: yes\n"},
    )
    assert reason_at(on, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None


def test_config_files_record_the_values_of_their_keys() -> None:
    from tpulint.analysis.config_facts import config_facts

    facts = config_facts(
        "c.yaml",
        "model:\n  flag: false\n  dims: [1, 2]\n  other: ${model.flag}\n"
        "rows:\n" + "".join(f"  - {{id: {i}}}\n" for i in range(12)),
    )
    assert facts.keys["flag"] == [False]
    assert facts.keys["dims"] == ["?"] and facts.keys["other"] == ["?"]
    assert facts.keys["id"] == ["?"]  # a key of data records: many values


def test_a_config_option_declared_only_in_another_module_stays_open(tmp_path: Path) -> None:
    """A field of that name elsewhere may belong to another object (a model config a hub's
    JSON fills in): only the reading module's own config class gives the default."""
    text = _CONFIG_OPTION.replace("        interleave: bool = False\n", "")
    other = (
        "from dataclasses import dataclass\n\n\n"
        "@dataclass\nclass Other:\n    interleave: bool = False\n"
    )
    model = with_configs(
        tmp_path,
        {"m.py": MODULE_HEAD + text, "other.py": other},
        {"configs/train.yaml": _CONFIG_FILE},
    )
    assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None


_NORM_OPTION = """\
class ScaledNorm(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(channels))
        self.register_buffer("ready", torch.tensor(0))

    def forward(self, x):
        if self.ready.item() == 0:
            self.ready.fill_(1)
        return x * self.scale


class Critic(torch.nn.Module):
    def __init__(self, channels, scaled_norm=False):
        super().__init__()
        if not scaled_norm:
            norm = torch.nn.BatchNorm1d
        else:
            norm = ScaledNorm
        self.body = torch.nn.Sequential(torch.nn.Linear(channels, channels), norm(channels))

    def forward(self, x):
        return self.body(x)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.critic = Critic(8, scaled_norm=False)

    def training_step(self, batch, i):
        return self.critic(batch).sum()
"""


def test_a_class_named_only_where_the_code_never_runs_is_out(tmp_path: Path) -> None:
    """`norm = ScaledNorm` only in the `else` of `if not scaled_norm:`, where every
    construction passes `scaled_norm=False`: the class's methods never run."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _NORM_OPTION})
    reason = reason_at(model, tmp_path, "m.py", "self.ready.item()")
    assert reason == (
        "its class is built only where the code never runs: in the `else` of `if not scaled_norm`"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Critic(8, scaled_norm=False)", "Critic(8, scaled_norm=True)"),
        ("Critic(8, scaled_norm=False)", "Critic(8, scaled_norm=self.hparams.norm)"),
        # also built, or named, where the code runs
        ("        return self.critic(batch).sum()", "        return ScaledNorm(8)(batch).sum()"),
        (
            "        return self.critic(batch).sum()",
            "        assert isinstance(self.critic, ScaledNorm)\n"
            "        return self.critic(batch).sum()",
        ),
    ],
)
def test_a_class_that_may_be_built_keeps_its_methods(tmp_path: Path, old: str, new: str) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _NORM_OPTION.replace(old, new)})
    assert reason_at(model, tmp_path, "m.py", "self.ready.item()") is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a name the scope binds only to the literal passes that literal
        (
            "        self.critic = Critic(8, scaled_norm=False)",
            "        scaled = False\n        self.critic = Critic(8, scaled_norm=scaled)",
        ),
        # a spread of a dict whose keys are known passes only those keys
        (
            "        self.critic = Critic(8, scaled_norm=False)",
            '        opts = {"channels": 8}\n        opts["channels"] = 16\n'
            "        self.critic = Critic(**opts)",
        ),
        (
            "        self.critic = Critic(8, scaled_norm=False)",
            '        opts = {"channels": 8, "scaled_norm": False}\n'
            "        self.critic = Critic(**opts)",
        ),
    ],
)
def test_a_literal_name_or_a_dict_of_known_keys_passes_what_it_holds(
    tmp_path: Path, old: str, new: str
) -> None:
    model = project(tmp_path, {"m.py": MODULE_HEAD + _NORM_OPTION.replace(old, new)})
    assert reason_at(model, tmp_path, "m.py", "self.ready.item()") == (
        "its class is built only where the code never runs: in the `else` of `if not scaled_norm`"
    )


@pytest.mark.parametrize(
    "new",
    [
        # bound to another value too, or in a loop
        "        scaled = False\n        if batch_norm_off():\n            scaled = True\n"
        "        self.critic = Critic(8, scaled_norm=scaled)",
        "        for scaled in (False, True):\n"
        "            self.critic = Critic(8, scaled_norm=scaled)",
        "        scaled = False\n        scaled |= batch_norm_off()\n"
        "        self.critic = Critic(8, scaled_norm=scaled)",
        # a comprehension's own variable of the same name
        "        scaled = False\n"
        "        self.critic = [Critic(8, scaled_norm=scaled) for scaled in (True,)][0]",
        # a dict whose keys may change: a method call, a computed key, handed on
        '        opts = {"channels": 8}\n        opts.update(scaled_norm=batch_norm_off())\n'
        "        self.critic = Critic(**opts)",
        '        opts = {"channels": 8}\n        opts[batch_norm_off()] = True\n'
        "        self.critic = Critic(**opts)",
        '        opts = {"channels": 8}\n        fill(opts)\n        self.critic = Critic(**opts)',
        '        opts = {"channels": 8}\n        opts["scaled_norm"] = batch_norm_off()\n'
        "        self.critic = Critic(**opts)",
    ],
)
def test_a_name_or_dict_that_may_hold_more_keeps_the_class(tmp_path: Path, new: str) -> None:
    text = _NORM_OPTION.replace("        self.critic = Critic(8, scaled_norm=False)", new)
    text += "\n\ndef batch_norm_off():\n    return torch.rand(1).item() > 0.5\n"
    text += '\n\ndef fill(opts):\n    opts["scaled_norm"] = True\n'
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "self.ready.item()") is None


_STAGE_FILES = {
    "lit/__init__.py": "",
    "lit/base.py": """\
        import lightning as L


        class Base(L.LightningModule):
            def setup(self, stage=None):
                self.phase = "fit" if stage is None else stage
    """,
    "lit/model.py": """\
        import torch

        from lit.base import Base


        class Reader(Base):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 4)

            def training_step(self, batch, i):
                return self.net(batch).sum()

            def validation_step(self, batch, i):
                out = self.net(batch)
                if self.phase == "validate" and out.numel():
                    print(out.argmax(-1).cpu())  # dump marker
                return out.sum()
    """,
    "train.py": """\
        import lightning as L

        from lit.model import Reader


        def main(mode):
            model = Reader()
            model.setup(stage={"train": "fit", "val": "validate"}[mode])
            L.Trainer(accelerator="tpu").fit(model)


        if __name__ == "__main__":
            main("train")
    """,
}


def test_a_branch_on_the_stage_setup_stored_is_off_in_training(tmp_path: Path) -> None:
    """`self.phase = stage` in a LightningModule's `setup`: Lightning's `Trainer.fit` calls
    `setup(stage="fit")` (a script's own call before it is followed by Lightning's), so
    `self.phase == "validate"` is false in a training run."""
    model = project(tmp_path, _STAGE_FILES)
    assert reason_at(model, tmp_path, "lit/model.py", "out.argmax(-1).cpu()") == (
        'under `if self.phase == "validate" and out.numel()`, and `self.phase` holds the'
        ' stage `setup` was given, which is "fit" in a training run'
    )


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        # set otherwise too
        (
            "lit/model.py",
            "                super().__init__()\n",
            '                super().__init__()\n                self.phase = "validate"\n',
        ),
        # a method of the project calls `setup` itself, during training maybe
        (
            "lit/model.py",
            "                return self.net(batch).sum()\n",
            '                self.setup("validate")\n'
            "                return self.net(batch).sum()\n",
        ),
        # not the stage parameter
        ("lit/base.py", "if stage is None else stage", 'if stage is None else "validate"'),
        # a script that tests after fitting: `setup("test")` on the same TPU
        ("lit/model.py", 'self.phase == "validate"', 'self.phase == "test"'),
    ],
)
def test_a_stage_attribute_set_otherwise_keeps_its_branch(
    tmp_path: Path, path: str, old: str, new: str
) -> None:
    files = dict(_STAGE_FILES)
    assert old in files[path]
    files[path] = files[path].replace(old, new)
    files["train.py"] = files["train.py"].replace(
        '            L.Trainer(accelerator="tpu").fit(model)\n',
        '            trainer = L.Trainer(accelerator="tpu")\n'
        "            trainer.fit(model)\n            trainer.test(model)\n",
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "lit/model.py", "out.argmax(-1).cpu()") is None


# --- classes nothing builds ----------------------------------------------------------------

UNBUILT_FILES = {
    "train.py": """\
        import lightning as L

        from kit.model import Net

        if __name__ == "__main__":
            L.Trainer().fit(Net())
    """,
    "kit/__init__.py": "",
    "kit/model.py": """\
        import lightning as L

        from kit.parts import Stem, Probe


        class Net(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.stem = Stem()

            def training_step(self, batch, i):
                if isinstance(self.stem, Probe):
                    print("Probe")
                return self.stem(batch).sum()
    """,
    "kit/parts.py": """\
        import torch


        class Stem(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # stem


        class Probe(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # probe
    """,
}
UNBUILT_APP = {name: textwrap.dedent(text) for name, text in UNBUILT_FILES.items()}


def why_unbuilt(name: str) -> str:
    return (
        f"in `{name}`, a class nothing builds (no code that runs, config or string of its "
        "project names it, tests aside; its training entry points: train.py)"
    )


def test_isinstance_and_messages_build_nothing(tmp_path: Path) -> None:
    """`isinstance(x, Probe)` tests a class, `print("Probe")` prints a word: neither builds
    it."""
    model = project(tmp_path, UNBUILT_APP)
    assert reason_at(model, tmp_path, "kit/parts.py", "# stem") is None
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") == why_unbuilt("Probe")


@pytest.mark.parametrize(
    ("where", "code"),
    [
        # `eval(text)` sees the names of its file and what it imports.
        ("kit/model.py", "eval(self.kind)"),
        # A module's names looked up by a computed name, which a dict's key spells.
        ("kit/model.py", '[getattr(parts, k) for k in {"Probe": 2}]'),
        # The code names it in a string (a registry of dotted names).
        ("kit/model.py", '"kit.parts.Probe"'),
    ],
)
def test_names_looked_up_at_run_time_may_build(tmp_path: Path, where: str, code: str) -> None:
    files = dict(UNBUILT_APP)
    files[where] = (
        files[where]
        .replace("import lightning as L\n", "import lightning as L\n\nfrom kit import parts\n")
        .replace("return self.stem(batch).sum()", f"return {code}, self.stem(batch).sum()")
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") is None


def test_a_run_time_lookup_builds_only_names_spelled(tmp_path: Path) -> None:
    """`getattr(parts, self.kind)` may build a class of `parts` whose name the code, a config
    or a text file spells (a message does not); one named nowhere is built by none."""
    files = dict(UNBUILT_APP)
    files["kit/model.py"] = (
        files["kit/model.py"]
        .replace("import lightning as L\n", "import lightning as L\n\nfrom kit import parts\n")
        .replace(
            "return self.stem(batch).sum()",
            "return getattr(parts, self.kind), self.stem(batch).sum()",
        )
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") == why_unbuilt("Probe")
    assert reason_at(model, tmp_path, "kit/parts.py", "# stem") is None


@pytest.mark.parametrize(
    "key",
    [
        'f"{self.kind}_block"',
        'self.kind + "_block"',
        '"%s_block" % self.kind',
        '"{}_block".format(self.kind)',
    ],
)
def test_a_run_time_lookup_of_a_composed_name_may_build_any_class(tmp_path: Path, key: str) -> None:
    """`getattr(parts, f"{self.kind}_block")` spells no whole name anywhere: any class of
    `parts` may be the one it builds."""
    files = dict(UNBUILT_APP)
    files["kit/model.py"] = (
        files["kit/model.py"]
        .replace("import lightning as L\n", "import lightning as L\n\nfrom kit import parts\n")
        .replace(
            "return self.stem(batch).sum()",
            f"return getattr(parts, {key}), self.stem(batch).sum()",
        )
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") is None


def test_subclasses_lookups_leave_the_application_unjudged(tmp_path: Path) -> None:
    files = dict(UNBUILT_APP)
    files["kit/model.py"] += "\n\nKINDS = torch.nn.Module.__subclasses__()\n"
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") is None


def test_a_class_a_dead_class_builds_is_not_built(tmp_path: Path) -> None:
    """A reference counts only from code that may run: a class built only by a class nothing
    builds is not built either; a built subclass builds its base."""
    files = dict(UNBUILT_APP)
    files["kit/parts.py"] += textwrap.dedent(
        """\


        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()


        class Inner(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # inner


        class Base(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # base


        class Leaf(Base):
            pass
        """
    )
    files["kit/model.py"] = (
        files["kit/model.py"]
        .replace("self.stem = Stem()", "self.stem = Stem()\n        self.leaf = Leaf()")
        .replace("from kit.parts import Stem, Probe", "from kit.parts import Leaf, Stem, Probe")
    )
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# inner") == why_unbuilt("Inner")
    assert reason_at(model, tmp_path, "kit/parts.py", "# base") is None


def test_a_library_keeps_its_classes(tmp_path: Path) -> None:
    """No training script: a library's classes are for its users to build."""
    files = {k: v for k, v in UNBUILT_APP.items() if k != "train.py"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/parts.py", "# probe") is None


def test_a_lightning_cli_may_build_subclasses_of_what_it_is_given(tmp_path: Path) -> None:
    """`LightningCLI(Base)` builds Base, or in subclass mode any subclass a config or the
    command line names (`--model.class_path`): none of them is unbuilt."""
    files = {
        "main.py": """\
            from lightning.pytorch.cli import LightningCLI

            from kit.model import Base

            if __name__ == "__main__":
                LightningCLI(Base, subclass_mode_model=True)
        """,
        "kit/__init__.py": "",
        "kit/model.py": """\
            import lightning as L


            class Base(L.LightningModule):
                def training_step(self, batch, i):
                    return batch.sum()


            class Variant(Base):
                def training_step(self, batch, i):
                    return batch[batch > 0].sum()  # variant


            class Orphan(L.LightningModule):
                def training_step(self, batch, i):
                    return batch[batch > 0].sum()  # orphan
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "kit/model.py", "# variant") is None
    why = (
        "in `Orphan`, a class nothing builds (no code that runs, config or string of its "
        "project names it, tests aside; its training entry points: main.py)"
    )
    assert reason_at(model, tmp_path, "kit/model.py", "# orphan") == why


def test_another_project_spelling_a_name_builds_nothing_here(tmp_path: Path) -> None:
    """Two repositories checked in one run: a name the other one spells (a string, a call
    of a class it takes from a star import) is its own, not this application's class."""
    files = {f"a/{name}": text for name, text in UNBUILT_APP.items()}
    files["a/pyproject.toml"] = "[project]\nname = 'a'\n"
    files["b/pyproject.toml"] = "[project]\nname = 'b'\n"
    files["b/tool.py"] = """\
        from vendor.parts import *

        KIND = "Probe"


        def make():
            return Probe()
    """
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "a/kit/parts.py", "# probe") == why_unbuilt("Probe")


# --- models only inference builds -----------------------------------------------------------

INFERENCE_MODELS = {
    "pkg/__init__.py": "",
    "pkg/shared.py": """\
        def shared_loss(x):
            return (x > 0).nonzero()  # shared
    """,
    "pkg/heads.py": """\
        import torch


        class HeadB(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # head-b


        def b_score(x):
            return x.sum().item()  # b-only
    """,
    "pkg/models.py": """\
        import lightning as L

        from pkg.heads import HeadB, b_score
        from pkg.shared import shared_loss


        class ModelA(L.LightningModule):
            def training_step(self, batch, i):
                return shared_loss(batch)  # a-step


        class ModelB(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.head = HeadB()

            def training_step(self, batch, i):
                return b_score(self.head(batch)) + shared_loss(batch)  # b-step

            def predict_step(self, batch, i):
                return self.head(batch)
    """,
    "train.py": """\
        import hydra
        import lightning as L
        import yaml


        def main(path):
            cfg = yaml.safe_load(open(path))
            model = hydra.utils.instantiate(cfg["model"])
            L.Trainer(accelerator="gpu").fit(model)


        if __name__ == "__main__":
            main("configs/train.yaml")
    """,
    "pkg/cli.py": """\
        import click
        import lightning as L

        from pkg.models import ModelB


        @click.group()
        def cli():
            pass


        @cli.command()
        @click.argument("checkpoint")
        def predict(checkpoint):
            model = ModelB.load_from_checkpoint(checkpoint)
            L.Trainer(accelerator="gpu").predict(model)
    """,
}


@pytest.mark.parametrize("selects_b", [False, True])
def test_a_model_only_a_prediction_command_loads_is_inference(
    tmp_path: Path, selects_b: bool
) -> None:
    """A LightningModule that only a command which predicts and never fits builds or loads,
    while the project's training script fits another class (named by its config), is
    inference: its hooks and what only they reach leave the default scope. What the trained
    class also reaches stays, and so does everything once a config may select the class.
    (The project's GPU scripts are its roots: the command reaches its code as inference.)"""
    target = "pkg.models.ModelB" if selects_b else "pkg.models.ModelA"
    configs = {"configs/train.yaml": f"model:\n  _target_: {target}\n"}
    model = with_configs(tmp_path, INFERENCE_MODELS, configs)
    why = "inference only (reached from `trainer.predict` in cli.py, which never fits)"
    for marker, where in [("# b-step", "pkg/models.py"), ("# b-only", "pkg/heads.py")]:
        assert reason_at(model, tmp_path, where, marker) == (None if selects_b else why), marker
    assert reason_at(model, tmp_path, "pkg/shared.py", "# shared") is None
    if not selects_b:
        assert reason_at(model, tmp_path, "pkg/models.py", "# a-step") is None


@pytest.mark.parametrize(
    "change",
    [
        # The command fits too: the class trains.
        ('L.Trainer(accelerator="gpu").predict(model)', "L.Trainer().fit(model)"),
        # A helper builds it and a caller of it is not known (handed on at a module's top
        # level, where anything may call it).
        ("model = ModelB.load_from_checkpoint(checkpoint)", "model = build(checkpoint)"),
    ],
)
def test_a_model_a_fitting_or_unknown_caller_builds_stays(
    tmp_path: Path, change: tuple[str, str]
) -> None:
    files = dict(INFERENCE_MODELS)
    old, new = change
    text = textwrap.dedent(files["pkg/cli.py"])
    assert old in text
    files["pkg/cli.py"] = (
        text.replace(old, new) + "\n\ndef build(path):\n    return ModelB()\n\n\nHOOKS = [build]\n"
    )
    configs = {"configs/train.yaml": "model:\n  _target_: pkg.models.ModelA\n"}
    model = with_configs(tmp_path, files, configs)
    assert reason_at(model, tmp_path, "pkg/models.py", "# b-step") is None
    assert reason_at(model, tmp_path, "pkg/heads.py", "# b-only") is None


def test_a_project_that_never_fits_keeps_its_models(tmp_path: Path) -> None:
    """Without a script that fits, the project is a library: a model a prediction command
    loads may be trained by its users."""
    files = {k: v for k, v in INFERENCE_MODELS.items() if k != "train.py"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/models.py", "# b-step") is None


# --- classes only code that never trains builds ---------------------------------------------

OFF_TRAINING = {
    "pkg/__init__.py": "",
    "pkg/decoding.py": """\
        import torch


        class Greedy:
            def decode(self, probs):
                return probs.argmax(-1)


        class Rescorer(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # rescorer


        class Beam:
            def __init__(self, width):
                self.width = width
                self.rescorer = Rescorer()

            def decode(self, probs):
                return probs.cpu()  # beam


        def make_decoder(kind):
            if kind == "beam":
                return Beam(8)
            return Greedy()
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.decoding import Greedy


        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.decoder = Greedy()

            def training_step(self, batch, i):
                return batch.sum()

            def validation_step(self, batch, i):
                return self.decoder.decode(batch)
    """,
    # A library its repository distributes, with example scripts beside it: the examples
    # do not speak for what its users build (no roots claim `pkg/`).
    "setup.py": """\
        from setuptools import find_packages, setup

        setup(packages=find_packages())
    """,
    "examples/train.py": """\
        import lightning as L

        from pkg.model import Model

        if __name__ == "__main__":
            L.Trainer().fit(Model())
    """,
    "examples/transcribe.py": """\
        import torch

        from pkg.decoding import make_decoder


        def main(path):
            decoder = make_decoder("beam")
            print(decoder.decode(torch.load(path)))


        if __name__ == "__main__":
            main("probs.pt")
    """,
}


def test_a_class_only_scripts_that_never_train_build_is_inference(tmp_path: Path) -> None:
    """A class (not only a LightningModule) every construction of which runs only from
    scripts that never train (a transcription script calling a helper that builds it), while
    the project's training script fits, is inference; so is a class only it builds. The
    decoder the training builds stays."""
    model = project(tmp_path, OFF_TRAINING)
    why = (
        "inference only (reached from `Beam`, a class only code that never trains builds, "
        "from `__main__` in transcribe.py)"
    )
    assert reason_at(model, tmp_path, "pkg/decoding.py", "# beam") == why
    assert reason_at(model, tmp_path, "pkg/decoding.py", "# rescorer") == (
        "inference only (reached from `Rescorer`, a class only code that never trains "
        "builds, from the methods of `Beam`)"
    )


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # The training script builds it too.
        (
            "examples/train.py",
            "L.Trainer().fit(Model())",
            "make_decoder('beam')\n    L.Trainer().fit(Model())",
        ),
        # The script that builds it also trains.
        (
            "examples/transcribe.py",
            "print(decoder.decode(torch.load(path)))",
            "torch.load(path).backward()",
        ),
        # A string of the code names it (built by name).
        (
            "examples/transcribe.py",
            "import torch\n",
            "import torch\n\nKINDS = ['Beam', 'Rescorer']\n",
        ),
        # The helper is handed on where anything may call it.
        (
            "examples/transcribe.py",
            "import torch\n",
            "import torch\n\nHOOKS = [lambda: make_decoder]\n",
        ),
        # A method of a class the training may build calls the helper.
        ("pkg/model.py", "self.decoder = Greedy()", "self.decoder = make_decoder('beam')"),
    ],
)
def test_a_class_training_may_build_stays(tmp_path: Path, where: str, old: str, new: str) -> None:
    files = {name: textwrap.dedent(text) for name, text in OFF_TRAINING.items()}
    assert old in files[where]
    files[where] = files[where].replace(old, new)
    if "make_decoder" not in files[where].split("\n\n", 1)[0]:
        files[where] = "from pkg.decoding import make_decoder\n" + files[where]
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/decoding.py", "# beam") is None
    assert reason_at(model, tmp_path, "pkg/decoding.py", "# rescorer") is None


def test_a_class_scripts_that_never_train_build_stays_without_a_fitting_script(
    tmp_path: Path,
) -> None:
    """No script fits: the project is a library whose users may train with its classes."""
    files = {k: v for k, v in OFF_TRAINING.items() if k != "examples/train.py"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/decoding.py", "# beam") is None


# --- flags only code that never trains turns on ---------------------------------------------

CONTEXT_FLAG = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import lightning as L


        def pool(x, with_context=False):
            if with_context:
                return x[x > 0]  # context
            return x.mean()


        class Scorer(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.use_context = False

            def enable_context(self):
                self.use_context = True

            def forward(self, x):
                return pool(x, self.use_context)

            def training_step(self, batch, i):
                return self(batch)
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Scorer

        if __name__ == "__main__":
            model = Scorer()
            L.Trainer().fit(model)
    """,
    "score.py": """\
        import lightning as L

        from pkg.model import Scorer


        def main(path, context):
            model = Scorer.load_from_checkpoint(path)
            if context:
                model.enable_context()
            L.Trainer().predict(model)


        if __name__ == "__main__":
            main("model.ckpt", True)
    """,
}


def test_a_flag_only_a_script_that_never_trains_turns_on_is_off(tmp_path: Path) -> None:
    """`self.use_context` is False from the constructor and True only in `enable_context()`,
    which only a scoring script that never trains calls: the branch it guards never runs in
    training."""
    model = project(tmp_path, CONTEXT_FLAG)
    assert reason_at(model, tmp_path, "pkg/model.py", "x[x > 0]") == (
        "under `if with_context`, and `with_context` is false in every call of the function"
    )


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # The training script turns it on.
        ("train.py", "model = Scorer()", "model = Scorer()\n    model.enable_context()"),
        # A method of the class turns it on (the framework may call it).
        ("pkg/model.py", "return self(batch)", "self.enable_context()\n        return self(batch)"),
        # A config names the method.
        ("score.py", "def main", "HOW = 'enable_context'\n\n\ndef main"),
    ],
)
def test_a_flag_training_may_turn_on_stays(tmp_path: Path, where: str, old: str, new: str) -> None:
    files = {name: textwrap.dedent(text) for name, text in CONTEXT_FLAG.items()}
    assert old in files[where]
    files[where] = files[where].replace(old, new)
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "x[x > 0]") is None


def test_a_flag_a_library_turns_on_stays(tmp_path: Path) -> None:
    """No script fits: a user of the library may turn the flag on and train."""
    files = {k: v for k, v in CONTEXT_FLAG.items() if k != "train.py"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "x[x > 0]") is None


# --- classes only configs for inference name ------------------------------------------------

CONFIG_FOLDERS = {
    "pyproject.toml": "",
    "README.md": """\
        Train with `python main.py --base configs/training/small.yaml`.
    """,
    "pkg/__init__.py": "",
    "pkg/nets.py": """\
        import torch


        class SmallNet(torch.nn.Module):
            def forward(self, x):
                return x * 2


        class VideoNet(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # video
    """,
    "pkg/model.py": """\
        import hydra
        import lightning as L


        class Diffusion(L.LightningModule):
            def __init__(self, network_config):
                super().__init__()
                self.net = hydra.utils.instantiate(network_config)

            def training_step(self, batch, i):
                return self.net(batch).sum()
    """,
    "main.py": """\
        import sys

        import hydra
        import lightning as L
        import yaml

        if __name__ == "__main__":
            cfg = yaml.safe_load(open(sys.argv[2]))
            L.Trainer().fit(hydra.utils.instantiate(cfg["model"]))
    """,
}
CONFIG_FOLDER_CONFIGS = {
    "configs/training/small.yaml": """\
        model:
          _target_: pkg.model.Diffusion
          network_config:
            _target_: pkg.nets.SmallNet
    """,
    "configs/inference/video.yaml": """\
        model:
          _target_: pkg.model.Diffusion
          network_config:
            _target_: pkg.nets.VideoNet
    """,
}


def test_a_class_only_configs_for_inference_name_is_not_built(tmp_path: Path) -> None:
    """The training script's README command reads `configs/training/`; a class only the
    configs of the disjoint `configs/inference/` name is not built by a training run."""
    model = with_configs(tmp_path, CONFIG_FOLDERS, CONFIG_FOLDER_CONFIGS)
    assert reason_at(model, tmp_path, "pkg/nets.py", "# video") == (
        "in `VideoNet`, a class only configs for inference name (configs/inference/), which "
        "no training reads (its training entry points: main.py)"
    )


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # The training command reads a config for inference.
        ("README.md", "configs/training/small.yaml", "configs/inference/video.yaml"),
        # Where the training reads its configs is not known.
        ("README.md", "--base configs/training/small.yaml", "--base <config>"),
        # The training reads a folder around the one for inference.
        ("README.md", "--base configs/training/small.yaml", "--config-dir ./configs"),
        # A training config names the class too.
        ("configs/training/small.yaml", "pkg.nets.SmallNet", "pkg.nets.VideoNet"),
    ],
)
def test_a_class_a_training_config_may_name_stays(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    files = {name: textwrap.dedent(text) for name, text in CONFIG_FOLDERS.items()}
    configs = {name: textwrap.dedent(text) for name, text in CONFIG_FOLDER_CONFIGS.items()}
    held = files if where in files else configs
    assert old in held[where]
    held[where] = held[where].replace(old, new)
    model = with_configs(tmp_path, files, configs)
    assert reason_at(model, tmp_path, "pkg/nets.py", "# video") is None


# --- an application in its own package ------------------------------------------------------

PACKAGED_APP = {
    "pyproject.toml": "",
    "README.md": """\
        Train: `python app/train.py --kinds Ramp`
    """,
    "app/__init__.py": "",
    "app/parts.py": """\
        import torch


        class Ramp(torch.nn.Module):
            def forward(self, x):
                return x * 2  # ramp


        class Pool(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]  # pool
    """,
    "app/model.py": """\
        import lightning as L
        import torch

        import app.parts as parts


        class Net(L.LightningModule):
            def __init__(self, kinds):
                super().__init__()
                self.funs = torch.nn.ModuleList([getattr(parts, k)() for k in kinds])

            def training_step(self, batch, i):
                return sum(f(batch) for f in self.funs).sum()
    """,
    "app/train.py": """\
        import lightning as L

        from app.model import Net

        if __name__ == "__main__":
            L.Trainer().fit(Net({"Ramp": 2}))
    """,
}


def test_a_package_whose_script_the_readme_runs_as_a_file_is_an_application(
    tmp_path: Path,
) -> None:
    """`python app/train.py` runs a script of a package as a file: the package is the
    application, and a class of it nothing builds (the run-time lookup spells only `Ramp`)
    is out."""
    model = project(tmp_path, PACKAGED_APP)
    assert reason_at(model, tmp_path, "app/parts.py", "# pool") == (
        "in `Pool`, a class nothing builds (no code that runs, config or string of its "
        "project names it, tests aside; its training entry points: train.py)"
    )
    assert reason_at(model, tmp_path, "app/parts.py", "# ramp") is None


def test_a_package_module_that_fits_is_judged_by_its_repository(tmp_path: Path) -> None:
    """Nothing runs the script as a file (`python -m app.train`): not an application, but
    the repository trains, so a class nothing in it builds is out all the same."""
    files = {name: textwrap.dedent(text) for name, text in PACKAGED_APP.items()}
    files["README.md"] = files["README.md"].replace("python app/train.py", "python -m app.train")
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "app/parts.py", "# pool") == (
        "in `Pool`, a class nothing in its repository builds (no code that runs, config, "
        "registry key or string of the repository names it, tests aside; the repository "
        "trains in train.py)"
    )


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # A string of the code spells the class (a choice on the command line).
        ("app/train.py", 'Net({"Ramp": 2})', 'Net({"Ramp": 2}), "Pool"'),
    ],
)
def test_a_packaged_class_that_may_be_built_stays(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    files = {name: textwrap.dedent(text) for name, text in PACKAGED_APP.items()}
    assert old in files[where]
    files[where] = files[where].replace(old, new)
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "app/parts.py", "# pool") is None


# --- test code ------------------------------------------------------------------------------

TEST_CODE = {
    "pyproject.toml": "[project]\nname = 'lab'\n",
    "lab/__init__.py": "",
    "lab/model.py": """\
        import lightning as L
        import torch

        from lab.testing import fake_batch


        class Net(L.LightningModule):
            def training_step(self, batch, i):
                if batch.sum() > 0:  # net-step
                    return batch.mean()
                return fake_batch(batch)
    """,
    "lab/testing.py": """\
        def fake_batch(x):
            return x[x > 0].sum()  # testing-helper
    """,
    "lab/scalers.py": """\
        import torch


        class MeanScaler(torch.nn.Module):
            def forward(self, x):
                return x[x > 0].mean()  # mean-scaler


        class SharedScaler(torch.nn.Module):
            def forward(self, x):
                return x[x > 0].std()  # shared-scaler


        def clip_scale(x):
            return x[x > 1].sum()  # clip-scale
    """,
    "scripts/train.py": """\
        import lightning as L

        from lab.model import Net
        from lab.scalers import SharedScaler

        if __name__ == "__main__":
            SharedScaler()
            L.Trainer().fit(Net())
    """,
    "tests/test_scalers.py": """\
        import lightning as L
        import torch

        from lab.scalers import MeanScaler, SharedScaler, clip_scale


        def test_scalers():
            x = torch.randn(4)
            MeanScaler()(x)
            SharedScaler()(x)
            clip_scale(x)


        class TinyModule(L.LightningModule):
            def training_step(self, batch, i):
                return batch.sum().item()  # in-test-module
    """,
    "testlab/testlab/__init__.py": "",
    "testlab/testlab/configs_for_tests.py": """\
        class Fixture:
            def inference_step(self, x):
                return x.max().item()  # fixture-config
    """,
    "testlab/testlab/test_fixture.py": """\
        from testlab.configs_for_tests import Fixture


        def test_fixture():
            Fixture()
    """,
}


def test_test_code_is_outside_the_scope(tmp_path: Path) -> None:
    """Modules pytest collects, and the modules of a test package (`tests/`, or a package
    named for tests that holds test modules: `testlab/`), are test code: tests do not train
    on a TPU."""
    model = project(tmp_path, TEST_CODE)
    assert reason_at(model, tmp_path, "tests/test_scalers.py", "# in-test-module") == (
        "test code (tests/...)"
    )
    assert reason_at(model, tmp_path, "testlab/testlab/configs_for_tests.py", "# fixture") == (
        "test code (testlab/...)"
    )
    assert reason_at(model, tmp_path, "lab/model.py", "# net-step") is None


def test_a_test_helper_training_imports_stays(tmp_path: Path) -> None:
    """`lab/testing.py` (a module of a `testing` folder or name) that training imports runs
    in training: not test code."""
    files = dict(TEST_CODE)
    files["lab/testing/__init__.py"] = files.pop("lab/testing.py")
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "lab/testing/__init__.py", "# testing-helper") is None


def test_a_folder_named_test_something_without_tests_is_not_test_code(tmp_path: Path) -> None:
    """A package whose name starts with "test" but holds no test modules (`testbed/`) is code
    like any other."""
    files = {
        **TEST_CODE,
        "testbed/__init__.py": "",
        "testbed/probe.py": """\
            def probe(x):
                return x.max().item()  # testbed
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "testbed/probe.py", "# testbed") is None


def test_classes_and_functions_only_tests_use_are_outside(tmp_path: Path) -> None:
    """In a repository that trains, a class only tests build and a function only tests call
    never run in training; one training builds too stays."""
    model = project(tmp_path, TEST_CODE)
    assert reason_at(model, tmp_path, "lab/scalers.py", "# mean-scaler") == (
        "in `MeanScaler`, which only tests build"
    )
    assert reason_at(model, tmp_path, "lab/scalers.py", "# clip-scale") == (
        "`clip_scale`, which only tests call"
    )
    assert reason_at(model, tmp_path, "lab/scalers.py", "# shared-scaler") is None


@pytest.mark.parametrize(
    "keep",
    [
        # a package's API: users build it
        ("lab/__init__.py", "from lab.scalers import MeanScaler\n"),
        # a config names it
        ("configs/scaler.yaml", "scaler:\n  _target_: lab.scalers.MeanScaler\n"),
        # a string of the code names it
        ("lab/registry.py", 'NAMES = ["MeanScaler"]\n'),
        # a subclass training builds inherits it
        (
            "lab/more.py",
            "from lab.scalers import MeanScaler\n\n\nclass Robust(MeanScaler):\n    pass\n\n\n"
            "DEFAULT = Robust()\n",
        ),
    ],
)
def test_a_class_tests_build_that_may_be_built_otherwise_stays(
    tmp_path: Path, keep: tuple[str, str]
) -> None:
    files = dict(TEST_CODE)
    name, text = keep
    if name.endswith(".yaml"):
        model = with_configs(tmp_path, files, {name: text})
    else:
        files[name] = text
        model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "lab/scalers.py", "# mean-scaler") is None


def test_a_library_without_training_keeps_what_only_tests_use(tmp_path: Path) -> None:
    """A library with no training script of its own: its users build what its tests build."""
    files = dict(TEST_CODE)
    del files["scripts/train.py"]
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "lab/scalers.py", "# mean-scaler") is None
    assert reason_at(model, tmp_path, "lab/scalers.py", "# clip-scale") is None
    # The tests themselves are still test code.
    assert reason_at(model, tmp_path, "tests/test_scalers.py", "# in-test-module") == (
        "test code (tests/...)"
    )


NAMESPACE_APP = {
    "setup.py": "from setuptools import setup\nsetup(name='flows')\n",
    "experiments/train.py": """\
        import hydra
        import lightning as L

        from data.loaders import Batcher, LoaderModule
        from experiments import utils


        @hydra.main(config_path="../configs")
        def main(cfg):
            L.Trainer(accelerator="gpu").fit(utils.build(), LoaderModule(Batcher()))


        if __name__ == "__main__":
            main()
    """,
    "experiments/utils.py": """\
        def build():
            return None
    """,
    "data/loaders.py": """\
        import lightning as L
        import torch.distributed as dist


        class Batcher:
            def __init__(self):
                self.world = dist.get_world_size()  # used-batcher


        class LoaderModule(L.LightningDataModule):
            def __init__(self, batcher):
                super().__init__()
                self.batcher = batcher
    """,
    "data/old_loaders.py": """\
        import torch.distributed as dist


        class Batcher:
            def __init__(self):
                self.world = dist.get_world_size()  # old-batcher
    """,
}


def test_a_namespace_folder_beside_the_scripts_is_part_of_the_application(
    tmp_path: Path,
) -> None:
    """`experiments/train.py` importing `data.loaders` from `data/` (no `__init__.py`, beside
    `experiments/`): `data/` is the application's, and its module nothing imports
    (`old_loaders.py`, with a class of the same name as the one training builds) runs on no
    machine."""
    model = project(tmp_path, NAMESPACE_APP)
    why = "imported by no script of its project (its training entry points: train.py)"
    assert reason_at(model, tmp_path, "data/old_loaders.py", "# old-batcher") == why
    assert reason_at(model, tmp_path, "data/loaders.py", "# used-batcher") is None


def test_a_package_beside_the_scripts_stays_a_library(tmp_path: Path) -> None:
    """`data/` with an `__init__.py` is a package: a library its users may import from."""
    files = {**NAMESPACE_APP, "data/__init__.py": ""}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "data/old_loaders.py", "# old-batcher") is None


OWN_PACKAGE_APP = {
    "scripts/train.py": """\
        import lightning as L

        from kit.model import Net

        if __name__ == "__main__":
            L.Trainer(accelerator="gpu").fit(Net())
    """,
    "kit/__init__.py": "",
    "kit/model.py": """\
        import lightning as L
        import torch


        class SoftLoss(torch.nn.Module):
            def forward(self, x, m):
                return x[m].sum()  # built-loss


        class HardLoss(torch.nn.Module):
            def forward(self, x, m):
                return x[m].sum()  # unbuilt-loss


        class Net(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.loss = SoftLoss()
                # self.loss = HardLoss()

            def training_step(self, batch, i):
                return self.loss(batch, batch > 0)
    """,
    "kit/extra.py": """\
        def pick(x, m):
            return x[m]  # unimported-extra
    """,
}


def test_a_package_its_repository_does_not_distribute_is_part_of_the_application(
    tmp_path: Path,
) -> None:
    """`scripts/train.py` importing `kit/` (a package, beside `scripts/`) in a repository with
    no `setup.py`, `setup.cfg` or packaging `pyproject.toml` (a tool's settings alone do
    not install it): `kit/` is the application's own code, so its module nothing imports
    and its class nothing builds run on no machine."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n")
    model = project(tmp_path, OWN_PACKAGE_APP)
    why = "imported by no script of its project (its training entry points: train.py)"
    assert reason_at(model, tmp_path, "kit/extra.py", "# unimported-extra") == why
    assert reason_at(model, tmp_path, "kit/model.py", "# unbuilt-loss") == why_unbuilt("HardLoss")
    assert reason_at(model, tmp_path, "kit/model.py", "# built-loss") is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "setup.py",
            "from setuptools import find_packages, setup\nsetup(packages=find_packages())\n",
        ),
        ("setup.cfg", "[metadata]\nname = kit\n"),
        ("pyproject.toml", "[project]\nname = 'kit'\n"),
        ("pyproject.toml", "[tool.poetry]\nname = 'kit'\n"),
    ],
)
def test_a_package_its_repository_distributes_keeps_its_modules(
    tmp_path: Path, name: str, text: str
) -> None:
    """The same package, installed by its repository's packaging: its users may import any
    module of it; a class nothing in the repository, which trains, builds is out."""
    (tmp_path / ".git").mkdir()
    (tmp_path / name).write_text(text)
    model = project(tmp_path, OWN_PACKAGE_APP)
    assert reason_at(model, tmp_path, "kit/extra.py", "# unimported-extra") is None
    assert reason_at(model, tmp_path, "kit/model.py", "# unbuilt-loss") == (
        "in `HardLoss`, a class nothing in its repository builds (no code that runs, config, "
        "registry key or string of the repository names it, tests aside; the repository "
        "trains in train.py)"
    )
    assert reason_at(model, tmp_path, "kit/model.py", "# built-loss") is None


def test_a_package_importing_its_own_modules_by_name_keeps_the_application_known(
    tmp_path: Path,
) -> None:
    """`import_module("." + m, __name__)` in a package's `__init__.py` loads one of the
    package's own modules: every module of its folder may run, and the rest of the
    application is still known."""
    files = {
        **NAMESPACE_APP,
        "data/loaders.py": NAMESPACE_APP["data/loaders.py"].replace(
            "import torch.distributed as dist",
            "import torch.distributed as dist\n        import ops",
        ),
        "ops/__init__.py": """\
            import importlib

            __all__ = ["conv"]
            _modules = [importlib.import_module("." + m, __name__) for m in __all__]
        """,
        "ops/conv.py": """\
            def conv(x):
                return x[x > 0]  # ops-conv
        """,
    }
    model = project(tmp_path, files)
    why = "imported by no script of its project (its training entry points: train.py)"
    assert reason_at(model, tmp_path, "data/old_loaders.py", "# old-batcher") == why
    assert reason_at(model, tmp_path, "ops/conv.py", "# ops-conv") is None
    files["ops/__init__.py"] = files["ops/__init__.py"].replace('"." + m', "m")
    # Any other computed name may be any module: none is known unimported (a class nothing
    # names is still one nothing builds).
    model = project(tmp_path / "unknown", files)
    assert reason_at(model, tmp_path / "unknown", "data/old_loaders.py", "# old-batcher") != why


# --- module calls: what every call of a module passes its forward ------------------------------

_MODULE_CALLS = """\
class Attention(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, q, kv=None, mask=None):
        scores = self.proj(q) @ q.transpose(-1, -2)
        if mask is not None:
            scores[~mask] = float("-inf")
        return scores.softmax(-1) @ q


class Encoder(torch.nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.attn = Attention(dim)
        self.layers = torch.nn.ModuleList([Attention(dim) for _ in range(depth)])
        self.width = self.attn.proj.out_features

    def forward(self, x, mask=None):
        assert mask is None, "masks are not supported"
        h = self.attn(x, mask=mask)
        for layer in self.layers:
            h = layer(h)
        return h[:, : len(self.layers)]


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder(8, 2)

    def training_step(self, batch, i):
        return self.encoder(batch).sum()
"""


def test_a_forward_parameter_every_module_call_leaves_out_decides_its_branch(
    tmp_path: Path,
) -> None:
    """`Attention` is built only into `self.attn` and a `ModuleList` its holder iterates,
    and every call of those (`self.attn(x, mask=mask)` after `assert mask is None`,
    `layer(h)` in the loop) passes no mask: the masked branch of its `forward` never runs."""
    model = project(tmp_path, {"m.py": MODULE_HEAD + _MODULE_CALLS})
    reason = reason_at(model, tmp_path, "m.py", "scores[~mask]")
    assert reason == (
        "under `if mask is not None`, and every call of the function leaves `mask` to its "
        "default None"
    )


@pytest.mark.parametrize("passes_mask", [False, True])
def test_a_forward_parameter_a_holder_passes_on_is_what_its_calls_pass(
    tmp_path: Path, passes_mask: bool
) -> None:
    """`self.attn(x, mask=mask)` in `Encoder.forward(self, x, mask=None)` without the
    assert: `Attention` gets what `Encoder`'s calls pass, None when they all leave it out
    (the branch is dead) and a mask when one passes it (the branch stays)."""
    text = _MODULE_CALLS.replace('        assert mask is None, "masks are not supported"\n', "")
    if passes_mask:
        text = text.replace(
            "self.encoder(batch).sum()", "self.encoder(batch, mask=batch > 0).sum()"
        )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    found = reason_at(model, tmp_path, "m.py", "scores[~mask]")
    assert (found is None) == passes_mask


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a call passes a mask
        ("h = layer(h)", "h = layer(h, mask=x > 0)"),
        ("h = layer(h)", "h = layer(h, None, x > 0)"),
        # a call spreading arguments
        ("h = layer(h)", "h = layer(h, **self.extra)"),
        ("h = layer(h)", "h = layer(*h)"),
        # the module handed on: who calls it, with what, is not seen
        ("h = self.attn(x, mask=mask)", "h = checkpoint(self.attn, x, mask)"),
        (
            "        for layer in self.layers:\n",
            "        for layer in self.layers:\n            keep(layer)\n",
        ),
        ("h[:, : len(self.layers)]", "h[:, : len(list(self.layers))]"),
        # built where no attribute holds it
        (
            "        self.width = self.attn.proj.out_features\n",
            "        self.width = [Attention(dim)]\n",
        ),
        (
            "        self.encoder = Encoder(8, 2)\n",
            "        self.encoder = Encoder(8, 2)\n        self.probe = [Attention(8)]\n",
        ),
        # called from outside its holder, or its arguments changed by a hook
        (
            "        return self.encoder(batch).sum()\n",
            "        self.encoder.attn(batch, mask=batch > 0)\n"
            "        return self.encoder(batch).sum()\n",
        ),
        (
            "        self.encoder = Encoder(8, 2)\n",
            "        self.encoder = Encoder(8, 2)\n"
            "        self.encoder.register_forward_pre_hook(add_mask, with_kwargs=True)\n",
        ),
        # subclassed, or a class users may build by name
        ("class Model(", "class MaskedAttention(Attention):\n    pass\n\n\nclass Model("),
        ("class Model(", "ATTENTIONS = {'plain': Attention}\n\n\nclass Model("),
    ],
)
def test_a_forward_parameter_some_module_call_may_pass_keeps_its_branch(
    tmp_path: Path, old: str, new: str
) -> None:
    text = _MODULE_CALLS.replace(old, new)
    assert text != _MODULE_CALLS
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is None


def test_a_module_class_a_config_names_keeps_its_forward_branch(tmp_path: Path) -> None:
    files = {"m.py": MODULE_HEAD + _MODULE_CALLS}
    configs = {"conf/model.yaml": "attention:\n  _target_: m.Attention\n  dim: 8\n"}
    model = with_configs(tmp_path, files, configs)
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is None


def test_a_none_parameter_narrowed_under_its_test_stays_decided(tmp_path: Path) -> None:
    """`mask = mask.view(...)` under `if mask is not None:` keeps the mask not None there:
    the parameter is still decided by its calls; another assignment is not."""
    text = _MODULE_CALLS.replace(
        "        if mask is not None:\n            scores",
        "        if mask is not None:\n            mask = mask.view(1, -1).expand_as(scores)\n"
        "            scores",
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is not None
    text = text.replace("mask = mask.view(1, -1).expand_as(scores)", "mask = scores > 0")
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is None


# --- constructor options no key of the project sets -----------------------------------------

_BUILT_BY_NAME = {
    "pyproject.toml": "",
    "kit/__init__.py": "",
    "kit/util.py": """\
        import importlib


        def instantiate_from_config(config):
            module, name = config["target"].rsplit(".", 1)
            cls = getattr(importlib.import_module(module), name)
            return cls(**config.get("params", {}))
    """,
    "kit/quant.py": """\
        import torch


        class Quantizer(torch.nn.Module):
            def __init__(self, n_codes, dim, remap=None, legacy=True):
                super().__init__()
                self.codes = torch.nn.Embedding(n_codes, dim)
                self.remap = remap
                self.legacy = legacy

            def forward(self, z):
                index = (z @ self.codes.weight.T).argmin(-1)
                if self.remap is not None:
                    index = self.remap_to_used(index)
                if not self.legacy:
                    z = z + (z.detach() - z)
                    index[index > 3] = 0
                return self.codes(index)

            def remap_to_used(self, index):
                unknown = index > 7
                index[unknown] = 0
                return index
    """,
    "kit/model.py": """\
        import lightning as L

        from kit.util import instantiate_from_config


        class AutoEncoder(L.LightningModule):
            def __init__(self, n_codes, dim):
                super().__init__()
                self.quantizer = instantiate_from_config(
                    {"target": "kit.quant.Quantizer", "params": {"n_codes": n_codes, "dim": dim}}
                )

            def training_step(self, batch, i):
                return self.quantizer(batch).sum()
    """,
}
_BUILT_BY_NAME_CONFIGS = {
    "configs/ae.yaml": "model:\n  target: kit.model.AutoEncoder\n  params:\n    n_codes: 16\n",
}


def test_options_no_config_or_code_sets_decide_their_branches(tmp_path: Path) -> None:
    """A class built only by name (a config dict naming it by a string), whose `remap=None`
    and `legacy=True` no keyword, dict key or config key of the repository sets: the
    branches of other values never run (and a method only they call neither)."""
    model = with_configs(tmp_path, _BUILT_BY_NAME, _BUILT_BY_NAME_CONFIGS)
    reason = reason_at(model, tmp_path, "kit/quant.py", "index[unknown]")
    assert reason == "called only where it never runs: under `if self.remap is not None`"
    assert reason_at(model, tmp_path, "kit/quant.py", "index[index > 3]") is not None


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # a config sets the key (to a value that turns the branch on, or any value)
        (
            "configs/vq.yaml",
            "quantizer:\n  target: kit.quant.Quantizer\n"
            "  params:\n    remap: used.npy\n    legacy: false\n",
        ),
        # code passes it, by keyword or as a dict key
        (
            "kit/extra.py",
            "from kit.quant import Quantizer\n\n\ndef build():\n"
            "    return Quantizer(8, 4, remap='used.npy', legacy=False)\n",
        ),
        ("kit/extra.py", "PARAMS = {'remap': 'used.npy', 'legacy': False}\n"),
        (
            "kit/extra.py",
            "def build(options):\n    return dict(remap=options.remap, legacy=options.legacy)\n",
        ),
        # a command line may set it
        ("run.sh", "python train.py model.params.remap=used.npy model.params.legacy=false\n"),
        (
            "kit/extra.py",
            "import argparse\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--remap')\nparser.add_argument('--legacy')\n",
        ),
    ],
)
def test_an_option_set_anywhere_keeps_its_branch(tmp_path: Path, path: str, text: str) -> None:
    files = {**_BUILT_BY_NAME, path: text}
    configs = dict(_BUILT_BY_NAME_CONFIGS)
    if path.endswith(".yaml"):
        configs[path] = files.pop(path)
    model = with_configs(tmp_path, files, configs)
    assert reason_at(model, tmp_path, "kit/quant.py", "index[unknown]") is None
    assert reason_at(model, tmp_path, "kit/quant.py", "index[index > 3]") is None


def test_an_option_of_a_class_a_package_exports_stays_open(tmp_path: Path) -> None:
    files = {**_BUILT_BY_NAME, "kit/__init__.py": "from kit.quant import Quantizer\n"}
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    assert reason_at(model, tmp_path, "kit/quant.py", "index[unknown]") is None


def test_a_class_built_only_under_a_dead_option_in_a_name_building_project(
    tmp_path: Path,
) -> None:
    """`norm = ScaledNorm` only where `scaled_norm=False` (every config dict passes it so)
    in a repository that builds objects by name: no string or config names `ScaledNorm`, so
    nothing else may build it; a string that names it keeps it."""
    files = {
        **_BUILT_BY_NAME,
        "kit/critic.py": MODULE_HEAD + _NORM_OPTION.split("class Model(")[0],
        "kit/model.py": _BUILT_BY_NAME["kit/model.py"].replace(
            "        def training_step",
            "            self.critic = instantiate_from_config(\n"
            '                {"target": "kit.critic.Critic", "params": {"channels": 8, '
            '"scaled_norm": False}}\n'
            "            )\n\n        def training_step",
        ),
    }
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    reason = reason_at(model, tmp_path, "kit/critic.py", "self.ready.item()")
    assert reason == (
        "its class is built only where the code never runs: in the `else` of `if not scaled_norm`"
    )
    files["kit/extra.py"] = 'NORMS = ["kit.critic.ScaledNorm"]\n'
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    assert reason_at(model, tmp_path, "kit/critic.py", "self.ready.item()") is None


def test_a_module_kept_by_a_wrapper_is_called_by_the_wrapper(tmp_path: Path) -> None:
    """`Residual(Attention(dim))`: the wrapper keeps its argument in `self.inner` and calls
    it with one tensor; no call passes a mask. A wrapper that hands its module on keeps it."""
    text = _MODULE_CALLS.replace(
        "        self.attn = Attention(dim)\n",
        "        self.attn = Residual(Attention(dim))\n",
    ).replace(
        "class Encoder(",
        "class Residual(torch.nn.Module):\n    def __init__(self, inner):\n"
        "        super().__init__()\n        self.inner = inner\n\n"
        "    def forward(self, x):\n        return x + self.inner(x)\n\n\nclass Encoder(",
    )
    model = project(tmp_path, {"m.py": MODULE_HEAD + text})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is not None
    handed = text.replace("return x + self.inner(x)", "return x + checkpoint(self.inner, x)")
    model = project(tmp_path, {"m.py": MODULE_HEAD + handed})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is None
    kept_twice = text.replace("self.inner = inner\n", "self.inner = inner\n        keep(inner)\n")
    model = project(tmp_path, {"m.py": MODULE_HEAD + kept_twice})
    assert reason_at(model, tmp_path, "m.py", "scores[~mask]") is None


def test_an_option_a_subclass_users_build_passes_on_stays_open(tmp_path: Path) -> None:
    """A subclass without its own `__init__` (or one a package exports) is built by users
    with any arguments, which reach the base's constructor: the key decides nothing."""
    files = {
        **_BUILT_BY_NAME,
        "kit/extra.py": "from kit.quant import Quantizer\n\n\nclass Fast(Quantizer):\n    pass\n",
    }
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    assert reason_at(model, tmp_path, "kit/quant.py", "index[index > 3]") is None
    files["kit/extra.py"] = (
        "from kit.quant import Quantizer\n\n\nclass Fast(Quantizer):\n"
        "    def __init__(self, n_codes, dim, **kwargs):\n"
        "        super().__init__(n_codes, dim, **kwargs)\n"
    )
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    assert reason_at(model, tmp_path, "kit/quant.py", "index[index > 3]") is not None
    files["kit/__init__.py"] = "from kit.extra import Fast\n"
    model = with_configs(tmp_path, files, _BUILT_BY_NAME_CONFIGS)
    assert reason_at(model, tmp_path, "kit/quant.py", "index[index > 3]") is None


# --- yacs-style default configs: `_C = CN(); _C.LOSS.KIND = "focal"` ---------------------------

_YACS_DEFAULTS = """\
from yacs.config import CfgNode as CN

_C = CN()
_C.MODEL = CN()
_C.MODEL.MATCH = CN()
_C.MODEL.MATCH.PREFILTER = False
_C.MODEL.LOSS = CN()
_C.MODEL.LOSS.KIND = "focal"  # or "ce"
_C.MODEL.LOSS.FINE = "smooth"


def get_defaults():
    return _C.clone()
"""

_YACS_READER = """\
import torch
from torch import nn


def lower(node):
    if not isinstance(node, dict):
        return node
    return {k.lower(): lower(v) for k, v in node.items()}


class Criterion(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.loss_config = config["model"]["loss"]
        self.prefilter = config["model"]["match"]["prefilter"]
        self.fine = self.loss_config["fine"]

    def forward(self, conf, gt):
        if self.prefilter:
            conf[conf < 0.1] = 0
        if self.loss_config["kind"] == "ce":
            picked = conf[gt == 1]
        else:
            picked = torch.where(gt == 1, conf, 0)
        if self.fine == "l1":
            return conf[gt > 0].mean()
        return picked.sum()
"""

_YACS_TRAIN = """\
import lightning as L

from src.config.default import get_defaults
from src.losses.criterion import Criterion, lower


class Model(L.LightningModule):
    def __init__(self, config):
        super().__init__()
        self.loss = Criterion(lower(config))

    def training_step(self, batch, i):
        return self.loss(*batch)


def main():
    config = get_defaults()
    config.merge_from_file("configs/train.yaml")
    L.Trainer(accelerator="tpu").fit(Model(config))
"""


def _yacs_project(tmp_path: Path, extra: dict[str, str], configs: dict[str, str]) -> ProjectModel:
    files = {
        "src/__init__.py": "",
        "src/config/default.py": _YACS_DEFAULTS,
        "src/losses/criterion.py": _YACS_READER,
        "train.py": _YACS_TRAIN,
        **extra,
    }
    return with_configs(tmp_path, files, configs)


def test_yacs_defaults_decide_options_read_by_lower_cased_keys(tmp_path: Path) -> None:
    """A yacs default module's assignments (`_C.MODEL.LOSS.KIND = "focal"`) are the defaults
    of the options the model reads lower-cased (`config["kind"]`, `self.fine = ...["fine"]`),
    matched by the last key: branches on values no config selects never run."""
    model = _yacs_project(tmp_path, {}, {"configs/train.yaml": "MODEL:\n  MATCH:\n    THR: 0.2\n"})
    path = "src/losses/criterion.py"
    assert reason_at(model, tmp_path, path, "conf[conf < 0.1]") is not None
    assert reason_at(model, tmp_path, path, "conf[gt == 1]") == (
        'under `if self.loss_config["kind"] == "ce"`, and the project\'s config classes and '
        "files never set `kind` to 'ce'"
    )
    assert reason_at(model, tmp_path, path, "conf[gt > 0]") is not None
    assert reason_at(model, tmp_path, path, "torch.where(gt == 1") is None


@pytest.mark.parametrize(
    ("extra", "configs"),
    [
        # an experiment config sets the key
        (
            {
                "configs/exp/ce.py": "from src.config.default import _C as cfg\n\n"
                'cfg.MODEL.LOSS.KIND = "ce"\ncfg.MODEL.MATCH.PREFILTER = True\n'
                'cfg.MODEL.LOSS.FINE = "l1"\n'
            },
            {},
        ),
        # a YAML config sets it
        (
            {},
            {
                "configs/train.yaml": "MODEL:\n  MATCH:\n    PREFILTER: true\n"
                "  LOSS:\n    KIND: ce\n    FINE: l1\n"
            },
        ),
        # a string of the code names it (an options list)
        (
            {
                "tools/sweep.py": "from src.config.default import get_defaults\n\n"
                "cfg = get_defaults()\ncfg.merge_from_list(\n"
                '    ["MODEL.LOSS.KIND", "ce", "MODEL.MATCH.PREFILTER", True,\n'
                '     "MODEL.LOSS.FINE", "l1"]\n)\n'
            },
            {},
        ),
        # the command line's options list sets any key
        (
            {
                "tools/run.py": "import sys\n\nfrom src.config.default import get_defaults\n\n"
                "cfg = get_defaults()\ncfg.merge_from_list(sys.argv[1:])\n"
            },
            {},
        ),
        # a command-line option of that name
        (
            {
                "tools/cli.py": "import argparse\n\np = argparse.ArgumentParser()\n"
                "p.add_argument('--kind')\np.add_argument('--prefilter')\np.add_argument('--fine')\n"
            },
            {},
        ),
        # a second default module turns it on
        (
            {
                "src/demo_config.py": "from yacs.config import CfgNode as CN\n\n_D = CN()\n"
                "_D.MATCH = CN()\n_D.MATCH.PREFILTER = True\n_D.LOSS = CN()\n"
                '_D.LOSS.KIND = "ce"\n_D.LOSS.FINE = "l1"\n'
            },
            {},
        ),
    ],
)
def test_yacs_options_something_else_may_set_keep_their_branches(
    tmp_path: Path, extra: dict[str, str], configs: dict[str, str]
) -> None:
    model = _yacs_project(tmp_path, extra, configs)
    path = "src/losses/criterion.py"
    assert reason_at(model, tmp_path, path, "conf[conf < 0.1]") is None
    assert reason_at(model, tmp_path, path, "conf[gt == 1]") is None
    assert reason_at(model, tmp_path, path, "conf[gt > 0]") is None


def test_a_method_called_on_a_value_of_unknown_class_reaches_inherited_methods(
    tmp_path: Path,
) -> None:
    """`runner.run(batch)` on a value whose class the model does not know may run the `run`
    of any built class, found through its bases (`Child` inherits `Base.run`), whether the
    class is built before or after the call is reached; a class nothing builds stays out."""
    files = {
        "pkg/__init__.py": "",
        "pkg/steps.py": """\
            class Base:
                def run(self, x):
                    return x.sum().item()  # base-run


            class Child(Base):
                pass


            class Early:
                def run(self, x):
                    return x.max().item()  # early-run


            class Never:
                def run(self, x):
                    return x.min().item()  # never-run


            def make(kind):
                return Child() if kind else Early()
        """,
        "pkg/model.py": """\
            import lightning as L
            import torch

            from pkg.steps import Early, make


            class Model(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.early = Early()
                    self.kept = make(True)
                    self.layer = torch.nn.Linear(2, 2)

                def training_step(self, batch, batch_idx):
                    runner = self.hparams.runner
                    runner.run(batch)
                    return self.layer(batch).sum()

        """,
        "train_tpu.py": """\
            import lightning as L

            from pkg.model import Model

            L.Trainer(accelerator="tpu").fit(Model())
        """,
    }
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/steps.py", "# base-run") is None
    assert reason_at(model, tmp_path, "pkg/steps.py", "# early-run") is None
    assert reason_at(model, tmp_path, "pkg/steps.py", "# never-run") is not None


# --- constructor options every config that builds the class sets (issue 21) -----------------

CONFIGURED_OPTIONS = {
    "pyproject.toml": "",
    "lattice/__init__.py": "from lattice.model import Lattice\n",
    "lattice/model.py": """\
        import torch

        from lattice.cells import wrap_cells


        class Lattice(torch.nn.Module):
            def __init__(self, width: int = 4, periodic: bool = True, timing: bool = False):
                super().__init__()
                self.periodic = periodic
                self.timing = timing
                self.proj = torch.nn.Linear(width, width)

            def _edges(self, x, periodic=None):
                periodic = periodic or self.periodic
                if periodic:
                    return wrap_cells(x)  # periodic-only
                return x

            def forward(self, x):
                if self.timing:
                    print(x.sum().item())  # timing-only
                return self.proj(self._edges(x))
    """,
    "lattice/cells.py": """\
        def wrap_cells(x):
            return x[x > 0]  # cells-only
    """,
    "lattice/other.py": """\
        import torch


        class Ring(torch.nn.Module):
            def _edges(self, x):
                return x

            def forward(self, x):
                return self._edges(x)
    """,
    "lattice/task.py": """\
        import lightning as L


        class Task(L.LightningModule):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def training_step(self, batch, i):
                return self.net(batch).sum()
    """,
    "train.py": """\
        import hydra
        import lightning as L


        @hydra.main(config_path="configs", config_name="train")
        def main(cfg):
            L.Trainer().fit(hydra.utils.instantiate(cfg.model))


        if __name__ == "__main__":
            main()
    """,
}
CONFIGURED_OPTION_CONFIGS = {
    "configs/model/small.yaml": """\
        _target_: lattice.task.Task
        net:
          _target_: lattice.Lattice
          width: 8
          periodic: false
    """,
    "configs/model/large.yaml": """\
        _target_: lattice.task.Task
        net:
          _target_: lattice.Lattice
          width: 32
          periodic: false
    """,
    "configs/other.yaml": """\
        _target_: lattice.other.Ring
        periodic: true
    """,
}


def test_an_option_every_config_building_the_class_turns_off(tmp_path: Path) -> None:
    """`Lattice(periodic=True)` by default, but every config that builds it sets `periodic:
    false` (another class's config setting the key is no construction of it): the branch
    on the kept flag (read through `periodic = periodic or self.periodic`, where no call
    passes `periodic`) never runs, nor what only it calls. A flag no config or call sets
    stays at its False default. (`Ring._edges` is another method of that name.)"""
    model = with_configs(tmp_path, CONFIGURED_OPTIONS, CONFIGURED_OPTION_CONFIGS)
    assert (
        reason_at(model, tmp_path, "lattice/model.py", "return wrap_cells(x)  # periodic-only")
        is not None
    )
    assert reason_at(model, tmp_path, "lattice/cells.py", "# cells-only") == (
        "called only where it never runs: under `if periodic`"
    )
    assert (
        reason_at(model, tmp_path, "lattice/model.py", "print(x.sum().item())  # timing-only")
        is not None
    )


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # A config builds the class leaving the key to its default (True).
        ("configs/model/large.yaml", "  periodic: false\n", ""),
        # A config that builds it turns it on.
        ("configs/model/large.yaml", "periodic: false", "periodic: true"),
        # An override that builds nothing turns it on (merged into a mapping that does).
        ("configs/other.yaml", "_target_: lattice.other.Ring\n", "model:\n  net:\n  "),
        # A command-line option of that name: users set it.
        (
            "train.py",
            "import hydra\n",
            "import argparse\n\nimport hydra\n\nargparse.ArgumentParser().add_argument("
            '"--periodic")\n',
        ),
        # Code names the class by its path: it may build it with other arguments.
        ("train.py", "import hydra\n", 'import hydra\n\nNAME = "lattice.model.Lattice"\n'),
        # A partial: the code passes the rest.
        ("configs/model/small.yaml", "width: 8", "_partial_: true"),
    ],
)
def test_an_option_a_config_or_user_may_turn_on_stays(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    files = {name: textwrap.dedent(text) for name, text in CONFIGURED_OPTIONS.items()}
    configs = {name: textwrap.dedent(text) for name, text in CONFIGURED_OPTION_CONFIGS.items()}
    held = files if where in files else configs
    assert old in held[where]
    held[where] = held[where].replace(old, new)
    model = with_configs(tmp_path, files, configs)
    assert (
        reason_at(model, tmp_path, "lattice/model.py", "return wrap_cells(x)  # periodic-only")
        is None
    )
    assert reason_at(model, tmp_path, "lattice/cells.py", "# cells-only") is None


def test_a_flag_a_constructor_passes_on_under_its_own_name(tmp_path: Path) -> None:
    """`Block(periodic=periodic)` in the constructor of a class every config builds with
    `periodic: false`: what it hands on under the key's name is the configs' value, not a
    value of the key of its own (its default), so the class's own branch stays decided.
    `Block`'s branch is not: a repository that builds classes by name may build it with
    any value."""
    files = dict(CONFIGURED_OPTIONS)
    files["lattice/model.py"] = textwrap.dedent(files["lattice/model.py"]).replace(
        "self.proj = torch.nn.Linear(width, width)",
        "self.proj = torch.nn.Linear(width, width)\n        self.block = Block(periodic=periodic)",
    ) + textwrap.dedent(
        """\


        class Block(torch.nn.Module):
            def __init__(self, periodic: bool = True):
                super().__init__()
                self.periodic = periodic

            def forward(self, x):
                if self.periodic:
                    return wrap_cells(x)  # block-periodic
                return x
        """
    )
    files["lattice/model.py"] = files["lattice/model.py"].replace(
        "return self.proj(self._edges(x))", "return self.block(self.proj(self._edges(x)))"
    )
    model = with_configs(tmp_path, files, CONFIGURED_OPTION_CONFIGS)
    assert reason_at(model, tmp_path, "lattice/model.py", "return wrap_cells(x)  # periodic-only")
    assert (
        reason_at(model, tmp_path, "lattice/model.py", "return wrap_cells(x)  # block-periodic")
        is None
    )


# --- a parameter's type decided by every call (issue 21) ------------------------------------

LITERAL_DEFAULT_CALLS = {
    "pkg/__init__.py": "",
    "pkg/blocks.py": """\
        import torch


        def tile(sizes, step: int = 0):
            if isinstance(step, torch.Tensor):
                step = step[sizes > 0]  # tensor-step
            return sizes + step
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.blocks import tile


        class Model(L.LightningModule):
            def training_step(self, batch, i):
                a = tile(batch, step=batch.size(1))
                return (a + tile(batch)).sum()
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Model

        L.Trainer().fit(Model())
    """,
}


@pytest.mark.parametrize("tensor_passed", [False, True])
def test_isinstance_of_a_parameter_every_call_passes_a_host_value(
    tmp_path: Path, tensor_passed: bool
) -> None:
    """`isinstance(step, torch.Tensor)` of a parameter that defaults to 0, where every call
    leaves it out or passes a host int (`x.size(1)`): never a tensor. A call passing a
    tensor keeps it."""
    files = dict(LITERAL_DEFAULT_CALLS)
    if tensor_passed:
        files["pkg/model.py"] = files["pkg/model.py"].replace("tile(batch)", "tile(batch, batch)")
    model = project(tmp_path, files)
    found = reason_at(model, tmp_path, "pkg/blocks.py", "step = step[sizes > 0]  # tensor-step")
    assert (found is None) == tensor_passed


FORWARDED_PARAMS = {
    "pkg/__init__.py": "",
    "pkg/steps.py": """\
        import torch


        class Stepper:
            def spaced(self, spacing, n):
                if spacing == "log":
                    return torch.logspace(0, 1, n).tolist()  # log-spacing
                return torch.linspace(0, 1, n)

            def run(self, x, n, spacing="uniform"):
                return x * self.spaced(spacing, n).sum()


        def mask(lengths, limit=None):
            if limit is None:
                limit = lengths.max().item()  # filled-limit
            return torch.arange(limit)[None] < lengths[:, None]


        def features(lengths, limit=None):
            return mask(lengths, limit)
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.steps import Stepper, features


        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.stepper = Stepper()

            def training_step(self, batch, i):
                m = features(batch["lengths"], batch["limit"])
                return self.stepper.run(batch["x"], 4).sum() + m.sum()
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Model

        L.Trainer().fit(Model())
    """,
}


@pytest.mark.parametrize(
    ("old", "new", "log", "filled"),
    [
        (None, None, False, False),
        # A call selects the other spacing.
        ('run(batch["x"], 4)', 'run(batch["x"], 4, spacing="log")', True, False),
        # A call leaves the limit out: the forwarded None reaches `mask`.
        ('features(batch["lengths"], batch["limit"])', 'features(batch["lengths"])', False, True),
    ],
)
def test_a_parameter_a_caller_passes_on_is_what_its_calls_pass(
    tmp_path: Path, old: str | None, new: str | None, log: bool, filled: bool
) -> None:
    """`self.spaced(spacing, n)` in `run(self, x, n, spacing="uniform")`: the required
    `spacing` of `spaced` is what `run`'s calls pass (its default here), so `spacing ==
    "log"` is decided; `mask(lengths, limit)` in `features(lengths, limit=None)`: `limit` is
    not None when every call of `features` passes one."""
    files = dict(FORWARDED_PARAMS)
    if old is not None:
        assert new is not None and old in files["pkg/model.py"]
        files["pkg/model.py"] = files["pkg/model.py"].replace(old, new)
    model = project(tmp_path, files)
    spacing = reason_at(model, tmp_path, "pkg/steps.py", "return torch.logspace(0, 1, n)")
    limit = reason_at(model, tmp_path, "pkg/steps.py", "limit = lengths.max().item()")
    assert (spacing is None) == log
    assert (limit is None) == filled


# --- an attribute only a method nothing calls sets -------------------------------------------

NEVER_SET = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        from contextlib import contextmanager

        import lightning as L
        import torch


        class Tally(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.record = None

            @contextmanager
            def collecting(self):
                self.record = {"total": 0.0, "count": 0}
                yield
                self.record = None

            def forward(self, x):
                if self.record is None:
                    return x * 2
                self.record["total"] += x.var().item()
                self.record["count"] += 1
                return x * 2


        class Net(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.tally = Tally()

            def training_step(self, batch, i):
                return self.tally(batch).sum()
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Net

        if __name__ == "__main__":
            L.Trainer().fit(Net())
    """,
}


def test_an_attribute_only_an_uncalled_method_sets_stays_none(tmp_path: Path) -> None:
    """`self.record` is None from the constructor and a dict only inside `collecting()`,
    which nothing calls or names: `if self.record is None: return` always returns."""
    model = project(tmp_path, NEVER_SET)
    reason = reason_at(model, tmp_path, "pkg/model.py", "x.var()")
    assert reason is not None and "self.record is None" in reason


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # The training script enters the context.
        (
            "train.py",
            "L.Trainer().fit(Net())",
            "net = Net()\n    with net.tally.collecting():\n        L.Trainer().fit(net)",
        ),
        # A string names the method (a run-time lookup may call it).
        ("train.py", "if __name__", "HOW = 'collecting'\n\nif __name__"),
        # A literal False is stored too: a false truth is then not only None.
        ("pkg/model.py", "yield\n        self.record = None", "yield\n        self.record = False"),
    ],
)
def test_an_attribute_a_called_method_sets_stays(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    files = {name: textwrap.dedent(text) for name, text in NEVER_SET.items()}
    assert old in files[where]
    files[where] = files[where].replace(old, new)
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "x.var()") is None


def test_an_attribute_set_by_a_library_method_stays(tmp_path: Path) -> None:
    """No script fits: a user of the library may call the method."""
    files = {k: v for k, v in NEVER_SET.items() if k != "train.py"}
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "x.var()") is None


# --- a LightningModule's forward that only prediction calls ----------------------------------

FORWARD_FOR_PREDICTION = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import lightning as L
        import torch


        class Regressor(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Linear(4, 4)

            def forward(self, batch):
                out = self.body(batch)
                return out[out > 0]

            def training_step(self, batch, i):
                return self.body(batch).sum()

            def predict_step(self, batch, i):
                return self(batch)
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Regressor

        if __name__ == "__main__":
            L.Trainer().fit(Regressor())
    """,
}


def test_a_forward_only_prediction_calls_is_inference(tmp_path: Path) -> None:
    """Lightning's fit loop runs `training_step`, which calls the sub-module directly;
    only `predict_step`'s `self(batch)` runs `forward`."""
    model = project(tmp_path, FORWARD_FOR_PREDICTION)
    reason = reason_at(model, tmp_path, "pkg/model.py", "out[out > 0]")
    assert reason == "inference only (reached from `predict_step`)"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The training step calls the module itself.
        ("return self.body(batch).sum()", "return self(batch).sum()"),
        # ... or its forward by name.
        ("return self.body(batch).sum()", "return self.forward(batch).sum()"),
    ],
)
def test_a_forward_a_training_step_calls_stays(tmp_path: Path, old: str, new: str) -> None:
    files = {name: textwrap.dedent(text) for name, text in FORWARD_FOR_PREDICTION.items()}
    files["pkg/model.py"] = files["pkg/model.py"].replace(old, new)
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "out[out > 0]") is None


def test_a_forward_of_a_module_without_its_own_steps_stays(tmp_path: Path) -> None:
    """A LightningModule with no `training_step` of its own (a model another module wraps)
    keeps its forward framework-run."""
    files = {name: textwrap.dedent(text) for name, text in FORWARD_FOR_PREDICTION.items()}
    text = files["pkg/model.py"]
    start = text.index("    def training_step")
    end = text.index("    def predict_step")
    files["pkg/model.py"] = text[:start] + text[end:]
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "out[out > 0]") is None


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("", "", "inference only (reached from `predict_step`)"),
        ("return self.body(batch).sum()", "return self(batch).sum()", None),
    ],
)
def test_a_library_forward_only_prediction_calls(
    tmp_path: Path, old: str, new: str, expected: str | None
) -> None:
    """The same in a library with no training script: the predict hook's reach is inference
    unless a training step calls the module too."""
    files = {k: textwrap.dedent(v) for k, v in FORWARD_FOR_PREDICTION.items() if k != "train.py"}
    if old:
        files["pkg/model.py"] = files["pkg/model.py"].replace(old, new)
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/model.py", "out[out > 0]") == expected


# --- a Trainer its config builds --------------------------------------------------------------

CONFIGURED_TRAINER = {
    "pkg/__init__.py": "",
    "pkg/layers.py": """\
        import torch


        class Gate(torch.nn.Module):
            def forward(self, x):
                return x[x > 0]


        class Unused(torch.nn.Module):
            def forward(self, x):
                return x[x < 0]


        def describe(module):
            return isinstance(module, Unused)
    """,
    "pkg/pipelines.py": """\
        import hydra
        import lightning as L

        from pkg.layers import Gate


        class Net(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.gate = Gate()

            def training_step(self, batch, i):
                return self.gate(batch).sum()


        def run(config):
            trainer = hydra.utils.instantiate(config.trainer, callbacks=[])
            trainer.fit(Net())
    """,
    "run.py": """\
        import hydra

        from pkg.pipelines import run


        @hydra.main(config_path="config", config_name=None)
        def main(config):
            run(config)


        if __name__ == "__main__":
            main()
    """,
}


def test_a_trainer_its_config_builds_is_an_entry_point(tmp_path: Path) -> None:
    """`hydra.utils.instantiate(config.trainer)` then `trainer.fit`: the project trains,
    so a class nothing builds (named only in an `isinstance` check) never runs."""
    model = project(tmp_path, CONFIGURED_TRAINER)
    assert reason_at(model, tmp_path, "pkg/layers.py", "x[x > 0]") is None
    reason = reason_at(model, tmp_path, "pkg/layers.py", "x[x < 0]")
    assert reason is not None and "`Unused`, a class nothing builds" in reason


# --- an inference script's class, also built by a serving script's top level -----------------

INFERENCE_TOOLS = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import lightning as L
        import torch


        class Net(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Linear(4, 4)

            def training_step(self, batch, i):
                return self.body(batch).sum()
    """,
    "train.py": """\
        import lightning as L

        from pkg.model import Net

        if __name__ == "__main__":
            L.Trainer().fit(Net())
    """,
    "tools/__init__.py": "",
    "tools/infer.py": """\
        import torch

        from pkg.model import Net


        class Runner(torch.nn.Module):
            def __init__(self, path):
                super().__init__()
                self.net = Net.load_from_checkpoint(path)

            def forward(self, x):
                out = self.net.body(x)
                return out[out > 0]


        if __name__ == "__main__":
            print(Runner("last.ckpt")(torch.ones(2, 4)))
    """,
    "tools/serve.py": """\
        import torch

        from tools.infer import Runner

        runner = Runner("last.ckpt")
        while True:
            print(runner(torch.ones(2, 4)))
    """,
    "tools/infer_fast.py": """\
        import torch

        from tools.infer import Runner


        class FastRunner(Runner):
            pass


        if __name__ == "__main__":
            print(FastRunner("last.ckpt")(torch.ones(2, 4)))
    """,
}


def test_a_class_only_inference_scripts_build_is_inference(tmp_path: Path) -> None:
    """Built by an inference script's `__main__`, at the top level of a serving script
    nothing imports, and subclassed by a class only another inference script builds."""
    model = project(tmp_path, INFERENCE_TOOLS)
    reason = _inference_only(model).get("Runner")
    assert reason is not None and "`Runner`, a class only code that never trains builds" in reason
    assert "the top level of serve.py" in reason


def _inference_only(model: ProjectModel) -> dict[str, str]:
    """The classes only inference builds (the reason a library's reach gives their methods),
    by class name."""
    model.scope.compute()
    found = model.scope._inference_only_classes()
    return {gkey.rsplit(".", 1)[-1]: why for gkey, why in found.items()}


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # The training script imports the serving module: its top level runs there too.
        ("train.py", "from pkg.model import Net", "from pkg.model import Net\nimport tools.serve"),
        # The serving script trains.
        ("tools/serve.py", "while True:", "runner.fit = None\nwhile True:\n    runner.backward()"),
        # The training script builds the subclass.
        ("train.py", "L.Trainer().fit(Net())", "FastRunner('x')\n    L.Trainer().fit(Net())"),
    ],
)
def test_a_tool_class_training_may_build_stays(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    files = {name: textwrap.dedent(text) for name, text in INFERENCE_TOOLS.items()}
    assert old in files[where]
    files[where] = files[where].replace(old, new)
    if "FastRunner('x')" in new:
        files[where] = "from tools.infer_fast import FastRunner\n" + files[where]
    model = project(tmp_path, files)
    assert "Runner" not in _inference_only(model)


NEVER_CALLED_CALLER = {
    "pkg/__init__.py": "",
    "pkg/grid.py": """\
        import torch


        def grid(kind, hi, n, device):
            if kind == "log":
                top = torch.log(torch.tensor(hi, device=device)).item()  # log-top
                return torch.logspace(0, top, n, device=device)
            return torch.linspace(0.0, hi, n, device=device)


        def schedule(n, device, kind="linear"):
            return grid(kind, 1.0, n, device)


        def plan(n, kind, device):
            return grid(kind, 1.0, n, device)
    """,
    "pkg/model.py": """\
        import lightning as L

        from pkg.grid import plan, schedule


        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                t = schedule(8, batch.device, kind="linear")
                return (self(batch) * t).sum()
    """,
}


@pytest.mark.parametrize("plan_called", [False, True])
def test_a_caller_nothing_calls_does_not_decide_a_branch(tmp_path: Path, plan_called: bool) -> None:
    """`kind == "log"` of a helper the step's path calls with "linear": a second caller that
    passes its own parameter on but that nothing calls never runs, so it leaves the branch
    decided; once something calls it (with any kind), the branch may run."""
    files = dict(NEVER_CALLED_CALLER)
    if plan_called:
        files["pkg/model.py"] = files["pkg/model.py"].replace(
            "        return (self", "        plan(4, batch_idx, batch.device)\n        return (self"
        )
    model = project(tmp_path, files)
    found = reason_at(model, tmp_path, "pkg/grid.py", "top = torch.log")
    assert (found is None) == plan_called


# --- a base's method every built subclass overrides ------------------------------------------

OVERRIDE_BASE = """\
    import lightning as L
    import torch


    class BaseTask(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            loss = self.net(batch).mean()
            print(loss.item())  # base-train
            return loss

        def validation_step(self, batch, batch_idx):
            loss = self.net(batch).mean()
            print(loss.item())  # base-val
            return loss

        def on_train_epoch_start(self):
            print(self.net.weight.sum().item())  # base-hook


    class BalancedTask(BaseTask):
        def training_step(self, batch, batch_idx):
            return self.net(batch).sum()
"""


def _override_project(tmp_path: Path, subclass: str, script: str = "") -> ProjectModel:
    return project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": OVERRIDE_BASE,
            "pkg/task.py": subclass,
            "train.py": script
            or """\
                import lightning as L
                from pkg.task import Task

                L.Trainer(accelerator="tpu").fit(Task())
            """,
        },
    )


def test_a_base_step_every_built_subclass_overrides_is_outside(tmp_path: Path) -> None:
    """Lightning calls the built class's `training_step`: the base's, overridden by an
    intermediate class, never runs; the base's hooks the built class inherits (or reaches
    through `super()`) run."""
    model = _override_project(
        tmp_path,
        """\
            from pkg.base import BalancedTask


            class Task(BalancedTask):
                def validation_step(self, batch, batch_idx):
                    return super().validation_step(batch, batch_idx)
        """,
    )
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-train") is not None
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-val") is None
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-hook") is None
    assert reason_at(model, tmp_path, "pkg/base.py", "return self.net(batch).sum()") is None


@pytest.mark.parametrize(
    "subclass",
    [
        # the override hands on to the base's step
        """\
            from pkg.base import BalancedTask, BaseTask


            class Task(BalancedTask):
                def training_step(self, batch, batch_idx):
                    return BaseTask.training_step(self, batch, batch_idx)
        """,
        # a mixin first in the MRO hands on with `super()` (the mixin's own MRO ends there)
        """\
            from pkg.base import BaseTask


            class Logged:
                def training_step(self, batch, batch_idx):
                    return super().training_step(batch, batch_idx)


            class Task(Logged, BaseTask):
                pass
        """,
        # the base is built itself too
        """\
            from pkg.base import BalancedTask, BaseTask


            class Task(BalancedTask):
                pass


            PLAIN = BaseTask()
        """,
        # the base is handed on by reference
        """\
            from pkg.base import BalancedTask, BaseTask


            class Task(BalancedTask):
                pass


            TASKS = {"plain": BaseTask, "balanced": BalancedTask}
        """,
    ],
)
def test_a_base_step_that_may_run_stays(tmp_path: Path, subclass: str) -> None:
    model = _override_project(tmp_path, subclass)
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-train") is None


@pytest.mark.parametrize("exported", [False, True])
def test_a_library_base_step_every_subclass_overrides(tmp_path: Path, exported: bool) -> None:
    """In a library (no script that trains), a base the package does not export and no code
    builds or names is built only as its subclasses' base: their overrides run, not its
    step. A base the package exports may be subclassed by users, who inherit its step."""
    model = project(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
            "pkg/__init__.py": (
                "from pkg.task import Task\n"
                + ("from pkg.base import BaseTask\n" if exported else "")
            ),
            "pkg/base.py": OVERRIDE_BASE,
            "pkg/task.py": """\
                from pkg.base import BalancedTask


                class Task(BalancedTask):
                    pass
            """,
        },
    )
    reason = reason_at(model, tmp_path, "pkg/base.py", "# base-train")
    if exported:
        assert reason is None
    else:
        assert reason == (
            "`BaseTask.training_step` is defined again by every subclass of `BaseTask`,"
            " which is built only as their base"
        )
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-val") is None


@pytest.mark.parametrize(
    ("condition", "outside"),
    [
        ('self.device.type in ("cpu", "cuda")', True),
        ('self.device.type == "cpu"', True),
        ('str(self.device) == "cpu"', True),
        ('device.type == "cpu" or (device.type == "cuda" and device.index == 0)', True),
        ('x.device.type in ("cuda", "mps")', True),
        ('self.device.type not in ("cpu", "cuda")', False),
        ('self.device.type in ("xla", "cpu")', False),
        # a tensor's device may be the host's (a batch kept on the CPU)
        ('x.device.type in ("cpu", "cuda")', False),
        ('x.device.type == "cpu"', False),
    ],
)
def test_a_branch_on_the_models_device_being_the_cpu_or_cuda(
    tmp_path: Path, condition: str, outside: bool
) -> None:
    """In a step or hook the module's own device (`self.device`, its first parameter's) is
    XLA's on a TPU: a branch for the CPU or CUDA is off."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def on_validation_epoch_end(self):
        x = self.cached
        device = next(iter(self.parameters())).device
        if {condition}:
            print(x.sum().item())  # marker
"""
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "print(x")
    assert (reason is not None) == outside


@pytest.mark.parametrize("method", ["__init__", "setup", "build"])
def test_the_models_device_before_it_moves_is_the_cpu(tmp_path: Path, method: str) -> None:
    """`__init__` and `setup` (and a helper they may call) run before Lightning moves the
    module to its device: `self.device` is the CPU there."""
    model = project(
        tmp_path,
        {
            "m.py": MODULE_HEAD
            + f"""\
class Model(L.LightningModule):
    def {method}(self, stage=None):
        x = torch.ones(3)
        if self.device.type in ("cpu", "cuda"):
            print(x.sum().item())  # marker

    def training_step(self, batch, i):
        self.build()
        return batch.sum()
"""
        },
    )
    assert reason_at(model, tmp_path, "m.py", "print(x") is None


# --- options a mapping spread into a constructor gives (`Net(**cfg["net"])`) ----------------

SPREAD_OPTIONS = {
    "voc/__init__.py": "",
    "voc/generator.py": """\
        import torch
        from torch import nn


        class CombSource(nn.Module):
            def forward(self, x):
                return x.cumsum(-1)


        class SineSource(nn.Module):
            def forward(self, x):
                return torch.sin(x[x > 0])  # sine-only


        class Generator(nn.Module):
            def __init__(self, *, channels=16, source="comb", add_noise=False):
                super().__init__()
                self.proj = nn.Linear(channels, channels)
                if source == "comb":
                    self.source = CombSource()
                elif source == "sine":
                    self.source = SineSource()
                else:
                    raise ValueError(source)
                self.add_noise = add_noise

            def forward(self, x):
                if self.add_noise:
                    x = x + x.std().item()  # noise-only
                return self.source(self.proj(x))
    """,
    "voc/task.py": """\
        import lightning as L

        from voc.generator import Generator


        class Vocoder(L.LightningModule):
            def __init__(self, config):
                super().__init__()
                self.generator = Generator(**config["generator"])

            def training_step(self, batch, i):
                return self.generator(batch).sum()
    """,
    "configs/vocoder.py": """\
        model = dict(
            type="Vocoder",
            generator=dict(channels=32),
        )
    """,
    "train.py": """\
        import lightning as L

        from voc.task import Vocoder


        def main(cfg):
            L.Trainer().fit(Vocoder(cfg.model))


        if __name__ == "__main__":
            main(load_config("configs/vocoder.py"))
    """,
}


def test_options_a_spread_config_mapping_leaves_to_their_defaults(tmp_path: Path) -> None:
    """`Generator(**config["generator"])`: the mapping's keys are what the repository's
    configs and code give them by name. No config, keyword or text sets `source` or
    `add_noise`, so both stay at their defaults: the `"sine"` branch and the class only it
    builds never run, nor the branch of the off flag."""
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    model = with_configs(tmp_path, SPREAD_OPTIONS, {})
    assert reason_at(model, tmp_path, "voc/generator.py", "x.std().item()  # noise-only")
    assert reason_at(model, tmp_path, "voc/generator.py", "x[x > 0])  # sine-only")
    # Another module's class of the same name, built where the code runs, is another class.
    other = """\
        from torch import nn


        class SineSource(nn.Module):
            def forward(self, x):
                return x[x > 0]  # other-sine


        def build():
            return SineSource()
    """
    model = with_configs(tmp_path, {**SPREAD_OPTIONS, "voc/other.py": other}, {})
    assert reason_at(model, tmp_path, "voc/generator.py", "x[x > 0])  # sine-only")


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # A python config's dict turns them on.
        ("configs/vocoder.py", "channels=32", 'channels=32, source="sine", add_noise=True'),
        # A YAML config sets the keys.
        ("configs/other.yaml", "", "generator:\n  source: sine\n  add_noise: true\n"),
        # A launcher's words name them (`--add_noise`, `generator.source=sine`).
        ("run.sh", "", "python train.py generator.source=sine --add_noise\n"),
        # A command-line option of that name: users set it.
        (
            "train.py",
            "import lightning as L\n",
            'import argparse\n\nimport lightning as L\n\nargparse.ArgumentParser().add_argument("'
            '--source")\nargparse.ArgumentParser().add_argument("--add_noise")\n',
        ),
        # Code sets the keys on the mapping.
        (
            "train.py",
            "    L.Trainer()",
            '    cfg.model["generator"]["source"] = "sine"\n'
            '    cfg.model["generator"]["add_noise"] = True\n    L.Trainer()',
        ),
    ],
)
def test_options_a_spread_mapping_may_set_stay(
    tmp_path: Path, where: str, old: str, new: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {name: textwrap.dedent(text) for name, text in SPREAD_OPTIONS.items()}
    configs: dict[str, str] = {}
    if where.endswith(".yaml"):
        configs[where] = new
    elif where not in files:
        (tmp_path / where).write_text(new, encoding="utf-8")
    else:
        assert old in files[where]
        files[where] = files[where].replace(old, new)
    model = with_configs(tmp_path, files, configs)
    assert reason_at(model, tmp_path, "voc/generator.py", "x.std().item()  # noise-only") is None
    assert reason_at(model, tmp_path, "voc/generator.py", "x[x > 0])  # sine-only") is None


def test_a_config_option_read_with_get_is_decided_by_its_default(tmp_path: Path) -> None:
    """`self.config.get("interleave", False)`: the `get`'s default is the option's default
    where the module reads it (no config class needed); a config file that turns it on
    keeps the branch."""
    text = _CONFIG_OPTION.replace(
        "self.config.interleave", 'self.config.get("interleave", False)'
    ).replace("        interleave: bool = False\n", "")
    model = with_configs(tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/train.yaml": "a: 1\n"})
    reason = reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]")
    assert reason is not None and reason.endswith("leave `interleave` false")
    on = with_configs(
        tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/train.yaml": "interleave: true\n"}
    )
    assert reason_at(on, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None
    # A repository that ships no configs (a package: its users bring their own) keeps it.
    (tmp_path / "configs/train.yaml").unlink()
    bare = with_configs(tmp_path, {"m.py": MODULE_HEAD + text}, {})
    assert reason_at(bare, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None
    stored = text.replace(
        "        self.config = config\n",
        '        self.config = config\n        self.mixed = config.get("interleave", False)\n',
    ).replace('if self.config.get("interleave", False):', "if self.mixed:")
    assert "if self.mixed:" in stored
    model = with_configs(tmp_path, {"m.py": MODULE_HEAD + stored}, {"configs/train.yaml": "a: 1\n"})
    assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is not None


def test_a_config_option_no_class_declares_is_what_the_config_files_set(tmp_path: Path) -> None:
    """`self.config.interleave` with no default declared anywhere: the repository's YAML
    configs all set `interleave: false`, so the branch never runs. A launcher that spells
    the key (`model.interleave=true`), a config that turns it on, or no config setting it
    at all keeps it."""
    text = _CONFIG_OPTION.replace("        interleave: bool = False\n", "")
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    model = with_configs(tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/a.yaml": _CONFIG_FILE})
    reason = reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]")
    assert reason is not None and reason.endswith("leave `interleave` false")
    for configs in (
        {"configs/a.yaml": _CONFIG_FILE, "configs/b.yaml": "model:\n  interleave: true\n"},
        {"configs/a.yaml": "model:\n  dim: 16\n"},
    ):
        model = with_configs(tmp_path, {"m.py": MODULE_HEAD + text}, configs)
        assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None
        for name in configs:
            (tmp_path / name).unlink()
    (tmp_path / "run.sh").write_text("python train.py model.interleave=true\n", encoding="utf-8")
    model = with_configs(tmp_path, {"m.py": MODULE_HEAD + text}, {"configs/a.yaml": _CONFIG_FILE})
    assert reason_at(model, tmp_path, "m.py", "a[a.sum(-1) > 0]") is None


# --- command-line switches no launcher passes (`action="store_true"`) -----------------------

SWITCHES = {
    "train.py": """\
        import argparse

        import lightning as L
        from torch import nn


        class Net(L.LightningModule):
            def __init__(self, dim, use_ema=True):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.use_ema = use_ema

            def training_step(self, batch, i):
                out = self.proj(batch)
                if self.use_ema:
                    print(out.mean().item())  # ema-only
                return out.sum()


        def fit(args, batch):
            if args.debug:
                print(batch.sum().item())  # debug-only
            L.Trainer().fit(Net(8, use_ema=args.use_ema))


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--use-ema", action="store_true")
            parser.add_argument("--debug", action="store_true", default=False)
            fit(parser.parse_args(), None)
    """,
}


def test_switches_no_launcher_passes_are_off(tmp_path: Path) -> None:
    """`add_argument("--use-ema", action="store_true")` that no shell script, README
    command, config or code passes: `args.use_ema` is False in every run, so the
    constructor gets False (not its True default) and the branches on the switches never
    run."""
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("python train.py --help\n", encoding="utf-8")
    model = project(tmp_path, SWITCHES)
    assert reason_at(model, tmp_path, "train.py", "out.mean().item())  # ema-only")
    reason = reason_at(model, tmp_path, "train.py", "batch.sum().item())  # debug-only")
    assert reason is not None and "passes `--debug`" in reason


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # A launcher or a README command passes the switches.
        ("run.sh", "", "python train.py --use-ema --debug\n"),
        ("README.md", "", "python train.py --use_ema --debug\n"),
        # Code passes them, sets their defaults, or stores them.
        ("train.py", "parse_args()", 'parse_args(["--use-ema", "--debug"])'),
        (
            "train.py",
            "    fit(parser",
            "    parser.set_defaults(use_ema=True, debug=True)\n    fit(parser",
        ),
        (
            "train.py",
            "    if args.debug:",
            "    args.use_ema = args.debug = True\n    if args.debug:",
        ),
        # Not off by default, or not a switch.
        (
            "train.py",
            'action="store_true")',
            'action="store_true", default=True)',
        ),
        ("train.py", 'action="store_true", default=False)', "type=int)"),
    ],
)
def test_switches_something_may_pass_stay(tmp_path: Path, where: str, old: str, new: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {name: textwrap.dedent(text) for name, text in SWITCHES.items()}
    if where in files:
        assert old in files[where]
        files[where] = files[where].replace(old, new)
    else:
        (tmp_path / where).write_text(new, encoding="utf-8")
    model = project(tmp_path, files)
    ema = reason_at(model, tmp_path, "train.py", "out.mean().item())  # ema-only")
    debug = reason_at(model, tmp_path, "train.py", "batch.sum().item())  # debug-only")
    if "type=int" in new:
        assert debug is None  # (`--use-ema` is still a switch no one passes)
    elif "default=True" in new:
        assert ema is None  # (`--debug` keeps its own `default=False`)
    else:
        assert ema is None and debug is None


# --- `*_step` methods Lightning does not call, device helpers, packages at the root ---------

_STEP_HELPERS = """\
import lightning as L
import torch


class Segmenter(L.LightningModule):
    def tally_step(self, scores, target):
        return (scores.argmax(-1) == target).sum().item()  # tally

    def heatmap_step(self, batch):
        return self(batch).detach().cpu()  # heatmap

    def training_step(self, batch, i):
        scores = self(batch["x"])
        self.tally_step(scores, batch["y"])
        return scores.mean()
{extra}"""


@pytest.mark.parametrize(
    ("extra", "heatmap_hot"),
    [
        ("", False),  # named nowhere: runs only when called, and nothing calls it
        # looked up by a name built with its ending, or spelled in a string
        (
            "\n    def validation_step(self, batch, i):\n"
            '        return getattr(self, f"{self.mode}_step")(batch)\n',
            True,
        ),
        ('\n\nSTEPS = ["heatmap_step"]\n', True),
        # called on a value the model cannot resolve
        ("\n\ndef render(module, batch):\n    return module.heatmap_step(batch)\n", True),
    ],
)
def test_a_step_named_method_lightning_does_not_call_runs_when_called_or_named(
    tmp_path: Path, extra: str, heatmap_hot: bool
) -> None:
    """Lightning calls `training_step` and the other hooks, never `heatmap_step`: a
    LightningModule's own `*_step` method is hot as a helper of the step that calls it
    ("called from training_step"), and on its own only when its name is looked up at run
    time (a string, `getattr(self, f"{stage}_step")`) or called where the model cannot see
    on what."""
    model = project(tmp_path, {"m.py": _STEP_HELPERS.format(extra=extra)})
    infos = {model.functions[g].summary.name: info for g, info in model.hot.items()}
    assert infos["tally_step"].root == "training_step"
    assert ("heatmap_step" in infos) is heatmap_hot


_DEVICE_HELPER_LOOP = {
    "exp/base.py": """\
        import torch


        class BaseRun:
            def __init__(self, args):
                self.args = args
                self.device = self._pick_device()
                self.net = self.build().to(self.device)

            def _pick_device(self):
                if self.args.gpu:
                    chosen = torch.device("cuda:{}".format(self.args.index))
                else:
                    chosen = torch.device("cpu")
                return chosen
    """,
    "exp/run.py": """\
        import torch

        from exp.base import BaseRun


        class Run(BaseRun):
            def build(self):
                return torch.nn.Linear(4, 1)

            def fit(self, loader):
                opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
                for x in loader:
                    loss = self.net(x.to(self.device)).sum()
                    loss.backward()
                    opt.step()
                    print(loss.item())  # loop-item
    """,
}


@pytest.mark.parametrize("returned", ['torch.device(f"cuda:{self.args.index}")', None])
def test_a_loop_whose_device_a_helper_returns_as_cuda_or_cpu_is_off_the_tpu(
    tmp_path: Path, returned: str | None
) -> None:
    """A plain-PyTorch loop of a class whose base stores `self.device = self._pick_device()`,
    a method every return of which is a CUDA or CPU device, and places the model there: on
    a TPU host that is the CPU. A helper that may return another device keeps the loop."""
    files = dict(_DEVICE_HELPER_LOOP)
    if returned is not None:
        files["exp/base.py"] = files["exp/base.py"].replace(
            'torch.device("cuda:{}".format(self.args.index))', returned
        )
        off = True
    else:
        files["exp/base.py"] = files["exp/base.py"].replace(
            'torch.device("cpu")', "self.args.device"
        )
        off = False
    model = project(tmp_path, files)
    fit = next(g for g, f in model.functions.items() if f.summary.name == "fit")
    assert (model.off_tpu_loop(model.functions[fit]) is not None) is off


_ROOT_PACKAGE_APP = {
    "__init__.py": "",
    "scripts/train_run.py": """\
        import lightning as L

        from proj.core.trainers.runner import lit_runner

        if __name__ == "__main__":
            runner = lit_runner()
            runner.train()
    """,
    "core/trainers/runner.py": """\
        import lightning as L

        from proj.core.models.image.mil.net import Net


        class lit_runner:
            def train(self):
                L.Trainer(accelerator="gpu").fit(Net())
    """,
    "core/models/image/mil/net.py": """\
        import lightning as L


        class Net(L.LightningModule):
            def training_step(self, batch, i):
                return batch[batch > 0].sum()  # used-net
    """,
    "core/losses/extra.py": '''\
        """Losses: `from proj.core.losses.extra import Picky` to use them."""


        def pick(x, m):
            return x[m]  # unimported-extra
    ''',
}


def test_a_repository_whose_root_is_its_package_is_an_application(tmp_path: Path) -> None:
    """The repository folder is the package (`__init__.py` at its root, no `__init__.py`
    below), a script in `scripts/` imports `proj.core.trainers.runner` (namespace folders
    inside the package, `proj.core.models.image.mil.net` four deep) and runs a lower-case
    class's method that fits: the module it reaches is in scope, the module nothing imports
    (its one import spelled in a docstring) is not."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    model = project(root, _ROOT_PACKAGE_APP)
    assert reason_at(model, root, "core/models/image/mil/net.py", "# used-net") is None
    why = reason_at(model, root, "core/losses/extra.py", "# unimported-extra")
    assert why is not None and why.startswith("imported by no script of its project")


# --- options a `--conf` YAML file sets on the parsed command line -----------------------------

YAML_ARGS = {
    "tools.py": """\
        import argparse

        import yaml


        class ConfFile(argparse.Action):
            def __call__(self, parser, namespace, values, option_string=None):
                with open(values) as handle:
                    for key, value in yaml.safe_load(handle).items():
                        setattr(namespace, key, value)
    """,
    "options.py": """\
        from tools import ConfFile


        def fill(parser):
            parser.add_argument("--conf", "-c", action=ConfFile)
            parser.add_argument("--width", default=64, type=int)
            parser.add_argument("--num-classes", default=5, type=int)
            parser.add_argument("--pair-loss", default=False, action="store_true")
            parser.add_argument("--use-prior", action="store_true")
            parser.add_argument("--use-halo", action="store_true")
            parser.add_argument("--teacher", default=None, type=str)
            return parser
    """,
    "model.py": """\
        import lightning as L
        from torch import nn


        class Head(nn.Module):
            def __init__(self, dim, use_halo=False):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.use_halo = use_halo

            def forward(self, x):
                if self.use_halo:
                    x = x[x.sum(-1) > 0]  # halo-only
                return self.proj(x)


        class Model(L.LightningModule):
            def __init__(self, hparams):
                super().__init__()
                if "use_prior" not in hparams.keys():
                    hparams["use_prior"] = False
                self.save_hyperparameters(hparams)
                self.head = Head(hparams["width"], use_halo=hparams["use_halo"])

            def training_step(self, batch, i):
                out = self.head(batch)
                if self.hparams.pair_loss:
                    print(out.mean().item())  # pair-only
                if self.hparams["use_prior"]:
                    print(out.max().item())  # prior-only
                if self.hparams.num_classes == 7:
                    out = out[out > 0]  # seven-only
                if self.hparams.get("width", 64) != 64:
                    print(out.min().item())  # wide-only
                if self.hparams.teacher is not None:
                    print(out.std().item())  # teacher-only
                return out.sum()
    """,
    "train.py": """\
        import argparse

        import lightning as L

        from model import Model
        from options import fill


        if __name__ == "__main__":
            args = fill(argparse.ArgumentParser()).parse_args()
            L.Trainer().fit(Model(hparams=vars(args)))
    """,
}

YAML_ARGS_CONFIGS = {
    "configs/small.yaml": "width: 64\nnum_classes: 5\npair_loss: false\nuse_halo: false\n",
    "configs/large.yaml": "width: 64\nnum_classes: 5\npair_loss: false\nuse_halo: false\n",
}

YAML_ARGS_MARKERS = (
    "x[x.sum(-1) > 0]  # halo-only",
    "out.mean().item())  # pair-only",
    "out.max().item())  # prior-only",
    "out[out > 0]  # seven-only",
    "out.min().item())  # wide-only",
    "out.std().item())  # teacher-only",
)


_TRAIN_LOADING = """\
    import argparse

    import lightning as L
    import yaml

    from model import Model
    from options import fill


    if __name__ == "__main__":
        parser = fill(argparse.ArgumentParser())
        args = parser.parse_args()
        LOAD
        L.Trainer().fit(Model(hparams=vars(args)))
"""


@pytest.mark.parametrize(
    ("action", "load"),
    [
        ("setattr(namespace, key, value)", None),
        ("namespace.__dict__.update({key: value})", None),
        ("pass", "vars(args).update(yaml.safe_load(open(args.conf)))"),
        ("pass", "args.__dict__.update(yaml.safe_load(open(args.conf)))"),
        ("pass", "parser.set_defaults(**yaml.safe_load(open(args.conf)))"),
    ],
)
def test_yaml_loaded_options_are_what_configs_set(
    tmp_path: Path, action: str, load: str | None
) -> None:
    """A `--conf` option whose `argparse.Action` sets a YAML file's keys on the namespace:
    each option is what the repository's configs set (`num_classes: 5`, `pair_loss:
    false`), or its parser default when they leave it (`use_prior`); a module's
    hyperparameters filled from the parsed arguments (`Model(hparams=vars(args))`) read
    the same, in branches, comparisons and constructions (`Head(use_halo=...)`)."""
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {name: textwrap.dedent(text) for name, text in YAML_ARGS.items()}
    files["tools.py"] = files["tools.py"].replace("setattr(namespace, key, value)", action)
    if load is not None:  # (the script loads the YAML file itself)
        files["train.py"] = _TRAIN_LOADING.replace("LOAD", load)
    model = with_configs(tmp_path, files, YAML_ARGS_CONFIGS)
    for marker in YAML_ARGS_MARKERS:
        assert reason_at(model, tmp_path, "model.py", marker) is not None, marker


@pytest.mark.parametrize(
    ("where", "old", "new", "kept"),
    [
        # A config turns an option on, or sets another value.
        ("configs/large.yaml", "pair_loss: false", "pair_loss: true", "pair-only"),
        ("configs/large.yaml", "num_classes: 5", "num_classes: 7", "seven-only"),
        ("configs/large.yaml", "use_halo: false", "use_halo: true", "halo-only"),
        # A config differs from the parser's default where another config leaves it.
        ("configs/large.yaml", "width: 64\n", "", None),
        ("configs/large.yaml", "width: 64\n", "width: 128\n", "wide-only"),
        # A launcher passes it, or code stores another value.
        ("run.sh", "", "python train.py -c configs/small.yaml --use-prior\n", "prior-only"),
        ("README.md", "", "python train.py --teacher runs/best.ckpt\n", "teacher-only"),
        ("configs/small.yaml", "width: 64\n", "width: 64\nteacher: best.ckpt\n", "teacher-only"),
        ("model.py", 'hparams["use_prior"] = False', 'hparams["use_prior"] = True', "prior-only"),
        # No YAML file is loaded into the command line: the valued options stay open, and
        # so do the switches a config spells (`use_prior` alone is off).
        (
            "tools.py",
            "setattr(namespace, key, value)",
            "print(key, value)",
            "halo-only pair-only seven-only wide-only teacher-only",
        ),
    ],
)
def test_yaml_loaded_options_others_stay(
    tmp_path: Path, where: str, old: str, new: str, kept: str | None
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    files = {name: textwrap.dedent(text) for name, text in YAML_ARGS.items()}
    configs = dict(YAML_ARGS_CONFIGS)
    if where in files:
        assert old in files[where]
        files[where] = files[where].replace(old, new)
    elif where in configs:
        assert old in configs[where]
        configs[where] = configs[where].replace(old, new)
    else:
        (tmp_path / where).write_text(new, encoding="utf-8")
    model = with_configs(tmp_path, files, configs)
    for marker in YAML_ARGS_MARKERS:
        reason = reason_at(model, tmp_path, "model.py", marker)
        if kept is not None and marker.rsplit("# ", 1)[1] in kept.split():
            assert reason is None, marker
        else:
            assert reason is not None, marker


def test_a_base_step_stays_when_nothing_builds_a_subclass_either(tmp_path: Path) -> None:
    """A module with a LightningModule and a subclass that overrides its step, and nothing in
    the project that builds or names either (the module `tpulint verify mod:Base` trains):
    the project does not say which class trains, so the base's step stays in scope."""
    model = project(
        tmp_path,
        {
            "targets.py": """\
                import lightning as L


                class Base(L.LightningModule):
                    def training_step(self, batch, batch_idx):
                        return batch[batch > 0].sum()  # base-train


                class Variant(Base):
                    def training_step(self, batch, batch_idx):
                        return batch.sum()
            """,
        },
    )
    assert reason_at(model, tmp_path, "targets.py", "# base-train") is None


# --- a fit and a test through helpers; methods that cannot bind; sibling scripts -------------

FIT_HELPERS = {
    "pkg/fitting.py": """\
        import lightning as L


        def run_training(model):
            trainer = L.Trainer(accelerator="tpu")
            trainer.fit(model)
            return trainer.checkpoint_callback.best_model_path


        def train_twice(model):
            return run_training(model)
    """,
    "pkg/testing.py": """\
        import lightning as L


        def run_evaluation(model, checkpoint):
            trainer = L.Trainer(accelerator="tpu")
            trainer.test(model, ckpt_path=checkpoint)
    """,
}


@pytest.mark.parametrize(
    ("body", "stays"),
    [
        # imported helpers, one of them two levels deep, the imports in the function
        ("best = run_training(model)\n    run_evaluation(model, best)", True),
        ("best = train_twice(model)\n    if not quick:\n        run_evaluation(model, best)", True),
        (
            "for fold in range(3):\n        best = run_training(model)\n"
            "        run_evaluation(model, best)",
            True,
        ),
        # a test before the fit, or in the other branch of a switch: no test after fitting
        ("run_evaluation(model, None)\n    run_training(model)", False),
        (
            "if quick:\n        run_training(model)\n"
            "    else:\n        run_evaluation(model, None)",
            False,
        ),
    ],
)
def test_a_fit_and_a_test_through_helpers_of_other_modules(
    tmp_path: Path, body: str, stays: bool
) -> None:
    """A script whose `main` calls a helper that fits and then one that tests (each in a
    module of the project, building its own Trainer) tests after fitting in one run: the
    test hooks are in scope. A test before the fit, or in the other branch, is not."""
    files = {**TEST_HOOKS_MODEL, **FIT_HELPERS}
    files["train.py"] = f"""\
quick = False


def main():
    from pkg.fitting import run_training, train_twice
    from pkg.model import Model
    from pkg.testing import run_evaluation

    model = Model()
    {body}


if __name__ == "__main__":
    main()
"""
    model = project(tmp_path, files)
    reason = reason_at(model, tmp_path, "pkg/model.py", "# test-step")
    assert (reason is None) == stays, reason


def test_a_fit_and_a_test_through_helpers_of_the_script(tmp_path: Path) -> None:
    files = dict(TEST_HOOKS_MODEL)
    files["train.py"] = """\
import lightning as L

from pkg.model import Model


def fit_once(model):
    trainer = L.Trainer(accelerator="tpu")
    trainer.fit(model)


def fit(model):
    fit_once(model)


def evaluate(model):
    L.Trainer(accelerator="tpu").fit  # (no call)
    tester = L.Trainer(accelerator="tpu")
    trainer = tester
    trainer.test(model)


def main():
    model = Model()
    fit(model)
    evaluate(model)


if __name__ == "__main__":
    main()
"""
    model = project(tmp_path, files)
    assert reason_at(model, tmp_path, "pkg/scores.py", "# test-score") is None
    assert reason_at(model, tmp_path, "pkg/model.py", "# test-step") is None


SELFLESS = """\
import lightning as L


class Model(L.LightningModule):
    def training_step(self, batch, i):
        return self(batch[0]).sum()

    def validation_step(self, batch, i):
        return {call}

    {decorator}
    def score(preds, labels):
        labels[labels == -100] = 0  # score-body
        return preds.sum()
"""


@pytest.mark.parametrize(
    ("call", "decorator", "reached"),
    [
        # no `self`: the instance makes one argument too many, TypeError before the body
        ("self.score(batch[0], batch[1])", "", False),
        ("self.score(batch[0], labels=batch[1])", "", False),
        # the instance binds to `preds`: the call runs the body
        ("self.score(batch[1])", "", True),
        ("self.score(*batch)", "", True),
        ("self.score(batch[0], batch[1])", "@staticmethod", True),
    ],
)
def test_a_method_without_self_called_with_all_its_arguments_never_runs(
    tmp_path: Path, call: str, decorator: str, reached: bool
) -> None:
    model = project(
        tmp_path,
        {
            "m.py": SELFLESS.format(call=call, decorator=decorator),
            "train.py": "import lightning as L\nfrom m import Model\n"
            "L.Trainer(accelerator='tpu').fit(Model())\n",
        },
    )
    reason = reason_at(model, tmp_path, "m.py", "# score-body")
    assert (reason is None) == reached, reason


SIBLING_MODELS = """\
import pytorch_lightning as pl


class TpuModel(pl.LightningModule):
    def training_step(self, batch, i):
        return batch[0][batch[1] > 0].sum()  # tpu-model


class OtherModel(pl.LightningModule):
    def training_step(self, batch, i):
        return batch[0][batch[1] > 0].sum()  # other-model
"""
SIBLING_FLAGS = """\
import argparse
import pytorch_lightning as pl
from models import OtherModel

parser = argparse.ArgumentParser()
parser.add_argument("{option}", type=float, default=1e-3)
parser = pl.Trainer.add_argparse_args(parser)
args = parser.parse_args()
trainer = {build}
trainer.fit(OtherModel())
"""


@pytest.mark.parametrize(
    ("variant", "build", "option", "reached"),
    [
        # a sibling of a TPU script, built from the generic flags only: not on the TPU
        ("plain", "pl.Trainer.from_argparse_args(args)", "--lr", False),
        ("plain", "pl.Trainer(**vars(args))", "--lr", False),
        # ... unless a shipped command runs it with a TPU flag, or it has a TPU option
        ("shell", "pl.Trainer.from_argparse_args(args)", "--lr", True),
        ("readme", "pl.Trainer(**vars(args))", "--lr", True),
        ("plain", "pl.Trainer.from_argparse_args(args)", "--tpu_cores", True),
        # a Trainer the script builds itself stays "auto" (Lightning picks the TPU)
        ("plain", "pl.Trainer(max_epochs=3)", "--lr", True),
        # no explicit TPU entry point anywhere: the project's training scripts as before
        ("no-tpu", "pl.Trainer.from_argparse_args(args)", "--lr", True),
    ],
)
def test_a_sibling_script_with_only_the_generic_trainer_flags(
    tmp_path: Path, variant: str, build: str, option: str, reached: bool
) -> None:
    """A project with an explicitly TPU-configured script (`Trainer(tpu_cores=...)`): a
    sibling that builds its Trainer from Lightning 1's generic flags alone, whose own parser
    adds no TPU option, runs on a TPU only when a shipped command passes it a TPU flag."""
    files = {
        "models.py": SIBLING_MODELS,
        "train_other.py": SIBLING_FLAGS.format(build=build, option=option),
    }
    if variant != "no-tpu":
        files["train_tpu.py"] = """\
            import pytorch_lightning as pl
            from models import TpuModel

            pl.Trainer(tpu_cores=8).fit(TpuModel())
        """
    if variant == "shell":
        files["scripts/run.sh"] = "python train_other.py --lr 0.1 --tpu_cores 8\n"
    if variant == "readme":
        files["README.md"] = "Train: `python train_other.py --accelerator tpu --devices 8`\n"
    (tmp_path / ".git").mkdir()
    model = project(tmp_path, files)
    reason = reason_at(model, tmp_path, "models.py", "# other-model")
    assert (reason is None) == reached, reason
    if variant != "no-tpu":
        assert reason_at(model, tmp_path, "models.py", "# tpu-model") is None


SIBLING_IN_PACKAGE = """\
import argparse

import pytorch_lightning as pl


class {name}Model(pl.LightningModule):
    def training_step(self, batch, i):
        return batch[0][batch[1] > 0].sum()  # {name}-model


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3){option}
    parser = pl.Trainer.add_argparse_args(parser)
    args = parser.parse_args()
    trainer = pl.Trainer.from_argparse_args(args)
    trainer.fit({name}Model())
"""


@pytest.mark.parametrize("shell", [False, True])
def test_a_sibling_script_with_only_the_generic_flags_in_a_library_reading(
    tmp_path: Path, shell: bool
) -> None:
    """Scripts in a package no command runs as a file: no group of roots speaks for them (a
    library's reading). The one whose parser has a `--tpu_cores` option is configured for
    TPUs; what only its generic-flags siblings reach is out, unless a command gives one a
    TPU flag."""
    option = '\n    parser.add_argument("--tpu_cores", type=int, default=None)'
    files = {
        "src/trainers/__init__.py": "",
        "src/trainers/train_tagger.py": SIBLING_IN_PACKAGE.format(name="Tagger", option=option),
        "src/trainers/train_summary.py": SIBLING_IN_PACKAGE.format(name="Summary", option=""),
    }
    if shell:
        files["src/run.sh"] = "python trainers/train_summary.py --tpu_cores 8\n"
    (tmp_path / ".git").mkdir()
    model = project(tmp_path, files)
    assert not model.scope.entries
    reason = reason_at(model, tmp_path, "src/trainers/train_summary.py", "# Summary-model")
    if shell:
        assert reason is None
    else:
        assert reason is not None
        assert reason.startswith("reached only from train_summary.py, whose Trainer takes"), reason
    assert reason_at(model, tmp_path, "src/trainers/train_tagger.py", "# Tagger-model") is None


def test_a_project_folder_named_like_a_library_is_followed(tmp_path: Path) -> None:
    """A namespace folder `lightning/` beside the scripts (no `__init__.py`) holds the
    project's own modules: `from lightning.utils import to_numbers` imports them, so a
    helper the step calls through that name is reached, in a comprehension's iterable too,
    and one nothing calls is not."""
    files = {
        "train.py": """\
            import pytorch_lightning as pl

            from lightning.systems.base import System

            if __name__ == "__main__":
                pl.Trainer(max_epochs=1).fit(System())
            """,
        "lightning/utils.py": """\
            def to_numbers(losses):
                return {"total": losses[0].item()}  # reached


            def unused(losses):
                return losses[0].item()  # unused
            """,
        "lightning/systems/base.py": """\
            import pytorch_lightning as pl
            import torch

            from lightning.utils import to_numbers


            class System(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    losses = (self(batch).mean(), batch.mean())
                    logged = {f"train/{k}": v for k, v in to_numbers(losses).items()}
                    self.log_dict(logged)
                    return losses[0]
            """,
    }
    model = project(tmp_path, files)
    assert [Path(e.path).name for e in model.scope.entries] == ["train.py"]
    assert reason_at(model, tmp_path, "lightning/utils.py", "# reached") is None
    assert reason_at(model, tmp_path, "lightning/utils.py", "# unused") == (
        "not reached from the training entry points (train.py)"
    )


@pytest.mark.parametrize("intermediate_built", [False, True])
def test_a_base_step_past_an_intermediate_base_every_leaf_overrides(
    tmp_path: Path, intermediate_built: bool
) -> None:
    """`BaseTask` <- `Adaptor` (no `training_step`) <- `Fast`, `Slow` (each their own): the
    intermediate base is built only as theirs, so the base's step never runs, unless the
    intermediate class is built itself."""
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": OVERRIDE_BASE,
        "pkg/adaptor.py": """\
            from pkg.base import BaseTask


            class Adaptor(BaseTask):
                def adapt(self, batch):
                    return batch * 2
        """,
        "pkg/task.py": """\
            from pkg.adaptor import Adaptor


            class Fast(Adaptor):
                def training_step(self, batch, batch_idx):
                    return self.net(self.adapt(batch)).sum()


            class Slow(Adaptor):
                def training_step(self, batch, batch_idx):
                    return self.net(batch).sum()


            TASKS = {"fast": Fast, "slow": Slow}
        """,
        "train.py": """\
            import sys

            import lightning as L
            from pkg.task import TASKS
            from pkg.adaptor import Adaptor

            task = TASKS[sys.argv[1]]()
            L.Trainer(accelerator="tpu").fit(task)
            BUILT
        """.replace(
            "BUILT", "L.Trainer(accelerator='tpu').fit(Adaptor())" if intermediate_built else ""
        ),
    }
    model = project(tmp_path, files)
    reason = reason_at(model, tmp_path, "pkg/base.py", "# base-train")
    if intermediate_built:
        assert reason is None
    else:
        assert reason == (
            "`BaseTask.training_step` is defined again by every subclass of `BaseTask`,"
            " which is built only as their base"
        )
    assert reason_at(model, tmp_path, "pkg/base.py", "# base-val") is None


def test_an_epoch_loop_around_a_training_loop(tmp_path: Path) -> None:
    """`for epoch in range(n):` around the loop over batches that steps: what the epoch loop
    calls beside it (an evaluation over collected outputs) runs once an epoch; a loop over
    optimizers inside a loop that counts iterations keeps the outer loop the training loop."""
    model = project(
        tmp_path,
        {
            "train.py": """\
import torch


def summarize(outputs):
    return torch.cat([o.cpu() for o in outputs]).mean()


def run_epoch_end(model, loader):
    return summarize([model(x) for x, _ in loader])


def per_iteration(model, x):
    return model(x).sum()


def main(model, optimizer, loader, optimizers, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
        run_epoch_end(model, loader)
    for it in range(epochs):
        total = per_iteration(model, it)
        for opt in optimizers:
            total.backward()
            opt.step()


if __name__ == "__main__":
    main(None, None, [], [], 3)
"""
        },
    )
    hot = hot_names(model)
    assert "main" in hot
    assert "run_epoch_end" not in hot
    assert "summarize" not in hot
    assert "per_iteration" in hot
