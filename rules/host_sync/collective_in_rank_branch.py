"""TPU108 collective-in-rank-branch."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.analysis.walker import iter_children
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.matchers import source_of, walk

# Calls every process must make together: a process that skips one leaves the others waiting.
_COLLECTIVES = {
    "torch_xla.core.xla_model.save": "writes from the master ordinal after a rendezvous of "
    "every process",
    "torch_xla.core.xla_model.rendezvous": "is a barrier of every process",
    "torch_xla.core.xla_model.mesh_reduce": "gathers a value from every process",
    "torch_xla.core.xla_model.all_reduce": "reduces across every device",
    "torch_xla.core.xla_model.all_gather": "gathers from every device",
    "torch_xla.core.xla_model.reduce_scatter": "reduces across every device",
    "torch_xla.core.xla_model.all_to_all": "exchanges data between every device",
    "torch_xla.core.xla_model.collective_permute": "exchanges data between devices",
    "torch_xla.core.xla_model.optimizer_step": "all-reduces the gradients of every device",
    "torch.distributed.barrier": "is a barrier of every process",
    "torch.distributed.all_reduce": "reduces across every process",
    "torch.distributed.all_gather": "gathers from every process",
    "torch.distributed.all_gather_object": "gathers from every process",
    "torch.distributed.broadcast": "needs every process",
    "torch.distributed.broadcast_object_list": "needs every process",
    "torch.distributed.reduce": "needs every process",
    "torch.distributed.gather": "needs every process",
    "torch.distributed.scatter": "needs every process",
}
# Lightning methods that synchronise every process (through the strategy's barrier or
# collectives), called on the Trainer, its strategy or the module.
_LIGHTNING_COLLECTIVES = {
    "save_checkpoint": "waits for every process in the strategy's barrier",
    "barrier": "is a barrier of every process",
    "all_gather": "gathers from every process",
    "broadcast": "needs every process",
    "reduce": "reduces across every process",
}
_LIGHTNING_RECEIVERS = re.compile(r"(^|\.)(trainer|strategy|pl_module|fabric)$|^self$")
_RANK_TEST = re.compile(
    r"(global_rank|local_rank|node_rank|is_global_zero|is_local_zero|is_master|master_ordinal|"
    r"get_ordinal|global_ordinal|local_ordinal|get_rank|process_index|\brank\b)"
)
_RANK_ZERO_DECORATORS = frozenset({"rank_zero_only"})
_COLLECTIVE_NAMES = last_names(_COLLECTIVES, _LIGHTNING_COLLECTIVES)
_LINE_BREAK = re.compile(r"\r\n?|\n")  # the line breaks `ast` counts lines by
# A collective's name as a word, before parsing: `xm.save(`, `dist.barrier(`, a bare call of
# an imported one (`from torch.distributed import scatter`), or the import of an alias.
_COLLECTIVE_TEXT = re.compile(r"\b(?:" + "|".join(sorted(_COLLECTIVE_NAMES)) + r")\b")


class CollectiveInRankBranch(Rule):
    """
    ## What it does
    Finds calls every process must make together (`xm.save`, `xm.rendezvous`,
    `xm.mesh_reduce`, `xm.all_reduce`, `torch.distributed.barrier`, `trainer.save_checkpoint`,
    `self.all_gather`, `strategy.barrier()`, ...) that only some processes reach: under a
    condition on the rank (`if self.global_rank == 0:`, `if xm.is_master_ordinal():`,
    `if trainer.is_global_zero:`, either branch of it, or after an early
    `if not trainer.is_global_zero: return`), or in a function decorated with
    `@rank_zero_only`.

    A collective that every path through the rank test reaches is not reported: both
    branches call it (`if rank == dst: dist.gather(t, parts, dst=dst)` and
    `else: dist.gather(t, [], dst=dst)`), before any `return` and not only under a loop or a
    one-sided `if`; a branch that always raises is an error exit and does not count. Nor is
    the "rank zero first" pair of barriers: `if rank not in [-1, 0]: dist.barrier()`, the
    work rank 0 does alone, then `if rank == 0: dist.barrier()` in the same block (opposite
    tests of the same rank, each body surely calling the same barrier or rendezvous): every
    process calls it once, the others waiting for rank 0 at the first.

    Code that runs only in the process that launched training is not reported when that
    process is no rank: under the XLA strategy (an XLA or "auto" Trainer), Lightning spawns
    one process per TPU core and the launcher only waits for them, so after `trainer.fit(...)`
    returned (or raised), and in a signal handler, its `global_rank` is 0 and `barrier()`
    returns at once (lightning/pytorch/strategies/xla.py, `_launched`): no other process is
    there to wait. Under DDP on GPUs the launcher is rank 0 and the finding stands.

    Nor code of a class that every Trainer of the project that builds it runs on one device
    on a TPU (`devices=1`, `[0]`, `"1"`, or a name bound to one of these wherever a TPU runs
    the script: `if torch.cuda.is_available(): devices = [args.gpu] else: devices = 1`, or
    the returns a TPU reaches of the project's function or method it is unpacked from; no
    strategy but a single-device one): Lightning then trains in one process under
    `SingleDeviceXLAStrategy` (trainer/connectors/accelerator_connector.py:404-408,
    Lightning 2.6.6), whose `barrier` and `broadcast` do nothing (strategies/single_device.py:
    87-92) and whose rank is 0: no other process is there to wait. `devices="auto"` (every
    core), more than one, a value the user sets, an XLA strategy, `xmp.spawn`, Fabric and a
    library stay reported.

    ## Why is this bad on TPU?
    A collective completes only when every process (one per TPU core, or per host) has
    called it. Under a rank condition the other processes never call it, so the ones that
    did wait forever: the run hangs without an error, typically at the end of an epoch or at
    the first checkpoint. `xm.save` is one of them: it holds a rendezvous of every process
    and writes from the master ordinal only, so guarding it with `if xm.is_master_ordinal():`
    is what hangs.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def on_train_epoch_end(self):
            if self.global_rank == 0:
                xm.save(self.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm


    class Model(L.LightningModule):
        def on_train_epoch_end(self):
            xm.save(self.state_dict(), "model.pt")  # writes from the master ordinal only
    ```

    Call the collective on every process; keep only the host-side work (printing, writing
    a file with `open`) under the rank condition.

    ## Fix safety
    No fix: which work belongs under the condition depends on the code.

    ## References
    - [torch_xla: `xm.save` "should be called by all processes"](https://github.com/pytorch/xla/blob/master/torch_xla/core/xla_model.py)
    - [torch_xla PJRT: `xm.rendezvous`](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Lightning docs: `save_checkpoint` must run on all ranks](https://lightning.ai/docs/pytorch/stable/common/checkpointing_intermediate.html)
    - [Lightning's XLA strategy: the launcher is no rank (`_launched`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/strategies/xla.py)
    """

    code = "TPU108"
    name = "collective-in-rank-branch"
    summary = "A collective (`xm.save`, `xm.rendezvous`, a barrier) only some ranks reach"
    severity = Severity.ERROR
    # The text screen is the names of the collectives themselves (a file whose only
    # collective is `dist.gather` or `dist.scatter` is checked too); tests/test_requires.py
    # checks every rule's text screen against the calls it reports.
    requires = tuple(sorted(_COLLECTIVE_NAMES))
    screen_calls = _COLLECTIVE_NAMES

    @classmethod
    def applies(cls, source: str, view: object) -> bool:
        return (
            bool(_COLLECTIVE_TEXT.search(source))
            and any(t in source for t in ("rank", "ordinal", "is_global_zero", "is_master"))
            and _collective_under_rank_test(source)
        )

    VALID = (
        # Every process calls it; only host-side work is guarded.
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        xm.save(self.state_dict(), 'model.pt')\n"
            "        if self.global_rank == 0:\n"
            "            print('saved')\n"
        ),
        # A condition on the world size is the same on every process.
        Valid(
            "import torch.distributed as dist\n\n\n"
            "def sync(world_size):\n"
            "    if world_size > 1:\n"
            "        dist.barrier()\n"
        ),
        # The launching process of an XLA run is no rank: after `trainer.fit` returned and in
        # a signal handler, nothing waits for it (`barrier()` returns at once there).
        Valid(
            "import signal\nimport lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", devices="auto")\n\n\n'
            "def on_preempt(*args):\n"
            "    if trainer.global_rank == 0:\n"
            '        trainer.save_checkpoint("preempted.ckpt")\n\n\n'
            "signal.signal(signal.SIGUSR1, on_preempt)\n"
            "try:\n"
            "    trainer.fit(model)\n"
            "except Exception:\n"
            "    if trainer.is_global_zero:\n"
            '        trainer.save_checkpoint("crashed.ckpt")\n'
            "    raise\n"
            "if trainer.global_rank == 0:\n"
            '    trainer.save_checkpoint("final.ckpt")\n'
        ),
        # Both branches of the rank test call the same collective (a branch that raises is
        # an error exit): every process makes it.
        Valid(
            "import torch\nimport torch.distributed as dist\n\n\n"
            "def share(value, rank):\n"
            "    if rank == 0:\n"
            "        flag = value.clone()\n"
            "        dist.broadcast(flag, src=0)\n"
            "    elif rank < 0:\n"
            "        raise ValueError(rank)\n"
            "    else:\n"
            "        flag = torch.empty_like(value)\n"
            "        dist.broadcast(flag, src=0)\n"
            "    return flag\n"
        ),
        # "Rank zero first": the other ranks wait at one barrier while rank 0 builds the
        # cache, then rank 0 joins them at the other; every process calls it once.
        Valid(
            "import torch.distributed as dist\n\n\n"
            "def shared_vocab(rank, folder):\n"
            "    if rank > 0:\n"
            "        dist.barrier()\n"
            "    vocab = build_cache(folder)\n"
            "    if rank == 0:\n"
            "        dist.barrier()\n"
            "    return vocab\n"
        ),
        # torch.save is no collective.
        Valid(
            "import torch\nimport lightning as L\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_end(self):\n"
            "        if self.trainer.is_global_zero:\n"
            "            torch.save(self.state_dict(), 'model.pt')\n"
        ),
        # Every Trainer that builds the module runs on one device on a TPU (no CUDA there):
        # one process, whose barrier and rendezvous wait for no other.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.trainer.is_global_zero:\n"
            '            self.trainer.save_checkpoint("last.ckpt")\n\n\n'
            "if __name__ == '__main__':\n"
            "    devices = [0] if torch.cuda.is_available() else 1\n"
            "    L.Trainer(devices=devices).fit(Model())\n"
        ),
    )
    INVALID = (
        # Eight devices: eight processes.
        Invalid(
            "import lightning as L\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.trainer.is_global_zero:\n"
            '            self.trainer.save_checkpoint("last.ckpt")\n\n\n'
            "if __name__ == '__main__':\n"
            "    L.Trainer(accelerator='tpu', devices=8).fit(Model())\n",
            line=7,
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_train_epoch_end(self):\n"
            "        if self.global_rank == 0:\n"
            "            xm.save(self.state_dict(), 'model.pt')\n",
            line=8,
            message="under `if self.global_rank == 0`",
        ),
        Invalid(
            "import torch_xla.core.xla_model as xm\n\n\n"
            "def report(value):\n"
            "    if not xm.is_master_ordinal():\n"
            "        return\n"
            "    total = xm.mesh_reduce('loss', value, sum)\n"
            "    print(total)\n",
            line=7,
            message="after `if not xm.is_master_ordinal(): return`",
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.utilities import rank_zero_only\n\n\n"
            "class Saver(L.Callback):\n"
            "    @rank_zero_only\n"
            "    def on_validation_end(self, trainer, pl_module):\n"
            "        trainer.save_checkpoint('best.ckpt')\n",
            line=8,
            message="`@rank_zero_only`",
        ),
        # Under DDP on GPUs the launching process is rank 0 itself: the others wait for it.
        Invalid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp")\n'
            "trainer.fit(model)\n"
            "if trainer.global_rank == 0:\n"
            '    trainer.save_checkpoint("final.ckpt")\n',
            line=6,
        ),
        # Only one branch reaches the collective before leaving.
        Invalid(
            "import torch.distributed as dist\n\n\n"
            "def share(rank, value):\n"
            "    if rank == 0:\n"
            "        dist.broadcast(value, src=0)\n"
            "    else:\n"
            "        if value is None:\n"
            "            return\n"
            "        dist.broadcast(value, src=0)\n",
            line=6,
            count=2,
        ),
        # Two barriers on the same side of the rank test: rank 0 never joins them.
        Invalid(
            "import torch.distributed as dist\n\n\n"
            "def shared_vocab(rank, folder):\n"
            "    if rank > 0:\n"
            "        dist.barrier()\n"
            "    vocab = build_cache(folder)\n"
            "    if rank != 0:\n"
            "        dist.barrier()\n"
            "    return vocab\n",
            line=6,
            count=2,
        ),
        Invalid(
            "import torch.distributed as dist\n\n\n"
            "def write(rank, data):\n"
            "    if rank == 0:\n"
            "        open('out.txt', 'w').write(data)\n"
            "    else:\n"
            "        dist.barrier()\n",
            line=8,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        what = self._collective(node)
        if what is None:
            return
        guard = self._rank_guard(node)
        if guard is None or self._in_launcher(node) or self._one_process():
            return
        where = ctx.hot_reason or (f"`{ctx.function.name}`" if ctx.function else "module code")
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {where} runs only on some processes ({guard}), but "
            f"it {what}: the processes that call it wait for the others forever and the run "
            "hangs; call it on every process and keep only host-side work under the condition",
        )

    def _one_process(self) -> bool:
        """Whether every Trainer of the project that builds the class the call is in runs on
        one device (ProjectScope.trained_on_one_device): one process, no other to wait for."""
        ctx = self.ctx
        view, klass = ctx.analysis.view, ctx.klass
        if view is None or klass is None:
            return False
        return view.model.scope.trained_on_one_device(view.class_gkey(klass.local_qualname))

    def _collective(self, node: cst.Call) -> str | None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is not None:
            return _COLLECTIVES.get(qualified)
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _LIGHTNING_COLLECTIVES:
            return None
        receiver = source_of(ctx, func.value, 100)
        if not _LIGHTNING_RECEIVERS.search(receiver):
            return None
        method = func.attr.value
        if receiver == "self" and method not in ("all_gather",):
            return None  # `self.reduce(...)` of a user class: not Lightning's
        if method in ("reduce", "broadcast") and "strategy" not in receiver:
            return None
        return _LIGHTNING_COLLECTIVES[method]

    def _identity(self, node: cst.Call) -> str | None:
        """Which collective a call is (its qualified name, or the Lightning method with its
        receiver), None for any other call."""
        if self._collective(node) is None:
            return None
        qualified = self.ctx.qualify(node.func)
        return qualified or source_of(self.ctx, node.func, 100)

    def _must_calls(self, node: cst.If) -> set[str] | None:
        """The collectives every path through an `if`/`elif`/`else` chain calls (None when
        every path raises): a collective both branches of a rank test call (`gather(t, lst)`
        on the destination, `gather(t, [])` elsewhere) is reached by every process. A branch
        that always raises is an error exit, no path that goes on without the others."""
        branches: list[set[str] | None] = [self._block_calls(node.body)]
        orelse = node.orelse
        if orelse is None:
            branches.append(set())
        elif isinstance(orelse, cst.If):
            branches.append(self._must_calls(orelse))
        else:
            branches.append(self._block_calls(orelse.body))
        going_on = [b for b in branches if b is not None]
        if not going_on:
            return None
        return set.intersection(*going_on)

    def _block_calls(self, block: cst.BaseSuite) -> set[str] | None:
        """The collectives a block surely calls, in its statements up to the first `return`
        (not under a loop, which may run no time, nor a one-sided `if`); None when it
        always raises."""
        out: set[str] = set()
        for statement in block.body:
            if isinstance(statement, (cst.If, cst.With)):
                inner = (
                    self._must_calls(statement)
                    if isinstance(statement, cst.If)
                    else self._block_calls(statement.body)
                )
                if inner is None:
                    return None
                out |= inner
                if _may_leave(statement):
                    return out  # `if value is None: return`: what follows may not run
                continue
            if isinstance(statement, cst.SimpleStatementLine):
                smalls: Sequence[cst.CSTNode] = statement.body
            elif isinstance(statement, cst.BaseSmallStatement):
                smalls = [statement]
            else:
                if _may_leave(statement):
                    return out
                continue  # loops, `try`, definitions
            for small in smalls:
                if isinstance(small, cst.Raise):
                    return None
                out |= {
                    key
                    for call in walk(small)
                    if isinstance(call, cst.Call)
                    for key in (self._identity(call),)
                    if key is not None
                }
                if isinstance(small, cst.Return):
                    return out
        return out

    def _paired(self, branch: cst.If, node: cst.Call) -> bool:
        """Whether a barrier under a rank test is the half of the "rank zero first" pair:
        the same block holds another `if` on the opposite test of the same rank
        (`if args.local_rank not in [-1, 0]: dist.barrier()`, the work of rank 0, then
        `if args.local_rank == 0: dist.barrier()`) whose body surely calls the same barrier.
        Every process of the group then calls it once: the others wait at the first, rank 0
        joins them at the second (a process of rank -1 runs alone, without a group)."""
        identity = self._identity(node)
        if identity is None or identity.rsplit(".", 1)[-1] not in ("barrier", "rendezvous"):
            return False
        mine = _zero_test(self.ctx.module.code_for_node(branch.test))
        if mine is None or branch.orelse is not None:
            return False
        block = self.ctx.parent(branch)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return False
        for statement in block.body:
            if statement is branch or not isinstance(statement, cst.If):
                continue
            if statement.orelse is not None:
                continue
            other = _zero_test(self.ctx.module.code_for_node(statement.test))
            if (
                other is not None
                and other[0] == mine[0]
                and other[1] != mine[1]
                and identity in (self._block_calls(statement.body) or ())
            ):
                return True
        return False

    def _in_launcher(self, node: cst.Call) -> bool:
        """Code that runs only in the process that launched training: after the
        `trainer.fit(...)` of its own function (or in the `except` around it), or in a
        signal handler or a function called there. Under the XLA strategy that process is not
        one of the ranks: its `global_rank` is 0 and `barrier()` returns at once
        (lightning/pytorch/strategies/xla.py: both test `self._launched`), so no process
        waits; a GPU launcher (DDP's rank 0) does take part and keeps the finding."""
        ctx = self.ctx
        view = ctx.analysis.view
        if view is None:
            return False
        function = ctx.function
        key = function.key if function is not None else None
        return view.launcher_code(key, after_fit=_after_fit(ctx, node))

    def _rank_guard(self, node: cst.Call) -> str | None:
        """How the call depends on the rank: the condition, the early exit or the
        decorator that keeps other processes away, or None."""
        ctx = self.ctx
        child: cst.CSTNode = node
        for ancestor in ctx.ancestors(node):
            if isinstance(ancestor, cst.If) and child is not ancestor.test:
                test = ctx.module.code_for_node(ancestor.test)
                if (
                    _RANK_TEST.search(test)
                    and self._identity(node) not in (self._must_calls(ancestor) or ())
                    and not self._paired(ancestor, node)
                ):
                    return f"under `if {' '.join(test.split())}`"
            elif isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
                test = ctx.module.code_for_node(ancestor.test)
                if _RANK_TEST.search(test):
                    return f"under `{' '.join(test.split())}`"
            elif isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for statement in ancestor.body:
                    if statement is child:
                        break
                    test_node = _early_return_test(statement)
                    if test_node is not None:
                        test = " ".join(ctx.module.code_for_node(test_node).split())
                        if _RANK_TEST.search(test):
                            return f"after `if {test}: return`"
            elif isinstance(ancestor, cst.FunctionDef):
                for decorator in ancestor.decorators:
                    expr = decorator.decorator
                    if isinstance(expr, cst.Call):
                        expr = expr.func
                    qualified = ctx.qualify(expr) or ""
                    if qualified.rsplit(".", 1)[-1] in _RANK_ZERO_DECORATORS:
                        return "`@rank_zero_only`"
                break
            elif isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
                break
            child = ancestor
        return None


def _zero_test(text: str) -> tuple[str, bool] | None:
    """A test of whether a rank is zero, as (the rank's text, True when it holds on rank 0):
    `rank == 0`, `rank in [-1, 0]`, `rank <= 0`, `trainer.is_global_zero`,
    `xm.is_master_ordinal()` (True); `rank != 0`, `rank not in [-1, 0]`, `rank > 0`, `not
    ...` (False). None for any other test."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    holds = True
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
        holds = not holds
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op, right = node.ops[0], node.comparators[0]
        subject = ast.unparse(node.left)
        if isinstance(right, ast.Constant) and right.value == 0 and type(right.value) is int:
            if isinstance(op, (ast.Eq, ast.LtE)):
                return subject, holds
            if isinstance(op, (ast.NotEq, ast.Gt)):
                return subject, not holds
            return None
        if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            try:
                values = [ast.literal_eval(e) for e in right.elts]
            except ValueError:
                return None
            if 0 not in values or not all(type(v) is int and v in (0, -1) for v in values):
                return None
            if isinstance(op, ast.In):
                return subject, holds
            if isinstance(op, ast.NotIn):
                return subject, not holds
        return None
    if isinstance(node, ast.Call) and not node.args:
        node = node.func
    if isinstance(node, (ast.Name, ast.Attribute)):
        last = node.attr if isinstance(node, ast.Attribute) else node.id
        if "zero" in last or "master" in last:
            return ast.unparse(node), holds
    return None


def _may_leave(statement: cst.CSTNode) -> bool:
    """Whether a compound statement holds a `return` or `raise` (outside nested
    definitions): the statements after it may not run."""
    if isinstance(statement, (cst.Return, cst.Raise)):
        return True
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_may_leave(child) for child in iter_children(statement))


def _calls_fit(node: cst.CSTNode) -> bool:
    """Whether a statement calls `<trainer>.fit(...)`."""
    stack = [node]
    while stack:
        current = stack.pop()
        if (
            isinstance(current, cst.Call)
            and isinstance(current.func, cst.Attribute)
            and current.func.attr.value == "fit"
            and "trainer" in cst.Module([]).code_for_node(current.func.value).lower()
        ):
            return True
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(iter_children(current))
    return False


def _after_fit(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether `node` follows a `trainer.fit(...)` of its own function: a later statement
    of an enclosing block, or an `except`/`else`/`finally` of a `try` around the fit."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
            for statement in ancestor.body:
                if statement is child:
                    break
                if _calls_fit(statement):
                    return True
        elif (
            isinstance(ancestor, cst.Try)
            and child is not ancestor.body
            and _calls_fit(ancestor.body)
        ):
            return True
        elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = ancestor
    return False


def _early_return_test(statement: cst.CSTNode) -> cst.BaseExpression | None:
    """`if TEST: return` (no else): the rest of the block runs only when TEST is false."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    body = statement.body
    small: Sequence[cst.BaseSmallStatement] = ()
    if isinstance(body, cst.SimpleStatementSuite):
        small = body.body
    elif isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
        only = body.body[0]
        if isinstance(only, cst.SimpleStatementLine):
            small = only.body
    if len(small) == 1 and isinstance(small[0], cst.Return):
        return statement.test
    return None


def _collective_under_rank_test(source: str) -> bool:
    """Whether a call `_collective` may call a collective (`_may_be_collective`) has among
    its ancestors in its own function (or the module's code) what `_rank_guard` looks for:
    an `if` or conditional expression it is not the test of, or an earlier `if TEST: return`
    of an enclosing block, whose lines match `_RANK_TEST`, or a `rank_zero_only` decorator
    of the function. Read with `ast`, as a superset (the whole lines of a test count, and a
    collective every branch calls counts too)."""
    tree = parse_python(source)
    if tree is None:
        return True  # the libcst parse reports it
    decorators = set(_RANK_ZERO_DECORATORS)
    # What `Aliases` may bind each name to, over all the file's imports (it binds them in
    # source order, so a call sees one of these, or none); None: a relative import, which
    # is not resolved here.
    bindings: dict[str, set[str | None]] = {}
    calls: list[ast.Call] = []
    for node in ast_walk(tree):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bindings.setdefault(alias.asname, set()).add(alias.name)
                else:
                    root = alias.name.split(".", 1)[0]
                    bindings.setdefault(root, set()).add(root)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    continue
                target = f"{node.module}.{alias.name}" if node.level == 0 else None
                bindings.setdefault(alias.asname or alias.name, set()).add(target)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname and alias.name.rsplit(".", 1)[-1] in decorators:
                    decorators.add(alias.asname)
    collectives = [call for call in calls if _may_be_collective(call.func, bindings)]
    if not collectives:
        return False
    parents: dict[int, ast.AST] = {}
    for node in ast_walk(tree):
        for child in ast_children(node):
            parents[id(child)] = node
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(source)]

    def rank_lines(first: int, last: int | None) -> bool:  # 1-based, inclusive
        last = last or first
        end = starts[last] if last < len(starts) else len(source)
        return bool(_RANK_TEST.search(source, starts[first - 1], end))

    def early_rank_return(statement: ast.AST) -> bool:
        return (
            isinstance(statement, ast.If)
            and not statement.orelse
            and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Return)
            and rank_lines(statement.lineno, statement.end_lineno)
        )

    for call in collectives:
        child: ast.AST = call
        ancestor = parents.get(id(child))
        while ancestor is not None:
            for name in ("body", "orelse", "finalbody"):
                block = getattr(ancestor, name, None)
                if not isinstance(block, list):
                    continue
                for statement in block:
                    if statement is child:
                        break
                    if early_rank_return(statement):
                        return True
            if isinstance(ancestor, ast.If) and child is not ancestor.test:
                header_end = ancestor.body[0].lineno if ancestor.body else ancestor.test.end_lineno
                if rank_lines(ancestor.lineno, header_end):
                    return True
            elif isinstance(ancestor, ast.IfExp) and child is not ancestor.test:
                if rank_lines(ancestor.lineno, ancestor.end_lineno):
                    return True
            elif isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(_last_name(d) in decorators for d in ancestor.decorator_list):
                    return True
                break
            elif isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
                break
            child = ancestor
            ancestor = parents.get(id(child))
    return False


def _may_be_collective(func: ast.AST, bindings: dict[str, set[str | None]]) -> bool:
    """Whether `_collective` may call a callee a collective, read with `ast` (a superset):
    its qualified name under one of the bindings its root name may have is a collective of
    `_COLLECTIVES`, or (the name not qualified) it is a method of `_LIGHTNING_COLLECTIVES`
    on another receiver than a bare `self` (`self.all_gather` excepted)."""
    parts: list[str] = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        rest = ".".join(reversed(parts))
        for target in bindings.get(node.id, ()):
            if target is None:  # a relative import: any name of a collective
                if _last_name(func) in _COLLECTIVE_NAMES:
                    return True
            elif (f"{target}.{rest}" if rest else target) in _COLLECTIVES:
                return True
    if not isinstance(func, ast.Attribute) or func.attr not in _LIGHTNING_COLLECTIVES:
        return False
    receiver = func.value
    return not (
        isinstance(receiver, ast.Name) and receiver.id == "self" and func.attr != "all_gather"
    )


def _last_name(node: ast.AST) -> str | None:
    """`f` of `f`, `f(...)` and `a.b.f`."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
