"""What several data-pipeline rules (TPU3xx) share: DataLoader calls and their arguments, which
functions build the train/val/test loaders of Lightning classes, batch-size names, the 8x128
tile arithmetic of TPU302's messages, dataset sizes and batches per core, and the base class
of the family's rules (`_DataRule`: test files are not checked)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import ClassKind, FileView
from tpulint.analysis.semantic import ClassInfo, FunctionInfo
from tpulint.rule_api.cst_helpers import keyword_arg
from tpulint.rule_api.rule import Rule

from ..shared.matchers import walk

# --- DataLoader calls ---------------------------------------------------------------------

TORCH_DATALOADERS = frozenset(
    {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
)
# Packages whose `DataLoader` is not torch's (or does not take torch's arguments).
_FOREIGN_ROOTS = frozenset({"tensorflow", "jax", "paddle", "mindspore", "oneflow", "mxnet", "dgl"})
# torch.utils.data.DataLoader's positional parameters, in order.
DATALOADER_PARAMS = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
)
SAMPLER_CLASSES = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
DISTRIBUTED_SAMPLER_PARAMS = ("dataset", "num_replicas", "rank", "shuffle", "seed", "drop_last")
BATCH_SAMPLERS = frozenset(
    {"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"}
)


def is_dataloader_call(ctx: FileContext, call: cst.Call) -> bool:
    """`DataLoader(...)` of torch (or a torch-compatible package such as PyG), through the
    file's imports; an unresolved bare `DataLoader` name counts too."""
    func = call.func
    if isinstance(func, cst.Name):
        if func.value != "DataLoader":
            return False
    elif isinstance(func, cst.Attribute):
        if func.attr.value != "DataLoader":
            return False
    else:
        return False
    qualified = ctx.qualify(func)
    if qualified is None:
        return isinstance(func, cst.Name)
    return qualified.split(".", 1)[0] not in _FOREIGN_ROOTS


def is_torch_dataloader(ctx: FileContext, call: cst.Call) -> bool:
    return ctx.qualify(call.func) in TORCH_DATALOADERS


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def has_star(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def has_star_kwargs(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def signature_arg(call: cst.Call, name: str, params: tuple[str, ...]) -> cst.Arg | None:
    """The argument bound to parameter `name` of a call whose positional parameters are
    `params` (keyword first, then by position)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    if name in params:
        index = params.index(name)
        args = positional(call)
        if len(args) > index:
            return args[index]
    return None


def loader_arg(call: cst.Call, name: str) -> cst.Arg | None:
    return signature_arg(call, name, DATALOADER_PARAMS)


def int_literal(node: cst.BaseExpression | None) -> int | None:
    """The value of an integer literal (`10`, `0x10`), else None."""
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except ValueError:
            return None
    return None


def is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def code(ctx: FileContext, node: cst.CSTNode) -> str:
    return " ".join(ctx.module.code_for_node(node).split())


# --- Lightning classes and their loader hooks ---------------------------------------------

DATA_CLASS_KINDS = ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE
_HOOK_NAME = re.compile(
    r"^_*(?P<stage>train|training|val|valid|validation|eval|test|predict)_?\w*?_?(data)?loaders?(_\w+)?$"
)
_STAGE_NAMES = {
    "train": "train",
    "training": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "eval": "val",
    "test": "test",
    "predict": "predict",
}


def is_data_class(info: ClassInfo | None) -> bool:
    """A LightningModule or LightningDataModule (the classes whose loaders Lightning runs)."""
    return info is not None and bool(info.kind & DATA_CLASS_KINDS)


def data_class(ctx: FileContext) -> ClassInfo | None:
    """The LightningModule/DataModule whose method (or nested function) is being walked."""
    info = ctx.function
    while info is not None:
        if info.cls is not None:
            return info.cls if is_data_class(info.cls) else None
        info = info.parent
    return None


def hook_stage(name: str) -> str | None:
    """ "train" for `train_dataloader` (and `train_dataloader_mixed`, `_train_loader`), etc."""
    match = _HOOK_NAME.match(name)
    if match is None or "loader" not in name:
        return None
    return _STAGE_NAMES[match.group("stage")]


def loader_stages(ctx: FileContext) -> dict[int, frozenset[str]]:
    """For every function of the file that builds loaders of a LightningModule/DataModule:
    the loader hooks it serves ("train", "val", "test", "predict"). Hooks are the
    `*_dataloader` methods; helpers are what they call through `self.` or module-level
    names, and functions nested in either."""
    functions = ctx.analysis.functions
    module_functions = {
        info.name: info for info in functions.values() if info.cls is None and info.parent is None
    }
    nested: dict[int, list[FunctionInfo]] = {}
    for info in functions.values():
        if info.parent is not None:
            nested.setdefault(id(info.parent), []).append(info)
    stages: dict[int, set[str]] = {}
    worklist: list[tuple[FunctionInfo, str]] = []
    for info in functions.values():
        if is_data_class(info.cls):
            stage = hook_stage(info.name)
            if stage is not None:
                worklist.append((info, stage))
    while worklist:
        info, stage = worklist.pop()
        have = stages.setdefault(id(info.node), set())
        if stage in have:
            continue
        have.add(stage)
        owner = info
        while owner.cls is None and owner.parent is not None:
            owner = owner.parent
        targets: list[FunctionInfo] = []
        if owner.cls is not None:
            names = set(info.calls_self)
            if info is owner and hook_stage(info.name) is not None:
                # A hook that is a property returning the method Lightning will call
                # (`return self._train_dataloader`): that method builds the loaders.
                names |= _returned_methods(info.node)
            for name in names:
                node = owner.cls.resolve_method(name)
                target = functions.get(id(node)) if node is not None else None
                if target is not None and hook_stage(target.name) is None:
                    targets.append(target)
        for name in info.calls_bare:
            target = module_functions.get(name)
            if target is not None:
                targets.append(target)
        targets.extend(nested.get(id(info), ()))
        worklist.extend((target, stage) for target in targets)
    return {key: frozenset(value) for key, value in stages.items()}


def _returned_methods(function: cst.FunctionDef) -> set[str]:
    """`name` for each `return self.<name>` (not called) in a function."""
    out: set[str] = set()
    for node in walk_nodes(function.body):
        if isinstance(node, cst.Return) and isinstance(node.value, cst.Attribute):
            value = node.value
            if isinstance(value.value, cst.Name) and value.value.value == "self":
                out.add(value.attr.value)
    return out


def walk_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(iter_children(node))


def function_stages(ctx: FileContext, table: dict[int, frozenset[str]]) -> frozenset[str]:
    info = ctx.function
    if info is None:
        return frozenset()
    return table.get(id(info.node), frozenset())


def stage_where(ctx: FileContext, stages: frozenset[str]) -> str:
    """`train_dataloader` or "`_make_loader` (a helper of train_dataloader)"."""
    info = ctx.function
    name = info.name if info is not None else "?"
    if info is not None and info.cls is not None and hook_stage(name) is not None:
        return f"`{name}`"
    hooks = ", ".join(f"{s}_dataloader" for s in sorted(stages, key=_STAGE_ORDER.index))
    return f"`{name}` (used by {hooks})" if hooks else f"`{name}`"


_STAGE_ORDER = ["train", "val", "test", "predict"]


def enclosing_functions(ctx: FileContext) -> Iterator[FunctionInfo]:
    info = ctx.function
    while info is not None:
        yield info
        info = info.parent


# --- batch sizes --------------------------------------------------------------------------

_BATCH_NAME = re.compile(r"^(?:[a-z0-9]+_)*batch_?size(?:_[a-z0-9]+)*$")
# Batch sizes that are not the per-core batch of a training or evaluation loader: caps and
# floors of dynamic batching, inference-time and logging/visualisation sizes.
_NOT_LOADER_PARTS = frozenset(
    {
        "max",
        "min",
        "maximum",
        "minimum",
        "infer",
        "inference",
        "transcribe",
        "transcription",
        "generation",
        "generate",
        "decode",
        "decoding",
        "chunk",
        "prefetch",
        "log",
        "logging",
        "vis",
        "viz",
        "visual",
        "plot",
        "num",
        "n",
        "sample",
        "samples",
        "sampling",
        "export",
        "onnx",
        "trt",
        "cache",
        "beam",
        "stream",
        "streaming",
        "embedding",
        "embed",
        "score",
        "scoring",
        "vocoder",
        "tts",
        "synthesis",
        "probe",
        "probing",
        "knn",
        "memory",
        "bank",
        "queue",
        "rollout",
        "env",
        "replay",
        "buffer",
        "effective",
        "per_gpu",
    }
)


def is_batch_size_name(name: str) -> bool:
    """`batch_size`, `train_batch_size`, `per_device_train_batch_size`,
    `micro_batch_size`, `batch_size_val`...; not `max_batch_size` or `inference_batch_size`."""
    lowered = name.lower().lstrip("-").replace("-", "_")
    if not _BATCH_NAME.match(lowered):
        return False
    parts = set(lowered.split("_"))
    return not (parts & _NOT_LOADER_PARTS)


_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
)


def _count_words(n: int) -> str:
    return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)


def tile_waste(value: int, multiple: int) -> tuple[int, int, int, int]:
    """(tiles, rows, padding percent, next multiple) for a batch of `value` rows."""
    tiles = -(-value // multiple)
    rows = tiles * multiple
    percent = int((rows - value) * 100 / rows + 0.5)
    return tiles, rows, percent, rows


def batch_message(written: str, value: int, multiple: int, where: str = "") -> str:
    """ "`batch_size=10` fills 10 of the 16 rows of two 8-row tiles: 38% of the TPU's work on
    this batch dimension is padding; use 16 (or 8)"."""
    tiles, rows, percent, up = tile_waste(value, multiple)
    down = (value // multiple) * multiple
    tile_text = f"{_count_words(tiles)} {multiple}-row tile" + ("s" if tiles > 1 else "")
    alternative = f" (or {down})" if down else ""
    where = f" {where}" if where else ""
    return (
        f"`{written}`{where} fills {value} of the {rows} rows of {tile_text}: {percent}% of the "
        f"TPU's work on this batch dimension is padding; use {up}{alternative}"
    )


def unaligned(value: int | None, multiple: int) -> bool:
    return value is not None and value > 0 and value % multiple != 0


# --- small tree utilities -----------------------------------------------------------------


def names_in(root: cst.CSTNode) -> Iterable[cst.Name]:
    for node in walk(root):
        if isinstance(node, cst.Name):
            yield node


def has_comment(ctx: FileContext, node: cst.CSTNode) -> bool:
    return "#" in ctx.module.code_for_node(node)


def is_reference(parent: cst.CSTNode | None, name: cst.Name) -> bool:
    """Whether a Name node refers to a variable (not `x.name`, not `f(name=...)`)."""
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return not (isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is name)


def subtree_parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """child id -> parent for a whole subtree (the engine's map only covers what the walk
    has reached so far, and a rule may need to look ahead in the function it is in)."""
    from tpulint.analysis.walker import iter_children

    parents: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in iter_children(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"
)


def is_test_file(path: str) -> bool:
    return bool(_TEST_PATH.search(path.replace("\\", "/")))


def trains_on_accelerator(ctx: FileContext, root: cst.CSTNode) -> bool:
    """Whether `root` builds a Lightning Trainer that is not explicitly a CPU one
    (`Trainer(accelerator="cpu")` is a test or a debugging run)."""
    from tpulint.rule_api.cst_helpers import keyword_arg, string_value

    from ..shared.matchers import is_trainer_call

    for node in walk(root):
        if isinstance(node, cst.Call) and is_trainer_call(ctx, node):
            accelerator = keyword_arg(node, "accelerator")
            if accelerator is not None and string_value(accelerator.value) == "cpu":
                continue
            return True
    return False


def callers_of(ctx: FileContext, target: FunctionInfo) -> list[FunctionInfo]:
    """The functions of the file that call `target` (through `self.` for methods, by name for
    module-level functions); for a nested function, the callers of its enclosing function."""
    while target.parent is not None and target.cls is None:
        target = target.parent
    out = []
    for info in ctx.analysis.functions.values():
        if info is target:
            continue
        if target.cls is not None:
            if target.name not in info.calls_self:
                continue
            owner = info
            while owner.cls is None and owner.parent is not None:
                owner = owner.parent
            if owner.cls is None:
                continue
            if owner.cls.resolve_method(target.name) is target.node:
                out.append(info)
        elif target.name in info.calls_bare:
            out.append(info)
    return out


def is_none(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


# Dataset classes that are iterable (streams, RL experience sources, sharded web datasets):
# often endless, so there is no last batch to drop.
_ITERABLE_HINT = re.compile(
    r"(Iterable|WebDataset|Stream|Shard|Lhotse|IterDataPipe|Experience|Replay|RLDataset)"
)


def is_iterable_name(name: str) -> bool:
    """A dataset (class) name that says it is iterable-style: `IterableDataset`, a stream."""
    return bool(_ITERABLE_HINT.search(name))


def is_iterable_dataset(ctx: FileContext, arg: cst.Arg | None) -> bool:
    """Whether a DataLoader's dataset is visibly an iterable-style dataset: built by a class
    whose name or (local) base says so, directly or through a local name or `self.` attribute
    assigned in the same function."""
    if arg is None:
        return False
    value = resolve_local(ctx, arg.value)
    if isinstance(value, cst.Call):
        value = value.func
    name = code(ctx, value)
    if _ITERABLE_HINT.search(name):
        return True
    last = name.rsplit(".", 1)[-1]
    for info in ctx.analysis.classes.values():
        if info.name == last and any(_ITERABLE_HINT.search(b) for b in info.bases):
            return True
    return False


_RL_HINT = re.compile(r"(Experience|Replay|RLDataset)")


def is_rl_source(ctx: FileContext, arg: cst.Arg | None) -> bool:
    """A reinforcement-learning experience source: the data is produced by the model playing
    in an environment, in the training process."""
    if arg is None:
        return False
    value = resolve_local(ctx, arg.value)
    value = value.func if isinstance(value, cst.Call) else value
    return bool(_RL_HINT.search(code(ctx, value)))


def resolve_local(ctx: FileContext, value: cst.BaseExpression) -> cst.BaseExpression:
    """For a name (or `self.x`) assigned in the current function: its last assigned value
    before the walk position is not tracked, so the last assignment in the function is used;
    anything else is returned as is."""
    if not isinstance(value, (cst.Name, cst.Attribute)) or ctx.function is None:
        return value
    wanted = code(ctx, value)
    found = value
    for node in walk(ctx.function.node.body):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and code(ctx, node.targets[0].target) == wanted
        ):
            found = node.value
    return found


# --- dataset sizes and batches per core -----------------------------------------------------

# The core counts a TPU run may shard a loader over (one host: 1, 4 or 8 devices; 2 for
# older slices): a batch size is judged on every one of them.
CORE_COUNTS = (1, 2, 4, 8)
_TORCH_SIZED = frozenset(
    {"randn", "rand", "zeros", "ones", "empty", "randint", "full", "arange", "tensor"}
)


def dataset_size(ctx: FileContext, node: cst.BaseExpression | None) -> int | None:
    """How many samples a dataset expression visibly holds: `TensorDataset(torch.randn(64,
    32), ...)`, `range(100)`, a list literal, or a dataset class of the project whose
    `__len__` returns a literal or an `__init__` argument (`RandomDataset(32, 64)`)."""
    if node is None:
        return None
    node = resolve_local(ctx, node)
    if isinstance(node, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return len(node.elements)
    if not isinstance(node, cst.Call) or has_star(node):
        return None
    args = positional(node)
    qualified = ctx.qualify(node.func)
    if isinstance(node.func, cst.Name) and node.func.value in ("range", "list"):
        if node.func.value in ctx.aliases.bindings or len(args) != 1:
            return None
        if node.func.value == "list":
            return dataset_size(ctx, args[0].value)
        return int_literal(args[0].value)
    if qualified is not None and qualified.rsplit(".", 1)[-1] == "TensorDataset":
        return tensor_rows(ctx, args[0].value) if args else None
    target = ctx.call_target(node)
    view = ctx.analysis.view
    if target is None or target[0] != "name" or view is None:
        return None
    values = [int_literal(a.value) for a in args]
    keywords = {a.keyword.value: int_literal(a.value) for a in node.args if a.keyword is not None}
    return view.dataset_length(target[1], values, keywords)


def tensor_rows(ctx: FileContext, node: cst.BaseExpression) -> int | None:
    """The first dimension of `torch.randn(64, 32)`, `torch.zeros((64, 3))`,
    `torch.arange(64)`, `torch.tensor([[...], ...])`."""
    node = resolve_local(ctx, node)
    if not isinstance(node, cst.Call):
        return None
    qualified = ctx.qualify(node.func) or ""
    last = qualified.rsplit(".", 1)[-1]
    if not qualified.startswith("torch.") or last not in _TORCH_SIZED:
        return None
    args = positional(node)
    if not args:
        return None
    first = args[0].value
    if last == "tensor":
        return len(first.elements) if isinstance(first, cst.List) else None
    if last == "randint":
        size = keyword_arg(node, "size")
        first = size.value if size is not None else (args[2].value if len(args) > 2 else None)
        if first is None:
            return None
    if isinstance(first, (cst.Tuple, cst.List)) and first.elements:
        first = first.elements[0].value
    return int_literal(first)


def per_core(size: int, cores: int) -> int:
    """Samples per core: Lightning's DistributedSampler pads every core to the same count."""
    return -(-size // cores)


def ragged_on(size: int, batch: int) -> list[int]:
    """The core counts on which a loader of `size` samples and `batch` per step ends each
    epoch with a smaller batch after full ones (one batch per epoch, whatever its size,
    keeps one shape)."""
    out = []
    for cores in CORE_COUNTS:
        share = per_core(size, cores)
        if share > batch and share % batch:
            out.append(cores)
    return out


def full_batch_everywhere(size: int, batch: int) -> bool:
    """Whether every core keeps at least one full batch on every core count (what
    `drop_last=True` needs so that no core is left without a batch)."""
    return per_core(size, max(CORE_COUNTS)) >= batch


_PL = "import lightning as L\n"


def _project_path(ctx: FileContext) -> str:
    """The file's path inside the project (relative to the configuration's root), so that a
    project that itself lives under a `tests/` folder is not taken for test code."""
    import os

    try:
        root = str(ctx.config.root)
        absolute = os.path.abspath(ctx.path)
        if absolute.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(absolute, root)
    except (AttributeError, ValueError):
        pass
    return ctx.path


class _DataRule(Rule):
    """Base of the TPU3xx rules: test files are not checked (their loaders and batch sizes
    are sized to run fast on a CPU, not for a TPU)."""

    @classmethod
    def lightning_code(cls, source: str, view: FileView) -> bool:
        """A Lightning class of the project, or a file that imports Lightning (a training
        script): where the loader and sampler rules report."""
        return view.has_lightning_class or "lightning" in source

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # Returning False from a visit handler would stop every rule's walk, so each handler
        # checks this flag instead.
        self._skip = ctx is not None and is_test_file(_project_path(ctx))


def _callee_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _short(ctx: FileContext, node: cst.CSTNode, limit: int = 50) -> str:
    """Source of a call for messages, with the whitespace of multi-line calls folded:
    `DataLoader(self.train_set, batch_size=…`."""
    text = " ".join(ctx.module.code_for_node(node).split())
    text = re.sub(r"([(\[{]) ", r"\1", text)
    text = re.sub(r",? ([)\]}])", r"\1", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _placeholder(arg: cst.Arg | None) -> bool:
    """`DataLoader(["dummy"])`: a literal stand-in replaced before training (flash's
    active-learning loop), not a dataset."""
    return arg is not None and isinstance(arg.value, (cst.List, cst.Tuple, cst.Set))


def _stored_on_self(ctx: FileContext, node: cst.Call) -> bool:
    """`self.train_loader = DataLoader(...)` (returned by a hook later)."""
    parent = ctx.parent(node)
    return (
        isinstance(parent, cst.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Attribute)
        and code(ctx, parent.targets[0].target.value) == "self"
    )
