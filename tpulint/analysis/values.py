"""What kind of value an expression is, syntactically and without types.

The host-sync rules must know that `loss.item()` in `training_step` reads a device tensor
while `torch.rand(1).item()` (a CPU tensor), `np.log(n).item()` (numpy), `mx.array(x).item()`
(MLX) and `len(batch)` do not touch the accelerator. This module answers that from the shape
of the expression, the imports, and the local bindings tracked during the walk.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping

import libcst as cst

from tpulint.analysis.imports import Aliases


class ValueKind(enum.Enum):
    DEVICE = "device"  # a torch tensor on the accelerator (or presumed so in hot code)
    CPU = "cpu"  # a torch tensor known to live in host memory
    MODULE = "module"  # an nn.Module or a metric object (`.cpu()` on it is an offload)
    NUMPY = "numpy"  # a numpy (or pandas, MLX, JAX) array or scalar
    NUMBER = "number"  # a Python number or bool
    HOST = "host"  # another value that is not a torch tensor: strings, devices, containers
    UNKNOWN = "unknown"

    @property
    def may_be_device(self) -> bool:
        return self in (ValueKind.DEVICE, ValueKind.UNKNOWN)

    @property
    def is_host(self) -> bool:
        """Surely not a torch tensor."""
        return self in _HOST_KINDS


DEVICE, CPU, HOST, UNKNOWN = ValueKind.DEVICE, ValueKind.CPU, ValueKind.HOST, ValueKind.UNKNOWN
MODULE, NUMPY, NUMBER = ValueKind.MODULE, ValueKind.NUMPY, ValueKind.NUMBER
_HOST_KINDS = frozenset({HOST, MODULE, NUMPY, NUMBER})

# Top-level packages whose values are never torch tensors on the accelerator.
HOST_PACKAGES = frozenset(
    {
        "numpy",
        "math",
        "random",
        "mlx",
        "jax",
        "jaxlib",
        "pandas",
        "scipy",
        "sklearn",
        "statistics",
        "time",
        "os",
        "sys",
        "re",
        "json",
        "itertools",
        "functools",
        "operator",
        "collections",
        "string",
        "datetime",
        "pathlib",
        "typing",
        "warnings",
        "logging",
        "tensorflow",
        "cupy",
        "PIL",
        "cv2",
        "librosa",
        "soundfile",
        "decimal",
        "fractions",
    }
)
HOST_BUILTINS = frozenset(
    {
        "len",
        "int",
        "float",
        "bool",
        "str",
        "range",
        "list",
        "tuple",
        "dict",
        "set",
        "enumerate",
        "zip",
        "sorted",
        "repr",
        "round",
        "abs",
        "isinstance",
        "hasattr",
        "getattr",
        "type",
        "id",
        "hash",
        "ord",
        "chr",
        "format",
        "print",
    }
)
# torch functions that build a tensor from Python data or a shape: on the CPU unless a
# `device=` says otherwise.
TORCH_FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "from_numpy",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "randn",
        "randint",
        "randperm",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "Tensor",
        "LongTensor",
        "FloatTensor",
        "BoolTensor",
        "IntTensor",
        "bernoulli",
        "normal",
        "scalar_tensor",
        "Generator",
    }
)
LIKE_FACTORIES = frozenset(
    {
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
    }
)
# Tensor attributes and methods whose result lives on the host.
HOST_ATTRIBUTES = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "requires_grad",
        "layout",
        "is_leaf",
        "names",
        "itemsize",
        "nbytes",
    }
)
HOST_METHODS = frozenset(
    {
        "item",
        "tolist",
        "numpy",
        "size",
        "dim",
        "numel",
        "element_size",
        "data_ptr",
        "get_device",
        "stride",
        "is_contiguous",
        "nelement",
        "ndimension",
        "keys",
        "values",
        "items",
        "__len__",
        "is_floating_point",
        "is_complex",
        "storage_offset",
    }
)
SELF_HOST_ATTRIBUTES = frozenset(
    {
        "device",
        "dtype",
        "hparams",
        "trainer",
        "current_epoch",
        "global_step",
        "global_rank",
        "local_rank",
        "training",
        "automatic_optimization",
        "logger",
        "loggers",
        "precision",
        "on_gpu",
        "example_input_array",
        "config",
        "cfg",
        "args",
        "hparams_initial",
    }
)


def _cpu_literal(node: cst.BaseExpression, aliases: Aliases) -> bool | None:
    """True for `"cpu"` / `torch.device("cpu")`, False for another literal device, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        return value.split(":", 1)[0] == "cpu"
    if isinstance(node, cst.Call) and node.args:
        name = aliases.qualify(node.func)
        if name == "torch.device":
            return _cpu_literal(node.args[0].value, aliases)
    return None


def combine(kinds: list[ValueKind]) -> ValueKind:
    if not kinds:
        return UNKNOWN
    if DEVICE in kinds:
        return DEVICE
    if UNKNOWN in kinds:
        return UNKNOWN
    if CPU in kinds:
        return CPU
    distinct = set(kinds)
    return distinct.pop() if len(distinct) == 1 else HOST


def combine_elementwise(kinds: list[ValueKind]) -> ValueKind:
    """The kind of `a <op> b`: as `combine`, except that a CPU tensor with an unknown operand
    stays on the CPU (torch combines a CPU tensor elementwise only with numbers and other
    CPU tensors: `row == tokenizer.bos` for a row of `tokens.cpu()`)."""
    if CPU in kinds and DEVICE not in kinds:
        return CPU
    return combine(kinds)


_KIND_NAMES = {kind.value: kind for kind in ValueKind}


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def kind_named(name: str) -> ValueKind:
    """The ValueKind of a project-model kind name ("device", "numpy", ...)."""
    return _KIND_NAMES.get(name, UNKNOWN)


# Methods of an nn.Module that return the module itself (`self.expert.cpu()` offloads it).
MODULE_SELF_METHODS = frozenset(
    {"cpu", "cuda", "to", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_"}
)
_NUMBER_METHODS = frozenset({"item", "size", "dim", "numel", "nelement", "ndimension", "__len__"})
# Methods of models that map tensors to tensors (`model.generate(ids)`).
TENSOR_METHODS_OF_MODULES = frozenset(
    {"forward", "generate", "encode", "decode", "embed", "sample", "infer", "predict"}
)
# Methods of lists and dicts that tensors do not have.
_CONTAINER_METHODS = frozenset(
    {
        "copy",
        "reverse",
        "append",
        "extend",
        "insert",
        "remove",
        "keys",
        "values",
        "items",
        "update",
        "popitem",
    }
)
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "abs", "hash", "id", "ord", "bool"})
_NUMBER_PACKAGES = frozenset({"math", "statistics", "random", "time", "operator"})
_NUMPY_PACKAGES = frozenset({"numpy", "pandas", "scipy", "cupy", "jax", "jaxlib", "mlx"})


def _package_kind(root: str) -> ValueKind:
    if root in _NUMPY_PACKAGES:
        return NUMPY
    if root in _NUMBER_PACKAGES:
        return NUMBER
    return HOST


class ValueInference:
    """Infers ValueKind for expressions given aliases, local bindings and, through two hooks,
    the project model: `attribute(name)` is what `self.<name>` holds (a sub-module, a numpy
    generator, a buffer), `call(node, arg_kinds)` what a call into the project returns
    (`self._loss(...)`, `off_diag(...)`); both return None when the model does not know."""

    def __init__(
        self,
        aliases: Aliases,
        lookup: Callable[[str], ValueKind | None],
        self_attributes: Mapping[str, ValueKind] | None = None,
        is_method: Callable[[str], bool] | None = None,
        attribute: Callable[[str], ValueKind | None] | None = None,
        call: Callable[[cst.Call, list[ValueKind]], ValueKind | None] | None = None,
        narrowed: Callable[[cst.Name], bool] | None = None,
    ) -> None:
        self.aliases = aliases
        self.lookup = lookup
        self.self_attributes = self_attributes or {}
        # Whether `self.<name>` is a method of the class being walked (else an attribute:
        # a sub-module, loss or metric object when it is called).
        self.is_method = is_method
        self.attribute = attribute
        self.project_call = call
        self.narrowed = narrowed

    def kind(self, node: cst.BaseExpression, depth: int = 0) -> ValueKind:
        if depth > 40:
            return UNKNOWN
        d = depth + 1
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return NUMBER
        if isinstance(
            node,
            (
                cst.SimpleString,
                cst.ConcatenatedString,
                cst.FormattedString,
                cst.Dict,
                cst.DictComp,
                cst.Set,
                cst.SetComp,
                cst.Lambda,
            ),
        ):
            return HOST
        if isinstance(node, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
            return HOST
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return NUMBER
            if node.value == "None":
                return HOST
            bound = self.lookup(node.value)
            if bound is not None:
                if bound.may_be_device and self.narrowed is not None and self.narrowed(node):
                    return HOST  # the `else` of `if isinstance(x, torch.Tensor):`
                return bound
            if node.value in self.aliases.bindings:
                root = self.aliases.bindings[node.value].split(".", 1)[0]
                return _package_kind(root) if root in HOST_PACKAGES else UNKNOWN
            return UNKNOWN
        if isinstance(node, cst.Attribute):
            return self._attribute(node, d)
        if isinstance(node, cst.Call):
            return self._call(node, d)
        if isinstance(node, cst.Subscript):
            base = self.kind(node.value, d)
            return HOST if base is MODULE else base
        if isinstance(node, cst.BinaryOperation):
            kinds = [self.kind(node.left, d), self.kind(node.right, d)]
            if NUMPY in kinds and not (DEVICE in kinds or UNKNOWN in kinds or CPU in kinds):
                return NUMPY
            return combine_elementwise(kinds)
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                inner = self.kind(node.expression, d)
                return NUMBER if inner.is_host else inner
            return self.kind(node.expression, d)
        if isinstance(node, cst.Comparison):
            kinds = [self.kind(node.left, d)]
            kinds += [self.kind(t.comparator, d) for t in node.comparisons]
            if any(
                isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                for t in node.comparisons
            ):
                return NUMBER
            if any(
                isinstance(operand, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                for operand in [node.left, *(t.comparator for t in node.comparisons)]
            ):
                return NUMBER  # `batch["task"][0] == "asr"`: tensors are not compared to str
            if DEVICE not in kinds and CPU not in kinds:
                if NUMPY in kinds:
                    return NUMPY  # an elementwise comparison of a numpy array
                if any(k.is_host and k is not NUMBER for k in kinds):
                    return NUMBER  # comparing strings, lists, shapes: a bool
            result = combine_elementwise(kinds)
            return NUMBER if result.is_host and NUMPY not in kinds else result
        if isinstance(node, cst.BooleanOperation):
            return combine([self.kind(node.left, d), self.kind(node.right, d)])
        if isinstance(node, cst.IfExp):
            body, orelse = self.kind(node.body, d), self.kind(node.orelse, d)
            # `x if cond else None`: an optional tensor is a tensor where it is used.
            if _is_none(node.orelse):
                return body
            if _is_none(node.body):
                return orelse
            return combine([body, orelse])
        if isinstance(node, cst.Await):
            return UNKNOWN
        return UNKNOWN

    def _attribute(self, node: cst.Attribute, d: int) -> ValueKind:
        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            if attr in SELF_HOST_ATTRIBUTES:
                return HOST
            known = self.self_attributes.get(attr)
            if known is not None:
                return known
            if self.attribute is not None:
                found = self.attribute(attr)
                if found is not None:
                    return found
            return UNKNOWN
        qualified = self.aliases.qualify(node)
        if qualified is not None:
            root = qualified.split(".", 1)[0]
            if root in HOST_PACKAGES:
                return _package_kind(root)
            if root == "torch":
                # torch.float32, torch.nn, ...: module attributes, not tensors
                return HOST
        if attr in HOST_ATTRIBUTES:
            return HOST
        base = self.kind(node.value, d)
        if attr in ("T", "mT", "H", "data", "grad", "real", "imag"):
            return base
        if base is NUMPY:
            return NUMPY
        return HOST if base.is_host else UNKNOWN

    def _call(self, node: cst.Call, d: int) -> ValueKind:
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
            if name in HOST_BUILTINS and name not in self.aliases.bindings:
                bound = self.lookup(name)
                if bound is None:
                    return NUMBER if name in _NUMBER_BUILTINS else HOST
            if name in ("min", "max", "sum", "abs") and name not in self.aliases.bindings:
                return combine([self.kind(a.value, d) for a in node.args])
            if name == "self":
                return DEVICE
            bound = self.lookup(name)
            if bound is not None and bound.is_host:
                return HOST  # calling a host callable (an MLX/numpy function bound locally)
        qualified = self.aliases.qualify(func)
        if qualified is not None:
            root, _, rest = qualified.partition(".")
            if root in HOST_PACKAGES:
                return _package_kind(root)
            if root == "torch":
                return self._torch_call(rest, node, d)
        if isinstance(func, cst.Name) and func.value == "self":
            return DEVICE
        project = self._project(node, d)
        if project is not None:
            return project
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                if method in ("log", "log_dict", "print", "save_hyperparameters"):
                    return HOST
                if method == "forward":
                    return DEVICE
                if self.is_method is not None and not self.is_method(method) and node.args:
                    # `self.encoder(x)`, `self.loss_fn(logits, y)`, `self.accuracy(p, y)`:
                    # a module attribute applied to device tensors gives device tensors.
                    kinds = [self.kind(a.value, d) for a in node.args if a.keyword is None]
                    if DEVICE in kinds:
                        return DEVICE
                return UNKNOWN
            if method in _NUMBER_METHODS:
                return NUMBER
            if method == "numpy":
                return NUMPY
            if method in HOST_METHODS:
                return HOST
            base = self.kind(receiver, d)
            if base is MODULE:
                if method in MODULE_SELF_METHODS:
                    return MODULE  # `self.expert.cpu()`: the module, offloaded
                if method not in TENSOR_METHODS_OF_MODULES:
                    return UNKNOWN  # `model.detect_eos(codes)` may return anything
                kinds = [self.kind(a.value, d) for a in node.args]
                return DEVICE if DEVICE in kinds else UNKNOWN  # `model.generate(ids)`
            if base.is_host:
                return NUMPY if base is NUMPY else HOST
            if method in _CONTAINER_METHODS:
                return HOST  # `x.copy()`, `x.append(...)`: a list or dict, not a tensor
            if method in ("get", "setdefault", "pop") and base is DEVICE and node.args:
                # `batch.get("lengths")`: an element of a container of the step's tensors
                first = node.args[0].value
                if isinstance(first, (cst.SimpleString, cst.ConcatenatedString)):
                    return UNKNOWN
            if method == "cpu":
                return CPU
            if method in ("cuda", "xla"):
                return DEVICE
            if method == "to":
                return self._to_call(node, receiver, d)
            if method == "type_as" and node.args:
                other = self.kind(node.args[0].value, d)  # cast to the other's type and device
                return other if other in (DEVICE, CPU) else base
            if base is UNKNOWN and method in ("generate", "sample", "encode", "decode"):
                kinds = [self.kind(a.value, d) for a in node.args]
                if DEVICE in kinds:
                    return DEVICE
            return base
        return UNKNOWN

    def _project(self, node: cst.Call, d: int) -> ValueKind | None:
        """What the project model says the call returns, if it knows the callee."""
        if self.project_call is None:
            return None
        args = [self.kind(a.value, d) for a in node.args if a.keyword is None and not a.star]
        return self.project_call(node, args)

    def _to_call(self, node: cst.Call, receiver: cst.BaseExpression, d: int) -> ValueKind:
        """`x.to(...)`: a device move, a dtype cast, or `.to(other_tensor)`."""
        base = self.kind(receiver, d)
        if base.is_host:
            return base
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("device", "other"):
                continue
            value = arg.value
            is_cpu = _cpu_literal(value, self.aliases)
            if is_cpu is True:
                return CPU
            if is_cpu is False:
                return DEVICE
            qualified = self.aliases.qualify(value)
            if qualified is not None and qualified.startswith("torch."):
                continue  # a dtype such as torch.float16
            if isinstance(value, cst.Attribute) and value.attr.value == "device":
                return DEVICE  # .to(self.device) / .to(x.device)
            if isinstance(value, cst.Name) and "device" in value.value.lower():
                return DEVICE
            other = self.kind(value, d)
            if other in (DEVICE, CPU):
                return other
            return UNKNOWN if base is CPU else base
        return base

    def _torch_call(self, rest: str, node: cst.Call, d: int) -> ValueKind:
        last = rest.rsplit(".", 1)[-1]
        if last in (
            "device",
            "dtype",
            "Size",
            "is_tensor",
            "is_floating_point",
            "numel",
            "get_default_dtype",
            "finfo",
            "iinfo",
            "manual_seed",
            "no_grad",
            "enable_grad",
            "is_grad_enabled",
            "inference_mode",
            "autocast",
        ):
            return HOST
        if rest.startswith(("cuda.", "backends.", "distributed.")):
            return HOST
        if rest.startswith("nn.") and last[:1].isupper():
            return DEVICE if last in ("Parameter", "Buffer") else MODULE
        device_arg = None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                device_arg = arg.value
        if last in TORCH_FACTORIES:
            if device_arg is None:
                return CPU
            is_cpu = _cpu_literal(device_arg, self.aliases)
            return CPU if is_cpu else DEVICE
        if last in LIKE_FACTORIES:
            if device_arg is not None:
                is_cpu = _cpu_literal(device_arg, self.aliases)
                return CPU if is_cpu else DEVICE
            return self.kind(node.args[0].value, d) if node.args else UNKNOWN
        kinds = [self.kind(arg.value, d) for arg in node.args if arg.keyword is None]
        if kinds and kinds[0] is CPU and DEVICE not in kinds:
            # `torch.multinomial(torch.tensor(p), n)`: the result lives with its input
            return CPU
        kinds = [k for k in kinds if not k.is_host]
        if not kinds:
            return UNKNOWN
        return combine(kinds)
