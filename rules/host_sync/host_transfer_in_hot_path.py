"""TPU103 host-transfer-in-hot-path."""

from __future__ import annotations

import ast
import re
from typing import Any

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.hot_code import HotCode, is_int_literal
from tpulint.analysis.scope import same_repository
from tpulint.analysis.values import ValueKind
from tpulint.analysis.walker import iter_children
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.cst_helpers import strip_call_suffix
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..rewrite.deferral import defer
from ..rewrite.sync import enclosing_print, print_fix
from ..shared.matchers import is_method_call, self_attribute_name, source_of, walk
from ..shared.tensors import Bindings, TrackingRule, computed_tensor, is_torch_tensor, keyword
from .helpers import _HEAD, _LOSS, in_exception_path, logged_value, quiet

_PREDICT_HOOKS = ("predict_step", "on_predict_batch_end", "on_predict_batch_start")
_CONVERSIONS = ("float", "int", "bool")
# Python builtins that compare their arguments (`min(t, 3)` is `t if t < 3 else 3`: a
# `bool()` of a tensor on the host).
_COMPARING = ("min", "max")
# Python builtins that iterate one argument and test or compare each element on the host:
# `all(t >= 0)` calls `bool()` on every element of the tensor.
_ITERATING = ("min", "max", "all", "any", "sorted")
# `math` functions of a float: given a tensor, Python converts it with `float()` first.
_MATH_READS = frozenset(
    {
        *("sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "pow", "fabs"),
        *("floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "erf", "erfc"),
        *("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "tanh", "sinh", "cosh"),
    }
)


def _derived(value: cst.BaseExpression, name: str) -> bool:
    """`name // 4`, `-name`, `name.long()`, `name[:, 0]`: computed from `name` itself by
    operators, indexing or its own methods (a tensor stays a tensor)."""
    if isinstance(value, cst.Name):
        return value.value == name
    if isinstance(value, cst.BinaryOperation):
        return _derived(value.left, name) or _derived(value.right, name)
    if isinstance(value, cst.UnaryOperation):
        return _derived(value.expression, name)
    if isinstance(value, cst.Subscript):
        return _derived(value.value, name)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        return _derived(value.func.value, name)
    return False


# Methods only a torch tensor has (numpy arrays and lists have none of them): a name they
# are called on holds a tensor.
_TENSOR_USES = frozenset(
    {
        "cpu",
        "cuda",
        "size",
        "unsqueeze",
        "detach",
        "long",
        "float",
        "int",
        "masked_fill",
        "new_zeros",
        "new_ones",
        "type_as",
        "numel",
        "dim",
    }
)
# torch parameters that take a Python number: a tensor passed there is read on the host.
_NUMBER_PARAMETERS = {
    "nan_to_num": (("nan", 1), ("posinf", 2), ("neginf", 3)),
    "full": (("fill_value", 1),),
    "full_like": (("fill_value", 1),),
}
# The callees' last names `visit_Call` goes on with (its screen, `hot_shapes`).
# Methods of loggers and `warnings` that report an error or a warning.
_ERROR_REPORTS = frozenset({"error", "warning", "warn", "exception", "critical"})
# torch calls building a tensor from Python data: a device tensor among the items of a
# list literal given there (`x.new_tensor([[1, n, n**2]])`) is read on the host.
_FROM_DATA = ("tensor", "as_tensor", "new_tensor")
_CALLS_CHECKED = (
    frozenset(
        {
            "cpu",
            "tolist",
            "numpy",
            "to",
            "print",
            *_CONVERSIONS,
            *_COMPARING,
            *_ITERATING,
            *_FROM_DATA,
        }
    )
    | frozenset(_NUMBER_PARAMETERS)
    | _MATH_READS
)
_WRITER_NAME = re.compile(r"(write|save|dump|export|store)", re.IGNORECASE)
# Tokenizer methods that turn token ids into text (`decode`, `batch_decode`, a project
# tokenizer's `decode_tensor`): Hugging Face's `decode` calls `to_py_obj`, a `.tolist()`.
_DECODER = re.compile(r"^(batch_)?decode(_\w+)?$")
# Methods of metric objects and TensorBoard writers `visit_Call` also checks.
_OBJECT_CALLS = frozenset({"update", "forward", "add_scalar", "add_scalars"})


def _screened_call(node: ast.Call, code: HotCode) -> bool:
    """The calls `visit_Call` goes on with (its screen, `hot_shapes`): the callees above,
    a decoder, or (in a file that spells `compute_on_cpu`) a `self.<metric>(...)` call."""
    names = code.call_names(node)
    if not names.isdisjoint(_CALLS_CHECKED) or not names.isdisjoint(_OBJECT_CALLS):
        return True
    if any(_DECODER.match(name) for name in names):
        return True
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and code.mentions("compute_on_cpu")
    )


def _function_returns(ctx: FileContext) -> set[str]:
    """Names read by the `return` statements of the current function."""
    info = ctx.function
    if info is None:
        return set()
    names: set[str] = set()
    for node in walk(info.node):
        if isinstance(node, cst.Return) and node.value is not None:
            for inner in walk(node.value):
                if isinstance(inner, cst.Name):
                    names.add(inner.value)
    return names


def returned_from_predict(ctx: FileContext, node: cst.CSTNode) -> bool:
    """In `predict_step` (or a helper it calls), whether `node` is returned: directly, by
    a name that is returned, or appended to a returned list. The host copy is the point."""
    info = ctx.function
    if info is None or info.root_hook not in _PREDICT_HOOKS:
        return False
    if _WRITER_NAME.search(info.name):
        return True  # `write_batch`, `save_predictions`: writing the outputs is the point
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.Return, cst.Yield)):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            break
    statement = ctx.enclosing_statement(node)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    returned = _function_returns(ctx)
    for small in statement.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend"):
                targets = [func.value]
        for target in targets:
            for inner in walk(target):
                if isinstance(inner, cst.Name) and inner.value in returned:
                    return True
    return False


# Functions named for drawing or writing images (`save_image_grid`, `vis_depth`,
# `plot_attention`, `draw_boxes`): the host copy they need is their point. (Exporting a
# bank of embeddings is another matter: a copy the step could keep on the device.)
_IMAGE_WRITER_NAME = re.compile(
    r"(^|_)(vis|visuali[sz]e|plot|draw|imwrite|imsave)|image|img", re.IGNORECASE
)
_VALIDATION_ROOTS = ("validation_step", "on_validation_batch_end", "on_validation_batch_start")


def copied_for_writing(ctx: FileContext) -> bool:
    """In validation code, whether the current function is one that draws or writes images
    (or is reached through one on its chain from the validation step): the copy to numpy is
    what writing an image needs, deferring it to an epoch-end hook moves the same
    copy, and validation runs every `val_check_interval` steps, not every step."""
    info = ctx.function
    if info is None or info.root_hook not in _VALIDATION_ROOTS:
        return False
    names = [info.name]
    view = ctx.analysis.view
    hot = view.hot(info.key) if view is not None else None
    if hot is not None and view is not None:
        for path, line in hot.chain[1:]:
            # each site after the root's sits in a function the chain passes through
            module = view.model.modules.get(path)
            inner = None
            for fn in module.functions if module is not None else ():
                first, last = fn.span
                if first <= line <= last and (inner is None or first >= inner.span[0]):
                    inner = fn
            if inner is not None:
                names.append(inner.name)
    return any(_IMAGE_WRITER_NAME.search(name) for name in names)


# Where a validation step's host copy may end: files and loggers' image, audio, video and
# figure calls. Their argument must be on the host; the copy is what they need.
_MEDIA_WRITERS = frozenset(
    {
        "imageio.imwrite",
        "imageio.imsave",
        "imageio.mimwrite",
        "imageio.mimsave",
        "imageio.v2.imwrite",
        "imageio.v2.mimwrite",
        "imageio.v3.imwrite",
        "cv2.imwrite",
        "skimage.io.imsave",
        "torchvision.utils.save_image",
        "torchvision.io.write_png",
        "torchvision.io.write_jpeg",
        "torchvision.io.write_video",
        "torchaudio.save",
        "soundfile.write",
        "scipy.io.wavfile.write",
        "wandb.Image",
        "wandb.Audio",
        "wandb.Video",
        # Medical-imaging and array files: the writer (or the image object it writes) needs
        # the values on the host.
        "SimpleITK.WriteImage",
        "SimpleITK.GetImageFromArray",
        "nibabel.save",
        "nibabel.Nifti1Image",
        "nibabel.Nifti2Image",
        "nibabel.nifti1.Nifti1Image",
        "numpy.save",
        "numpy.savez",
        "numpy.savez_compressed",
        "numpy.savetxt",
        "torch.save",
    }
)
# Image objects whose `save` writes a file and whose conversions make a writer's image.
_IMAGE_OBJECTS = frozenset(
    {"PIL.Image.fromarray", "torchio.ScalarImage", "torchio.LabelMap", "torchio.Image"}
)
_IMAGE_OBJECT_WRITES = frozenset({"save", "as_sitk"})
# A helper whose name says it writes files: its copies are what the files need.
_WRITER_NAME = re.compile(r"^_*(write|save|dump|export)(_|$)", re.IGNORECASE)
# Methods of a logger's `experiment` (TensorBoard's SummaryWriter, a wandb run) and of
# Lightning's loggers that take media, and of matplotlib's axes that draw an array.
_EXPERIMENT_MEDIA = frozenset(
    {"add_image", "add_images", "add_figure", "add_audio", "add_video", "log"}
)
_LOGGER_MEDIA = frozenset({"log_image", "log_audio", "log_video"})
_AXES_DRAWING = frozenset({"imshow", "matshow", "plot", "scatter", "hist", "pcolormesh"})
# Reductions: their result is a host number computed from the copy (a PSNR of the written
# image), which costs nothing more wherever it goes.
_REDUCTIONS = frozenset({"mean", "sum", "max", "min", "std", "var", "norm", "item"})
# Reads of a tensor's metadata, not its values.
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "size"})


def _media_writer(ctx: FileContext, call: cst.Call) -> bool:
    func = call.func
    qualified = ctx.qualify(func) or ""
    if qualified in _MEDIA_WRITERS or qualified.startswith("matplotlib.pyplot."):
        return True
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    holder = func.value
    if method in _EXPERIMENT_MEDIA and isinstance(holder, cst.Attribute):
        return holder.attr.value == "experiment"
    if method in _LOGGER_MEDIA:
        return isinstance(holder, cst.Attribute) and holder.attr.value == "logger"
    if method in _IMAGE_OBJECT_WRITES and isinstance(holder, cst.Call):
        return (ctx.qualify(holder.func) or "") in _IMAGE_OBJECTS
    if method == "create_dataset":
        # h5py: `f.create_dataset(name, data=x)` writes `x` to the file
        return True
    if method == "Execute" and isinstance(holder, cst.Call):
        return (ctx.qualify(holder.func) or "") == "SimpleITK.ImageFileWriter"
    if method in _AXES_DRAWING:
        return not (ctx.qualify(holder) or "").startswith(("torch", "numpy"))
    return False


def _carried(
    ctx: FileContext, expression: cst.CSTNode, tracked: set[str], copy: cst.CSTNode
) -> bool:
    """Whether `expression` carries the copy's values: it is the copy or reads a tracked
    name, other than through a reduction (`err.mean()`, `np.mean(err)`) or its metadata
    (`img.shape`)."""
    stack: list[cst.CSTNode] = [expression]
    while stack:
        current = stack.pop()
        if current is copy:
            return True
        if isinstance(current, cst.Name) and current.value in tracked:
            return True
        if isinstance(current, cst.Attribute):
            if current.attr.value not in _METADATA:
                stack.append(current.value)  # `x.attr`: not a read of a local named `attr`
            continue
        if isinstance(current, cst.Arg):
            stack.append(current.value)  # `f(img=...)`: the keyword is no local
            continue
        if isinstance(current, cst.Call):
            func = current.func
            if isinstance(func, cst.Attribute):
                last = func.attr.value
            elif isinstance(func, cst.Name):
                last = func.value
            else:
                last = ""
            module_function = (
                not isinstance(func, cst.Attribute)
                or (ctx.qualify(func) or "").startswith(("torch.", "numpy."))
                or (isinstance(func.value, cst.Name) and func.value.value in ("torch", "np"))
            )
            whole = len(current.args) == 1 if module_function else not current.args
            if last == "len" or (last in _REDUCTIONS and whole):
                continue  # `err.mean()`, `np.mean(err)`, `len(x)`: a number (not `x.sum(1)`)
        stack.extend(iter_children(current))
    return False


def _track(target: cst.BaseExpression, tracked: set[str]) -> bool | None:
    """Add the names `target` binds to `tracked`: whether that added any, None when the
    target is no local name (an attribute: the value outlives the step)."""
    names = _target_names(target)
    if names is None:
        return None
    if tracked.issuperset(names):
        return False
    tracked.update(names)
    return True


def _target_names(target: cst.BaseExpression) -> list[str] | None:
    """The local names an assignment target binds (`a`, `a, b`, `d[k]` binds `d`); None for
    an attribute (`self.x = ...`): the value outlives the step."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names: list[str] = []
        for element in target.elements:
            inner = _target_names(element.value)
            if inner is None:
                return None
            names.extend(inner)
        return names
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    if isinstance(target, cst.Subscript):
        return _target_names(target.value)
    return None


def _own_statements(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The small statements and loop, `if` and `with` headers of `function`'s body in
    source order, not those of functions or classes defined in it."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, (cst.BaseSmallStatement, cst.For, cst.If, cst.While, cst.With)):
            found.append(current)
        stack.extend(reversed(list(iter_children(current))))
    return found


def _reads_module_state(copy: cst.Call) -> bool:
    """Whether the copied value reads an attribute of `self` (`self.bank.cpu()`): state kept
    across steps, which may grow on the device every step, not the step's own output. A
    call through `self` (`self(x)`, `self.model(x)`) is the step's output."""
    func = copy.func
    receiver = func.value if isinstance(func, cst.Attribute) else copy
    stack: list[cst.CSTNode] = [receiver]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            stack.extend(arg.value for arg in current.args)
            if isinstance(current.func, cst.Attribute):
                stack.append(current.func.value)  # `self.model(x)`: the call, not state
            continue
        if isinstance(current, cst.Attribute):
            if isinstance(current.value, cst.Name) and current.value.value == "self":
                return True
            stack.append(current.value)
            continue
        stack.extend(iter_children(current))
    return False


def copied_only_for_media(ctx: FileContext, copy: cst.Call) -> bool:
    """In a validation step (not training), whether the host copy `copy` made once per
    step (not in a loop) ends only in image, audio, video or figure writers and loggers
    (`imageio.imwrite`, `logger.experiment.add_images`, `wandb.Image`, `plt.imshow`), through
    local names, arithmetic, slicing, numpy and the host computations feeding them. Then the
    copy is what the writer needs; deferring it to an epoch-end hook does not apply. A copy
    whose values (not a reduction of them) also reach a returned value, `self.log`, an
    attribute, or a call the rule does not know stays reported.

    In a helper whose name says it writes files (`write_*`, `save_*`, `dump_*`, `export_*`)
    that validation calls, the same holds in loops too (one file per item): the copies are
    what the files need. A training step's copies are paid every step and stay reported."""
    info = ctx.function
    if info is None:
        return False
    # The helper's own name, or the name of the function it is defined in.
    defined_in = [a.name.value for a in ctx.ancestors(copy) if isinstance(a, cst.FunctionDef)]
    if info.root_hook not in _VALIDATION_ROOTS:
        return False  # a training step pays its copies every step, whatever they are for
    writer_helper = any(_WRITER_NAME.search(name) for name in defined_in[:2])
    function: cst.FunctionDef | None = None
    outermost_loop: cst.CSTNode | None = None
    for ancestor in ctx.ancestors(copy):
        if isinstance(ancestor, cst.CompFor):
            return False
        if isinstance(ancestor, (cst.For, cst.While)):
            if not writer_helper:
                return False  # one copy per iteration: the writer needs one of the result
            outermost_loop = ancestor
        if isinstance(ancestor, cst.Lambda):
            return False
        if isinstance(ancestor, cst.FunctionDef):
            function = ancestor
            break
    if function is None or _reads_module_state(copy):
        return False
    if function.name.value != info.name:
        return False
    # A function defined inside a writing helper (`def to_image(t): return
    # tio.ScalarImage(tensor=t.cpu()).as_sitk()`) may hand back the image it builds.
    nested_in_writer = len(defined_in) > 1 and bool(_WRITER_NAME.search(defined_in[1]))
    statements = _own_statements(function)
    # Only what runs after the copy reads it; in a loop, the whole loop (the next item's
    # statements before the copy run after it).
    positions = {id(statement): index for index, statement in enumerate(statements)}
    start = [outermost_loop] if outermost_loop is not None else ctx.ancestors(copy)
    first = next((positions[id(a)] for a in start if id(a) in positions), None)
    if first is None:
        return False
    statements = statements[first:]
    tracked: set[str] = set()
    written = False
    changed = True
    while changed:
        changed = False
        for statement in statements:
            if isinstance(statement, (cst.If, cst.While, cst.With)):
                continue  # a host test of a host value
            if isinstance(statement, cst.For):
                if _carried(ctx, statement.iter, tracked, copy):
                    grew = _track(statement.target, tracked)
                    if grew is None:
                        return False
                    changed |= grew
                continue
            if isinstance(statement, cst.Return):
                value = statement.value
                if value is None or not _carried(ctx, value, tracked, copy):
                    continue
                if nested_in_writer and isinstance(value, cst.Call) and _media_writer(ctx, value):
                    written = True  # the host image the enclosing writer writes
                    continue
                return False
            if isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                value = statement.value
                if value is None or not _carried(ctx, value, tracked, copy):
                    continue
                if isinstance(value, cst.Call) and _media_writer(ctx, value):
                    written = True  # `image = wandb.Image(x)`, logged next
                targets = (
                    [t.target for t in statement.targets]
                    if isinstance(statement, cst.Assign)
                    else [statement.target]
                )
                for target in targets:
                    grew = _track(target, tracked)
                    if grew is None:
                        return False  # stored on the module (an accumulator)
                    changed |= grew
                continue
            if isinstance(statement, cst.Expr):
                value = statement.value
                if isinstance(value, (cst.Yield, cst.Await)):
                    if _carried(ctx, value, tracked, copy):
                        return False
                    continue
                if not _carried(ctx, value, tracked, copy):
                    continue
                if isinstance(value, cst.Call) and _media_writer(ctx, value):
                    written = True
                    continue
                func = value.func if isinstance(value, cst.Call) else None
                if (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in ("append", "extend", "insert")
                    and isinstance(func.value, cst.Name)
                ):
                    if func.value.value not in tracked:
                        tracked.add(func.value.value)
                        changed = True
                    continue
                return False  # `self.log`, an attribute's list, an unknown call
    return written


def _to_cpu(ctx: FileContext, node: cst.Call) -> bool:
    """`x.to("cpu")`, `x.to(device="cpu")`, `x.to(torch.device("cpu"))`, and through a local
    or an attribute of the class that only ever holds the CPU device (`cpu_device =
    torch.device("cpu")`, `self.cpu_device = torch.device("cpu")` in `__init__`)."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value != "device":
            continue
        value = arg.value
        if isinstance(value, cst.Name):
            assigned = _local_assignments(ctx, value.value)
            return bool(assigned) and all(_cpu_device(ctx, v) for v in assigned)
        attribute = self_attribute_name(value)
        if attribute is not None:
            assigned = _self_assignments(ctx, attribute)
            return bool(assigned) and all(_cpu_device(ctx, v) for v in assigned)
        return _cpu_device(ctx, value)
    return False


def _to_cuda_chain(ctx: FileContext, node: cst.Call) -> bool:
    """`x.to(device)` with a device the value inference resolves to the CPU on a TPU host: a
    CUDA/MPS chain (`device = "cuda" if torch.cuda.is_available() else "cpu"`, a
    `get_device()` helper returning one)."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value != "device":
            continue
        value = arg.value
        if isinstance(value, cst.Name):
            assigned = _local_assignments(ctx, value.value)
            if assigned and all(_cpu_or_cuda(ctx, v) for v in assigned):
                # `torch.device("cpu" if backend == "gloo" else "cuda")`: the CPU only where
                # a test other than CUDA's availability picks it (a gloo process group, which
                # an XLA run does not create); elsewhere the move fails
                return False
        return ctx.value_kind(value) is ValueKind.CPU_DEVICE
    return False


def _availability_test(ctx: FileContext, test: cst.BaseExpression) -> bool:
    """A test that calls `torch.cuda.*` or `torch.backends.*` (`torch.cuda.is_available()`)."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            qualified = ctx.qualify(current.func) or ""
            if qualified.startswith(("torch.cuda.", "torch.backends.")):
                return True
        stack.extend(current.children)
    return False


def _cpu_or_cuda(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """`"cpu" if c else "cuda"` (either way round), or `torch.device(...)` of one."""
    if isinstance(value, cst.Call) and ctx.qualify(value.func) == "torch.device" and value.args:
        value = value.args[0].value
    if not isinstance(value, cst.IfExp) or _availability_test(ctx, value.test):
        return False  # (`"cuda" if torch.cuda.is_available() else "cpu"`: the CPU on a TPU)
    texts = []
    for branch in (value.body, value.orelse):
        text = branch.evaluated_value if isinstance(branch, cst.SimpleString) else None
        if not isinstance(text, str):
            return False
        texts.append(text.split(":", 1)[0])
    return sorted(texts) == ["cpu", "cuda"]


def _cpu_device(ctx: FileContext, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and text.split(":", 1)[0] == "cpu"
    if isinstance(value, cst.Call) and ctx.qualify(value.func) == "torch.device" and value.args:
        inner = value.args[0].value
        return isinstance(inner, cst.SimpleString) and str(inner.evaluated_value) == "cpu"
    return False


def _local_assignments(ctx: FileContext, name: str) -> list[cst.BaseExpression]:
    """The values assigned to a local of the function being walked, when every binding of
    it there is a plain assignment (a global, a loop target or a parameter: none)."""
    info = ctx.function
    if info is None:
        return []
    function = info.node
    params = function.params
    if name in {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    }:
        return []
    found: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Assign):
            for target in current.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    found.append(current.value)
                elif not isinstance(target.target, (cst.Attribute, cst.Subscript)) and any(
                    isinstance(n, cst.Name) and n.value == name for n in _names(target.target)
                ):
                    return []  # unpacked: not only a device literal
        elif isinstance(current, (cst.AnnAssign, cst.AugAssign, cst.For, cst.WithItem)):
            target = current.target if not isinstance(current, cst.WithItem) else current.asname
            if target is not None and any(
                isinstance(n, cst.Name) and n.value == name for n in _names(target)
            ):
                return []
        elif isinstance(current, (cst.Global, cst.Nonlocal)):
            if any(n.name.value == name for n in current.names):
                return []
        elif isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(iter_children(current))
    return found


def _names(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(iter_children(current))
    return out


def _plain_cpu_attribute(ctx: FileContext, node: cst.Subscript) -> str | None:
    """The name `x` of `self.x[...]` when `self.x` is a CPU tensor kept as a plain attribute
    of the class: `__init__` assigns it a CPU tensor unconditionally (`torch.full(...)`
    without a device), every other assignment of it is in a branch of `__init__` (a flag
    that makes it a `nn.Parameter`), and no `register_buffer` names it (`.to(device)` moves
    buffers and parameters, not plain attributes)."""
    name = self_attribute_name(node.value)
    klass = ctx.klass
    if name is None or klass is None:
        return None
    stores, off = _attribute_stores(ctx, klass)
    if name in off:
        return None
    found = stores.get(name, [])
    plain = [value for value, init, branched in found if init and not branched]
    if not plain:
        return None
    for value, init, branched in found:
        if not init:
            return None
        if not branched and ctx.value_kind(value) is not ValueKind.CPU:
            return None
    return name


_Stores = dict[str, list[tuple[cst.BaseExpression, bool, bool]]]


def _attribute_stores(ctx: FileContext, klass: Any) -> tuple[_Stores, frozenset[str]]:
    """What the class and its bases of this file store to `self.<attribute>`, one walk per
    class and file for every attribute (a walk of the class per subscript cost about 3% of a
    cold run on a large package): by attribute, every `self.x = value` as (value, in
    `__init__`, in a branch), in the walk's order; and the attributes something else binds
    (`self.x += ...`, `self.x: T = ...`) or registers (`_registers`)."""
    cache: dict[int, tuple[Any, _Stores, frozenset[str]]] = ctx.__dict__.setdefault(
        "_tpu103_attribute_stores", {}
    )
    known = cache.get(id(klass))
    if known is not None and known[0] is klass:
        return known[1], known[2]
    classes, pending = [], [klass]  # the class and its bases of this file
    while pending:
        current_class = pending.pop()
        if all(current_class is not c for c in classes):
            classes.append(current_class)
            pending.extend(current_class.local_bases)
    stores: _Stores = {}
    off: set[str] = set()
    stack: list[tuple[cst.CSTNode, str | None, bool]] = [
        (c.node.body, None, False) for c in classes
    ]
    while stack:
        current, function, branched = stack.pop()
        if isinstance(current, cst.FunctionDef):
            # (an assignment in a nested function is one outside `__init__`)
            function = current.name.value if function is None else "<nested>"
            branched = False
        elif isinstance(current, (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.Match)):
            branched = True
        elif isinstance(current, cst.Assign):
            for target in current.targets:
                attribute = self_attribute_name(target.target)
                if attribute is not None:
                    stores.setdefault(attribute, []).append(
                        (current.value, function == "__init__", branched)
                    )
        elif isinstance(current, (cst.AnnAssign, cst.AugAssign)):
            attribute = self_attribute_name(current.target)
            if attribute is not None:
                off.add(attribute)
        elif isinstance(current, cst.Call):
            off.update(_registered_names(current))
        stack.extend((child, function, branched) for child in iter_children(current))
    result = (stores, frozenset(off))
    cache[id(klass)] = (klass, *result)
    return result


def _registered_names(call: cst.Call) -> list[str]:
    """The attributes a call names as one torch moves or that it sets in a way not followed:
    `self.register_buffer("name", ...)` / `register_parameter` / `setattr(self, "name", ...)`."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if func.attr.value not in ("register_buffer", "register_parameter"):
            return []
    elif not (isinstance(func, cst.Name) and func.value == "setattr"):
        return []
    return [
        value
        for arg in call.args[:2]
        if isinstance(arg.value, cst.SimpleString)
        and isinstance(value := arg.value.evaluated_value, str)
    ]


def _self_assignments(ctx: FileContext, name: str) -> list[cst.BaseExpression]:
    """The values assigned to `self.<name>` anywhere in the class being walked."""
    klass = ctx.klass
    if klass is None:
        return []
    found: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [klass.node.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Assign):
            for target in current.targets:
                if self_attribute_name(target.target) == name:
                    found.append(current.value)
        elif (
            isinstance(current, (cst.AnnAssign, cst.AugAssign))
            and self_attribute_name(current.target) == name
        ):
            return []  # annotated or updated in place: not only a device literal
        stack.extend(iter_children(current))
    return found


_DECODER_NAME = re.compile(r"tokeni[sz]er|processor", re.IGNORECASE)


def _decoder_owner(ctx: FileContext, receiver: cst.BaseExpression, bindings: Bindings) -> bool:
    """A tokenizer or processor: a name or attribute named for one (`self.tokenizer`,
    `self.trainer.datamodule.tokenizer`, `processor`), or a local bound to a `*Tokenizer*` /
    `*Processor*` class or its `from_pretrained`."""
    if isinstance(receiver, cst.Attribute):
        return bool(_DECODER_NAME.search(receiver.attr.value))
    if not isinstance(receiver, cst.Name):
        return False
    if _DECODER_NAME.search(receiver.value):
        return True
    binding = bindings.lookup(receiver.value)
    value = binding.value if binding is not None else None
    if isinstance(value, cst.Call):
        callee = value.func
        if isinstance(callee, cst.Attribute) and callee.attr.value == "from_pretrained":
            callee = callee.value
        name = (ctx.qualify(callee) or source_of(ctx, callee)).rsplit(".", 1)[-1]
        return bool(re.search(r"Tokeni[sz]er|Processor", name))
    return False


def _truthy(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _config_key(node: cst.BaseExpression) -> str | None:
    """The key a config read names: `cfg.metric.compute_on_cpu`, `cfg["compute_on_cpu"]`."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            value = index.value.evaluated_value
            return value if isinstance(value, str) else None
    return None


def _computes_on_cpu(ctx: FileContext, call: cst.Call) -> str | None:
    """How a metric's construction asks for `compute_on_cpu`: the keyword set to `True` or
    to a config read (`cfg.metric.compute_on_cpu`) every shipped config sets true, or a
    config section spread into it (`**cfg.metrics.score`) in a repository whose configs set
    `compute_on_cpu: true` and nothing else; None when it does not."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "compute_on_cpu":
            if _truthy(arg.value):
                return "`compute_on_cpu=True`"
            key = _config_key(arg.value)
            if key is not None and _configured_true(ctx, key):
                return f"`compute_on_cpu={source_of(ctx, arg.value)}`, true in its configs"
            return None
    spread = [a.value for a in call.args if a.star == "**" and _config_key(a.value) is not None]
    if spread and _configured_true(ctx, "compute_on_cpu"):
        sections = ", ".join(f"`**{source_of(ctx, value)}`" for value in spread)
        return f"{sections} in a repository whose configs set `compute_on_cpu: true`"
    return None


def _configured_true(ctx: FileContext, key: str) -> bool:
    """The repository's YAML configs set `key` and only ever to true (`compute_on_cpu:
    true`): what the code reading it gets as shipped."""
    view = ctx.analysis.view
    if view is None:
        return False
    values = [
        value
        for config in view.model.configs
        if same_repository(config.path, ctx.path)
        for value in config.keys.get(key, ())
    ]
    return bool(values) and all(value is True for value in values)


def _only_displays(ctx: FileContext, attr: str) -> bool:
    """Every assignment in the file to an attribute named `attr` (`self.accs = ...`,
    `self.net.accs = ...`) is a list or tuple display: what `torch.tensor` reads is a list."""
    index = ctx.shared.get("TPU103 attribute assignments")
    if index is None:
        index = {}
        for node in walk(ctx.module):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Attribute):
                        index.setdefault(target.target.attr.value, []).append(node.value)
            elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and isinstance(
                node.target, cst.Attribute
            ):
                index.setdefault(node.target.attr.value, []).append(None)
        ctx.shared["TPU103 attribute assignments"] = index
    values = index.get(attr, ())
    return bool(values) and all(isinstance(v, (cst.List, cst.Tuple)) for v in values)


class HostTransferInHotPath(TrackingRule, Rule):
    """
    ## What it does
    Finds device-to-host copies of tensors in code that runs for every batch: `.cpu()`,
    `.numpy()`, `.tolist()`, `.to("cpu")` (also through a name or attribute that holds
    `torch.device("cpu")`, and `.to(device)` with a CUDA/MPS chain such as `"cuda" if
    torch.cuda.is_available() else "cpu"` or a `get_device()` helper returning one: on a TPU
    host it picks the CPU; not a choice between the CPU and CUDA made by another test,
    `"cpu" if backend == "gloo" else "cuda"`, whose CPU branch needs a process group an XLA
    run does not create), `float(t)` / `int(t)` / `bool(t)` / `str(t)`,
    `print(t)` and f-strings that format a tensor, in step methods, `forward`, batch hooks
    and the helpers they call. So are the implicit reads: `min(t, 3)` / `max(t, 19)` (Python
    compares on the host) and `min(t)` / `max(t)` / `sorted(t)` / `all(t)` / `any(t)` of one
    tensor (Python iterates it and compares or tests every element on the host; an element
    of the step's data is judged only when the function itself uses it as a tensor, e.g.
    `max(lengths)` in a forward that also calls `lengths.cpu()`, since the batch may hold a
    list of numbers there), a tensor
    passed where torch wants a Python number (`torch.nan_to_num(x, nan=t)`,
    `torch.full(shape, t)`), and a tensor used as a Python
    index into an `nn.ModuleList` or a list or tuple the code builds (`self.heads[k]`; a
    tensor indexed by a tensor is a gather on the device, not a read), and a device tensor
    indexing a CPU tensor kept as a plain attribute (`self.logvar[t]` where `__init__` sets
    `self.logvar = torch.full(...)`, made an `nn.Parameter` only behind an option, never a
    registered buffer nor moved by a hook: `.to(device)` does not move it, so torch copies
    the index to the host every step). So are the host copies that library calls make of
    a device tensor: a tokenizer's `decode` / `batch_decode` (or a project tokenizer's
    `decode_*`) of device ids, on a receiver named for a tokenizer or processor
    (`self.tokenizer`, `self.trainer.datamodule.tokenizer`) or a local built from a
    `*Tokenizer*` / `*Processor*` class (Hugging Face's `decode` makes a Python list of the
    ids); TensorBoard's `add_scalar(tag, t, step)` / `add_scalars(tag, {...: t}, step)`
    of a device tensor (the writer makes a numpy number of it); `torch.tensor(self.accs)`
    of an attribute the file sets only to list displays, one of them of device tensors
    computed in hot code (`self.mixer.accs = [acc0, acc1]` in the training step: torch reads
    each element on the host); and `self.metric.update(...)` / `self.metric(...)` of a
    torchmetrics metric built with `compute_on_cpu=True`, or with the keyword read from a
    config (`cfg.metric.compute_on_cpu`) or a config section spread into it
    (`**cfg.metrics.score`) where the repository's YAML configs set `compute_on_cpu` and only
    to `true`: after every update torchmetrics moves the metric's list states to the CPU
    (`Metric._move_list_states_to_cpu`). `.item()` is TPU101's, and
    conversions passed to `self.log`
    are TPU102's.

    It stays silent where the copy is not paid every step or is the point: under "rare"
    guards (`if batch_idx == 0:`, `if self.global_step % 100 == 0:`, any periodic test such
    as `if steps % log_freq == 0:` or a method returning one, plotting and logging flags
    (a Hugging Face style loop's `if self.control.should_log:`), the first steps of the run
    (`if self.global_step < 5:`, in the validation step too), collecting the first N
    samples, the first N batches of a counter the project increments, read before an
    early exit (`cnt = self.viz_cnt[split]` then `if cnt > self.hparams.n_examples:
    return`, with a callback's `pl_module.viz_cnt[split] += 1` in any file; a counter
    nothing increments, a local one, or the step count bounds nothing), a block that
    records the key it compares, `if
    self.shown_split != dataloader_idx:` then `self.shown_split = dataloader_idx` (once per
    change of the key), or after an early `if batch_idx > 0: return`; a helper
    inherits the guards every step's call of it shares, so one the training step calls
    under `if batch_idx % log_every == 0:` and the validation step only under a hook
    parameter Lightning never passes, `def validation_step(self, batch, i, dl=0,
    vis=False)` then `if vis:`, runs only some steps; one that training calls only on
    some steps and validation on every batch is read as validation code, named in the
    message by the validation route), under
    CUDA checks, in `predict_step` for values it returns, in validation code that draws or
    writes images (a function named for it, `vis_depth`, `save_image_grid`, `plot_*`, or
    one reached through such a function: the numpy copy is what the image file needs, and
    deferring it moves the same copy), for a validation step's one copy (not in a loop)
    whose values, through local names, arithmetic, slicing, numpy and host computations,
    end only in image, audio, video or figure writers and loggers (`imageio.imwrite`,
    `cv2.imwrite`, `PIL.Image.fromarray(...).save`, `torchvision.utils.save_image`,
    `plt.*`, `logger.experiment.add_images`/`add_figure`/`add_audio`, `wandb.Image`,
    `self.logger.log_image`, and the file writers `sitk.WriteImage`/`GetImageFromArray`,
    `nib.save`/`Nifti1Image`, `tio.ScalarImage(...).save`/`.as_sitk()`, `np.save`/`savez`,
    `torch.save`, h5py's `create_dataset`; a reduction of them, a PSNR of the written image,
    may go anywhere: it is a host number), the same in a helper whose name says it writes
    files (`write_*`, `save_*`, `dump_*`, `export_*`) that validation calls, one file per
    item of a loop included (in a training step the copy is paid every step: reported),
    while the same values also returned, passed to `self.log`, kept
    on the module, handed to an unknown call, or copied from module state (`self.bank`)
    stay reported, in
    exception messages and
    assertion messages, in a branch that only warns (`if not ok.all():
    warnings.warn(f"{(~ok).sum()} bad")`: the `if` is TPU104's) or only prints or logs under
    a check of a tensor for bad values (`if torch.isnan(x).any(): print(x.cpu())`), in a
    branch the code before
    it makes unreachable (`if n is None: n = x.shape[0]`, then the `else` of `if n is not
    None:`), and on values that are
    not device tensors (numpy arrays, Python numbers, CPU tensors, and the strings a dataset's
    items hold, such as a file name read as `batch["name"][0]`: the collate keeps them as lists of
    strings and Lightning's batch transfer moves only tensors; README, "Whole-project
    analysis"; so are the list entries of a collate function annotated to return lists of
    Python values, `Dict[str, Union[Tensor, List[str]]]`, compared as `a == b`).

    ## Why is this bad on TPU?
    Tensors on an XLA device are lazy: the step is recorded as a graph and run once per
    step. Reading a value on the host (`.cpu()`, printing, converting to a Python number)
    forces the graph recorded so far to be compiled and executed right there, and the host
    waits for the TPU and the transfer. torch_xla lists these accesses as the main
    unexpected cause of extra executions and `TransferFromDeviceTime` in its metrics.

    ## Example
    ```python
    import lightning as L


    class Model(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self(x).argmax(dim=1)
            self.val_preds.append(preds.cpu())
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self(x).argmax(dim=1)
            self.val_preds.append(preds.detach())

        def on_validation_epoch_end(self):
            preds = torch.cat(self.val_preds).cpu()
            self.val_preds.clear()
    ```

    Keep values as tensors during the step (a torchmetrics metric, `self.log`, a list of
    device tensors) and move them to the host once, in an epoch-end hook.

    ## Fix safety
    The fixes are **unsafe** (`--unsafe-fixes`):

    - **Values collected for the end of the epoch.** When the copy is appended to a list of
      the module (`self.preds.append(preds.cpu())`, `.to("cpu")`, `.detach().cpu()`,
      `.cpu().numpy()`, or a number: `float(loss)`) and that list is read only when an epoch
      ends or starts, the fix keeps the tensors on the device while the epoch runs and moves
      them once where they are joined: the producer collects `preds.detach()` and every
      reader in the project (the module's epoch-end hooks, callbacks reading
      `pl_module.preds`, helpers only those call, in any file) gets what it got before:
      `torch.cat(self.preds)` becomes `torch.cat(self.preds).cpu()`,
      `np.concatenate(self.preds)` becomes `torch.cat(self.preds).cpu().numpy()`, a list of
      numbers `torch.stack(...).tolist()`. It applies when what each step keeps is visibly
      small (a number, or one prediction per sample: `logits.argmax(1)`,
      `scores.max(dim=1)[1]`; the device holds it until the epoch ends, so images, features
      or logits over a vocabulary get the message instead), the list is filled in one place,
      no code that runs every step reads it, its readers join the tensors (reading them one
      by one would need one copy each), and it is emptied when the producer's epoch ends
      (`self.preds.clear()` in `on_validation_epoch_end`). The fix edits every file
      involved at once, or none; the finding says why when there is none.
    - **`print(t)`** of a device tensor (or a `print` of an f-string that formats one): the
      fix removes the `print` statement; the training computes the same, but the output is
      gone (log the value with `self.log`, or print it in an epoch-end hook).

    `tpulint fix --prove module:Class --apply --unsafe-fixes` trains the module both ways and
    applies a rewrite only if the training, the module's and callbacks' state at the end of
    every epoch and the logged values are the same.

    For other uses of `.cpu()` and the conversions the suggestion (drop `.cpu()` or the
    conversion) is display-only: the code after it may need a host value (numpy, a Python
    list or number).

    ## References
    - [torch_xla troubleshooting: known performance caveats and compilation causes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: migration to XLA on TPUs](https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md)
    - [Lightning docs: TPU basics, "tensor evaluation"](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_basic.html)
    """

    code = "TPU103"
    hot_only = True
    name = "host-transfer-in-hot-path"
    summary = "`.cpu()`, `.tolist()`, `float(t)`, `print(t)` of device tensors in hot code"
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the value on the device"
    requires = (
        ".cpu(",
        ".numpy(",
        ".tolist(",
        "float(",
        "int(",
        "bool(",
        "str(",
        "print(",
        'f"',
        "f'",
        ".to(",
        "min(",
        "max(",
        "all(",
        "any(",
        "sorted(",
        "nan_to_num(",
        "full",
        "[",
        "math",
        "decode",
        "add_scalar",
        ".update(",
        "compute_on_cpu",
    )
    # What `visit_Call`, `visit_Subscript` and `visit_FormattedStringExpression` go on with
    # (a subscript: one index, not a slice or literal integer; `x[(a, b)]`'s one tuple is
    # not a device tensor).
    hot_shapes = {
        ast.Call: _screened_call,
        ast.Assign: lambda node, _code: isinstance(node.value, (ast.List, ast.Tuple)),
        ast.Subscript: lambda node, _code: (
            not isinstance(node.slice, (ast.Slice, ast.Tuple)) and not is_int_literal(node.slice)
        ),
        ast.FormattedValue: None,
    }

    VALID = (
        # A data-dependent initialisation (ActNorm, a flow's first batch) under a run-once
        # guard whose body sets the flag on every path: the copy is paid on the first step.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class ActNorm(nn.Module):\n"
            "    def __init__(self, width):\n"
            "        super().__init__()\n"
            "        self.scale = nn.Parameter(torch.ones(width))\n"
            "        self.ready = False\n\n"
            "    def forward(self, x):\n"
            "        if (self.ready is False) & self.training:\n"
            "            spread = x.std(0).cpu()\n"
            "            self.scale.data.copy_(1.0 / spread.clamp(min=1e-6))\n"
            "            self.ready = True\n"
            "        return x * self.scale\n"
        ),
        # The same with a flag the body clears (`if self._first:`), through a method.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Bias(nn.Module):\n"
            "    def __init__(self, width):\n"
            "        super().__init__()\n"
            "        self.shift = nn.Parameter(torch.zeros(width))\n"
            "        self._first = True\n\n"
            "    def _prime(self, x):\n"
            "        self.shift.data = -x.mean(0).cpu().to(x.device)\n"
            "        self._first = False\n\n"
            "    def forward(self, x):\n"
            "        if self._first:\n"
            "            self._prime(x)\n"
            "        return x + self.shift\n"
        ),
        # `math.sqrt` of Python numbers (a size, a width): no tensor is read.
        Valid(
            "import math\nfrom torch import nn\n\n\n"
            "class Attention(nn.Module):\n"
            "    def __init__(self, width):\n"
            "        super().__init__()\n"
            "        self.width = width\n\n"
            "    def forward(self, q, k):\n"
            "        scale = math.sqrt(self.width) * math.log(q.size(1))\n"
            "        return (q @ k.transpose(-2, -1)) / scale\n",
        ),
        # A graph of a batch counts its nodes as a Python int (DGL's `num_nodes()`; no tensor
        # has the method): `min` of two counts compares ints.
        Valid(
            "import lightning as L\n\n\n"
            "class PairScorer(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        left, right, labels = batch[0], batch[1], batch[2]\n"
            "        k = min(left.num_nodes(), right.num_edges())\n"
            "        return self(left, right)[:k].sum()\n"
        ),
        # Text decoded from ids already copied to the host, and only in the epoch-end hook;
        # a `decode` of a step's own batch element (the loader may give lists of ids).
        Valid(
            _HEAD + "    def __init__(self, tokenizer):\n"
            "        super().__init__()\n"
            "        self.tokenizer = tokenizer\n"
            "        self.guesses = []\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        guess = self(batch['ids']).argmax(-1)\n"
            "        first = self.tokenizer.decode(batch['ids'][0])\n"
            "        self.guesses.append(guess)\n"
            "        return len(first)\n\n"
            "    def on_validation_epoch_end(self):\n"
            "        guesses = torch.cat(self.guesses)\n"
            "        self.texts = self.tokenizer.batch_decode(guesses)\n"
        ),
        # A writer given host numbers, or a device scalar only every hundred steps; a
        # metric left computing where its inputs are; a tensor built from an attribute that
        # holds Python numbers.
        Valid(
            "import lightning as L\nimport torch\nfrom torchmetrics import MeanMetric\n"
            "from torch.utils.tensorboard import SummaryWriter\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.writer = SummaryWriter()\n"
            "        self.spread = MeanMetric(compute_on_cpu=False)\n"
            "        self.mix = [0.2, 0.8]\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        self.writer.add_scalar('rate', 0.5, batch_idx)\n"
            "        if batch_idx % 100 == 0:\n"
            "            self.writer.add_scalar('loss', loss, batch_idx)\n"
            "        self.spread.update(loss)\n"
            "        return loss * torch.tensor(self.mix).sum()\n"
        ),
        # A helper building tensors on the device its `device=None` parameter names, called
        # without one on host lists in a metric's update: CPU tensors, read on the host with
        # no sync.
        Valid(
            "import torch\nfrom torchmetrics import Metric\n\n\n"
            "def to_padded(rows, dtype=None, device=None):\n"
            "    return torch.as_tensor(rows, dtype=dtype, device=device)\n\n\n"
            "class Overlap(Metric):\n"
            "    def update(self, preds, target):\n"
            "        hits = to_padded([[len(p & t) for t in target] for p in preds])\n"
            "        best = to_padded([len(t) for t in target], device=None).max()\n"
            "        self.total += float(hits.max()) / max(float(best), 1.0)\n"
        ),
        # The lengths `pad_packed_sequence` returns live on the CPU: `.to("cpu")` and
        # `.tolist()` on them copy nothing from the device.
        Valid(
            "import lightning as L\nfrom torch import nn\nfrom torch.nn.utils import rnn\n\n\n"
            "class Tagger(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cell = nn.GRU(8, 8)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        seq, steps = rnn.pad_packed_sequence(self.cell(batch)[0])\n"
            "        counts = steps.to('cpu')\n"
            "        widths = steps.tolist()\n"
            "        return seq.sum() / (counts.sum() + len(widths))\n"
        ),
        # A scorer stored from a constructor's default, a host package's function (no
        # construction passes another): it returns a numpy number, formatting it reads no
        # tensor.
        Valid(
            "import logging\n\nimport lightning as L\nimport torch\n"
            "from scipy.spatial.distance import cosine\n\n\n"
            "class Fitted(L.LightningModule):\n"
            "    def __init__(self, score=cosine):\n"
            "        super().__init__()\n"
            "        self.score = score\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        a, b = batch\n"
            "        logging.info(f'score {self.score(a, b)}')\n"
        ),
        # A block whose body records the key it compares (`self.shown_split = split`): it
        # runs once per change of the key (a new dataloader), not on every batch.
        Valid(
            "import lightning as L\nimport numpy as np\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx, dataloader_idx=0):\n"
            "        if self.shown_split != dataloader_idx:\n"
            "            self.shown_split = dataloader_idx\n"
            "            self.canvas = np.zeros(batch['size'][0].cpu().numpy())\n"
            "        return self(batch['x']).mean()\n"
        ),
        # A figure helper training calls every `every` steps and validation on every batch
        # (a step-count guard means nothing there): validation code that draws.
        Valid(
            "import lightning as L\nimport matplotlib.pyplot as plt\n\n\n"
            "def panel_plot(images):\n"
            "    fig, ax = plt.subplots()\n"
            "    ax.imshow(images[0, 0].detach().cpu().numpy())\n"
            "    return fig\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self, every):\n"
            "        super().__init__()\n"
            "        self.every = every\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        if self.global_step % self.every == 0:\n"
            "            self.logger.experiment.add_figure('t', panel_plot(out))\n"
            "        return out.mean()\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        if self.global_step % self.every == 0:\n"
            "            self.logger.experiment.add_figure('v', panel_plot(out))\n"
        ),
        # Tables torch moves with the module (a buffer), one a hook moves to the device, and
        # a CPU table indexed by a host number: no copy of a device index.
        Valid(
            _HEAD + "    def __init__(self, steps=10):\n"
            "        super().__init__()\n"
            "        self.register_buffer('weights', torch.ones(steps))\n"
            "        self.scales = torch.linspace(0, 1, steps)\n"
            "        self.offsets = torch.zeros(steps)\n\n"
            "    def on_fit_start(self):\n"
            "        self.scales = self.scales.to(self.device)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        t = torch.randint(0, 10, (batch.shape[0],), device=self.device)\n"
            "        out = self(batch) * self.weights[t] * self.scales[t]\n"
            "        return out.mean() + self.offsets[batch_idx % 10]\n"
        ),
        # A helper the training step calls every `log_every` steps, and the validation
        # step only under a parameter Lightning never passes (`show=False` after the
        # dataloader index): from both hooks it runs only some steps.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        if batch_idx % self.hparams.log_every == 0:\n"
            "            self.match_points(batch, out)\n"
            "        return out.mean()\n\n"
            "    def validation_step(self, batch, batch_idx, loader_idx=0, show=False):\n"
            "        out = self(batch)\n"
            "        if show:\n"
            "            return self.match_points(batch, out)\n"
            "        return out.mean()\n\n"
            "    def match_points(self, batch, out):\n"
            "        return pair_up(out.detach().cpu(), batch.cpu())\n"
        ),
        # A helper named for writing, called from the validation step under an opt-in flag:
        # each item's copy ends only in medical-imaging file writers (SimpleITK, torchio).
        Valid(
            "import SimpleITK as sitk\nimport torchio as tio\n"
            + _HEAD
            + "    def validation_step(self, batch, batch_idx):\n"
            "        loss = self(batch['image']).mean()\n"
            "        if self.dump_patches:\n"
            "            self.write_patches(batch, batch_idx)\n"
            "        return loss\n\n"
            "    def write_patches(self, batch, batch_idx):\n"
            "        for name in ('image', 'mask'):\n"
            "            img = tio.ScalarImage(tensor=batch[name][0].cpu()).as_sitk()\n"
            "            sitk.WriteImage(img, f'{name}_{batch_idx}.nii.gz')\n"
        ),
        # A converter defined inside a saving helper hands back the host image it writes.
        Valid(
            "import SimpleITK as sitk\nimport torchio as tio\n"
            + _HEAD
            + "    def validation_step(self, batch, batch_idx):\n"
            "        self.save_prediction(self(batch['image']), batch_idx)\n\n"
            "    def save_prediction(self, pred, batch_idx):\n"
            "        def volume(t):\n"
            "            return tio.LabelMap(tensor=t[0].detach().cpu()).as_sitk()\n\n"
            "        sitk.WriteImage(volume(pred), f'pred_{batch_idx}.nii.gz')\n"
        ),
        # A validation step's one copy that ends only in array and NIfTI files.
        Valid(
            "import nibabel as nib\nimport numpy as np\n"
            + _HEAD
            + "    def validation_step(self, batch, batch_idx):\n"
            "        seg = self(batch).argmax(1).detach().cpu().numpy()\n"
            "        np.save(f'seg_{batch_idx}.npy', seg)\n"
            "        nib.save(nib.Nifti1Image(seg[0].astype('uint8'), np.eye(4)), 'seg.nii')\n"
        ),
        # A validation step's one copy whose values end only in image writers and loggers
        # (through locals, arithmetic, numpy; a PSNR of the written image is a number): the
        # copy is what the writers need.
        Valid(
            "import imageio\n" + _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, target = batch\n"
            "        pred = self(x).clamp(0, 1).detach().cpu()\n"
            "        err = (pred - target.cpu()).abs()\n"
            "        psnr = -10 * torch.log10(torch.mean(err**2))\n"
            "        grid = torch.cat([pred, err * 4], dim=-1)\n"
            "        self.logger.experiment.add_images('val/pred', grid, self.global_step)\n"
            "        page = grid[0].permute(1, 2, 0).numpy() * 255\n"
            "        imageio.imwrite(f'val_{batch_idx}.png', page.astype('uint8'))\n"
            "        return {'psnr': psnr}\n"
        ),
        # Only what runs after the copy reads it: `depth` feeds the returned loss before it
        # is rebound to its host copy.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, target = batch\n"
            "        depth = self(x)\n"
            "        loss = (depth - target).abs().mean()\n"
            "        depth = depth.detach().cpu()\n"
            "        self.logger.experiment.add_images('val/depth', depth, self.global_step)\n"
            "        return loss\n"
        ),
        # A CUDA chain's device applied to a value not known to be a device tensor (a
        # third-party object built on the host): no copy to report.
        Valid(
            "import lightning as L\nimport torch\nfrom graphs import SparseGraph\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "        graph = SparseGraph(batch.shape[0]).to(device)\n"
            "        return self(batch, graph).sum()\n"
        ),
        # The step's batch index handed to a helper is a Python int, not its data.
        Valid(
            "import lightning as L\n\n\n"
            "def phase(step):\n"
            "    return int(step) % 4\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum() * phase(batch_idx)\n"
        ),
        # Accumulate, then flush: the export runs once every `flush_every` samples.
        Valid(
            "import numpy as np\n" + _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        emb = self(batch)\n"
            "        self.bank = emb if self.bank is None else torch.cat([self.bank, emb])\n"
            "        if self.bank.shape[0] > self.flush_every:\n"
            "            self.export()\n"
            "            self.bank = None\n\n"
            "    def export(self):\n"
            "        np.save('bank.npy', self.bank.cpu().numpy())\n"
        ),
        # Code switched off by hand (`if False:`, the `else` of `if True:`) never runs, nor
        # what it calls.
        Valid(
            "import numpy as np\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if False:\n"
            "            self.saved = batch.cpu().numpy()\n"
            "            self.dump(batch)\n"
            "        if True:\n"
            "            pass\n"
            "        else:\n"
            "            self.saved = np.array(batch.cpu())\n"
            "        return loss\n\n"
            "    def dump(self, batch):\n"
            "        np.save('batch.npy', batch.cpu().numpy())\n"
        ),
        # A module-level device chosen at start-up ("cpu" only in one branch), and a local
        # set in branches: not only the CPU device.
        Valid(
            "import lightning as L\nimport torch\n\n"
            "if torch.cuda.is_available():\n    device = 'cuda'\nelse:\n    device = 'cpu'\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        target = 'cpu'\n"
            "        if self.on_accelerator:\n"
            "            target = self.device\n"
            "        return self(batch.to(device)).to(target).sum()\n"
        ),
        # An attribute that names another device (or is set to one elsewhere).
        Valid(
            _HEAD + "    def __init__(self, device):\n"
            "        super().__init__()\n"
            "        self.target_device = torch.device('cpu')\n"
            "        self.cuda_name = 'cuda'\n"
            "    def setup(self, stage):\n"
            "        self.target_device = self.device\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        a = self(batch).to(self.target_device)\n"
            "        return a.to(self.cuda_name).sum()\n"
        ),
        # min/max of numbers and shapes, numbers where torch wants them, integer indices.
        Valid(
            _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.heads = torch.nn.ModuleList([torch.nn.Linear(4, 2)] * 3)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        n = min(batch.shape[0], 8)\n"
            "        assert all(d > 0 for d in batch.shape) and any(batch.shape)\n"
            "        y = torch.nan_to_num(batch, nan=0.0)\n"
            "        m = torch.minimum(y, torch.zeros_like(y))\n"
            "        return self.heads[batch_idx % 3](y[:n] + m[:n])\n"
        ),
        # A project class deriving from `nn.Parameter` (a tensor, not a module), made by
        # classmethod and staticmethod factories (`cls(...)`, another factory): indexing it
        # with device atom types is a gather on the device.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class TypeTable(torch.nn.Parameter):\n"
            "    @classmethod\n"
            "    def of_width(cls, width=1):\n"
            "        return cls(torch.zeros(64, width))\n\n"
            "    @staticmethod\n"
            "    def scalar():\n"
            "        return TypeTable.of_width(1)\n\n\n"
            "class Radius(TypeTable):\n"
            "    pass\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.scale = TypeTable.scalar()\n"
            "        self.radius = Radius.of_width(2)\n"
            "        self.bias = TypeTable(torch.zeros(64))\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        kinds, y = batch\n"
            "        s = self.scale[kinds].squeeze() + self.bias[kinds]\n"
            "        return (s * self.radius[kinds].sum(-1) - y).pow(2).mean()\n"
        ),
        # A tensor indexed by a device integer tensor is a gather on the device, also when
        # the tensor comes from a parameter annotated `dict` (its entries may be tensors).
        Valid(
            "import numpy as np\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.pair_score(self(batch), {'mask': batch > 0}, [[0, 1]])\n\n"
            "    def pair_score(self, coords: torch.Tensor, feats: dict, groups):\n"
            "        keep = feats['mask'].to(coords).bool()\n"
            "        for group in groups:\n"
            "            idx = torch.from_numpy(np.asarray(group)).to(coords.device).long()\n"
            "            pair = keep[:, None] * keep[None, idx]\n"
            "            pair[idx] = pair[idx] * 2\n"
            "        return coords.sum() + pair.sum()\n"
        ),
        # A dict built here hashes a tensor key by its identity: nothing is read.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        keys, labels = batch\n"
            "        seen = {}\n"
            "        for key, label in zip(keys, labels):\n"
            "            seen[key] = label\n"
            "        for key in self(keys):\n"
            "            seen[key] = seen.get(key)\n"
            "        return self(keys).sum()\n"
        ),
        # The error path: printed just before the step raises, not every step.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.loss_fn(self(batch))\n"
            "        if self.check_finite:\n"
            "            bad = loss * 0\n"
            "            print(f'non-finite loss {loss} ({bad})')\n"
            "            raise FloatingPointError('non-finite loss')\n"
            "        return loss\n"
        ),
        # The same before a call that ends the program (`sys.exit`, `exit()`, `os._exit`).
        Valid(
            "import sys\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        if self.strict:\n"
            "            print('diverged:', out.mean())\n"
            "            sys.exit(3)\n"
            "        return out.sum()\n"
        ),
        # A branch that only warns: its message is built when something is wrong, not every
        # step (the `if` itself is TPU104's).
        Valid(
            "import warnings\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        scores = self(batch)\n"
            "        finite = torch.isfinite(scores)\n"
            "        if not finite.all():\n"
            "            warnings.warn(f'{int((~finite).sum())} scores are not finite')\n"
            "        return scores.nan_to_num().mean()\n"
        ),
        # A branch the code before it makes unreachable: `width` is never None there.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx, width=None):\n"
            "        codes = self(batch)\n"
            "        if width is None:\n"
            "            width = batch.shape[-1]\n"
            "        if width is not None:\n"
            "            bins = width\n"
            "        else:\n"
            "            bins = int(codes.max()) + 1\n"
            "        return self.histogram(codes, bins)\n"
        ),
        # The first validation batch only (EXAMPLES T9).
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        X, y = batch\n"
            "        if self.current_epoch == 0 or batch_idx > 0:\n            return\n"
            "        X = X.cpu().numpy()\n"
        ),
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        if batch_idx % 100 == 0:\n            print(f'loss {loss}')\n"
            "        return loss\n"
        ),
        # predict_step returns host values on purpose.
        Valid(
            _HEAD + "    def predict_step(self, batch, batch_idx):\n"
            "        ids = self(batch).argmax(-1)\n"
            "        ids = ids.cpu().numpy()\n        return list(zip(ids, batch))\n"
        ),
        Valid(
            _HEAD + "    def predict_step(self, batch, batch_idx):\n"
            "        return self(batch).cpu()\n"
        ),
        # numpy values and CPU tensors.
        Valid(
            "import numpy as np\n" + _HEAD + "    def forward(self, x):\n"
            "        weights = np.ones(4)\n        w = weights.tolist()\n"
            "        t = torch.tensor([1, 2]).tolist()\n        return x * w[0] * t[0]\n"
        ),
        # Epoch-level hooks run once.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        preds = torch.cat(self.preds).cpu().numpy()\n"
        ),
        # Shapes and Python numbers.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        n = int(batch.shape[0])\n        scale = float(self.hparams.lr)\n"
            "        print(f'batch of {n} at {batch.shape}')\n"
            "        return self(batch) * scale\n"
        ),
        # Only raised on failure.
        Valid(
            _HEAD + "    def forward(self, x):\n"
            "        if x.dim() != 2:\n            raise ValueError(f'bad input {x}')\n"
            "        return x\n"
        ),
        # Under a CUDA check.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        if torch.cuda.is_available():\n            batch.cpu()\n"
            "        return self(batch)\n"
        ),
        # Conversions passed to self.log are TPU102's.
        Valid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + '        self.log("loss", float(loss))\n        return loss\n'
        ),
        # `max` of the step's data that may be a Python list of lengths: not judged.
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        longest = max(batch['lengths'])\n"
            "        return self(batch['x'], longest)\n"
        ),
        # A forward's parameter used only as a sequence (and rebound from another value
        # before its tensor use): not judged.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        longest = max(lengths)\n"
            "        lengths = torch.as_tensor(lengths)\n"
            "        return x[:, :longest] * lengths.unsqueeze(1)\n"
        ),
        # Validation images written to disk: the numpy copy is what writing needs, in a
        # function named for saving or drawing (or reached only through one).
        Valid(
            "import imageio\nimport lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        depth = self(batch)\n"
            "        self.save_image_grid(f'val-{batch_idx}.png', [self.vis_depth(depth)])\n\n"
            "    def vis_depth(self, depth):\n"
            "        return depth.detach().cpu().numpy().clip(0, 1)\n\n"
            "    def save_image_grid(self, name, views):\n"
            "        imageio.imwrite(name, self.as_array(views))\n\n"
            "    def as_array(self, views):\n"
            "        return [v if not torch.is_tensor(v) else v.cpu().numpy() for v in views]\n"
        ),
        # An element of a tuple returned inside a tuple, a Python list: no device read.
        Valid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Codebook(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.codes = nn.Embedding(n, 8)\n\n"
            "    def forward(self, z):\n"
            "        dist = z @ self.codes.weight.t()\n"
            "        picked = dist.argmin(dim=1)\n"
            "        return z, dist.mean(), (dist.shape, [1, 2], picked)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.book = Codebook(4)\n\n"
            "    def encode(self, x):\n"
            "        z, loss, stats = self.book(x)\n"
            "        self.seen = stats[1].tolist()\n"
            "        return z, loss\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        z, loss = self.encode(batch)\n"
            "        return loss\n"
        ),
        # A module dict indexed by the names a mapping annotated with string keys yields
        # (iterated, or its `.keys()`): a key lookup, no tensor read.
        Valid(
            "from typing import Dict\n\nimport lightning as L\nimport torch\n"
            "import torch.nn.functional as F\nfrom torch import Tensor\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def __init__(self, names):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(8, 3)\n"
            "        self.class_weights = torch.nn.ParameterDict(\n"
            "            {n: torch.nn.Parameter(torch.ones(3)) for n in names}\n"
            "        )\n\n"
            "    def head_losses(self, scores: Dict[str, Tensor], labels: Dict[str, Tensor]):\n"
            "        terms = []\n"
            "        for name in labels:\n"
            "            weight = self.class_weights[name]\n"
            "            terms.append(F.cross_entropy(scores[name], labels[name], weight=weight))\n"
            "        for name in labels.keys():\n"
            "            terms.append(self.class_weights[name].sum())\n"
            "        return terms\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, labels = batch\n"
            "        out = self.net(x)\n"
            "        return sum(self.head_losses({n: out for n in labels}, labels))\n"
        ),
    )
    INVALID = (
        # A run-once guard whose flag is set in one branch only: while the branch is not
        # taken, the copy runs on every step.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "class ActNorm(nn.Module):\n"
            "    def __init__(self, width):\n"
            "        super().__init__()\n"
            "        self.scale = nn.Parameter(torch.ones(width))\n"
            "        self.ready = False\n\n"
            "    def forward(self, x):\n"
            "        if not self.ready:\n"
            "            spread = x.std(0).cpu()\n"
            "            if spread.min() > 0:\n"
            "                self.ready = True\n"
            "        return x * self.scale\n",
            line=13,
        ),
        # The flag is armed again before every batch: the block runs every step.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.scale = torch.nn.Parameter(torch.ones(4))\n"
            "        self.initialized = False\n\n"
            "    def on_train_batch_start(self, batch, batch_idx):\n"
            "        self.initialized = False\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        if not self.initialized:\n"
            "            spread = batch.std(0).cpu()\n"
            "            self.scale.data = 1.0 / spread.to(self.device)\n"
            "            self.initialized = True\n"
            "        return (batch * self.scale).sum()\n",
            line=16,
        ),
        # `math.sqrt` of a device buffer's arithmetic: Python converts the tensor with
        # `float()` first, a sync every step.
        Invalid(
            "import math\nimport torch\nfrom torch import nn\n\n\n"
            "class RunningScale(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.register_buffer('seen', torch.zeros(()))\n\n"
            "    def forward(self, x):\n"
            "        before = self.seen\n"
            "        total = before + x.size(0)\n"
            "        scale = math.sqrt(before / total)\n"
            "        self.seen = total\n"
            "        return x * scale\n",
            line=14,
            message="`math` converts it with `float()`",
        ),
        # A functional torchmetrics metric is a tensor where its inputs are: `float()` of it
        # in the returned dict reads the device every training step.
        Invalid(
            "import lightning as L\nimport torch.nn.functional as F\n"
            "from torchmetrics.functional import f1_score\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        out = self.net(x)\n"
            "        loss = F.cross_entropy(out, y)\n"
            "        f1 = f1_score(out, y, task='binary')\n"
            "        return {'loss': loss, 'f1': float(f1)}\n",
            line=12,
        ),
        # Text decoded every training step from the device ids of the model's guesses.
        Invalid(
            _HEAD + "    def __init__(self, tokenizer):\n"
            "        super().__init__()\n"
            "        self.tokenizer = tokenizer\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        logits = self(batch['ids'])\n"
            "        self.spell(logits.argmax(-1))\n"
            "        return logits.mean()\n\n"
            "    def spell(self, guess):\n"
            "        return [self.tokenizer.decode(row) for row in guess]\n",
            line=16,
            message="decodes the device tensor `row` to text",
        ),
        # A local tokenizer built from a pretrained name, decoding in the validation step.
        Invalid(
            "import lightning as L\nfrom transformers import AutoTokenizer\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        vocab = AutoTokenizer.from_pretrained('some/vocab')\n"
            "        out = self(batch).argmax(dim=-1)\n"
            "        return vocab.batch_decode(out, skip_special_tokens=True)\n",
            line=9,
            message="decodes the device tensor `out`",
        ),
        # TensorBoard's writer converts a device scalar to a number every step.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch).mean()\n"
            "        board = self.logger.experiment\n"
            "        board.add_scalars('parts', {'loss': loss, 'lr': 0.1}, self.global_step)\n"
            "        return loss\n",
            line=9,
            message="writes the device tensor `loss` as a scalar",
        ),
        # A metric built with `compute_on_cpu=True`: torchmetrics moves its list states to
        # the CPU after each update, in the update and in the direct call alike.
        Invalid(
            "import lightning as L\nfrom torchmetrics import CatMetric\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.scores = CatMetric(compute_on_cpu=True)\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        score = self(batch).amax(dim=1)\n"
            "        self.scores(score)\n",
            line=12,
            message="built with `compute_on_cpu=True`",
        ),
        # A list of device accuracies kept on a submodule by the training step, then made a
        # tensor in the submodule's forward: each element is read on the host.
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Mixer(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(3, 3)\n"
            "        self.rates = [1.0, 1.0, 1.0]\n\n"
            "    def forward(self, x):\n"
            "        scale = torch.tensor(self.rates, device=x.device)\n"
            "        return self.proj(x) * scale\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.mixer = Mixer()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        out = self.mixer(x)\n"
            "        hit = (out.argmax(-1) == y).float()\n"
            "        first, second = hit[:, 0].mean(), hit[:, 1].mean()\n"
            "        self.mixer.rates = [first, second, first * second]\n"
            "        return out.mean()\n",
            line=13,
            message="a list of device tensors",
        ),
        # A helper returning tuples of different lengths under a flag (three elements with
        # the distances, two without): unpacked into three names, the third is the device
        # norm, copied to the host by a method of the caller every step.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "def neighbours(pos, cutoff, with_dist=True):\n"
            "    dist = torch.cdist(pos, pos)\n"
            "    keep = dist < cutoff\n"
            "    if with_dist:\n"
            "        return keep, dist, dist.norm(dim=-1)\n"
            "    return keep, None\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, pos):\n"
            "        keep, dist, norms = neighbours(pos, 1.0)\n"
            "        self.track(norms)\n"
            "        return (dist * keep).sum()\n\n"
            "    def track(self, norms):\n"
            "        self.seen = norms.detach().cpu().numpy()\n",
            line=20,
            message="in `track` (called from forward)",
        ),
        # The same helper handed a device tensor's device: its tensors are on the device.
        Invalid(
            "import torch\nfrom torchmetrics import Metric\n\n\n"
            "def to_padded(rows, dtype=None, device=None):\n"
            "    return torch.as_tensor(rows, dtype=dtype, device=device)\n\n\n"
            "class Overlap(Metric):\n"
            "    def update(self, preds, target):\n"
            "        hits = to_padded(target, device=preds.device) * preds\n"
            "        self.total += float(hits.max())\n",
            line=12,
        ),
        # An element of a tuple returned inside a tuple (`_, _, stats = module(x)`), a
        # device tensor: read on the host every validation step.
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Codebook(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.codes = nn.Embedding(n, 8)\n\n"
            "    def forward(self, z):\n"
            "        dist = z @ self.codes.weight.t()\n"
            "        picked = dist.argmin(dim=1)\n"
            "        return z, dist.mean(), (dist.shape, [1, 2], picked)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.book = Codebook(4)\n\n"
            "    def encode(self, x):\n"
            "        z, loss, stats = self.book(x)\n"
            "        self.seen = stats[2].tolist()\n"
            "        return z, loss\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        z, loss = self.encode(batch)\n"
            "        return loss\n",
            line=24,
        ),
        # The same writing helper called from the training step: paid every step, reported.
        Invalid(
            "import SimpleITK as sitk\nimport torchio as tio\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch['image']).mean()\n"
            "        self.write_patches(batch, batch_idx)\n"
            "        return loss\n\n"
            "    def write_patches(self, batch, batch_idx):\n"
            "        for name in ('image', 'mask'):\n"
            "            img = tio.ScalarImage(tensor=batch[name][0].cpu()).as_sitk()\n"
            "            sitk.WriteImage(img, f'{name}_{batch_idx}.nii.gz')\n",
            line=15,
        ),
        # A helper named for writing whose copy also feeds the value it returns, or a
        # training step's own copy to a file writer: reported.
        Invalid(
            "import numpy as np\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.save_outputs(self(batch))\n\n"
            "    def save_outputs(self, out):\n"
            "        host = out.detach().cpu().numpy()\n"
            "        np.save('out.npy', host)\n"
            "        return host.sum(1)\n",
            line=11,
        ),
        # The converter hands back the copy itself, not an image object: reported.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.save_prediction(self(batch))\n\n"
            "    def save_prediction(self, pred):\n"
            "        def host(t):\n"
            "            return t.detach().cpu()\n\n"
            "        return host(pred).sum()\n",
            line=11,
        ),
        Invalid(
            "import numpy as np\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            "        np.save('out.npy', out.detach().cpu().numpy())\n"
            "        return out.mean()\n",
            line=9,
        ),
        # The same copy also logged, or kept on the module, or in a training step: reported.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        depth = self(batch).detach().cpu()\n"
            "        self.logger.experiment.add_images('val/depth', depth, self.global_step)\n"
            "        self.log('val_depth', depth)\n",
            line=7,
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        depth = self(batch).detach().cpu()\n"
            "        self.logger.experiment.add_images('val/depth', depth, self.global_step)\n"
            "        self.outputs.append(depth[:, 0])\n",
            line=7,
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        depth = self(batch)\n"
            "        self.logger.experiment.add_images('train', depth.cpu(), self.global_step)\n"
            "        return depth.mean()\n",
            line=8,
        ),
        # One copy per chunk of a loop: the writer needs one copy of the assembled result.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        chunks = []\n"
            "        for part in batch.split(1024):\n"
            "            chunks.append(self(part).cpu())\n"
            "        self.logger.experiment.add_images('val/out', torch.cat(chunks), 0)\n",
            line=9,
        ),
        # The same copy in a validation helper that scores rather than writes.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        depth = self(batch)\n"
            "        self.scores.append(self.depth_error(depth, batch))\n\n"
            "    def depth_error(self, depth, target):\n"
            "        return (depth - target).abs().mean().detach().cpu()\n",
            line=11,
        ),
        # A CUDA/MPS device chain picks the CPU on a TPU host: moving a device tensor there
        # is a device-to-host copy every step.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "def pick_device():\n"
            "    if torch.cuda.is_available():\n"
            "        return torch.device('cuda')\n"
            "    return torch.device('cpu')\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "        self.kept = self(batch).detach().to(device)\n"
            "        self.ids = batch.argmax(-1).to(pick_device())\n"
            "        return self(batch).sum()\n",
            count=2,
            line=14,
        ),
        # A module-level helper the step hands a part of its batch: the step's tensors.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "def lengths_to_mask(lengths):\n"
            "    widths = lengths.tolist()\n"
            "    return torch.arange(max(widths))[None, :] < torch.tensor(widths)[:, None]\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        feats, lengths = batch\n"
            "        return self(feats, lengths_to_mask(lengths)).sum()\n",
            line=6,
            message="`lengths_to_mask` (called from training_step)",
        ),
        # A size test whose body never empties what it measures: every step once it holds.
        Invalid(
            "import numpy as np\n" + _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        emb = self(batch)\n"
            "        self.bank = emb if self.bank is None else torch.cat([self.bank, emb])\n"
            "        if self.bank.shape[0] > self.flush_every:\n"
            "            self.export()\n\n"
            "    def export(self):\n"
            "        np.save('bank.npy', self.bank.cpu().numpy())\n",
            message="copies",
        ),
        # `.to()` a name or attribute that holds the CPU device (detection references).
        Invalid(
            _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cpu_device = torch.device('cpu')\n"
            "    def validation_step(self, batch, batch_idx):\n"
            "        images, targets = batch\n"
            "        outputs = [{k: v.to(self.cpu_device) for k, v in o.items()}\n"
            "                   for o in self.model(images)]\n"
            "        cpu = torch.device('cpu')\n"
            "        return outputs, self(images).to(cpu)\n",
            count=2,
            message="copies a device tensor to the host",
        ),
        # The same branch when nothing set the name before: it runs.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx, width=None):\n"
            "        codes = self(batch)\n"
            "        if width is not None:\n"
            "            bins = width\n"
            "        else:\n"
            "            bins = int(codes.max()) + 1\n"
            "        return self.histogram(codes, bins)\n",
            line=11,
        ),
        # A warning beside other work: the branch is not only a warning.
        Invalid(
            "import warnings\n" + _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        scores = self(batch)\n"
            "        if scores.requires_grad:\n"
            "            warnings.warn(f'{int(scores.sum())} total')\n"
            "            self.seen += 1\n"
            "        return scores.mean()\n",
            line=10,
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        samples, indices, weights = batch\n"
            "        indices = indices.cpu().numpy()\n"
            "        return self(samples)\n",
            line=8,
            message="in training_step",
            expected_suggestion=_HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        samples, indices, weights = batch\n"
            "        indices = indices.numpy()\n"
            "        return self(samples)\n",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        preds = self(x)\n"
            "        self.preds.append(preds.detach().cpu())\n"
            "        self.targets.append(y.cpu())\n",
            count=2,
        ),
        Invalid(
            _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        print(loss)\n        print(f'loss={loss:.3f}')\n"
            "        self.total += float(loss)\n        return loss\n",
            count=3,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            + _LOSS
            + "        self.total += float(loss)\n        return loss\n",
        ),
        # Predictions collected for the epoch end, joined there: deferred.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        preds = self(x).argmax(dim=1)\n"
            "        self.preds.append(preds.cpu())\n\n"
            "    def on_validation_epoch_end(self):\n"
            "        preds = torch.cat(self.preds)\n"
            "        self.preds.clear()\n",
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n        preds = self(x).argmax(dim=1)\n"
            "        self.preds.append(preds.detach())\n\n"
            "    def on_validation_epoch_end(self):\n"
            "        preds = torch.cat(self.preds).cpu()\n"
            "        self.preds.clear()\n",
        ),
        # Whole outputs kept per step: too large to keep on the device, said in the message.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        self.logits.append(self(x).cpu())\n\n"
            "    def on_validation_epoch_end(self):\n"
            "        logits = torch.cat(self.logits)\n"
            "        self.logits.clear()\n",
            applicability=Applicability.DISPLAY_ONLY,
            message="not visibly small",
        ),
        # The same flag with a true default (or one Lightning passes: the dataloader index)
        # is on in Lightning's loop: the helper runs every validation step.
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx, loader_idx=0, show=True):\n"
            "        out = self(batch)\n"
            "        if show:\n"
            "            return self.match_points(batch, out)\n"
            "        return out.mean()\n\n"
            "    def match_points(self, batch, out):\n"
            "        return pair_up(out.detach().cpu(), batch.cpu())\n",
            message="called from validation_step",
        ),
        Invalid(
            _HEAD + "    def validation_step(self, batch, batch_idx, loader_idx=0):\n"
            "        out = self(batch)\n"
            "        if loader_idx:\n"
            "            return self.match_points(batch, out)\n"
            "        return out.mean()\n\n"
            "    def match_points(self, batch, out):\n"
            "        return pair_up(out.detach().cpu(), batch.cpu())\n",
            message="called from validation_step",
        ),
        # A helper called from the step, and a tolist() on a device tensor.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        return self.reshape_labels(self(batch), batch)\n\n"
            "    def reshape_labels(self, logits, labels):\n"
            "        labels = labels.cpu().tolist()\n        return logits\n",
            message="called from training_step",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = self(batch)\n"
            '        host = out.to("cpu")\n        return out\n',
        ),
        # Implicit reads: Python's min/max compare on the host, torch wants a number, a
        # Python index.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        offsets = torch.arange(-2, 3, device=self.device)\n"
            "        low = min(offsets)\n"
            "        return self(batch, low)\n",
            line=8,
            message="iterates the device tensor `offsets` and compares its elements",
        ),
        # A forward's parameter the forward itself uses as a tensor (`lengths.cpu()`).
        Invalid(
            "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
            "class Recognizer(nn.Module):\n"
            "    def forward(self, feats, lengths, targets):\n"
            "        longest = max(lengths)\n"
            "        feats = self.encode(feats[:, :longest])\n"
            "        lengths = lengths // 4\n"
            "        return self.ctc(feats, targets, lengths.long())\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = Recognizer()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.net(batch['x'], batch['len'], batch['y'])\n",
            line=8,
            message="iterates the device tensor `lengths`",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        sizes = self(batch).sum(-1)\n"
            "        assert all(sizes >= 0)\n"
            "        return sizes.mean()\n",
            line=8,
            message="iterates the device tensor `sizes >= 0` and tests its elements",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        loss = self(batch)\n"
            "        return min(loss, 3.0)\n",
            message="compares the device tensor `loss` on the host",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        fill = self(x).mean()\n"
            "        return torch.nan_to_num(y, nan=fill)\n",
            message="where torch wants a Python number",
        ),
        Invalid(
            _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.heads = torch.nn.ModuleList([torch.nn.Linear(4, 2)] * 3)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, task = batch\n"
            "        return self.heads[task.argmax()](x)\n",
            message="as a Python index",
        ),
        # A CPU table kept as a plain attribute (a learned `nn.Parameter` only behind an
        # option of `__init__`), indexed by device timesteps: torch copies them to the host.
        Invalid(
            _HEAD + "    def __init__(self, steps=10, learn=False):\n"
            "        super().__init__()\n"
            "        self.table = torch.full((steps,), 0.5)\n"
            "        if learn:\n"
            "            self.table = torch.nn.Parameter(self.table)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        t = torch.randint(0, 10, (batch.shape[0],), device=self.device)\n"
            "        return (self(batch) * self.table[t].to(self.device)).mean()\n",
            line=14,
            message="a CPU tensor kept as a plain attribute",
        ),
        # A list built in the step, and a list attribute, indexed by device tensors.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        owner = (self(batch) > 0).nonzero()[:, 0]\n"
            "        groups = [[] for _ in range(4)]\n"
            "        for k in owner:\n"
            "            groups[k].append(k)\n"
            "        return self(batch).sum()\n",
            message="as a Python index",
        ),
        Invalid(
            _HEAD + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.weights = [0.5, 1.0, 2.0]\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        return self(x).sum() * self.weights[y.argmax()]\n",
            message="as a Python index",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        func = node.func
        qualified = ctx.qualify(func) or ""
        if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _NUMBER_PARAMETERS:
            self._check_number_arguments(node, qualified.rsplit(".", 1)[-1])
        if qualified in ("torch.tensor", "torch.as_tensor") or (
            isinstance(func, cst.Attribute)
            and func.attr.value == "new_tensor"
            and ctx.value_kind(func.value) in (ValueKind.DEVICE, ValueKind.CPU)
        ):
            self._check_listed_tensors(node)
        if qualified.startswith("math.") and qualified[len("math.") :] in _MATH_READS:
            self._check_math(node)
            return
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if _DECODER.match(method) and _decoder_owner(ctx, func.value, self.bindings):
                self._check_decoded(node)
            elif method in ("add_scalar", "add_scalars"):
                self._check_scalar_summary(node, method)
            metric = self_attribute_name(func.value) if method in ("update", "forward") else None
            if metric is None and "compute_on_cpu" in ctx.source:
                metric = self_attribute_name(func)  # `self.metric(preds, y)`
            if metric is not None:
                self._check_metric_on_cpu(node, metric)
            if (
                method in ("cpu", "tolist")
                or (method == "numpy" and keyword(node, "force") is not None)
                or (method == "to" and _to_cpu(ctx, node))
            ):
                self._check_transfer(node, method)
            elif method == "to" and _to_cuda_chain(ctx, node):
                # Code written for CUDA moves whatever it has to the chain's device; only a
                # tensor known to be on the device is copied to the host there.
                self._check_transfer(node, method, surely_device=True)
            return
        if isinstance(func, cst.Name) and func.value not in ctx.aliases.bindings:
            if func.value in _CONVERSIONS and len(node.args) == 1 and not node.args[0].star:
                self._check_conversion(node, func.value)
            elif func.value == "print":
                self._check_print(node)
            elif func.value in _COMPARING and len(node.args) >= 2:
                self._check_comparing(node, func.value)
            elif func.value in _ITERATING and len(node.args) == 1:
                self._check_iterated(node, func.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`self.heads[k]` with a device tensor `k`: `__index__` reads it on the host."""
        ctx = self.ctx
        if not ctx.in_hot_code or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index) or isinstance(index.value, (cst.Integer, cst.Slice)):
            return
        plain = None if self._python_sequence(node.value) else _plain_cpu_attribute(ctx, node)
        if plain is None and not self._python_sequence(node.value):
            return  # (asked again only for the few subscripts of neither shape)
        if ctx.value_kind(index.value) is not ValueKind.DEVICE:
            return
        if not is_torch_tensor(ctx, index.value, self.bindings) and not isinstance(
            index.value, cst.Call
        ):
            return  # a name or element of the step's data that may be a Python number
        if quiet(ctx, node) or in_exception_path(ctx, node):
            return
        if plain is not None:
            self.report(
                node,
                f"`{source_of(ctx, node)}` in {ctx.hot_reason} indexes `self.{plain}`, a CPU "
                "tensor kept as a plain attribute (not a registered buffer: moving the module "
                f"does not move it), with the device tensor `{source_of(ctx, index.value)}`: "
                "torch copies the index to the host, a sync every step; register it with "
                f'`self.register_buffer("{plain}", ...)` so it lives on the device',
                applicability=Applicability.DISPLAY_ONLY,
            )
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} uses the device tensor "
            f"`{source_of(ctx, index.value)}` as a Python index, which reads it on the host: "
            "a sync every step; select with a number the host already has, or on the device "
            "(`torch.stack` of the outputs and `index_select`/`gather`)",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _python_sequence(self, base: cst.BaseExpression) -> bool:
        """Whether `base` is surely what Python indexes with `__index__`: a module list
        (`nn.ModuleList`, `nn.Sequential`), or a list or tuple built in this code, directly or
        in every assignment of the `self.<attr>` it names. Another host value (a parameter
        annotated `dict`, an element of one) may be a CPU tensor, which a tensor indexes on
        its device; a dict hashes a tensor key by identity: no read either."""
        ctx = self.ctx
        if isinstance(base, (cst.Dict, cst.Call)):
            return False
        kind = ctx.value_kind(base)
        if kind is ValueKind.MODULE:
            return True
        if kind is not ValueKind.HOST:
            return False
        if ctx.is_sequence(base):
            return True
        attribute = self_attribute_name(base)
        if attribute is None:
            return False
        assigned = _self_assignments(ctx, attribute)
        return bool(assigned) and all(ctx.is_sequence(value) for value in assigned)

    def _check_comparing(self, node: cst.Call, name: str) -> None:
        ctx = self.ctx
        values = [a.value for a in node.args if a.keyword is None and not a.star]
        tensors = [v for v in values if ctx.value_kind(v) is ValueKind.DEVICE]
        if not tensors:
            return
        if quiet(ctx, node) or in_exception_path(ctx, node) or logged_value(ctx, node):
            return
        tensor = source_of(ctx, tensors[0])
        torch_name = "clamp" if len(tensors) < len(values) else f"{name}imum"
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} compares the device tensor "
            f"`{tensor}` on the host (Python's `{name}` calls `bool()` on a comparison): a "
            f"sync every step; use `torch.{torch_name}` to keep it on the device",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_iterated(self, node: cst.Call, name: str) -> None:
        """`min(t)`, `max(t)`, `sorted(t)`, `all(t)`, `any(t)` of one device tensor: Python
        iterates it and compares or tests its elements on the host, one `bool()` (a sync)
        per element."""
        ctx = self.ctx
        arg = node.args[0]
        if arg.keyword is not None or arg.star or ctx.value_kind(arg.value) is not ValueKind.DEVICE:
            return
        if not computed_tensor(ctx, arg.value, self.bindings) and (
            not is_torch_tensor(ctx, arg.value, self.bindings)
            or (self._step_data(arg.value) and not self._used_as_tensor(arg.value))
        ):
            return  # an element of the step's data may be a list of numbers
        if quiet(ctx, node) or in_exception_path(ctx, node) or logged_value(ctx, node):
            return
        tensor = source_of(ctx, arg.value)
        tests = name in ("all", "any")
        simple = isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        receiver = tensor if simple else f"({tensor})"
        instead = f"torch.sort({tensor})" if name == "sorted" else f"{receiver}.{name}()"
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} iterates the device tensor "
            f"`{tensor}` and {'tests' if tests else 'compares'} its elements on the host"
            f" (Python's `{name}` calls `bool()` on each {'element' if tests else 'comparison'}"
            f"): a sync per element, every step; use `{instead}` to keep it on the device",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _used_as_tensor(self, node: cst.BaseExpression) -> bool:
        """A parameter the function itself calls a torch-only method on (`lengths.cpu()`,
        `lengths.size(0)`, `lengths.unsqueeze(1)`), directly or on what it computes from it
        in place with operators or its own methods (`lengths = lengths // 4`): a tensor, not
        a list of numbers. No other value (`torch.as_tensor(lengths)`) is ever bound to the
        name in the function."""
        info = self.ctx.function
        if not isinstance(node, cst.Name) or info is None:
            return False
        name = node.value
        used = False
        for inner in walk(info.node.body):
            if isinstance(inner, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = (
                    [t.target for t in inner.targets]
                    if isinstance(inner, cst.Assign)
                    else [inner.target]
                )
                value = inner.value
                for target in targets:
                    if any(isinstance(n, cst.Name) and n.value == name for n in walk(target)) and (
                        value is None or not _derived(value, name)
                    ):
                        return False  # the name holds something else too
            elif isinstance(inner, (cst.For, cst.CompFor, cst.With, cst.NamedExpr)):
                target = getattr(inner, "target", None)
                items = getattr(inner, "items", ())
                bound = [target] if target is not None else [i.asname for i in items if i.asname]
                for t in bound:
                    if any(isinstance(n, cst.Name) and n.value == name for n in walk(t)):
                        return False
            elif (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and isinstance(inner.func.value, cst.Name)
                and inner.func.value.value == name
                and inner.func.attr.value in _TENSOR_USES
            ):
                used = True
        return used

    def _step_data(self, node: cst.BaseExpression) -> bool:
        """An element of a parameter (`batch["lengths"]`, `inputs.lengths`), directly or
        through a local bound to one."""
        if isinstance(node, cst.Name):
            binding = self.bindings.lookup(node.value)
            if binding is None or binding.value is None:
                return True
            node = binding.value
        while isinstance(node, (cst.Subscript, cst.Attribute)):
            node = node.value
        info = self.ctx.function
        if not isinstance(node, cst.Name) or info is None:
            return False
        params = info.node.params
        return node.value in {
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        }

    def _under_tensor_test(self, node: cst.CSTNode) -> bool:
        """Whether `node` is an error or warning report (`logging.error(...)`,
        `warnings.warn(...)`) in the body of an `if` decided by a device tensor's value (`if
        torch.min(d) < eps: log.error(f"... {torch.min(d)}")`): it runs only when the data is
        broken, most often never; the `if` itself is TPU104's. (A `print` there stays
        reported: TPU103's fix removes the debugging block.)"""
        ctx = self.ctx
        child: cst.CSTNode = node
        parent = ctx.parent(node)
        report = None
        while parent is not None and not isinstance(parent, (cst.SimpleStatementLine, cst.If)):
            if isinstance(parent, cst.Call):
                report = parent
                break
            parent = ctx.parent(parent)
        if not (
            report is not None
            and isinstance(report.func, cst.Attribute)
            and report.func.attr.value in _ERROR_REPORTS
        ):
            return False
        parent = ctx.parent(node)
        while parent is not None and not isinstance(parent, cst.FunctionDef):
            if isinstance(parent, cst.If) and child is parent.body:
                test = parent.test
                if isinstance(test, cst.Comparison):
                    test = test.left
                elif isinstance(test, cst.UnaryOperation):
                    test = test.expression
                if computed_tensor(ctx, test, self.bindings):
                    return True
            child, parent = parent, ctx.parent(parent)
        return False

    def _check_listed_tensors(self, node: cst.Call) -> None:
        """`torch.tensor([a, n, n**2])`, `x.new_tensor([[1, n]])` with a device tensor
        computed in the code among the list's items: torch reads each such item on the host
        (a sync every step) to build the new tensor's data."""
        ctx = self.ctx
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return
        # (`torch.tensor(t)` of a tensor itself copies it where it is: no read)
        data = node.args[0].value
        stack: list[cst.BaseExpression] = [data]
        found: cst.BaseExpression | None = None
        while stack and found is None:
            item = stack.pop(0)
            if isinstance(item, (cst.List, cst.Tuple)):
                stack.extend(e.value for e in item.elements if isinstance(e, cst.Element))
            elif item is not data and computed_tensor(ctx, item, self.bindings):
                found = item
        if found is None and isinstance(data, cst.Attribute):
            # `torch.tensor(self.accs)` of an attribute the file sets to a list of device
            # tensors in hot code (`self.accs = [acc0, acc1]` in the training step): judged
            # when the whole file has been read (`leave_Module`)
            if not (quiet(ctx, node) or in_exception_path(ctx, node)):
                pending = self.ctx.shared.setdefault("TPU103 tensors of attributes", [])
                pending.append((node, data, ctx.hot_reason))
            return
        if found is None or quiet(ctx, node) or in_exception_path(ctx, node):
            return
        self.report(
            found,
            f"`{source_of(ctx, found)}` is a device tensor listed as data of "
            f"`{source_of(ctx, node, 40)}` in {ctx.hot_reason}: torch reads it on the host "
            "to build the new tensor, a sync every step; build it with `torch.stack` / "
            "`torch.cat` on the device instead",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _surely_device(self, value: cst.BaseExpression) -> bool:
        """Surely a tensor, and on the device: computed in the code from device tensors, a
        helper's parameter the value inference finds one (`pred_ids` of
        `compute_metrics(ids, ...)`), or a torch result the inference cannot place
        (`torch.argmax(outputs["logits"], -1)`: in hot code it is where the model ran, as
        `.cpu()` of it is read). An element of a step's own batch may be a list of numbers
        or strings."""
        ctx = self.ctx
        kind = ctx.value_kind(value)
        if kind is ValueKind.DEVICE and computed_tensor(ctx, value, self.bindings):
            return True
        if not kind.may_be_device or not is_torch_tensor(ctx, value, self.bindings):
            return False
        info = ctx.function
        return not (info is not None and info.name == info.root_hook and self._step_data(value))

    def _check_decoded(self, node: cst.Call) -> None:
        """`tokenizer.batch_decode(ids)` / `tokenizer.decode(t)` of a device tensor: the
        tokenizer turns the ids into a Python list (`.tolist()`) on the host."""
        ctx = self.ctx
        positional = [a for a in node.args if a.keyword is None and not a.star]
        arg = (
            positional[0]
            if positional
            else keyword(node, "token_ids") or keyword(node, "sequences")
        )
        if arg is None or not self._surely_device(arg.value):
            return
        if quiet(ctx, node) or in_exception_path(ctx, node) or returned_from_predict(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} decodes the device tensor "
            f"`{source_of(ctx, arg.value)}` to text: the tokenizer copies the ids to the host "
            "as a Python list and waits for the TPU every step; keep the ids on the device and "
            "decode them once in an epoch-end hook",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_scalar_summary(self, node: cst.Call, method: str) -> None:
        """`writer.add_scalar(tag, t, step)` / `add_scalars(tag, {"a": t}, step)` of a device
        tensor: TensorBoard's writer makes a numpy number of it (`.cpu().numpy()`)."""
        ctx = self.ctx
        positional = [a for a in node.args if a.keyword is None and not a.star]
        arg = keyword(node, "scalar_value" if method == "add_scalar" else "tag_scalar_dict")
        if arg is None and len(positional) > 1:
            arg = positional[1]
        if arg is None:
            return
        values = [arg.value]
        if method == "add_scalars":
            if not isinstance(arg.value, cst.Dict):
                return
            values = [e.value for e in arg.value.elements if isinstance(e, cst.DictElement)]
        found = next((v for v in values if self._surely_device(v)), None)
        if found is None or quiet(ctx, node) or in_exception_path(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} writes the device tensor "
            f"`{source_of(ctx, found)}` as a scalar: the writer converts it to a Python number on "
            "the host and waits for the TPU every step; log it with `self.log`, or write "
            "`.item()` of it only every N steps",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_metric_on_cpu(self, node: cst.Call, attr: str) -> None:
        """`self.metric.update(p, y)` / `self.metric(p, y)` of a torchmetrics metric built with
        `compute_on_cpu=True` (a literal, or a config the repository ships setting it true):
        after every update torchmetrics copies the list states to the CPU
        (`Metric._move_list_states_to_cpu`)."""
        ctx = self.ctx
        view = ctx.analysis.view
        klass = ctx.klass
        if view is None or klass is None:
            return
        key = (id(klass.node), attr)
        settings = ctx.shared.setdefault("TPU103 compute_on_cpu", {})
        setting = settings.get(key, False)
        if setting is False:
            setting = None
            assigned = _self_assignments(ctx, attr)
            built = [v for v in assigned if isinstance(v, cst.Call)]
            # (a metric class of the project's, or one of torchmetrics' own)
            if view.attribute_is_metric(ctx.owner, attr) or (
                built
                and len(built) == len(assigned)
                and all((ctx.qualify(v.func) or "").startswith("torchmetrics.") for v in built)
            ):
                for value in built:
                    setting = setting or _computes_on_cpu(ctx, value)
            settings[key] = setting
        if setting is None or quiet(ctx, node) or in_exception_path(ctx, node):
            return
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} updates `self.{attr}`, a torchmetrics "
            f"metric built with {setting}: after every update torchmetrics copies its list "
            "states to the CPU (`Metric._move_list_states_to_cpu`), a host copy that waits for "
            "the TPU every step; leave `compute_on_cpu` off on a TPU",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        """Record `self.accs = [acc0, acc1]` in hot code: device tensors computed in the code
        kept as a Python list on an attribute (see `leave_Module`)."""
        ctx = self.ctx
        if not ctx.in_hot_code or not isinstance(node.value, (cst.List, cst.Tuple)):
            return
        items = [e.value for e in node.value.elements if isinstance(e, cst.Element)]
        if not items or not all(computed_tensor(ctx, item, self.bindings) for item in items):
            return
        listed = ctx.shared.setdefault("TPU103 listed attributes", {})
        for target in node.targets:
            if isinstance(target.target, cst.Attribute):
                listed.setdefault(target.target.attr.value, target.target)

    def leave_Module(self, original_node: cst.Module) -> None:
        """`torch.tensor(self.accs)` in hot code where the file sets `accs` only to list or
        tuple displays, one of them of device tensors in hot code: torch reads each element
        on the host to build the tensor."""
        ctx = self.ctx
        listed = ctx.shared.get("TPU103 listed attributes", {})
        for node, data, reason in ctx.shared.get("TPU103 tensors of attributes", ()):
            attr = data.attr.value
            if attr not in listed or not _only_displays(ctx, attr):
                continue
            self.report(
                node,
                f"`{source_of(ctx, node, 40)}` in {reason} builds a tensor from "
                f"`{source_of(ctx, data)}`, a list of device tensors (set as "
                f"`{source_of(ctx, listed[attr])} = [...]` in hot code): torch reads each on "
                "the host, a sync every step; keep them on the device as one tensor "
                "(`torch.stack`)",
                applicability=Applicability.DISPLAY_ONLY,
            )

    def _check_number_arguments(self, node: cst.Call, name: str) -> None:
        ctx = self.ctx
        for keyword_name, position in _NUMBER_PARAMETERS[name]:
            arg = keyword(node, keyword_name)
            if arg is None:
                positional = [a for a in node.args if a.keyword is None and not a.star]
                arg = positional[position] if len(positional) > position else None
            if arg is None or ctx.value_kind(arg.value) is not ValueKind.DEVICE:
                continue
            if quiet(ctx, node) or in_exception_path(ctx, node):
                return
            self.report(
                arg.value,
                f"`{source_of(ctx, arg.value)}` passed as `{keyword_name}` of `{name}` in "
                f"{ctx.hot_reason} is a device tensor where torch wants a Python number: it "
                "is read on the host, a sync every step; pass a number, or use `torch.where`",
                applicability=Applicability.DISPLAY_ONLY,
            )
            return

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        value = node.expression
        if not computed_tensor(ctx, value, self.bindings):
            return
        if in_exception_path(ctx, node) or quiet(ctx, node) or self._under_tensor_test(node):
            return
        printed = enclosing_print(ctx, node)
        self.report(
            value,
            f"formatting the tensor `{source_of(ctx, value)}` in {ctx.hot_reason} copies it "
            "to the host and waits for the TPU every step; log it with `self.log` instead",
            fix=print_fix(ctx, printed) if printed is not None else None,
        )

    def _check_transfer(self, node: cst.Call, method: str, surely_device: bool = False) -> None:
        ctx = self.ctx
        tensor = node.func.value  # type: ignore[union-attr]
        kind = ctx.value_kind(tensor)
        if not kind.may_be_device or (surely_device and kind is not ValueKind.DEVICE):
            return
        if (
            method == "tolist"
            and kind is not ValueKind.DEVICE
            and not is_torch_tensor(ctx, tensor, self.bindings)
        ):
            return  # `.tolist()` of an unknown value may be a numpy array
        if quiet(ctx, node) or returned_from_predict(ctx, node) or in_exception_path(ctx, node):
            return
        if copied_for_writing(ctx) or copied_only_for_media(ctx, node):
            return
        code = source_of(ctx, node)
        replacement = strip_call_suffix(node) if method == "cpu" and not node.args else None
        message = (
            f"`{code}` in {ctx.hot_reason} copies a device tensor to the host and waits for "
            "the TPU every step; keep it on the device and move it once in an epoch-end hook"
        )
        deferral = defer(ctx, node, "list" if method == "tolist" else "host")
        if deferral is not None and deferral.reason is not None:
            message += f" (no fix: {deferral.reason})"
        self.report(
            node,
            message,
            fix=deferral.fix if deferral is not None else None,
            replacement=replacement,
            applicability=Applicability.DISPLAY_ONLY,
            project_dependent=deferral is not None,
        )

    def _check_conversion(self, node: cst.Call, name: str) -> None:
        ctx = self.ctx
        value = node.args[0].value
        if is_method_call(value, "item"):
            return  # TPU101
        if ctx.value_kind(value) is not ValueKind.DEVICE:
            return
        if logged_value(ctx, node) or quiet(ctx, node) or in_exception_path(ctx, node):
            return
        if returned_from_predict(ctx, node):
            return
        message = (
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} reads a device tensor on the host, "
            f"a sync every step; keep `{source_of(ctx, value)}` a tensor"
        )
        deferral = defer(ctx, node, "number")
        if deferral is not None and deferral.reason is not None:
            message += f" (no fix: {deferral.reason})"
        self.report(
            node,
            message,
            fix=deferral.fix if deferral is not None else None,
            replacement=value if name in ("float", "int") else None,
            applicability=Applicability.DISPLAY_ONLY,
            project_dependent=deferral is not None,
        )

    def _check_math(self, node: cst.Call) -> None:
        """`math.sqrt(n * m / total)` of a device tensor: `float()` of it on the host."""
        ctx = self.ctx
        value = next(
            (
                arg.value
                for arg in node.args
                if not arg.star
                and not is_method_call(arg.value, "item")
                and ctx.value_kind(arg.value) is ValueKind.DEVICE
            ),
            None,
        )
        if value is None:
            return
        if logged_value(ctx, node) or quiet(ctx, node) or in_exception_path(ctx, node):
            return
        if returned_from_predict(ctx, node):
            return
        name = (ctx.qualify(node.func) or "").rsplit(".", 1)[-1]
        name = "abs" if name == "fabs" else name
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} reads the device tensor "
            f"`{source_of(ctx, value)}` on the host (`math` converts it with `float()`), a "
            f"sync every step; use `torch.{name}` to keep it a tensor",
            applicability=Applicability.DISPLAY_ONLY,
        )

    def _check_print(self, node: cst.Call) -> None:
        ctx = self.ctx
        for arg in node.args:
            value = arg.value
            if isinstance(value, (cst.FormattedString, cst.SimpleString)):
                continue  # f-strings are checked by themselves
            if computed_tensor(ctx, value, self.bindings):
                if quiet(ctx, node):
                    return
                self.report(
                    node,
                    f"`print({source_of(ctx, value)})` in {ctx.hot_reason} copies the tensor "
                    "to the host and waits for the TPU every step; log it with `self.log`",
                    fix=print_fix(ctx, node),
                )
                return
