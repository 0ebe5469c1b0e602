"""TPU008 xrt-runtime."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.imports import module_name_of
from tpulint.datatypes.diagnostics import Applicability, Location, Severity
from tpulint.rule_api.cst_helpers import string_value
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import env_accesses, is_framework_file, with_string_value

_XRT_NAMES = ("XRT_TPU_CONFIG", "TPU_IP_ADDRESS")
_XLA_DIST = "torch_xla.distributed.xla_dist"


def _is_xrt_name(name: str) -> bool:
    return name in _XRT_NAMES or name.startswith("XRT_")


class XrtRuntime(Rule):
    """
    ## What it does
    Finds configuration of the retired XRT runtime: environment variables such as
    `XRT_TPU_CONFIG` and `TPU_IP_ADDRESS` set in code (`os.environ[...] = ...`,
    `os.environ.setdefault`, `os.putenv`, `os.environ.update`, environment dictionaries
    passed to subprocesses), imports of `torch_xla.distributed.xla_dist`, and command strings
    that launch `xla_dist`. The TPU settings in the project's shell launchers are found too:
    `export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"`, `TPU_IP_ADDRESS=10.0.0.2
    python train.py`, `python -m torch_xla.distributed.xla_dist ...` in a `.sh` file (a
    commented-out line is not a setting; `XRT_WORKERS` / `XRT_DEVICE_MAP` there set up XLA on
    GPUs or CPUs, not a TPU launch, and are left alone).

    ## Why is this bad on TPU?
    torch_xla dropped XRT after 2.1 and runs only on PJRT: torch_xla 2.9 never reads
    `XRT_TPU_CONFIG` or any other `XRT_` variable (neither its Python package nor its
    `_XLAC` extension mentions them), and `torch_xla.distributed.xla_dist` (the XRT pod
    launcher) no longer exists. Importing torch_xla picks the PJRT device itself
    (`runtime._maybe_select_default_device()` in `torch_xla/__init__.py` sets `PJRT_DEVICE=TPU`
    when a TPU chip is on this host, else `CPU`), so an XRT setup does nothing on a TPU VM and
    cannot reach the remote TPU node it names (`tpu_worker;0;<ip>:8470`, `TPU_IP_ADDRESS`):
    PJRT runs only on the host the TPU is attached to, and falls back to the CPU elsewhere.
    Lightning's XLA accelerator refuses a process without a PJRT device (`The XLA XRT runtime is
    not supported anymore.`). On a TPU VM, PJRT needs only `PJRT_DEVICE=TPU` (the default
    when nothing is set); pods are launched by running the same command on every host
    (`gcloud compute tpus tpu-vm ssh --worker=all`).

    ## Example
    ```python
    import os

    os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"
    ```

    ## Use instead
    ```python
    import os

    os.environ["PJRT_DEVICE"] = "TPU"
    ```

    ## Fix safety
    Display-only: the suggested `PJRT_DEVICE=TPU` replaces the XRT setup on a TPU VM, but
    XRT-era launch scripts (pod launchers, Colab TPU nodes) need more than one line to move
    to PJRT.

    ## References
    - [torch_xla docs: PJRT runtime (migrating from XRT)](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Lightning source: XLAAccelerator rejects XRT](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/accelerators/xla.py)
    - [torch_xla 2.1 release: last release with XRT](https://github.com/pytorch/xla/releases/tag/v2.1.0)
    - [torch_xla source: the PJRT device chosen at import (`runtime.py`, `_maybe_select_default_device`)](https://github.com/pytorch/xla/blob/master/torch_xla/runtime.py)
    """

    code = "TPU008"
    name = "xrt-runtime"
    summary = "XRT runtime configuration (`XRT_TPU_CONFIG`, `TPU_IP_ADDRESS`, `xla_dist`)"
    severity = Severity.ERROR
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Use PJRT: `PJRT_DEVICE=TPU`"
    requires = ("XRT_", "TPU_IP_ADDRESS", "xla_dist")
    # Also checks shell launchers (`check_shell`).
    checks_shell = True

    VALID = (
        Valid('import os\n\nos.environ["PJRT_DEVICE"] = "TPU"\n'),
        # Reading it to refuse XRT is fine.
        Valid(
            'import os\n\nif "XRT_TPU_CONFIG" in os.environ:\n'
            '    raise RuntimeError("XRT is gone")\n'
        ),
        Valid('def launch():\n    """Replaces the old xla_dist launcher."""\n'),
    )
    INVALID = (
        Invalid(
            'import os\n\nos.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n',
            line=3,
            message="PJRT_DEVICE=TPU",
            expected_suggestion='import os\n\nos.environ["PJRT_DEVICE"] = "TPU"\n',
        ),
        Invalid(
            "import os\n\n"
            "os.environ['XRT_TPU_CONFIG'] = (\n"
            "    'tpu_worker;0;' + os.environ['TPU_IP_ADDRESS'] + ':8470'\n"
            ")\n",
        ),
        Invalid("import torch_xla.distributed.xla_dist as xd\n", message="no longer exists"),
        Invalid(
            "import subprocess\n\n"
            'cmd = ["python", "-m", "torch_xla.distributed.xla_dist", "--tpu=my-pod"]\n'
            'subprocess.run(cmd + ["--", "python", "train.py"])\n',
            message="xla_dist",
        ),
        Invalid(
            "import subprocess\n\n"
            'subprocess.run(["python", "train.py"], env={"TPU_IP_ADDRESS": "10.0.0.2"})\n',
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = not is_framework_file(self.ctx)
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._enabled:
            self._env(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self._enabled:
            self._env(node)

    def _env(self, node: cst.CSTNode) -> None:
        for access in env_accesses(self.ctx, node):
            if access.kind == "read" or not _is_xrt_name(access.name):
                continue
            replacement = None
            if (
                access.kind == "assign"
                and access.name == "XRT_TPU_CONFIG"
                and isinstance(node, cst.Assign)
            ):
                assert isinstance(access.key, cst.SimpleString)
                target = node.targets[0].target
                assert isinstance(target, cst.Subscript)
                new_target = target.with_changes(
                    slice=[
                        target.slice[0].with_changes(
                            slice=cst.Index(with_string_value(access.key, "PJRT_DEVICE"))
                        )
                    ]
                )
                quote = '"' if '"' in access.key.value else "'"
                replacement = node.with_changes(
                    targets=[node.targets[0].with_changes(target=new_target)],
                    value=cst.SimpleString(f"{quote}TPU{quote}"),
                )
            self.report(
                node if access.kind == "assign" else access.key,
                _xrt_env_message(access.name),
                replacement=replacement,
            )

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if not self._enabled:
            return
        name = string_value(node.key)
        if name is None or not _is_xrt_name(name):
            return
        # os.environ.update({...}) is reported by _env.
        holder = self.ctx.parent(self.ctx.parent(node) or node)
        call = self.ctx.parent(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and self.ctx.qualify(call.func) == "os.environ.update":
            return
        self.report(node.key, _xrt_env_message(name))

    def visit_Import(self, node: cst.Import) -> None:
        if not self._enabled:
            return
        for alias in node.names:
            if module_name_of(alias.name).startswith(_XLA_DIST):
                self.report(alias, _XLA_DIST_MESSAGE)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self._enabled or node.relative:
            return
        base = module_name_of(node.module)
        if base.startswith(_XLA_DIST):
            self.report(node, _XLA_DIST_MESSAGE)
        elif base == "torch_xla.distributed" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if module_name_of(alias.name) == "xla_dist":
                    self.report(alias, _XLA_DIST_MESSAGE)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self._enabled:
            return
        value = string_value(node)
        if value is None or isinstance(self.ctx.parent(node), cst.Expr):
            return
        if _XLA_DIST in value and value.strip().startswith(
            ("python", "-m", _XLA_DIST, "torch_xla")
        ):
            self.report(
                node,
                "launches `xla_dist`, the XRT pod launcher removed with XRT; with PJRT run the "
                "training command on every host (`gcloud compute tpus tpu-vm ssh --worker=all`) "
                "with `PJRT_DEVICE=TPU`",
            )
        elif re.search(r"\b(XRT_TPU_CONFIG|TPU_IP_ADDRESS)=", value):
            self.report(
                node,
                _xrt_env_message(re.search(r"\b(XRT_TPU_CONFIG|TPU_IP_ADDRESS)=", value).group(1)),
            )

    def check_shell(self, text: str) -> None:
        """A shell launcher: XRT variables it assigns, `python -m ...xla_dist` it runs."""
        from tpulint.analysis.shell_script import shell_assignments, shell_module_runs

        for word in shell_assignments(text):
            # Only the TPU settings: a script may set XRT_WORKERS / XRT_DEVICE_MAP for XLA on
            # GPUs or CPUs, which is no TPU launch.
            if word.name in _XRT_NAMES:
                self.report_yaml(
                    Location(word.line, word.column),
                    Location(word.line, word.end_column),
                    _xrt_env_message(word.name, word.value),
                )
        for word in shell_module_runs(text):
            if word.name.startswith(_XLA_DIST):
                self.report_yaml(
                    Location(word.line, word.column),
                    Location(word.line, word.end_column),
                    _XLA_DIST_MESSAGE,
                )


_XLA_DIST_MESSAGE = (
    "`torch_xla.distributed.xla_dist` (the XRT pod launcher) no longer exists in torch_xla 2.x "
    "(ModuleNotFoundError); with PJRT run the same command on every host with `PJRT_DEVICE=TPU`"
)


def _xrt_env_message(name: str, value: str = "") -> str:
    remote = ""
    if name == "TPU_IP_ADDRESS" or "tpu_worker" in value:
        remote = (
            ", so the remote TPU node it names is never reached (PJRT uses the TPU chips of "
            "the host it runs on)"
        )
    return (
        f"`{name}` configures the XRT runtime, which torch_xla dropped after 2.1: torch_xla 2.x "
        f"runs only on PJRT and never reads it{remote}; set `PJRT_DEVICE=TPU` instead"
    )
