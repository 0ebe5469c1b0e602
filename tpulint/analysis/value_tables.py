"""The tables of what a value is: one module read by the one value inference
(tpulint.analysis.summary's expression evaluator), which both the project model and the rules
ask (the rules by position, through tpulint.analysis.value_query).

Everything here is data: names of packages, builtins, torch functions and methods, grouped by
what they return. A precision fix to a table lands in the project model and in every rule at
once.
"""

from __future__ import annotations

# Top-level packages whose values are never torch tensors, by the kind of value they give.
NUMPY_ROOTS = frozenset(
    {
        "numpy",
        "pandas",
        "scipy",
        "cupy",
        "jax",
        "jaxlib",
        "mlx",
        # image and volume processing on numpy arrays: what they return is a numpy array
        # (`mahotas.label(...)`, `cc3d.connected_components(...)`, `skimage.segmentation.
        # watershed(...)`, `fastremap.renumber(...)`), whatever they were given
        "mahotas",
        "cc3d",
        "skimage",
        "fastremap",
    }
)
NUMBER_ROOTS = frozenset({"math", "statistics", "random", "time", "operator"})
HOST_ROOTS = frozenset(
    {
        "os",
        "sys",
        "re",
        "json",
        "pickle",
        "itertools",
        "functools",
        "collections",
        "string",
        "datetime",
        "pathlib",
        "typing",
        "warnings",
        "logging",
        "PIL",
        "cv2",
        "librosa",
        "soundfile",
        "sklearn",
        "tensorflow",
        "decimal",
        "fractions",
    }
)
HOST_PACKAGES = NUMPY_ROOTS | NUMBER_ROOTS | HOST_ROOTS

# Builtins whose result is a Python number whatever the argument (`int(t)` reads a tensor on
# the host: its result is a number).
NUMBER_BUILTINS = frozenset({"len", "int", "float", "bool", "hash", "id", "ord"})
# Builtins that give a tensor back for a tensor argument (`abs(t)`, `round(t)` call
# `Tensor.__abs__`/`__round__`), a number for a number.
ELEMENTWISE_BUILTINS = frozenset({"abs", "round"})
# Builtins that pick one of their arguments (`min(t, 3)` compares on the host, then gives `t`
# or `3`): the result is any of the arguments' kinds.
CHOOSING_BUILTINS = frozenset({"min", "max", "sum"})
# Builtins whose result is another host value (a string, a container, a type, None).
HOST_BUILTINS = frozenset(
    {
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
        "isinstance",
        "hasattr",
        "type",
        "chr",
        "format",
        "print",
        "open",
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
        "fftfreq",  # torch.fft.fftfreq(n, d): sample frequencies from Python numbers
        "rfftfreq",
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
# `torch.zeros_like(x)`: where `x` is, unless a `device=` says otherwise.
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
# torch functions whose result is a host value, not a tensor.
TORCH_HOST_FUNCTIONS = frozenset(
    {
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
    }
)
# torch functions returning a pair whose second element is a CPU tensor whatever the input's
# device (`out, lengths = torch.nn.utils.rnn.pad_packed_sequence(packed)`: the lengths).
TORCH_CPU_SECOND_RESULTS = frozenset({"pad_packed_sequence"})
# torch sub-packages whose functions return host values (`torch.cuda.is_available()`).
TORCH_HOST_PREFIXES = ("cuda.", "backends.", "distributed.")
# torch checks of a CUDA or MPS device (`torch.cuda.is_available()`,
# `torch.backends.mps.is_available()`): False on a TPU host.
TORCH_CUDA_CHECK_PREFIXES = ("cuda.", "backends.cudnn.", "backends.mps.")
# torch functions whose result is a boolean mask.
TORCH_MASK_FUNCTIONS = frozenset(
    {
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "greater",
        "less",
        "greater_equal",
        "less_equal",
        "not_equal",
        "isin",
        "signbit",
        "isclose",
    }
)
# Tensor methods whose result is a boolean mask.
MASK_METHODS = frozenset(
    {
        "bool",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isnan",
        "isinf",
        "isfinite",
        "isin",
        "__eq__",
        "__ne__",
    }
)

# Tensor methods whose positional arguments are sizes or dimensions, Python ints (a name
# passed there is an int: `x.reshape(n, c, rows, cols)` says `rows` and `cols` are).
SIZE_ARGUMENT_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "permute"}
)

# Methods of numpy arrays and pandas objects that torch.Tensor does not have (`Tensor.numpy`
# aside): their result is numpy data, and a name they are called on holds numpy data.
# (`toarray`/`todense`: a scipy sparse matrix's dense numpy copy; tensors say `to_dense`.)
NUMPY_METHODS = frozenset({"numpy", "astype", "to_numpy", "toarray", "todense"})
NUMPY_ONLY_METHODS = frozenset({"astype", "to_numpy", "toarray", "todense"})

# Tensor attributes whose value lives on the host.
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
# Attributes that are the tensor itself, seen another way (`x.T`, `x.data`).
SAME_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "data", "grad", "real", "imag"})
# Functions outside torch whose result is a copy of their first argument, where it is
# (`copy.deepcopy(logits)` of a CPU tensor is a CPU tensor).
COPY_FUNCTIONS = frozenset({"copy.deepcopy", "copy.copy"})
# Methods whose result is a Python number whatever the receiver.
# The counting methods of a graph library's graph (DGL's `DGLGraph.num_nodes(ntype=None)`,
# `num_edges`, `number_of_nodes`, `num_src_nodes`, ... "Return the number of nodes in the
# graph" as an int: https://www.dgl.ai/dgl_docs/generated/dgl.DGLGraph.num_nodes.html; not
# `batch_num_nodes()`, a tensor): no tensor has these methods, so a batch element they are
# called on is such a graph, and their result a Python number.
GRAPH_COUNT_METHODS = frozenset(
    {
        "num_nodes",
        "num_edges",
        "number_of_nodes",
        "number_of_edges",
        "num_src_nodes",
        "num_dst_nodes",
        "number_of_src_nodes",
        "number_of_dst_nodes",
    }
)
NUMBER_METHODS = frozenset(
    {"item", "size", "dim", "numel", "nelement", "ndimension", "__len__", *GRAPH_COUNT_METHODS}
)
# Methods whose result is another host value whatever the receiver (a string, a list, a dict
# view, a flag).
HOST_METHODS = frozenset(
    {
        "tolist",
        "element_size",
        "data_ptr",
        "get_device",
        "stride",
        "is_contiguous",
        "keys",
        "values",
        "items",
        "is_floating_point",
        "is_complex",
        "storage_offset",
    }
)
# Methods of `str` that torch.Tensor does not have: their receiver is a string, their result
# a string, a list of strings or a flag (`key.strip().lower()`, `name.startswith("enc")`).
STRING_METHODS = frozenset(
    {
        "strip",
        "lstrip",
        "rstrip",
        "startswith",
        "endswith",
        "join",
        "lower",
        "upper",
        "casefold",
        "capitalize",
        "title",
        "format",
        "format_map",
        "splitlines",
        "partition",
        "rpartition",
        "rsplit",
        "replace",
        "removeprefix",
        "removesuffix",
        "zfill",
        "ljust",
        "rjust",
        "center",
        "isdigit",
        "isalpha",
        "isalnum",
        "isnumeric",
        "isspace",
        "islower",
        "isupper",
    }
)
# Methods a tensor shares with `str` whose string argument says the receiver is a string
# (`key.split("::")`; `Tensor.split` takes sizes).
STRING_ARGUMENT_METHODS = frozenset({"split", "count", "index", "find"})
# `str` methods (and `bytes.decode`, `Path.as_posix`) whose result is surely a string, not a
# flag or a list: `s.strip()`, `name.format(i)`, `path.as_posix()`. (`join` is one too when
# its receiver is a string: `thread.join()` is not.)
STRING_RESULT_METHODS = frozenset(
    {
        "format",
        "strip",
        "lstrip",
        "rstrip",
        "lower",
        "upper",
        "decode",
        "removeprefix",
        "removesuffix",
        "as_posix",
        "capitalize",
        "casefold",
        "title",
        "zfill",
        "ljust",
        "rjust",
    }
)
# Methods of STRING_METHODS (and `encode`) whose call on a name says the name holds a string
# (`name.endswith(".wav")`): the ones written on file names and keys.
STRING_USE_METHODS = frozenset(
    {"startswith", "endswith", "encode", "format", "lower", "upper", "strip", "isdigit"}
)
# Functions whose result is surely a string: `str`, `repr` and os.path's that return a path.
STRING_FUNCTIONS = frozenset(
    {
        "str",
        "repr",
        "os.path.basename",
        "os.path.join",
        "os.path.dirname",
        "os.path.abspath",
        "os.path.relpath",
        "os.path.normpath",
        "os.path.expanduser",
        "osp.basename",
        "osp.join",
        "osp.dirname",
    }
)
# `Tensor.type()` with no argument is the type's name, a string
# (`x.type() == "torch.cuda.FloatTensor"` compares strings).
TYPE_NAME_METHODS = frozenset({"type"})
# Methods of lists and dicts that tensors do not have.
CONTAINER_METHODS = frozenset(
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
# Methods of an nn.Module that return the module itself (`self.expert.cpu()` offloads it).
MODULE_SELF_METHODS = frozenset(
    {"cpu", "cuda", "to", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_"}
)
# Methods of models that map tensors to tensors (`model.generate(ids)`).
TENSOR_METHODS_OF_MODULES = frozenset(
    {"forward", "generate", "encode", "decode", "embed", "sample", "infer", "predict"}
)
# Methods of third-party classes whose result is Python data whatever they are given, by the
# class's qualified name: a call of one on an attribute every project class that sets it sets
# to an instance of the class (`self.crf = CRF(n)`; `self.crf.decode(em)`,
# `self.model.crf.decode(em)`) gives host data, never a tensor.
EXTERNAL_HOST_METHODS = {
    # pytorch-crf, torchcrf/__init__.py: `def decode(self, emissions, mask=None, ...) ->
    # List[List[int]]`, "List of list containing the best tag sequence for each batch".
    "torchcrf.CRF": frozenset({"decode"}),
    # TorchCRF, TorchCRF/__init__.py: `def viterbi_decode(self, h, mask) -> List[List[int]]`.
    "TorchCRF.CRF": frozenset({"viterbi_decode"}),
}
# A Hugging Face tokenizer (`AutoTokenizer.from_pretrained(...)`, `BertTokenizerFast(...)`):
# `decode` gives a string, `batch_decode` and `convert_ids_to_tokens` lists of them, `tokenize`
# a list of strings; calling it or its `encode` gives Python lists of ids unless a
# `return_tensors=` asks for tensors (transformers tokenization_utils_base.py:
# `PreTrainedTokenizerBase.__call__` "return_tensors ... If set, will return tensors instead
# of list of python integers"; `encode` "Converts a string to a sequence of ids (integer)").
TOKENIZER_HOST_METHODS = frozenset(
    {"decode", "batch_decode", "convert_ids_to_tokens", "tokenize", "__call__", "encode"}
)
TOKENIZER_TENSOR_OPTION_METHODS = frozenset({"__call__", "encode"})
EXTERNAL_HOST_METHOD_NAMES = frozenset(
    {"batch_decode", *(m for ms in EXTERNAL_HOST_METHODS.values() for m in ms)}
)


def external_host_method(qualified: str, method: str, tensors_asked: bool) -> bool:
    """Whether `method` of the library object a call of `qualified` builds returns Python
    data (EXTERNAL_HOST_METHODS, or a tokenizer's TOKENIZER_HOST_METHODS);
    `tensors_asked`: the call passes `return_tensors=` (or a `**` spread that may)."""
    if method in EXTERNAL_HOST_METHODS.get(qualified, ()):
        return True
    parts = qualified.split(".")
    if parts[0] != "transformers" or len(parts) < 2:
        return False
    name = parts[-2] if parts[-1] == "from_pretrained" else parts[-1]
    if not name.endswith(("Tokenizer", "TokenizerFast")) or method not in TOKENIZER_HOST_METHODS:
        return False
    return not (tensors_asked and method in TOKENIZER_TENSOR_OPTION_METHODS)


# Methods of a LightningModule on `self` whose result is not a tensor.
SELF_HOST_METHODS = frozenset({"log", "log_dict", "print", "save_hyperparameters"})
# Attributes of a LightningModule on `self` that are never tensors.
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

# Keys of a torch optimizer's per-parameter state (`self.state[p]["step"]` in an optimizer
# class, `optimizer.state[p]["step"]`) that torch keeps on the CPU: torch 2.9's
# torch/optim/adam.py (`_init_group`, "Deliberately host `step` on CPU if both capturable
# and fused are off. This is because kernel launches are costly on CUDA and XLA."), the same
# in adamw, sgd's siblings and `__setstate__`, builds `state["step"]` as `torch.tensor(0.0)`
# unless `capturable=True` or `fused=True` (neither is the default): reading it on the host
# (`.item()`, `.cpu()`) waits for no device.
OPTIMIZER_HOST_STATE_KEYS = frozenset({"step"})
# The torch optimizer flags that put `state["step"]` on the parameter's device, off by default
# (`group.setdefault("capturable", False)`): a copy of torch's code that picks the device
# tensor under one (`... if group["capturable"] else torch.tensor(0.0)`) builds the CPU one.
OPTIMIZER_DEFAULT_OFF = frozenset({"capturable", "fused"})

# Classes an `isinstance` test names that are never torch tensors (the branch where the test
# holds sees host data): by their last dotted part.
HOST_CLASS_NAMES = frozenset(
    {
        "str",
        "bytes",
        "int",
        "float",
        "bool",
        "complex",
        "list",
        "tuple",
        "dict",
        "set",
        "frozenset",
        "List",
        "Tuple",
        "Dict",
        "Set",
        "Sequence",
        "Mapping",
        "Iterable",
        "ndarray",
        "generic",
        "number",
        "Series",
        "DataFrame",
        "Index",
        "Image",
        "Path",
        "PurePath",
    }
)
NUMPY_CLASS_NAMES = frozenset({"ndarray", "generic", "number", "Series", "DataFrame", "Index"})
NUMBER_CLASS_NAMES = frozenset({"int", "float", "bool", "complex", "Number", "Integral", "Real"})

# Parameter names of a hot hook that hold the step's data (device tensors, or containers of
# them): `training_step(self, batch, batch_idx)`, `forward(self, x)`.
BATCH_PARAMS = frozenset({"batch", "inputs", "x", "data", "sample", "samples", "batch_dict"})

# Parameter annotations that say a value is a module, a number, or other host data.
MODULE_ANNOTATION_SUFFIXES = ("Module", "Sequential", "ModuleList", "ModuleDict", "Metric")
NUMBER_ANNOTATIONS = frozenset({"int", "float", "bool"})
HOST_ANNOTATIONS = frozenset(
    {
        "int",
        "float",
        "bool",
        "str",
        "dict",
        "list",
        "tuple",
        "Optional[int]",
        "Optional[bool]",
        "Optional[str]",
        "Optional[float]",
    }
)


def package_kind(root: str) -> str | None:
    """The kind of the values of a host package ("numpy", "number", "host"), or None."""
    if root in NUMPY_ROOTS:
        return "numpy"
    if root in NUMBER_ROOTS:
        return "number"
    if root in HOST_ROOTS:
        return "host"
    return None


def annotation_kind(text: str) -> str | None:
    """The kind an annotation says a value is ("module", "number", "host"), or None when it
    may be a tensor. `List[str]`, `Optional[str]`, `pd.Series` are host data; a container of
    tensors (`List[Tensor]`, `Dict[str, torch.Tensor]`) is a container, not host data."""
    text = text.replace(" ", "").strip("'\"")
    if text.endswith(MODULE_ANNOTATION_SUFFIXES):
        return "module"
    if text in NUMBER_ANNOTATIONS:
        return "number"
    inner = text
    for wrapper in ("Optional[", "typing.Optional["):
        if inner.startswith(wrapper) and inner.endswith("]"):
            inner = inner[len(wrapper) : -1]
    if "|" in inner and "[" not in inner:
        # `int | None` is `Optional[int]`
        options = [o for o in inner.split("|") if o != "None"]
        if len(options) == 1:
            inner = options[0]
    if inner in NUMBER_ANNOTATIONS:
        return "number"
    if "Tensor" in inner or "Module" in inner or "Any" in inner or "Batch" in inner:
        return None
    last = inner.split("[", 1)[0].rsplit(".", 1)[-1]
    if last in ("str", "bytes"):
        return "host"
    if last in ("ndarray", "Series", "DataFrame"):
        return "numpy"
    if "[" in inner and last in ("List", "list", "Sequence", "Tuple", "tuple", "Iterable", "Set"):
        # `List[str]`, `Sequence[int]`: a container of host values only.
        args = inner[inner.index("[") + 1 : -1].split(",")
        if args and all(
            a.rsplit(".", 1)[-1] in ("str", "int", "float", "bool", "bytes", "...") for a in args
        ):
            return "host"
    return None
