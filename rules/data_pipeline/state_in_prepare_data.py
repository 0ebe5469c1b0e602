"""TPU310 state-in-prepare-data."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, RelatedNode, Valid

from .helpers import _PL, DATA_CLASS_KINDS, _DataRule

# Methods whose assignments do not make an attribute available on every process after
# `prepare_data` ran: the constructor runs before it (the attribute's value there is what
# the other processes keep), `prepare_data` is the hook itself.
_OWN = frozenset({"__init__", "prepare_data"})


class StateInPrepareData(_DataRule):
    """
    ## What it does
    Finds `self.<name> = ...` in the `prepare_data` hook of a LightningModule or
    LightningDataModule when another method of the class reads `self.<name>`
    (`train_dataloader`, `setup`, a step) and no method but the constructor sets it (a
    constructor's `None` counts as not set). Classes that call `prepare_data` themselves
    are not reported, nor classes whose `prepare_data` the project's launcher calls before
    `fit` (`data.prepare_data()`, also on a data module it picks from a table: a module
    that calls `prepare_data` and defines no class with the hook): Lightning's XLA launcher
    forks the device processes from the launching one, which then holds the attributes.
    Nor classes that only Trainers asking for one device fit (`devices=1`, `tpu_cores=1`,
    `num_processes=1`, `[0]`, or a name bound to one of these wherever a TPU runs the script,
    `if torch.cuda.is_available(): devices = [gpu] else: devices = 1`, or the returns a TPU
    reaches of the project function or method it is unpacked from, with no strategy but
    a single-device one, in every launch of the project whose reach builds the class): one
    process, which runs `prepare_data` itself (`devices="auto"`, flags and configs stay reported).

    ## Why is this bad on TPU?
    Lightning calls `prepare_data` in one process per node only, the one of local rank 0
    (`trainer/connectors/data_connector.py`, lines 85-102: the hook runs under
    `if (prepare_data_per_node and local_rank_zero) ...`), because it is meant for
    downloads and other writes to disk. A TPU host trains with one process per TPU device
    (four or eight), so every other process reaches `train_dataloader` without the
    attribute: `AttributeError` (or the constructor's `None`) on all but one process, and
    the job stops. The same class works on one GPU or CPU, where the only process is rank 0.
    Lightning's docs of the hook say: "DO NOT set state to the model (use `setup` instead)".

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import DataLoader
    from torchvision.datasets import MNIST


    class Data(L.LightningDataModule):
        def prepare_data(self):
            self.train_set = MNIST("data", train=True, download=True)

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, drop_last=True)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader
    from torchvision.datasets import MNIST


    class Data(L.LightningDataModule):
        def prepare_data(self):
            MNIST("data", train=True, download=True)  # download once per host

        def setup(self, stage):
            self.train_set = MNIST("data", train=True)  # every process

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, drop_last=True)
    ```

    ## Fix safety
    No fix: what `prepare_data` writes to disk must stay there, and only the assignments
    move to `setup`.

    ## References
    - [Lightning: `prepare_data` (DO NOT set state to the model)](https://lightning.ai/docs/pytorch/stable/data/datamodule.html#prepare-data)
    - [Lightning source: `DataConnector.prepare_data` runs the hook on local rank 0 only](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/data_connector.py)
    - [torch_xla: PJRT runs one process per TPU device](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)

    ## Status
    Stable (new in issue 21): every finding is an attribute that the processes of local
    rank 1 and above never get, by construction of Lightning's hook call. It comes from
    the misses of the fifth TPU-targeted held-out set (two classes whose datasets were
    built in `prepare_data` under an 8-core TPU Trainer). On the sci12 read its 4 findings
    were wrong: every launcher of that project called `prepare_data()` itself before
    building the Trainer; such launchers are recognised now (a fresh read decides whether
    it stays stable).
    """

    code = "TPU310"
    name = "state-in-prepare-data"
    summary = "`self.<name> = ...` in `prepare_data`, read elsewhere: set on local rank 0 only"
    severity = Severity.ERROR
    requires = ("prepare_data",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return view.has_lightning_class and _hook_sets_what_others_mention(source)

    VALID = (
        # Downloads in prepare_data, state in setup.
        Valid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def prepare_data(self):\n"
            "        download(self.root)\n"
            "    def setup(self, stage):\n"
            "        self.train_set = load(self.root)\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n"
        ),
        # Set in setup too (when missing), or only used by prepare_data itself.
        Valid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def prepare_data(self):\n"
            "        self.files = list_files(self.root)\n"
            "        self.cache = {}\n"
            "        for f in self.files:\n"
            "            self.cache[f] = fetch(f)\n"
            "    def setup(self, stage):\n"
            "        self.files = list_files(self.root)\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.files)\n"
        ),
        # The launcher prepares the data before fit: the device processes are forked from it.
        Valid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def prepare_data(self):\n"
            "        self.train_set = load(self.root)\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n\n\n"
            "def main(model):\n"
            "    data = Data()\n"
            "    data.prepare_data()\n"
            "    L.Trainer(accelerator='tpu').fit(model, data)\n"
        ),
        # The only Trainer that fits it asks for one device: one process, no peers.
        Valid(
            _PL + "\n\nclass Model(L.LightningModule):\n"
            "    def prepare_data(self):\n"
            "        self.train_set = load('train')\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n\n\n"
            "def main():\n"
            "    trainer = L.Trainer(accelerator='auto', devices=1)\n"
            "    trainer.fit(Model())\n\n\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
        ),
        # The class calls prepare_data itself (every process runs it).
        Valid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def prepare_data(self):\n"
            "        self.train_set = load(self.root)\n"
            "    def setup(self, stage):\n"
            "        self.prepare_data()\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n"
        ),
        # The constructor gives it a real value every process keeps; not a Lightning class.
        Valid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def __init__(self, root):\n"
            "        super().__init__()\n"
            "        self.root = root\n"
            "    def prepare_data(self):\n"
            "        self.root = download(self.root)\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.root)\n"
            "\n\nclass Plain:\n"
            "    def prepare_data(self):\n"
            "        self.x = 1\n"
            "    def use(self):\n"
            "        return self.x\n"
        ),
    )
    INVALID = (
        Invalid(
            _PL + "\n\nclass Model(L.LightningModule):\n"
            "    def prepare_data(self):\n"
            "        self.train_set = load('train')\n"
            "        self.val_set = load('val')\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n"
            "    def val_dataloader(self):\n"
            "        return make_loader(self.val_set)\n",
            line=6,
            message="`self.train_set` and `self.val_set`",
        ),
        # One device in one script, every device in another that fits it too.
        Invalid(
            _PL + "\n\nclass Model(L.LightningModule):\n"
            "    def prepare_data(self):\n"
            "        self.train_set = load('train')\n"
            "    def train_dataloader(self):\n"
            "        return make_loader(self.train_set)\n\n\n"
            "def debug():\n"
            "    L.Trainer(devices=1).fit(Model())\n\n\n"
            "def main():\n"
            "    L.Trainer(accelerator='tpu', devices='auto').fit(Model())\n\n\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
            "    debug()\n",
            line=6,
        ),
        # A constructor's None is what the other processes keep.
        Invalid(
            _PL + "\n\nclass Data(L.LightningDataModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.dataset = None\n"
            "    def prepare_data(self):\n"
            "        if self.dataset is None:\n"
            "            self.dataset = load('all')\n"
            "    def setup(self, stage):\n"
            "        self.train, self.val = split(self.dataset)\n",
            message="reads",
        ),
    )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._skip:
            return
        info = self.ctx.klass  # the engine entered this class before the rules' handlers
        if info is None or info.node is not node or not info.kind & DATA_CLASS_KINDS:
            return
        methods = {m.name.value: m for m in node.body.body if isinstance(m, cst.FunctionDef)}
        hook = methods.get("prepare_data")
        if hook is None:
            return
        if any(_calls_self(method, "prepare_data") for method in methods.values()):
            return
        if self._called_from_outside(hook, info.local_qualname):
            return
        view = self.ctx.analysis.view
        if view is not None and view.model.scope.trained_on_one_device(
            view.class_gkey(info.local_qualname)
        ):
            return  # `Trainer(devices=1)`: one process, which runs `prepare_data` itself
        set_in_hook = _assigned(hook)
        if not set_in_hook:
            return
        init = methods.get("__init__")
        kept = _assigned(init, real_only=True) if init is not None else {}
        set_elsewhere: set[str] = set()
        readers: dict[str, str] = {}
        for name, method in methods.items():
            if name in _OWN:
                continue
            set_elsewhere.update(_assigned(method))
            for attr in _read(method):
                readers.setdefault(attr, name)
        lost = [
            attr
            for attr in set_in_hook
            if attr in readers and attr not in set_elsewhere and attr not in kept
        ]
        if not lost:
            return
        first = set_in_hook[lost[0]]
        names = " and ".join(f"`self.{a}`" for a in lost[:3])
        if len(lost) > 3:
            names += f" ({len(lost) - 3} more)"
        reading = sorted({f"`{readers[a]}`" for a in lost})
        readers_text = (
            ", ".join(reading[:-1]) + " and " + reading[-1] if len(reading) > 1 else reading[0]
        )
        self.report(
            first,
            f"`prepare_data` sets {names}, which {readers_text} "
            f"{'reads' if len(reading) == 1 else 'read'}: Lightning runs "
            "`prepare_data` only in the process of local rank 0 (data_connector.py:85-102), "
            "so the other processes of a TPU host (one per device) never get "
            f"{'it' if len(lost) == 1 else 'them'}; set {'it' if len(lost) == 1 else 'them'} "
            "in `setup` and keep downloads in `prepare_data`",
            related=[RelatedNode(set_in_hook[a], f"`self.{a}` is also set here") for a in lost[1:]],
        )

    def _called_from_outside(self, hook: cst.FunctionDef, qualname: str) -> bool:
        """Whether project code outside the class calls its `prepare_data` (a launcher's
        `data.prepare_data()` before `trainer.fit(model, data)`): the attributes are then
        set in the launching process, which Lightning's XLA launcher forks the device
        processes from (`lightning/pytorch/strategies/launchers/xla.py`, start method
        "fork"), so every process has them."""
        view = self.ctx.analysis.view
        info = self.ctx.analysis.functions.get(id(hook))
        if view is None or info is None:
            return False
        if any(owner != qualname for _, owner in view.callers(info.key)):
            return True
        # A call the model cannot resolve (`data = DATASETS[name](...)`, then
        # `data.prepare_data()`): a module that calls `prepare_data` and defines no class
        # with the hook is a launcher preparing whichever data module it built.
        return any(
            module.syntax is not None
            and "prepare_data" in module.syntax.calls
            and not any("prepare_data" in c.methods for c in module.classes)
            for module in view.model.modules.values()
        )


def _hook_sets_what_others_mention(source: str) -> bool:
    """The screen, read with `ast` (a superset of `visit_ClassDef`'s test): a class of the
    code has a `prepare_data` method that sets a `self.<name>` (`_assigned`'s targets) which
    another of its methods outside `_OWN` mentions in any way (`_read` counts loads only)."""
    tree = parse_python(source)
    if tree is None:
        return True  # the libcst parse reports it
    for node in ast_walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {
            m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        hook = methods.get("prepare_data")
        if hook is None:
            continue
        set_in_hook = _ast_assigned(hook)
        if not set_in_hook:
            continue
        for name, method in methods.items():
            if name not in _OWN and not set_in_hook.isdisjoint(_ast_self_attributes(method)):
                return True
    return False


def _ast_assigned(method: ast.AST) -> set[str]:
    """`_assigned`'s names, read with `ast`: `self.<name>` targets of the assignments."""
    found: set[str] = set()
    for node in ast_walk(method):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        else:
            continue
        todo = list(targets)
        while todo:
            target = todo.pop()
            if isinstance(target, ast.Starred):  # libcst's StarredElement.value
                todo.append(target.value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                todo.extend(target.elts)
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.add(target.attr)
    return found


def _ast_self_attributes(method: ast.AST) -> set[str]:
    """Every `self.<name>` of a method, stored or loaded (a superset of `_read`)."""
    return {
        node.attr
        for node in ast_walk(method)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _self_target(node: cst.BaseExpression) -> list[str]:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return [node.attr.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in _self_target(e.value)]
    return []


def _assigned(method: cst.FunctionDef, real_only: bool = False) -> dict[str, cst.CSTNode]:
    """`self.<name>` set in a method (first statement setting each). `real_only`: not to
    None."""
    found: dict[str, cst.CSTNode] = {}
    for node in _walk(method.body):
        targets: list[cst.BaseExpression] = []
        value: cst.BaseExpression | None = None
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            value = node.value
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
            value = node.value
        if real_only and isinstance(value, cst.Name) and value.value == "None":
            continue
        for target in targets:
            for name in _self_target(target):
                found.setdefault(name, node)
    return found


def _read(method: cst.FunctionDef) -> set[str]:
    """Names of `self.<name>` read in a method (any attribute of `self` that is loaded)."""
    stores = {id(t) for node in _walk(method.body) for t in _store_targets(node)}
    return {
        node.attr.value
        for node in _walk(method.body)
        if isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and id(node) not in stores
    }


def _store_targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, cst.AnnAssign):
        targets = [node.target]
    else:
        return []
    out: list[cst.CSTNode] = []
    for target in targets:
        if isinstance(target, (cst.Tuple, cst.List)):
            out.extend(e.value for e in target.elements)
        else:
            out.append(target)
    return out


def _calls_self(method: cst.FunctionDef, name: str) -> bool:
    return any(
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == name
        and isinstance(node.func.value, cst.Name)
        and node.func.value.value == "self"
        for node in _walk(method.body)
    )


def _walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))
