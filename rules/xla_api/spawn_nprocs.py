"""TPU507 spawn-nprocs."""

from __future__ import annotations

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import CLI_VALUE, is_framework_file, literal_candidates
from ..shared.matchers import source_of

_SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
_SPAWN_PARAMS = ("fn", "args", "nprocs", "join", "daemon", "start_method")
_HEAD = "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"


class SpawnNprocs(Rule):
    """
    ## What it does
    Finds `xmp.spawn(fn, nprocs=N)` (`torch_xla.distributed.xla_multiprocessing.spawn`) with
    a number of processes other than 1 or None: a literal (`nprocs=8`), or a value that can
    be one (an argparse default, a local set to 8).

    ## Why is this bad on TPU?
    Under PJRT, the only runtime since torch_xla 2.2, `xmp.spawn` starts one process per TPU
    device itself and accepts only `nprocs=1` (run `fn` in this process, one device) or
    `None` (all devices): torch_xla 2.9 raises `ValueError: Unsupported nprocs (8). Please use
    nprocs=1 or None (default)` (`torch_xla/_internal/pjrt.py`, lines 204-209) before any
    process starts. `nprocs=8` was the XRT-era way to ask for the eight cores of a v2-8 or
    v3-8; the device count now comes from the host (`TPU_NUM_DEVICES`, or the
    `X_NUM_DEVICES` variables to limit it).

    ## Example
    ```python
    import torch_xla.distributed.xla_multiprocessing as xmp


    def train(index):
        ...


    if __name__ == "__main__":
        xmp.spawn(train, nprocs=8)
    ```

    ## Use instead
    ```python
    import torch_xla.distributed.xla_multiprocessing as xmp


    def train(index):
        ...


    if __name__ == "__main__":
        xmp.spawn(train)
    ```

    ## Fix safety
    The fix removes `nprocs=` and is unsafe: the job then uses every device of the host,
    which differs from the old count on hosts with another number of devices (v4 and later
    hosts have 4), and with it the global batch size.

    ## References
    - [torch_xla source: `pjrt.spawn` refuses nprocs other than 1 or None](https://github.com/pytorch/xla/blob/master/torch_xla/_internal/pjrt.py)
    - [torch_xla docs: PJRT runtime, multiprocessing](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)

    ## Status
    Stable (new in issue 21): every finding is a call that raises ValueError on torch_xla 2.9
    (`_internal/pjrt.py`, lines 204-209), by construction. It comes from issue 21's list of
    misses (a launcher of its third held-out set); sci1, tpu1 and the corpus have no such
    call, so the lead's next fresh batches are its first check on unseen code.
    """

    code = "TPU507"
    name = "spawn-nprocs"
    summary = "`xmp.spawn(fn, nprocs=8)`: torch_xla 2.9 accepts only `nprocs=1` or `None`"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Remove `nprocs` (spawn one process per device)"
    requires = ("spawn",)
    screen_calls = frozenset({"spawn"})  # a call the imports qualify to `..._multiprocessing.spawn`

    VALID = (
        Valid(_HEAD + "xmp.spawn(train)\nxmp.spawn(train, args=(cfg,), nprocs=None)\n"),
        # One process: torch_xla runs `fn` here, on one device.
        Valid(_HEAD + "xmp.spawn(train, nprocs=1)\n"),
        # Another library's spawn.
        Valid("import torch.multiprocessing as mp\n\nmp.spawn(train, nprocs=8)\n"),
        # A value the file cannot tell.
        Valid(_HEAD + "def main(n):\n    xmp.spawn(train, nprocs=n)\n"),
    )
    INVALID = (
        Invalid(
            _HEAD + "if __name__ == '__main__':\n    xmp.spawn(train, nprocs=8)\n",
            expected_fix=_HEAD + "if __name__ == '__main__':\n    xmp.spawn(train)\n",
            line=5,
            message="accepts only `nprocs=1` or `None`",
            applicability=Applicability.UNSAFE,
        ),
        # Positional, through `from ... import spawn`.
        Invalid(
            "from torch_xla.distributed.xla_multiprocessing import spawn\n\n"
            "spawn(train, (cfg,), 4, start_method='fork')\n",
            expected_fix="from torch_xla.distributed.xla_multiprocessing import spawn\n\n"
            "spawn(train, (cfg,), start_method='fork')\n",
        ),
        # An argparse default of 8: reported without a fix (the option may be 1).
        Invalid(
            "import argparse\n" + _HEAD + "parser = argparse.ArgumentParser()\n"
            "parser.add_argument('--num_cores', type=int, default=8)\n"
            "args = parser.parse_args()\n"
            "xmp.spawn(train, args=(args,), nprocs=args.num_cores)\n",
            message="can be 8",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualify(node.func) != _SPAWN or is_framework_file(ctx):
            return
        arg = keyword_arg(node, "nprocs")
        if arg is None:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if len(positional) < 3:
                return
            arg = positional[2]
        values = literal_candidates(ctx, arg.value)
        if not values:
            return
        bad = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v != 1]
        if not bad:
            return
        written = source_of(ctx, arg.value)
        literal = len(values) == 1 and values[0] is not CLI_VALUE
        subject = f"`nprocs={written}`" if literal else f"`nprocs={written}` can be {bad[0]}, and"
        message = (
            f"{subject} makes `xmp.spawn` raise ValueError: under PJRT torch_xla 2.9 accepts "
            "only `nprocs=1` or `None` and starts one process per device itself "
            "(_internal/pjrt.py:204-209); drop `nprocs` (set `TPU_NUM_DEVICES` to use fewer)"
        )
        if not literal:
            self.report(arg, message)
            return
        new = node.with_changes(args=_without(node.args, arg))
        self.report(arg, message, replacement=new, replaces=node)


def _without(args: tuple[cst.Arg, ...] | list[cst.Arg], drop: cst.Arg) -> list[cst.Arg]:
    """The arguments without `drop`, keeping the last one's trailing comma style."""
    kept = [a for a in args if a is not drop]
    if kept and args and args[-1] is drop:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept
