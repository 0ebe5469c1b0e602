"""One file's facts about where its code runs, read with Python's `ast` beside its summary
(tpulint.analysis.summary) and cached with it: what the project scope
(tpulint.analysis.scope) needs to tell the code that trains on a TPU from the rest.

- `ends`: the last line of each function (findings are placed in functions by line);
- `uses`: every name a function (or the module's top level, with class bodies) calls or
  refers to, also in code the summary's call list leaves out (`__init__`, `setup`, the
  module's top level): `["name", "pkg.mod.f"]` (a call or a reference, qualified like the
  summary's calls), `["self", m]` (`self.m(...)` or `self.m` passed on), `["super", m]`,
  `["attr", "x.m"]` (`self.x.m(...)`), `["meth", m]` (`v.m(...)` on a value the file cannot
  name: any class's `m` may run);
- `launches`: where the file starts training: a Trainer or Fabric built here, a
  LightningCLI, `xmp.spawn`/`torch_xla.launch`, with how surely it runs on TPUs;
- `regions`: spans of code that run only when a condition has a value (the body of
  `if torch.cuda.is_available():`, the `else` of `if args.use_tpu:`, what follows
  `if not cuda_ok: return`), with the condition as a small expression the project resolves
  (it may name a function's return or an attribute defined in another file);
- `truths`: what each function returns and each `self.<attr>` is assigned, as the same
  condition expressions (`self.use_fused = torch.cuda.is_available() and ...`);
- `kernels`: functions compiled by another system (`@triton.jit`, `@numba.jit`,
  `@jax.jit`, `@wp.kernel`, or handed to one in the scope that defines them:
  `wp.Kernel(fwd, ...)` in a kernel factory): their values are not PyTorch tensors;
- `generation`: functions that run an autoregressive loop (text or image generation,
  diffusion sampling): inference, not training;
- inference flags: regions under a flag named for inference that defaults to False
  (`def f(x, _offload_inference=False): if _offload_inference: ...`, `self.predict_mode`
  set only from such a parameter), with `how` "infer-if"/"infer-else"/"infer-after" and the
  flag's names; and `flags_on`, where the file passes or sets such a flag to another value
  (the project decides whether training code turns it on);
- `after_fit`, `handlers`: code that runs in the launching process (after `trainer.fit`
  returned, or in a signal handler).

Conditions on a TPU (`truth` below): `False` (never true on a TPU: `torch.cuda.*`,
`x.is_cuda`, `device.type == "cuda"`, a flag named for CUDA or GPUs), `True` (always true
on a TPU: a flag named for the TPU, `device.type == "xla"`), `None` (unknown), or
`["and", c...]`, `["or", c...]`, `["not", c]`, `["call", form, target]` (the truth of what a
project function returns), `["attr", name]` (of `self.<name>`), `["glob", name]` (of a
module-level name of this file), `["tensor_param", key, index]` (`isinstance(p,
torch.Tensor)` of a parameter: what the project's calls pass), `["passed", key, name]`
(`p is not None` of a parameter that defaults to None and that the function never
reassigns: whether the project's calls pass it, and pass it something not None), `["flag",
key, name, default]` (`p` of a parameter that defaults to None, True or False, never
reassigned: the truth every call gives it), `["equals", key, name, default, literal]` (`p ==
"literal"` of a parameter that defaults to a string, never reassigned), `["attr_passed",
name]` (`self.<name> is not None` of an attribute assigned only from None-default
parameters: what the constructions pass), `["option", name]` (`self.cfg.<name>`,
`config["<name>"]`, `cfg.get("<name>", False)`: what the project's config classes and files
set it to; `["option", name, literal]` for `cfg.<name> == literal`), `["switch", name]`
(`args.<name>` of a command-line switch, `action="store_true"`: its default unless a launcher
passes it; `self.hparams.<name>`, `hparams["<name>"]` of a module's hyperparameters filled
from the parsed command line read the same; `["switch", name, literal]` for `args.<name> ==
literal`), `["attr_option", name, literal]` (`self.<name> ==
literal` of an attribute that may read an option: decided when every assignment does);
stored in an attribute, `["fit_stage", key]` is the stage `setup(self, stage)` was given
(`self.stage = stage`): "fit" in a training run, so `self.stage == "validate"` is false there.
`"CUDA out of
memory" in str(e)` of an error a handler caught is False; the body of `except
torch.cuda.OutOfMemoryError:` is a region ("except") that never runs.
"""

from __future__ import annotations

import ast
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tpulint.analysis.gpu_packages import GPU_BRANCH_ROOTS, no_tpu_package
from tpulint.analysis.modules import resolve_relative
from tpulint.analysis.python_ast import (
    TreeIndex,
    constant_names,
    defaulted_params,
    imported_roots,
    iter_child_nodes,
    self_attribute_name,
    tree_index,
)
from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import walk as ast_walk

Truth = Any  # bool | None | list (see the module docstring)

# The tensor classes an `isinstance` test names.
_TENSOR_CLASSES = frozenset({"torch.Tensor"})
# Name tokens of flags and functions about CUDA or GPUs (false on a TPU) and about TPUs.
_CUDA_TOKENS = frozenset({"cuda", "gpu", "gpus", "cudnn", "nccl", "mps", "nvidia", "cupy"})
TPU_TOKENS = frozenset({"tpu", "tpus", "xla"})
_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Decorators of functions compiled by a system other than PyTorch (their values are that
# system's, not torch tensors), by the root package of the decorator.
_LINE_BREAK = re.compile(r"\r\n?|\n")  # what ends a line for `ast`'s line numbers
KERNEL_ROOTS = frozenset({"triton", "numba", "jax", "warp", "taichi", "cupy", "tensorflow"})
_KERNEL_ALIASES = {"wp": "warp", "ti": "taichi", "tf": "tensorflow", "nb": "numba"}
# Words of a flag that switches code into inference (`_offload_inference`, `predict_mode`,
# `is_inference`): a parameter that defaults to False (or an attribute set only from one or
# from False) is off while training unless training code passes it on.
INFERENCE_TOKENS = frozenset({"inference", "infer", "predict", "prediction", "predicting"})
# Words in a function's name that say it generates or samples.
GENERATION_TOKENS = frozenset({"generate", "generation", "sample", "sampling", "greedy", "beam"})
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode"})
# Device names compared with a device or its type.
_CUDA_DEVICE_NAMES = ("cuda", "gpu", "mps")
# Lightning's steps and hooks that run once the model is on its device (`on_fit_start` on).
_DEVICE_HOOK = re.compile(
    r"(training|validation|test|predict)_step(_end)?$|\w+_epoch_(start|end)$"
    r"|on_(train|validation|test|predict)_batch_\w+$|on_(before|after)_\w+$"
)
_TPU_DEVICE_NAMES = ("xla", "tpu")
_TORCH_CUDA_CHECKS = ("torch.cuda.", "torch.backends.cudnn.", "torch.backends.mps.")
# Lightning's XLA strategies never create a torch.distributed process group (they talk
# through torch_xla: lightning/pytorch/strategies/xla.py has no init_process_group), so
# `dist.is_initialized()` is False on a TPU and what it guards never runs there.
_DIST_INITIALIZED = frozenset(
    {"torch.distributed.is_initialized", "torch.distributed.distributed_c10d.is_initialized"}
)
# `torch.is_autocast_enabled()` without a device type asks about CUDA autocast only (torch
# 2.9: the no-argument overload is the deprecated CUDA query; under `torch.autocast("xla")`
# or `"cpu"` it returns False): false on a TPU, as with a `"cuda"` argument.
_AUTOCAST_CHECKS = frozenset({"torch.is_autocast_enabled", "torch.amp.is_autocast_enabled"})
_LIGHTNING_ROOTS = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})
_XLA_STRATEGY_NAMES = frozenset(
    {"xla", "xla_debug", "xla_fsdp", "single_xla", "tpu_spawn", "tpu_spawn_debug", "single_tpu"}
)
_XLA_STRATEGY_CLASSES = frozenset(
    {
        "XLAStrategy",
        "XLAFSDPStrategy",
        "SingleDeviceXLAStrategy",
        "TPUSpawnStrategy",
        "SingleTPUStrategy",
        "XLAAccelerator",
        "TPUAccelerator",
    }
)
# Lightning's strategies for one device (not distributed: no collective in `sync_dist`).
_SINGLE_DEVICE_STRATEGIES = frozenset({"SingleDeviceXLAStrategy", "SingleDeviceStrategy"})
_OTHER_ACCELERATORS = frozenset({"gpu", "cuda", "cpu", "mps", "ipu", "hpu", "ddp", "dp", "ddp2"})
_XLA_SPAWNS = frozenset(
    {
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.launch",
        "torch_xla.distributed.xla_dist",
    }
)
_XLA_DEVICE_CALLS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.devices"}
)


# The Trainer's methods that run a loop: whether a script trains or only evaluates.
_TRAINER_RUNS = frozenset({"fit", "test", "validate", "predict", "tune"})


# Keywords and config keys of data-pipeline objects: what they name runs in the data loader.
DATA_KEYS = re.compile(
    r"(?:^|_)(?:transforms?|augmentations?|augment|collate_fn|collator|preprocess\w*|"
    r"preprocessors?)$"
)


def name_tokens(name: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(name)}


@dataclass
class ScopeFacts:
    ends: dict[str, int] = field(default_factory=dict)
    uses: dict[str, list[list[str]]] = field(default_factory=dict)  # "" is the top level
    # [kind, verdict, key, line] (+ "computed": a Trainer whose `accelerator=` the code computes)
    launches: list[list[Any]] = field(default_factory=list)
    # [key, line, col, end_line, end_col, truth, wanted, condition text]
    regions: list[list[Any]] = field(default_factory=list)
    returns: dict[str, list[Truth]] = field(default_factory=dict)  # function key -> truths
    attributes: dict[str, dict[str, list[Truth]]] = field(default_factory=dict)  # class qualname
    globals: dict[str, list[Truth]] = field(default_factory=dict)
    kernels: dict[str, str] = field(default_factory=dict)  # function key -> decorator
    generation: list[str] = field(default_factory=list)
    registered: list[list[str]] = field(default_factory=list)  # ["class"|"function", key]
    commands: list[str] = field(default_factory=list)  # functions a CLI framework runs
    after_fit: list[list[Any]] = field(default_factory=list)  # [key, line of `trainer.fit`]
    # Per function: what it calls after its `trainer.fit(...)` (in the launching process).
    after_fit_uses: dict[str, list[list[str]]] = field(default_factory=dict)
    handlers: list[list[str]] = field(default_factory=list)  # uses registered as handlers
    # function key -> [first, last line] of its hand-written training loops (a loop whose body
    # calls `backward`, `fabric.backward`, `xm.optimizer_step` or `optimizer.step`), and what
    # their bodies call.
    step_loops: dict[str, list[list[int]]] = field(default_factory=dict)
    step_uses: dict[str, list[list[Any]]] = field(default_factory=dict)  # [form, target, line]
    # class qualname -> attribute -> the functions or classes assigned to it (`self.loss_fn =
    # focal_loss`): what calling the attribute runs.
    attribute_refs: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # Modules the top level imports everything from (`from .neighborlist import *`).
    star_imports: list[str] = field(default_factory=list)
    # Relative imports that climb above the file's package root (`from ...yolox.models.head
    # import Head` where the folders above hold no `__init__.py`: namespace packages), as
    # the dotted names after the dots, with each imported name: the model cannot name them.
    beyond_root_imports: list[str] = field(default_factory=list)
    # Names built or named in data-pipeline arguments (`transforms=`, `collate_fn=`).
    data_uses: list[str] = field(default_factory=list)
    # Inference flags (INFERENCE_TOKENS) this file turns on: keyword name (`f(predict_mode=
    # True)`) or attribute (`model.predict_mode = flag`) -> the functions that pass or set it
    # something other than False/None.
    flags_on: dict[str, list[str]] = field(default_factory=dict)
    # function key -> the Trainer methods it calls on any value (`fit`, `test`, `validate`,
    # `predict`, `tune`): an entry point that only tests or predicts is inference.
    trainer_calls: dict[str, list[str]] = field(default_factory=dict)
    # function key -> how many arguments a call must pass it (parameters without a default,
    # the bound `self`/`cls` left out); only functions that need some.
    needs: dict[str, int] = field(default_factory=dict)
    # function key -> the method names it calls on values of unknown class (`model.train()`,
    # `self.net.eval()`) only ever without arguments: no method that needs one is called.
    bare: dict[str, list[str]] = field(default_factory=dict)
    # Where the file runs `trainer.test(...)` after the same Trainer's `fit(...)` in one run
    # (not in the other branch of a train-or-test switch): the test loop runs on the TPU.
    # Each [test line, column, fit line, column] (a call of a helper of this module that
    # tests, or fits, stands at its call); the scope leaves out a pair whose test or fit sits
    # in a branch it decides off (`if cfg.get("test"):` with every shipped config's `test:
    # false`).
    tests_after_fit: list[list[int]] = field(default_factory=list)
    # Whether the top level runs code of its own (a call statement, a loop, a `with`): a script
    # run as a file (`python merge_exports.py` from a shell script) even without a `__main__`.
    runs_code: bool = False
    # Calls of class-like names (the qualified name ends in a capitalised one) with their
    # flag arguments: [function key, qualified callee, positional codes, keyword codes,
    # spread], a code being ["l", None | True | False] (a literal), ["a", name] (`self.name`),
    # ["f", function key, parameter, default] (a flag parameter of the calling function
    # passed on), ["o", name] (`args.name` of a command-line switch) or "v" (anything else);
    # spread: `*args` passed (true), or only a mapping of
    # keys not known (`**cfg.model`: "**"), or neither (false).
    constructions: list[list[Any]] = field(default_factory=list)
    # Whether the file builds objects from names (`instantiate(cfg.model)`, `eval(name)`,
    # `import_module(...)`): a class may be built with arguments no construction shows.
    builds_by_name: bool = False
    # Attribute names this file assigns on a value other than `self` (`model.flag = x`,
    # `setattr(model, "flag", x)`): an attribute's truth is not its class's alone.
    foreign_stores: list[str] = field(default_factory=list)
    # Config options (tpulint.analysis.scope `_option_truth`): the fields a class body declares
    # with a default (`interleave: bool = False` in a dataclass or pydantic config) -> the
    # literal defaults ("?" for another value); the options a command line declares
    # (`parser.add_argument("--interleave")`, `@click.option`), which users set; the keywords
    # and string dict keys this file passes -> ["l", literal], ["f", function key, parameter,
    # default] (a flag parameter of the calling function passed on), ["o", name] (a
    # command-line switch read, `args.use_ema`), ["c", line] (another value passed by keyword
    # to a named callee on that line: `loss(netG=self.netG)`) or "v" (anything else).
    fields: dict[str, list[Any]] = field(default_factory=dict)
    cli_options: list[str] = field(default_factory=list)
    keyword_values: dict[str, list[Any]] = field(default_factory=dict)
    # function key -> name -> the lines where the function refers to `self.<name>` or a
    # name `<name>` without calling it, or builds a class `<Name>(...)`, for the names it
    # refers to inside a decided branch (0: also elsewhere): whether a method handed on
    # (`fn = self.interleave`), or a class, is handed on or built only where the code never
    # runs.
    ref_lines: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    # References to names with a capitalised part (classes, `Cls.from_pretrained`), base
    # class lists and decorators left out: [function key, qualified name, line, column,
    # the string key when the name is a value of a dict keyed by strings (a registry) or
    # None]. What may build a class (tpulint.analysis.scope `_unbuilt`).
    class_refs: list[list[Any]] = field(default_factory=list)
    # Identifier-like string constants (`"pkg.optim.Lamb"`, `"pack"`), registry keys left
    # out: a class or registry key named in a string may be looked up by it.
    strings: list[str] = field(default_factory=list)
    # Where the file looks names up at run time: the qualified receiver of `getattr(x,
    # name)` with a computed name, "" for `globals()` / `vars()` / `locals()` (the file's
    # own names), "*" for `eval` / `exec` (the file's names and what it imports), "^" for
    # `__subclasses__` (any class).
    lookups: list[str] = field(default_factory=list)
    digest: int = 0  # text_digest of the text these facts are of
    # Functions named for inference that run without gradients (`def predict(self, x): with
    # torch.no_grad(): ...`): inference when nothing of the project calls them.
    named_inference: list[str] = field(default_factory=list)
    # function key -> the calls its body makes on every run that completes (outside any
    # branch, loop or try, before any `return` a branch may take): [form, target, text], form
    # "pkg" (a function or class of a package whose calls cannot run on a TPU:
    # tpulint.analysis.gpu_packages; target the qualified name, text the package's
    # description) or a use form the project resolves ("name", "self", "attr"; text the call
    # as written). Whether the function can complete on a TPU (tpulint.analysis.scope).
    sure_calls: dict[str, list[list[str]]] = field(default_factory=dict)
    # class qualname -> attribute -> [method key, truth] for each `self.<attribute> = ...`
    # in a method other than `__init__` (`enable_context()` turning a flag on, `collecting()`
    # storing a dict): whether the code that calls the method trains (or whether anything
    # calls it) decides the attribute.
    setters: dict[str, dict[str, list[list[Any]]]] = field(default_factory=dict)
    # Identifier-like string keys of dicts (`{"Triangle_transform": 3}`): a name a run-time
    # lookup (`getattr(module, key)` over the dict) may spell.
    key_strings: list[str] = field(default_factory=list)
    # What a `collate_fn=` argument runs, as [function key, form, target] uses (call_use's
    # forms): the function named (`collate_fn=pad_batch`, `collate_fn=self.collate`), or
    # what a lambda calls (`collate_fn=lambda s: self.prepare_sample(s, stage="fit")`).
    collate_refs: list[list[str]] = field(default_factory=list)
    # Every module the file imports by a computed name is one of its own package: each
    # `import_module` / `__import__` call passes a relative name (`"." + name`, `f".{m}"`),
    # so it loads a module of the file's folder (a package `__init__` importing its modules).
    package_imports: bool = False
    # Sub-modules a class holds and how its methods use them (tpulint.analysis.scope
    # `_module_call_arguments`: what the calls of a module pass its `forward`):
    # ["one", class, attribute, constructed class] for `self.attn = Attention(...)`,
    # ["list", class, attribute, constructed class] for `self.layers = nn.ModuleList([Block(...)
    # for ...])`; ["escape", class, attribute] for a use of `self.<attribute>` in the class's
    # methods other than calling it, reading an attribute of it, `len`, `hasattr` or
    # `isinstance` of it, or a
    # `for layer in self.<attribute>:` whose `layer` is only called; ["loop", function key,
    # class, attribute, positional codes, keyword codes, spread] for each call `layer(h, ...)`
    # in such a loop (codes as `constructions`); ["arg", wrapping class, slot (a position
    # "0", "1", ... or a keyword), constructed class] for `SkipConnection(Attention(dim))`;
    # ["kept", class, position ("" for a keyword-only one), parameter, attribute] for
    # `self.module = module` in `__init__`, the parameter used nowhere else; ["meth", class,
    # attribute, method] for a call of a method of `self.<attribute>` (`self.kernel.step(u)`,
    # `self.attn.parameters()`); ["selfcall", class] for a `self(x)` in a method of the class.
    held: list[list[Any]] = field(default_factory=list)
    # yacs-style config defaults: a module-level chain of attribute assignments on a
    # `CfgNode()` the module builds (`_C = CN(); _C.MODEL.LOSS.KIND = "focal"`): the last key,
    # lower-cased (code reads it as `cfg.MODEL.LOSS.KIND` or, lower-cased,
    # `config["loss"]["kind"]`) -> the literal values ("?" for another value). A
    # `merge_from_list` of something other than a literal list marks the file's command line
    # as setting any key ("*" in cli_options).
    config_defaults: dict[str, list[Any]] = field(default_factory=dict)
    # Function key -> the parameters compared with a string that the body never reassigns,
    # with their default string (`REQUIRED` for one without a default): what a call that
    # passes its own such parameter on passes (ProjectScope._equals_truth).
    string_params: dict[str, dict[str, str]] = field(default_factory=dict)
    # Class qualname -> the attributes some `self.<attribute> = True` or `= False` stores: a
    # False among an attribute's truths is a stored None only where the attribute is absent.
    bool_stores: dict[str, list[str]] = field(default_factory=dict)
    # Command-line switches: the dest of each `add_argument("--use-ema",
    # action="store_true")` (default False, or `action="store_false"`, default True) -> its
    # defaults: what `args.use_ema` holds unless a launcher passes the switch
    # (tpulint.analysis.scope `_switch_value`).
    cli_switches: dict[str, list[Any]] = field(default_factory=dict)
    # The keys a config's `get` reads with its default (`cfg.get("interleave", False)`) -> the
    # literal defaults ("?" for another value): the option's default where the file reads it,
    # in a repository whose YAML configs are shipped (tpulint.analysis.scope `option_values`).
    got_defaults: dict[str, list[Any]] = field(default_factory=dict)
    # The fixed endings of names `getattr(self, ...)` builds from pieces (`"_step"` for
    # `getattr(self, f"{stage}_step")`): the methods of those names may run by name.
    self_lookups: list[str] = field(default_factory=list)
    # Command-line options by dest (`add_argument("--num-bond-classes", default=5)`) -> what
    # the parser leaves them without the option: the literal default (None without one, the
    # switch's for `store_true`/`store_false`), "?" for another value or for a string of the
    # code spelling the option (`["--num_bond_classes", "7"]`).
    cli_defaults: dict[str, list[Any]] = field(default_factory=dict)
    # Whether the file loads a YAML file into a parsed command line: an `argparse.Action`
    # that sets what `yaml.safe_load` read on the namespace (`setattr(namespace, k, v)`,
    # `namespace.__dict__.update(config)`), `parser.set_defaults(**config)`,
    # `vars(args).update(config)`: the repository's YAML configs set the options
    # (tpulint.analysis.scope `_switch_value`).
    yaml_args: bool = False
    # Class qualname -> the keys its decorators register it under: the string constants
    # its decorator calls pass (`@register("flat_norm")`), or "?" for a decorator call
    # passing another value (a key the facts do not see). A class decorated with no call
    # (`@REGISTRY.register`) has none: it is registered under its own name.
    registered_keys: dict[str, list[str]] = field(default_factory=dict)
    # function key -> per loop of its body that takes no optimizer step itself, what the loop
    # calls outside its inner loops ([form, target, line]): a training loop when one of those
    # steps (`algorithm.update(batch)`, whose method calls `loss.backward()`; see
    # ProjectModel._steps_through).
    call_loops: dict[str, list[list[list[Any]]]] = field(default_factory=dict)
    # Functions that take an optimizer step outside their own loops (one step per call).
    stepping: list[str] = field(default_factory=list)
    # The module's top-level functions that run `<trainer>.fit(...)` (`fitters`) or
    # `<trainer>.test(...)` (`testers`), in their body or through a function of the same
    # module they call (two levels deep), and the calls one block makes in order that may be
    # a fit and then a test through other modules' helpers: [first, later], each an imported
    # function's qualified name, or "<fit>"/"<test>" for a call of this module that fits or
    # tests (`best = train(**kw)` ... `test(ckpt=best)` with `train` and `test` imported),
    # then the line and column of the later call and of the first.
    fitters: list[str] = field(default_factory=list)
    testers: list[str] = field(default_factory=list)
    fit_test_calls: list[list[Any]] = field(default_factory=list)
    # Whether a module that builds a Trainer names a TPU in its code (a `--tpu_cores` option,
    # a `"tpu"` string, `TPUSpawnPlugin`, `args.tpu_cores`): a script configured for TPUs,
    # though its Trainer's accelerator comes from values the facts do not follow.
    names_tpu: bool = False
    # Module-level names bound to a CUDA extension the project compiles from its `.cu`
    # sources at run time (`ext = load(name=..., sources=["k.cpp", "k.cu"])`,
    # `load_inline(..., cuda_sources=...)` of torch.utils.cpp_extension; also in a function
    # that declares the name `global`, an `init()`), and in a setup script the modules its
    # `CUDAExtension(...)`s build (`pkg._C`): their ops run on CUDA tensors only.
    cuda_extensions: list[str] = field(default_factory=list)
    cuda_extension_modules: list[str] = field(default_factory=list)
    # Class qualname -> attribute -> what each `self.<attribute> = ...` in the class's
    # methods stores: [function key, parameter, default] for a parameter of that function
    # that defaults to a number and is never reassigned (`self.threshold = threshold` in
    # `__init__(self, threshold=0)`), None for anything else. Decides `["attr_number",
    # attribute, op, number]` (`self.threshold > 0`) by what the constructions pass
    # (tpulint.analysis.scope `_attr_number_truth`).
    number_attrs: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    # What a Lightning callback's hooks store on the module they are handed:
    # `pl_module.meter = AverageMeter(...)` -> {"meter": ["pkg.meters.AverageMeter"]} (the
    # module's own `self.meter.update(...)` calls that class's methods).
    module_stores: dict[str, list[str]] = field(default_factory=dict)
    # The torchmetrics classes a method builds (`__init__` of a project `MetricCollection`
    # subclass: `super().__init__([BinaryAUROC(), ...])`): function key -> [qualified class,
    # line, {keyword: literal or "?"} for `task`, `validate_args`, `nan_strategy`, column].
    metric_builds: dict[str, list[list[Any]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "e": self.ends,
            "u": self.uses,
            "l": self.launches,
            "r": self.regions,
            "rt": self.returns,
            "a": self.attributes,
            "g": self.globals,
            "k": self.kernels,
            "gn": self.generation,
            "rg": self.registered,
            "cm": self.commands,
            "af": self.after_fit,
            "au": self.after_fit_uses,
            "h": self.handlers,
            "sl": self.step_loops,
            "su": self.step_uses,
            "ar": self.attribute_refs,
            "si": self.star_imports,
            "bi": self.beyond_root_imports,
            "du": self.data_uses,
            "fo": self.flags_on,
            "tc": self.trainer_calls,
            "nd": self.needs,
            "br": self.bare,
            "ta": self.tests_after_fit,
            "rc": self.runs_code,
            "cs": self.constructions,
            "bn": self.builds_by_name,
            "fs": self.foreign_stores,
            "fd": self.fields,
            "co": self.cli_options,
            "kv": self.keyword_values,
            "rl": self.ref_lines,
            "cr": self.class_refs,
            "st": self.strings,
            "lk": self.lookups,
            "d": self.digest,
            "ni": self.named_inference,
            "sc": self.sure_calls,
            "se": self.setters,
            "ks": self.key_strings,
            "cf": self.collate_refs,
            "pi": self.package_imports,
            "hm": self.held,
            "cd": self.config_defaults,
            "sp": self.string_params,
            "bs": self.bool_stores,
            "sw": self.cli_switches,
            "gd": self.got_defaults,
            "sk": self.self_lookups,
            "cdf": self.cli_defaults,
            "ya": self.yaml_args,
            "rk": self.registered_keys,
            "cl": self.call_loops,
            "sf": self.stepping,
            "fi": self.fitters,
            "te": self.testers,
            "ft": self.fit_test_calls,
            "nt": self.names_tpu,
            "ce": self.cuda_extensions,
            "cem": self.cuda_extension_modules,
            "na": self.number_attrs,
            "ms": self.module_stores,
            "mb": self.metric_builds,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScopeFacts:
        return cls(
            data["e"],
            data["u"],
            data["l"],
            data["r"],
            data["rt"],
            data["a"],
            data["g"],
            data["k"],
            data["gn"],
            data["rg"],
            data["cm"],
            data["af"],
            data["au"],
            data["h"],
            data["sl"],
            data["su"],
            data["ar"],
            data["si"],
            data.get("bi", []),
            data["du"],
            data["fo"],
            data["tc"],
            data["nd"],
            data["br"],
            data.get("ta", []),
            data.get("rc", False),
            data["cs"],
            data["bn"],
            data["fs"],
            data.get("fd", {}),
            data.get("co", []),
            data.get("kv", {}),
            data.get("rl", {}),
            data.get("cr", []),
            data.get("st", []),
            data.get("lk", []),
            data["d"],
            data.get("ni", []),
            data.get("sc", {}),
            data.get("se", {}),
            data.get("ks", []),
            data.get("cf", []),
            data.get("pi", False),
            data.get("hm", []),
            data.get("cd", {}),
            data.get("sp", {}),
            data.get("bs", {}),
            data.get("sw", {}),
            data.get("gd", {}),
            data.get("sk", []),
            data.get("cdf", {}),
            data.get("ya", False),
            data.get("rk", {}),
            data.get("cl", {}),
            data.get("sf", []),
            data.get("fi", []),
            data.get("te", []),
            data.get("ft", []),
            data.get("nt", False),
            data.get("ce", []),
            data.get("cem", []),
            data.get("na", {}),
            data.get("ms", {}),
            data.get("mb", {}),
        )


def _package_imports(tree: ast.Module) -> bool:
    """Whether the file imports by computed names, each time a module of its own package:
    every `import_module(...)` / `__import__(...)` call's name is relative (a string, an
    f-string or a `+` whose text starts with ".")."""

    def relative(node: ast.expr) -> bool:
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            node = node.left
        if isinstance(node, ast.JoinedStr) and node.values:
            node = node.values[0]
        return (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith(".")
        )

    found = False
    # Every call of the tree (the answer does not depend on the order they are read in).
    for node in tree_index(tree).of_type(tree, ast.Call):
        assert isinstance(node, ast.Call)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in ("import_module", "__import__"):
            continue
        if not node.args or not relative(node.args[0]):
            return False
        found = True
    return found


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# --- truth of conditions on a TPU ------------------------------------------------------------


def _and(parts: list[Truth]) -> Truth:
    if any(p is False for p in parts):
        return False
    rest = [p for p in parts if p is not True]
    if not rest:
        return True
    if all(p is None for p in rest):
        return None
    return ["and", *rest] if len(rest) > 1 else rest[0]


def _or(parts: list[Truth]) -> Truth:
    if any(p is True for p in parts):
        return True
    rest = [p for p in parts if p is not False]
    if not rest:
        return False
    if all(p is None for p in rest):
        return None
    return ["or", *rest] if len(rest) > 1 else rest[0]


def _prefix_truths(parts: list[Truth], conjunction: bool) -> Iterator[Truth]:
    """`_and(parts[:i])` (`_or` when not `conjunction`) for i = 1 .. len(parts), in one pass
    over the parts."""
    absorbing = not conjunction  # False decides an `and`, True an `or`
    op = "and" if conjunction else "or"
    rest: list[Truth] = []
    known = False  # some part of `rest` is not None
    for index, part in enumerate(parts):
        if part is absorbing:
            for _ in range(index, len(parts)):
                yield absorbing
            return
        if part is not conjunction:
            rest.append(part)
            known = known or part is not None
        if not rest:
            yield conjunction
        elif not known:
            yield None
        else:
            yield [op, *rest] if len(rest) > 1 else rest[0]


def _not(part: Truth) -> Truth:
    if part is None or isinstance(part, bool):
        return None if part is None else not part
    return ["not", part]


def decided(truth: Truth) -> bool:
    """Whether a truth is known (or may become known in the project) rather than unknown."""
    return truth is not None


def informative(truth: Truth) -> bool:
    """Whether a truth says something of its own (a device test, a flag set from one), not
    only "whatever that call returns"."""
    if isinstance(truth, bool):
        return True
    if isinstance(truth, list):
        if truth[0] in (
            "attr",
            "attr_passed",
            "glob",
            "flag",
            "equals",
            "option",
            "switch",
            "attr_option",
            "fit_stage",
            "literal_name",
            "option_order",
            "attr_number",
        ):
            return True
        if truth[0] in ("and", "or", "not"):
            return any(informative(t) for t in truth[1:])
    return False


class _Walker:
    def __init__(self, summary: Any, text: str, keys: dict[int, str]) -> None:
        self.facts = ScopeFacts()
        self.module = summary.module
        self.is_package = summary.is_package
        self.module_imports: dict[str, str] = dict(summary.imports)
        self.module_names: set[str] = set()
        # `self.<name>` attributes this file assigns a decided condition (`self.use_fused =
        # torch.cuda.is_available() and ...`): tests of them are worth a region.
        self.flag_attributes: set[str] = set()
        # (class, attribute) set to something unknown where the summary does not see it
        # (`self.on |= x`, `self.a, self.b = ...`): kept in the facts of a `cheap` file.
        self.unknown_attributes: set[tuple[str, str]] = set()
        self.fitted: set[str] = set()  # functions whose `trainer.fit(...)` was seen
        self._inert = 0  # > 0 while walking a class's bases and decorators (no class_refs)
        self._registry_values: dict[int, str] = {}  # id of a dict value -> its string key
        self._unnamed_strings: set[int] = set()  # ids of dict keys and message texts
        self._declared_switches: set[int] = set()  # ids of `add_argument`'s option names
        self._strings: set[str] = set()
        self._key_strings: set[str] = set()
        self._config_roots: set[str] = set()  # module-level names holding a `CfgNode()`
        self._tested: set[int] = set()  # ids of `isinstance(x, Cls)`'s classes
        self.fitting: set[str] = set()  # ... in the statement being walked
        # The last value assigned to a plain name, by (function key, name): what a Trainer's
        # `strategy=strategy` is.
        self.values: dict[tuple[str, str], ast.expr] = {}
        # `accelerator, devices, strategy = settings(args)` with `settings` a function of the
        # module: what its `return`s give that name, by (function key, name).
        self._returned: dict[tuple[str, str], list[ast.expr]] = {}
        # Per (function key, name; "" for the module's top level and its `__main__` block):
        # whether every binding of the name that can reach this point on a TPU is one device
        # (`devices = 1`, `[k]`, `"1"`: one_device). Bindings in a branch a TPU never takes
        # are skipped (`if torch.cuda.is_available(): devices = [args.gpu] else: devices =
        # 1`); one that runs whenever the code before it does replaces the earlier ones; a
        # parameter, a loop variable or an unpacked name is not one device.
        self._one_bound: dict[tuple[str, str], bool] = {}
        self._dead = 0  # depth of branches a TPU never takes, around the statement walked
        self._maybe = 0  # depth of branches that may not run, in the function walked
        # The class a function's parameter is annotated with (`algorithm: Algorithm`), by
        # (function key, name), when the file imports or defines it.
        self._param_classes: dict[tuple[str, str], str] = {}
        # The module's top-level functions by name (what `_returned` reads).
        self._top_functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        # The methods of the classes being walked, innermost last (`self.settings()`).
        self._class_methods: list[dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        # `devices, strategy = self.settings()`: what the returns a TPU reaches give the
        # name (`if not torch.cuda.is_available(): return 1, "auto"` ends the function
        # there), by (function key, name): what one_device reads.
        self._tpu_returned: dict[tuple[str, str], list[ast.expr]] = {}
        self._tpu_reached: dict[int, list[ast.expr]] = {}  # by id of the function read
        # `pool = global_mean_pool` in a function: the module-level functions a local name
        # is set to in any branch (what `self.pool = pool` then stores)
        self._local_refs: dict[tuple[str, str], list[str]] = {}
        self.keys = keys
        self.text = text
        # Module-level names bound to a kernel compiler (`kernel = wp.kernel`).
        self.kernel_aliases: dict[str, str] = {}
        self._lines: list[str] | None = None
        self._line_starts: list[int] | None = None  # offsets where `ast`'s lines start
        self.index: TreeIndex | None = None  # of the tree being read (run)
        # Inference flags (INFERENCE_TOKENS) that are off in the function being walked: its
        # parameters that default to False/None and are never reassigned, with its class;
        # per class, the attributes set only from such parameters or from False/None (with
        # those parameters' names); the flag names the last inference truth read.
        self.inference_text = "infer" in text or "predict" in text
        self._flag_params: list[tuple[set[str], str | None]] = []
        self._flag_attributes: dict[str, dict[str, list[str]]] = {}
        self._flags_seen: list[str] = []
        # Per class whose `__init__` saves its arguments as hyperparameters
        # (`self.save_hyperparameters()`): that constructor's key and its parameters with a
        # None, True or False default (`self.hparams.use_x` reads what the constructions pass).
        self._hparam_defaults: dict[str, tuple[str, dict[str, Any]]] = {}
        # Functions being walked, innermost last, with their parameters: an `isinstance(p,
        # torch.Tensor)` test of a parameter is decided by what the project's calls pass.
        self._functions: list[tuple[str, list[str]]] = []
        # Per class: its methods written without `self` (an undecorated `def m(a, b)` whose
        # first parameter is not `self`/`cls`, no `*args`), with their positional parameters:
        # `self.m(x, y)` passes one more (the instance), so the call raises TypeError before
        # the body runs.
        self._selfless: dict[str, dict[str, list[str]]] = {}
        # Per function being walked: its `**kwargs` parameter (name, and the parameter index
        # that stands for the values calls pass by keyword: len(params) + 1, as the values
        # summary numbers it), and the loop variables bound to those values (`for key, val
        # in kwargs.items()`): `isinstance(val, torch.Tensor)` is decided by what the calls
        # pass by keyword.
        self._kwargs: list[tuple[str | None, int, dict[str, int]]] = []
        # Per function being walked: its parameters that default to None, True or False and
        # that its body never reassigns, with that default (`if mask is not None:` depends
        # only on what the calls pass).
        self._none_params: list[dict[str, bool | str | None]] = []
        # Per function: the reads of a parameter that are its value as passed, in the one
        # statement that reassigns it (`p = p or self.p`; `_incoming_reads`).
        self._incoming: list[dict[int, tuple[str, bool | None]]] = []
        # Per function: the parameters that default to a literal (`repeat_inc: int = 0`).
        self._constant_defaults: list[set[str]] = []
        # ... and its parameters that default to a string, never reassigned (`mode="gpu"`):
        # `if mode == "cpu":` depends only on what the calls pass.
        self._string_params: list[dict[str, str]] = []
        self._number_params: list[dict[str, int | float]] = []
        # Per function: the parameters without a default that the body never reassigns.
        self._required_params: list[set[str]] = []
        # The scopes around the code being walked, innermost last (the module, classes,
        # functions): the names each binds, those it binds only to one literal
        # (python_ast.constant_names), and whether it is a class body (which the functions
        # in it do not see). `Block(use_norm=use_norm)` after `use_norm = False` passes False.
        # ... and the dicts of known keys it binds (`Net(**opts)` passes exactly their keys).
        self._constant_scopes: list[
            tuple[frozenset[str], dict[str, object], dict[str, dict[str, list[ast.expr]]], bool]
        ] = []
        # The names bound by the `except ... as e:` handlers around the code being walked:
        # `"CUDA out of memory" in str(e)` is false on a TPU.
        self._exceptions: list[str] = []
        # References (not calls) by (function key, name): the lines inside decided statement
        # regions, and the pairs seen outside any (ScopeFacts.ref_lines).
        self._region_refs: dict[tuple[str, str], list[int]] = {}
        self._outside_refs: set[tuple[str, str]] = set()
        # The ids of the statements of each function's own body (innermost last).
        self._top_level: list[set[int]] = []
        self._plain_classes: set[str] = set()  # classes with no base but `object`
        # Per function key: method names called on values of unknown class without any
        # argument, and with some (ScopeFacts.bare).
        self._bare_calls: dict[str, set[str]] = {}
        self._argument_calls: dict[str, set[str]] = {}
        self.cheap = (
            ("isinstance" not in text or "Tensor" not in text)
            and "    if __name__" not in text
            and not any(
                token in text
                for token in (
                    "cuda",
                    "cudnn",
                    "gpu",
                    "GPU",
                    "tpu",
                    "TPU",
                    "xla",
                    "XLA",
                    "mps",
                    "CUDA",
                    # `self.device.type == "cpu"` in a step: the model's device is XLA's
                    '"cpu"',
                    "'cpu'",
                    "autocast",
                    "bnb",
                    # `dist.is_initialized()` and helpers named for it
                    # (`is_dist_avail_and_initialized`)
                    "initialized",
                )
            )
        )

    def judged(self, test: ast.expr) -> bool:
        """Whether a test is worth its truth: in every file that names a device (not
        `cheap`), and in the others when it calls a function (`if half_on() and x != 0`:
        a project function may return a CUDA-only test), and in all when it tests a
        parameter that defaults to None (the project's calls may never pass one)."""
        return (
            not self.cheap
            or _calls_function(test)
            or bool(self._none_params and self._none_params[-1].keys() & _names_in([test]))
            or bool(self._string_params and self._string_params[-1].keys() & _names_in([test]))
            or bool(self._required_params and self._required_params[-1] & _names_in([test]))
            or bool(self._exceptions and "CUDA" in self.source(test).upper())
            or _option_reads(test)
            or any(
                isinstance(n, ast.Name) and self.literal_name_truth(n) is not None
                for n in ast_walk(test)
            )
            or _stage_compare(test)
            or bool(self.flag_attributes and self.flag_attributes & _self_attributes_in(test))
            or _attr_number_in(test)
            or bool(
                self._incoming
                and {name for name, _ in self._incoming[-1].values()} & _names_in([test])
            )
        )

    # --- names ---------------------------------------------------------------------------

    def qualify(self, text: str, imports: dict[str, str]) -> str:
        root, _, rest = text.partition(".")
        target = imports.get(root)
        if target is None:
            return "." + text
        return f"{target}.{rest}" if rest else target

    def known(self, name: str, imports: dict[str, str], local: set[str]) -> bool:
        return name not in local and (name in imports or name in self.module_names)

    def source(self, node: ast.AST) -> str:
        if self._lines is None:
            self._lines = self.text.splitlines()
        line = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", line)
        if not line or line > len(self._lines):
            return ""
        if line == end:
            raw = self._lines[line - 1].encode("utf-8", "surrogatepass")
            start, stop = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
            return raw[start:stop].decode("utf-8", "replace")
        return self._lines[line - 1].strip() + " ..."

    def column(self, line: int, offset: int) -> int:
        """A 1-based character column from an `ast` UTF-8 byte offset."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        if not 0 < line <= len(self._lines):
            return offset + 1
        raw = self._lines[line - 1]
        if raw.isascii():
            return offset + 1
        return len(raw.encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "replace")) + 1

    def _may_name_inference(self, node: ast.stmt) -> bool:
        """Whether a statement's text may name an inference flag: every INFERENCE_TOKENS word
        contains "infer" or "predict", so a method whose lines name neither (in any case) sets
        no flag for `_off_flag_attributes` to find, and it is not walked. Text that is not
        ASCII is not screened (identifiers are NFKC-normalised before they are read)."""
        if not self.text.isascii():
            return True
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(self.text))]
        starts = self._line_starts
        end_line = node.end_lineno or len(starts)
        if not 0 < node.lineno <= len(starts):
            return True
        begin = starts[node.lineno - 1]
        end = starts[end_line] if end_line < len(starts) else len(self.text)
        segment = self.text[begin:end].lower()
        return "infer" in segment or "predict" in segment

    # --- structure -----------------------------------------------------------------------

    def run(self, tree: ast.Module) -> ScopeFacts:
        self.index = tree_index(tree)
        stack: list[ast.stmt] = list(tree.body)
        while stack:
            # Definitions of the top level, also in its `if`/`try` blocks (a `__main__` block's
            # helper, a fallback for a missing import).
            statement = stack.pop()
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_names.add(statement.name)
                if not isinstance(statement, ast.ClassDef):
                    self._top_functions[statement.name] = statement
            elif (
                isinstance(statement, (ast.If, ast.Try, ast.With))
                or type(statement).__name__ == "TryStar"
            ):
                for name in ("body", "orelse", "finalbody", "handlers"):
                    for item in getattr(statement, name, ()):
                        if isinstance(item, ast.ExceptHandler):
                            stack.extend(item.body)
                        elif isinstance(item, ast.stmt):
                            stack.append(item)
        self.kernel_aliases = self.module_kernel_aliases(tree)
        bound, constants, dicts = constant_names(tree.body, uses=tree)
        if constants:
            # a function's `global name` may rebind a module's name anywhere
            declared = {
                n for node in ast_walk(tree) if isinstance(node, ast.Global) for n in node.names
            }
            constants = {k: v for k, v in constants.items() if k not in declared}
        self._constant_scopes.append((bound, constants, dicts, False))
        self.body(tree.body, "", dict(self.module_imports), set(), None, [{}])
        self._constant_scopes.pop()
        self.kernels_built_by_call(tree)
        facts = self.facts
        facts.strings = sorted(self._strings)
        facts.key_strings = sorted(self._key_strings)
        facts.package_imports = _package_imports(tree)
        if any(launch[0] in ("trainer", "fabric") for launch in facts.launches):
            facts.names_tpu = _names_tpu(tree, self.index)
        if facts.names_tpu:
            # its own parser has a TPU option (`--tpu_cores`), or its code names one
            for launch in facts.launches:
                if "flags" in launch[4:]:
                    launch.remove("flags")
        fitters, testers, order = _fit_test_order(tree, self.index, self._imported_names(tree))
        sites: set[tuple[int, int, int, int]] = set()
        _tests_after_fit(tree.body, frozenset(), self.index, sites)
        sites |= {tuple(pair[2:]) for pair in order if pair[:2] == [_FIT, _TEST]}  # type: ignore[misc]
        facts.tests_after_fit = [
            [test, self.column(test, tc), fit, self.column(fit, fc)]
            for test, tc, fit, fc in sorted(sites)[:256]
        ]
        facts.fitters, facts.testers = sorted(fitters), sorted(testers)
        facts.fit_test_calls = [
            [first, later, l1, self.column(l1, c1), l2, self.column(l2, c2)]
            for first, later, l1, c1, l2, c2 in order
            if [first, later] != [_FIT, _TEST]
        ][:256]
        facts.runs_code = any(
            isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With))
            or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call))
            for statement in tree.body
        )
        # Keep only what may decide something: a flag nobody sets from a device test says
        # nothing.
        facts.returns = {k: v for k, v in facts.returns.items() if any(map(informative, v))}
        facts.globals = {k: v for k, v in facts.globals.items() if any(map(informative, v))}
        # Only the attributes some store of which keeps a number parameter (the scope reads
        # an attribute missing here, that its class assigns, as unknown).
        facts.number_attrs = {
            cls: kept
            for cls, attrs in facts.number_attrs.items()
            if (kept := {a: v for a, v in attrs.items() if any(v)})
        }
        facts.attributes = {
            cls: kept
            for cls, attrs in facts.attributes.items()
            if (
                kept := {
                    a: v
                    for a, v in attrs.items()
                    if any(map(informative, v)) or (cls, a) in self.unknown_attributes
                }
            )
        }
        facts.uses = {k: v for k, v in facts.uses.items() if v}
        for (key, name), lines in self._region_refs.items():
            outside = [0] if (key, name) in self._outside_refs else []
            facts.ref_lines.setdefault(key, {})[name] = [*lines, *outside]
        facts.bare = {
            key: sorted(names - self._argument_calls.get(key, set()))
            for key, names in self._bare_calls.items()
            if names - self._argument_calls.get(key, set())
        }
        return facts

    def module_kernel_aliases(self, tree: ast.Module) -> dict[str, str]:
        """Module-level names bound to another system's compiler, used as decorators:
        `kernel = wp.kernel`, `jit = numba.jit(nopython=True)` -> their qualified names."""
        aliases: dict[str, str] = {}
        for statement in tree.body:
            if not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                continue
            value = statement.value
            text = dotted(value.func if isinstance(value, ast.Call) else value)
            if text is None:
                continue
            name = self.qualify(text, self.module_imports)
            if not name.startswith(".") and name.split(".", 1)[0] in KERNEL_ROOTS:
                aliases[statement.targets[0].id] = name
        return aliases

    def kernels_built_by_call(self, tree: ast.Module) -> None:
        """Functions compiled by another system without a decorator: handed to its compiler
        in the scope that defines them (`wp.Kernel(fwd, key=...)` in a kernel factory,
        `f = numba.jit(nopython=True)(f)`, `jax.jit(step)`)."""
        imports = dict(self.module_imports)
        if not any(t.split(".", 1)[0] in KERNEL_ROOTS for t in imports.values()):
            # Imported inside a function or a `try:` only (`import warp as wp` in a factory).
            # Such an import names its package in the text: without any of the names, the
            # walk of the whole tree below finds nothing.
            if not any(root in self.text for root in KERNEL_ROOTS):
                return
            for node in ast_walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        imports[alias.asname or alias.name.split(".", 1)[0]] = (
                            alias.name if alias.asname else alias.name.split(".", 1)[0]
                        )
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    for alias in node.names:
                        imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            if not any(t.split(".", 1)[0] in KERNEL_ROOTS for t in imports.values()):
                return
        scopes: list[ast.AST] = [tree]
        scopes.extend(
            n for n in ast_walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        for scope in scopes:
            defined = {
                s.name: s
                for s in scope.body  # type: ignore[attr-defined]
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            if not defined:
                continue
            stack: list[ast.AST] = list(scope.body)  # type: ignore[attr-defined]
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue  # its own scope
                stack.extend(ast_children(node))
                if not (
                    isinstance(node, ast.Call)
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in defined
                ):
                    continue
                compiler = node.func
                if isinstance(compiler, ast.Call):  # `numba.jit(nopython=True)(f)`
                    compiler = compiler.func
                text = dotted(compiler)
                if text is None:
                    continue
                name = self.qualify(text, imports)
                key = self.keys.get(id(defined[node.args[0].id]))
                if key is not None and name.split(".", 1)[0] in KERNEL_ROOTS:
                    self.facts.kernels.setdefault(key, f"{name}(...)")

    def body(
        self,
        statements: list[ast.stmt],
        key: str,
        imports: dict[str, str],
        local: set[str],
        klass: str | None,
        truths: list[dict[str, Truth]],
    ) -> None:
        for index, statement in enumerate(statements):
            self.statement(statement, key, imports, local, klass, truths)
            if self.fitting:
                self.fitted |= self.fitting
                self.fitting = set()
            if _always_raises(statement) and index + 1 < len(statements):
                # `assert False, "not tested"` (or a `raise`) leaves the block every time.
                first, last = statements[index + 1], statements[-1]
                self.region(key, first, last, False, True, statement, "dead")
            elif isinstance(statement, _LEAVING) and index + 1 < len(statements):
                # `return` first in a debug helper (`def show(x): return; print(x.norm())`)
                first, last = statements[index + 1], statements[-1]
                self.region(key, first, last, False, True, statement, "unreachable")
            exit_test = _early_exit(statement)
            if exit_test is not None and index + 1 < len(statements):
                first, last = statements[index + 1], statements[-1]
                truth = self.truth(exit_test, imports, truths) if self.judged(exit_test) else None
                if decided(truth):
                    self.region(key, first, last, truth, False, exit_test, "after")
                elif key and self.inference_text:
                    spans = [(first, last, False, "after")]
                    self.inference_region(exit_test, key, imports, truths, spans)

    def inference_region(
        self,
        test: ast.expr,
        key: str,
        imports: dict[str, str],
        truths: list[dict[str, Truth]],
        spans: list[tuple[ast.AST, ast.AST, bool, str]],
    ) -> None:
        """Record the spans a test of inference flags decides (`if predict_mode:` ...): each
        (first, last, wanted, how) span runs only when the test is `wanted`. Their `how` is
        "infer-" and the region's own: the scope leaves findings about breakage in them in
        (inference runs on the TPU too) and asks whether training code turns a flag on."""
        self._flags_seen = []
        truth = self.truth(test, imports, truths, infer=True)
        if not isinstance(truth, bool) or not self._flags_seen:
            return
        flags = sorted(set(self._flags_seen))
        for first, last, wanted, how in spans:
            self.region(key, first, last, truth, wanted, test, f"infer-{how}", flags)

    def region(
        self,
        key: str,
        first: ast.AST,
        last: ast.AST,
        truth: Truth,
        wanted: bool,
        test: ast.AST | list[ast.AST],
        how: str,
        flags: list[str] | None = None,
    ) -> None:
        """Code from `first` to `last` runs only when `truth` is `wanted`. `how` says where
        it sits: "if" (the body), "else", "after" (after `if test: return`), "and"/"or" (a
        later operand, after the operands `test`)."""
        if isinstance(truth, bool) and truth == wanted:
            return  # it runs on a TPU: nothing to record
        line, end = first.lineno, last.end_lineno or last.lineno  # type: ignore[attr-defined]
        parts = test if isinstance(test, list) else [test]
        text = ""
        for index, part in enumerate(parts):
            text += (f" {how} " if index else "") + self.source(part)
            if len(text) > 60:  # the rest is cut anyway (a long chain's later operands)
                text = text[:57] + "..."
                break
        self.facts.regions.append(
            [
                key,
                line,
                self.column(line, first.col_offset),  # type: ignore[attr-defined]
                end,
                self.column(end, last.end_col_offset or 0),  # type: ignore[attr-defined]
                truth,
                wanted,
                how,
                text,
                *([flags] if flags else []),
            ]
        )

    def statement(
        self,
        node: ast.stmt,
        key: str,
        imports: dict[str, str],
        local: set[str],
        klass: str | None,
        truths: list[dict[str, Truth]],
    ) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, key, imports, klass, truths)
            return
        if isinstance(node, ast.ClassDef):
            self.klass(node, key, imports, klass, truths)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".", 1)[0]
                imports[name] = alias.name if alias.asname else name
            return
        if isinstance(node, ast.ImportFrom):
            base = resolve_relative(
                self.module, self.is_package, node.level or 0, node.module or ""
            )
            if base is not None:
                for alias in node.names:
                    if alias.name != "*":
                        imports[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif not key and base not in self.facts.star_imports:
                        self.facts.star_imports.append(base)
            elif node.level:
                for alias in node.names:
                    target = ".".join(p for p in (node.module, alias.name) if p and p != "*")
                    if target and target not in self.facts.beyond_root_imports:
                        self.facts.beyond_root_imports.append(target)
            return
        if key == "" and klass is None and isinstance(node, ast.If) and _is_main_test(node.test):
            # `if __name__ == "__main__":` runs only when the file is run as a script.
            self.body(node.body, "__main__", imports, local, klass, truths)
            self.body(node.orelse, key, imports, local, klass, truths)
            return
        if isinstance(node, (ast.If, ast.While)):
            self.expression(node.test, key, imports, local)
            truth = self.truth(node.test, imports, truths) if self.judged(node.test) else None
            if not decided(truth) and key and self.inference_text:
                spans = [(node.body[0], node.body[-1], True, "if")]
                if node.orelse and isinstance(node, ast.If):
                    spans.append((node.orelse[0], node.orelse[-1], False, "else"))
                self.inference_region(node.test, key, imports, truths, spans)
            if decided(truth) and node.body:
                self.region(key, node.body[0], node.body[-1], truth, True, node.test, "if")
            if decided(truth) and node.orelse and isinstance(node, ast.If):
                self.region(key, node.orelse[0], node.orelse[-1], truth, False, node.test, "else")
            if (
                not self.cheap
                and isinstance(node, ast.If)
                and node.body
                and not imported_roots(node.body).isdisjoint(GPU_BRANCH_ROOTS)
            ):
                self.region(key, node.body[0], node.body[-1], False, True, node.test, "cuda-import")
            is_if = isinstance(node, ast.If)
            with self._branch(dead=truth is False, maybe=not (is_if and truth is True)):
                self.body(node.body, key, imports, local, klass, truths)
            with self._branch(dead=is_if and truth is True, maybe=not (is_if and truth is False)):
                self.body(node.orelse, key, imports, local, klass, truths)
            return
        loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        if loop and key and _steps(node, self.index):  # type: ignore[arg-type]
            self.step_loop(node, key, imports, local)
        elif loop and key:
            self.call_loop(node, key, imports, local)  # type: ignore[arg-type]
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.expression(node.iter, key, imports, local)
            self._kwargs_loop(node)
            _stores(node.target, local)
            self._unbind(node.target, key)
            with self._branch():
                self.body(node.body, key, imports, local, klass, truths)
                self.body(node.orelse, key, imports, local, klass, truths)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expression(item.context_expr, key, imports, local)
                if item.optional_vars is not None:
                    _stores(item.optional_vars, local)
                    self._unbind(item.optional_vars, key)
            self.body(node.body, key, imports, local, klass, truths)
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self._maybe += 1  # a statement of the body may raise, skipping the rest
            self.body(node.body, key, imports, local, klass, truths)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                if handler.type is not None:
                    self.expression(handler.type, key, imports, local)
                    if handler.body and _catches_cuda_error(handler.type, imports):
                        # `except torch.cuda.OutOfMemoryError:` never runs on a TPU
                        first, last = handler.body[0], handler.body[-1]
                        self.region(key, first, last, False, True, handler.type, "except")
                if handler.name:
                    self._exceptions.append(handler.name)
                self.body(handler.body, key, imports, local, klass, truths)
                if handler.name:
                    self._exceptions.pop()
            self.body(node.orelse, key, imports, local, klass, truths)  # type: ignore[attr-defined]
            self._maybe -= 1
            self.body(node.finalbody, key, imports, local, klass, truths)  # type: ignore[attr-defined]
            return
        if type(node).__name__ == "Match":
            self.expression(node.subject, key, imports, local)  # type: ignore[attr-defined]
            with self._branch():
                for case in node.cases:  # type: ignore[attr-defined]
                    self.body(case.body, key, imports, local, klass, truths)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            pairs = _attribute_pairs(node) if klass is not None else None
            if pairs is not None:
                # `self.gate, self.frame_gate = (gate, frame_gate)`: each attribute stores its
                # own element, as its own assignment would
                self.expression(node.value, key, imports, local)  # type: ignore[arg-type]
                for target, element in pairs:
                    self.assigned([target], element, key, imports, klass, truths)
            elif value is not None:
                self.expression(value, key, imports, local)
                if not self.cheap and not isinstance(node, ast.AugAssign):
                    sequential = bool(self._top_level) and id(node) in self._top_level[-1]
                    self.assigned(targets, value, key, imports, klass, truths, sequential)
                elif not isinstance(node, ast.AugAssign):
                    # A file naming no device: only what its classes set their attributes
                    # to (`self.unbounded = False`), which a flag passed on may be, and a
                    # flag parameter given its fallback (`periodic = periodic or self.p`).
                    mine = [t for t in targets if _self_attribute(t)]
                    if (
                        self._incoming
                        and len(targets) == 1
                        and isinstance(targets[0], ast.Name)
                        and targets[0].id in {n for n, _ in self._incoming[-1].values()}
                    ):
                        sequential = bool(self._top_level) and id(node) in self._top_level[-1]
                        self.assigned(targets, value, key, imports, klass, truths, sequential)
                    if mine:
                        self.assigned(mine, value, key, imports, klass, truths)
                if klass is not None:
                    # `self.on |= x`, `self.a, self.b = ...`: set to something unknown
                    # (what is stored: `self.stats["n"] += 1` leaves `self.stats` as it was)
                    unpacked = [
                        e
                        for t in targets
                        if isinstance(t, (ast.Tuple, ast.List)) or isinstance(node, ast.AugAssign)
                        for e in ast_walk(t)
                        if _self_attribute(e) and isinstance(e.ctx, ast.Store)  # type: ignore[attr-defined]
                    ]
                    for element in unpacked:
                        name = element.attr  # type: ignore[attr-defined]
                        self.number_store(klass, name, None, key)
                        attributes = self.facts.attributes.setdefault(klass, {})
                        attributes.setdefault(name, []).append(None)
                        self.unknown_attributes.add((klass, name))
            if (
                isinstance(node, ast.Assign)
                and not (key or klass)
                and self.config_default(targets, value, imports)
            ):
                pass  # `_C.MODEL.KIND = "focal"`: a default, not a store from outside
            else:
                self.foreign_stored(targets, value if len(targets) == 1 else None)
            if len(targets) == 1 and isinstance(value, ast.Call):
                self.module_stored(targets[0], value, imports)
            if value is not None and klass is not None and key:
                self.attribute_refs(targets, value, klass, imports, local, key)
            if value is not None and key and isinstance(value, (ast.Name, ast.Attribute)):
                text = dotted(value)
                if text is not None and self.known(text.split(".", 1)[0], imports, local):
                    for target in targets:
                        if isinstance(target, ast.Name):
                            refs = self._local_refs.setdefault((key, target.id), [])
                            qualified = self.qualify(text, imports)
                            if qualified not in refs:
                                refs.append(qualified)
            if value is not None and any(
                (isinstance(t, ast.Name) and DATA_KEYS.search(t.id))
                or (
                    # `self.transforms = Compose([...])` in a plain class (a transform
                    # preset): a torch module or a LightningModule may apply its own
                    # `self.transforms` to the batch on the device
                    klass in self._plain_classes
                    and isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and DATA_KEYS.search(t.attr)
                )
                for t in targets
            ):
                # `transforms = [Crop(64), ToGraph()]`, `collate_fn = Pad()`: built for the
                # data loader as surely as in a `transforms=` argument.
                self.data_argument(value, imports, local)
            if value is not None and self.inference_text and not self._off_flag(value):
                for target in targets:
                    # `model.predict_mode = True` (a class's own `self.` assignments decide
                    # whether its attribute is a flag at all: _off_flag_attributes).
                    if (
                        isinstance(target, ast.Attribute)
                        and name_tokens(target.attr) & INFERENCE_TOKENS
                        and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                    ):
                        self._flag_on(target.attr, key)
            self._bind_returned(targets, value, key, imports)
            for target in targets:
                if isinstance(target, ast.Name):
                    if value is not None:
                        self.values[(key, target.id)] = value
                        one = not isinstance(node, ast.AugAssign) and self.one_device_value(
                            value, imports, truths
                        )
                        self._bind(key, target.id, one)
                    if key:
                        local.add(target.id)
                    elif not isinstance(node, ast.AugAssign):
                        self.module_names.discard(target.id)
                else:
                    self.expression(target, key, imports, local)
                    self._unbind(target, key)
            for target in targets:
                for name in _names_in([target]) if isinstance(target, ast.Tuple) else []:
                    if (reached := self._tpu_returned.get((key, name))) is not None:
                        # `devices, strategy = self.settings()`: one device when every
                        # return a TPU reaches gives one (`return 1, "auto"`)
                        one = all(self.one_device_value(v, imports, [{}]) for v in reached)
                        self._bind(key, name, one)
                if isinstance(target, ast.Name) and (key, target.id) in self._tpu_returned:
                    reached = self._tpu_returned[(key, target.id)]
                    one = all(self.one_device_value(v, imports, [{}]) for v in reached)
                    self._bind(key, target.id, one)
            return
        if isinstance(node, ast.Return):
            if node.value is not None:
                self.expression(node.value, key, imports, local)
                if key and not self.cheap:
                    truth = self.truth(node.value, imports, truths)
                    self.facts.returns.setdefault(key, []).append(truth)
            elif key:
                self.facts.returns.setdefault(key, []).append(None)
            return
        for child in ast_children(node):
            if isinstance(child, ast.expr):
                self.expression(child, key, imports, local)

    def construction(self, node: ast.Call, qualified: str, key: str) -> None:
        """Record a call of a class-like name with what it passes (ScopeFacts.constructions).
        A spread of a dict of known keys (`Net(**opts)`, `opts = {"depth": 3}`) passes those
        keys."""
        spread: bool | str = any(isinstance(a, ast.Starred) for a in node.args)
        positional = [self._argument_code(a) for a in node.args]
        keywords: dict[str, Any] = {}
        for k in node.keywords:
            if k.arg:
                keywords[k.arg] = self._argument_code(k.value)
                continue
            known = self._known_keys(k.value)
            if known is None:
                # A section of a config (`Net(**cfg["net"])`, `Net(**cfg.net)`): its keys are
                # what the configs and code give them by name ("**"). Another mapping, or
                # `*args`, passes what the model cannot see (`True`).
                config = spread in (False, "**") and _config_receiver(k.value)
                spread = "**" if config else True
                continue
            for name, values in known.items():
                codes = [self._argument_code(v) for v in values]
                keywords[name] = codes[0] if all(c == codes[0] for c in codes) else "v"
        self.facts.constructions.append([key, qualified, positional, keywords, spread])

    def _argument_code(self, value: ast.expr) -> Any:
        if isinstance(value, ast.Constant) and (
            value.value is None or isinstance(value.value, (bool, str))
        ):
            return ["l", value.value]
        constant = self._constant(value)
        if constant is not _NO_CONSTANT and (constant is None or isinstance(constant, (bool, str))):
            return ["l", constant]
        if _self_attribute(value):
            return ["a", value.attr]  # type: ignore[attr-defined]
        switch = _switch_read(value)
        if switch is not None:
            return ["o", switch]  # `Net(use_ema=args.use_ema)`: a command-line switch
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.ctx, ast.Load)
            and _config_receiver(value.value)
        ):
            return ["k", value.attr]  # `Gate(frame_gate=cfg.frame_gate)`: a config option
        if isinstance(value, ast.Name) and self._none_params and self._functions:
            default = self._none_params[-1].get(value.id, _FILLED)
            if default != _FILLED and not (
                self._flag_params and value.id in self._flag_params[-1][0]
            ):
                return ["f", self._functions[-1][0], value.id, default]
        return "v"

    def _constant(self, value: ast.expr) -> object:
        """The literal a name holds wherever it is read, when the scope it resolves to binds
        it only to that literal (`_constant_scopes`); `_NO_CONSTANT` otherwise."""
        if not isinstance(value, ast.Name):
            return _NO_CONSTANT
        for depth, (bound, constants, _, is_class) in enumerate(reversed(self._constant_scopes)):
            if is_class and depth:
                continue  # a class body's names are not a method's
            if value.id in bound:
                return constants.get(value.id, _NO_CONSTANT)
        return _NO_CONSTANT

    def literal_name_truth(self, node: ast.Name) -> Truth:
        """`if use_tpus:` of a name its scope binds only to one bool literal (`use_tpus =
        False` in a script's `main()` or `__main__` block, never bound again: no loop, `+=`,
        `global`, other value; python_ast.constant_names): that literal in a function,
        `["literal_name", name, value, "module"]` at a module's top level, where another
        module may set it (`script.use_tpus = True`: ProjectScope decides). The flag's name
        says nothing then: the script runs its own literal."""
        for depth, (bound, constants, _, is_class) in enumerate(reversed(self._constant_scopes)):
            if is_class and depth:
                continue  # a class body's names are not a method's
            if node.id in bound:
                value = constants.get(node.id, _NO_CONSTANT)
                if not isinstance(value, bool):
                    return None
                where = "module" if depth == len(self._constant_scopes) - 1 else "function"
                return ["literal_name", node.id, value, where]
        return None

    def _known_keys(self, value: ast.expr) -> dict[str, list[ast.expr]] | None:
        """The keys a spread `**opts` passes, with what each may hold, when `opts` is a dict
        of known keys of the scope it resolves to (python_ast.known_key_dicts)."""
        if not isinstance(value, ast.Name):
            return None
        for depth, (bound, _, dicts, is_class) in enumerate(reversed(self._constant_scopes)):
            if is_class and depth:
                continue
            if value.id in bound:
                return dicts.get(value.id)
        return None

    def config_default(
        self, targets: list[ast.expr], value: ast.expr | None, imports: dict[str, str]
    ) -> bool:
        """A module-level statement of a yacs-style default config: `_C = CN()` (a name
        the module builds a `CfgNode` into) or `_C.MODEL.LOSS.KIND = "focal"` (an attribute
        chain on such a name: ScopeFacts.config_defaults). True when it was one."""
        if len(targets) != 1 or value is None:
            return False
        target = targets[0]
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Call) and self._config_node(value, imports):
                self._config_roots.add(target.id)
            else:
                self._config_roots.discard(target.id)
            return False
        if not isinstance(target, ast.Attribute):
            return False
        root: ast.expr = target.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self._config_roots):
            return False
        if isinstance(value, ast.Call) and self._config_node(value, imports):
            return True  # `_C.MODEL = CN()`: a section
        code = _literal_code(value)
        defaults = self.facts.config_defaults.setdefault(target.attr.lower(), [])
        found = code[1] if isinstance(code, list) else "?"
        if found not in defaults:
            defaults.append(found)
        return True

    def _config_node(self, call: ast.Call, imports: dict[str, str]) -> bool:
        text = dotted(call.func)
        if text is None:
            return False
        qualified = self.qualify(text, imports)
        return qualified.rsplit(".", 1)[-1] == "CfgNode" and not qualified.startswith(".")

    def metric_built(self, call: ast.Call, qualified: str, key: str) -> None:
        """A torchmetrics class built in a class's `__init__` (ScopeFacts.metric_builds)."""
        if not qualified.rsplit(".", 1)[-1][:1].isupper() or ".functional." in qualified:
            return
        said: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg in ("task", "validate_args", "nan_strategy"):
                value = keyword.value
                said[keyword.arg] = (
                    value.value
                    if isinstance(value, ast.Constant) and isinstance(value.value, (bool, str))
                    else "?"
                )
        built = [qualified, call.lineno, said, call.col_offset]
        self.facts.metric_builds.setdefault(key, []).append(built)

    def module_stored(self, target: ast.expr, value: ast.Call, imports: dict[str, str]) -> None:
        """`pl_module.meter = AverageMeter(...)` in a callback's hook: the class built into an
        attribute of the LightningModule the hook is handed (ScopeFacts.module_stores)."""
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "pl_module"
        ):
            return
        text = dotted(value.func)
        if text is None or text.split(".", 1)[0] in ("self", "pl_module"):
            return
        built = self.qualify(text, imports)
        found = self.facts.module_stores.setdefault(target.attr, [])
        if built not in found:
            found.append(built)

    def foreign_stored(self, targets: list[ast.expr], value: ast.expr | None = None) -> None:
        """Record the attributes assigned on values other than `self` (`model.flag = x`), and
        the string keys assigned (`config["flag"] = x`; a literal filled into a module's
        hyperparameters, `hparams["use_x"] = False`, as that literal)."""
        for target in targets:
            nodes = ast_walk(target) if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for node in nodes:
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str)
                ):
                    code = (
                        _literal_code(value)
                        if value is not None and _hparams_receiver(node.value)
                        else "v"
                    )
                    if value is not None and self._switch_kept(node.slice.value, value):
                        # `args["use_x"] = hparams.use_x`: the switch's own value under its
                        # own name, passed on (it adds no value)
                        code = ["o", node.slice.value]
                    self._option_value(node.slice.value, code)
                if (
                    isinstance(node, ast.Attribute)
                    and value is not None
                    and _hparams_receiver(node.value)
                    and _literal_code(value) != "v"
                ):
                    # `hparams.use_x = False` filling in a hyperparameter: that literal
                    self._option_value(node.attr, _literal_code(value))
                elif (
                    isinstance(node, ast.Attribute)
                    and not _self_attribute(node)
                    and node.attr not in self.facts.foreign_stores
                ):
                    self.facts.foreign_stores.append(node.attr)

    def attribute_refs(
        self,
        targets: list[ast.expr],
        value: ast.expr,
        klass: str,
        imports: dict[str, str],
        local: set[str],
        key: str = "",
    ) -> None:
        """`self.loss_fn = focal_loss` (or `partial(focal_loss, gamma=2)`, or a list of them,
        or a local name the function set to such functions in its branches: `pool =
        global_mean_pool` ... `self.pool = pool`): what a later `self.loss_fn(...)` calls."""
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        names = []
        for item in items:
            if isinstance(item, ast.Call) and (dotted(item.func) or "").endswith("partial"):
                item = item.args[0] if item.args else item
            text = dotted(item) if isinstance(item, (ast.Name, ast.Attribute)) else None
            if text is not None and self.known(text.split(".", 1)[0], imports, local):
                names.append(self.qualify(text, imports))
            elif isinstance(item, ast.Name) and (key, item.id) in self._local_refs:
                names.extend(self._local_refs[(key, item.id)])
        if not names:
            return
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                refs = self.facts.attribute_refs.setdefault(klass, {}).setdefault(target.attr, [])
                refs.extend(n for n in names if n not in refs)

    def assigned(
        self,
        targets: list[ast.expr],
        value: ast.expr,
        key: str,
        imports: dict[str, str],
        klass: str | None,
        truths: list[dict[str, Truth]],
        sequential: bool = False,
    ) -> None:
        """Record what an assignment says about a flag: `self.x = <cond>` (for the class),
        `X = <cond>` at the top level, `x = <cond>` in a function (for its later tests).
        `sequential`: a statement of the function's own body (no branch or loop around it),
        which every later statement sees: it replaces what the name held (`on = a` then
        `on = on and b`), where a branch's assignment only makes the name unknown."""
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and klass is not None
            ):
                truth = self.truth(value, imports, truths)
                self.number_store(klass, target.attr, value, key)
                if isinstance(value, ast.Constant) and (
                    value.value is None or isinstance(value.value, bool)
                ):
                    truth = bool(value.value)  # `self.unbounded = False`: a flag that is off
                    if value.value is not None:
                        stores = self.facts.bool_stores.setdefault(klass, [])
                        if target.attr not in stores:
                            stores.append(target.attr)
                elif self._setup_stage(value, key):
                    truth = ["fit_stage", key]  # `self.stage = stage` in `setup(self, stage)`
                if (
                    key
                    and key.split("#", 1)[0].rsplit(".", 1)[-1] != "__init__"
                    and truth != ["fit_stage", key]
                ):
                    # A store in a method other than the constructor: it happens only when
                    # that method runs (`self.stats = {...}` in a `collecting()` nothing calls).
                    setters = self.facts.setters.setdefault(klass, {})
                    setters.setdefault(target.attr, []).append([key, truth])
                self.facts.attributes.setdefault(klass, {}).setdefault(target.attr, []).append(
                    truth
                )
                if informative(truth):
                    self.flag_attributes.add(target.attr)
            elif isinstance(target, ast.Name) and truths:
                truth = self.truth(value, imports, truths)
                scope = truths[-1]
                if target.id in scope and scope[target.id] != truth and not sequential:
                    scope[target.id] = None  # assigned twice, differently: unknown
                else:
                    scope[target.id] = truth
                if not key:
                    self.facts.globals.setdefault(target.id, []).append(truth)

    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        outer: str,
        imports: dict[str, str],
        klass: str | None,
        truths: list[dict[str, Truth]],
    ) -> None:
        key = self.keys.get(id(node))
        for decorator in node.decorator_list:
            self.expression(decorator, outer, imports, set())
        if key is None:
            return
        self.facts.ends[key] = node.end_lineno or node.lineno
        decorators = [
            dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list
        ]
        qualified = [
            self.kernel_aliases.get(d) or self.qualify(d, imports) for d in decorators if d
        ]
        for name in qualified:
            root = name.lstrip(".").split(".", 1)[0]
            root = _KERNEL_ALIASES.get(root, root) if name.startswith(".") else root
            if root in KERNEL_ROOTS and not name.startswith("."):
                self.facts.kernels[key] = name
        if (
            klass is None
            and not outer
            and any(isinstance(d, (ast.Call, ast.Attribute)) for d in node.decorator_list)
        ):
            # `@app.command()`, `@hydra.main(...)`, `@register("name")`: the function is
            # run (or registered to be run) by whatever decorates it.
            self.facts.registered.append(["function", key])
            if any(_runs_as_command(d) for d in qualified):
                self.facts.commands.append(key)
        local = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            annotation = _plain_class(arg.annotation)
            if annotation is not None and self.known(annotation.split(".", 1)[0], imports, set()):
                # `def train(algorithm: Algorithm, ...)`: `algorithm.update(batch)` runs
                # the annotated class's method
                self._param_classes[(key, arg.arg)] = self.qualify(annotation, imports)
        for star in (node.args.vararg, node.args.kwarg):
            if star is not None:
                local.add(star.arg)
        for default in (*node.args.defaults, *node.args.kw_defaults):
            if default is not None:
                self.expression(default, outer, imports, set())
        inner_truths = [*truths, {}] if outer else [{}]
        flags = _off_flag_params(node) if self.inference_text else set()
        self._flag_params.append((flags, klass))
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        needs = len(positional) - len(args.defaults)
        needs += sum(default is None for default in args.kw_defaults)
        if klass is not None and positional and "staticmethod" not in decorators:
            needs -= 1  # `self` or `cls`, bound by the call
        if needs > 0:
            self.facts.needs[key] = needs
        self._functions.append((key, [a.arg for a in positional]))
        if _steps_once(node):
            self.facts.stepping.append(key)
        named = len(positional) + len(args.kwonlyargs)
        self._kwargs.append((args.kwarg.arg if args.kwarg is not None else None, named + 1, {}))
        self._none_params.append(_literal_default_params(node))
        self._incoming.append(_incoming_reads(node))
        self._constant_defaults.append(_constant_default_params(node))
        self._string_params.append(_string_default_params(node))
        self._number_params.append(_number_default_params(node))
        self._required_params.append(_unassigned_required_params(node))
        if self._string_params[-1] or self._required_params[-1]:
            self.facts.string_params[key] = {
                **{name: REQUIRED for name in self._required_params[-1]},
                **self._string_params[-1],
            }
        self._top_level.append({id(statement) for statement in node.body})
        own_imports = dict(imports)
        self._constant_scopes.append((*constant_names(node.body, tuple(local), node), False))
        for name in local:
            self._one_bound[(key, name)] = False  # what the callers pass
        maybe, self._maybe = self._maybe, 0
        self.body(node.body, key, own_imports, local, klass, inner_truths)
        self._maybe = maybe
        self._constant_scopes.pop()
        self.sure_calls(node, key, own_imports, local, klass)
        self._top_level.pop()
        self._none_params.pop()
        self._incoming.pop()
        self._constant_defaults.pop()
        self._string_params.pop()
        self._number_params.pop()
        self._required_params.pop()
        self._functions.pop()
        self._kwargs.pop()
        self._flag_params.pop()
        tokens = name_tokens(node.name)
        if (
            (tokens & GENERATION_TOKENS or _NO_GRAD & set(qualified))
            and not _is_hook_name(node.name)
            and _feedback_loop(node, imports)
        ):
            self.facts.generation.append(key)
        elif (
            tokens & INFERENCE_TOKENS
            and not _is_hook_name(node.name)
            and _without_gradients(node, qualified, imports)
        ):
            # Named for inference and run without gradients (a training step never is).
            self.facts.named_inference.append(key)

    def sure_calls(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        key: str,
        imports: dict[str, str],
        local: set[str],
        klass: str | None,
    ) -> None:
        """The calls `node` makes on every run that completes (ScopeFacts.sure_calls)."""
        found: list[list[str]] = []
        asserts: list[ast.Assert] = []
        calls = _sure_calls(node.body, self.index, asserts)
        for statement in asserts:
            if _asserts_cuda(statement.test, imports, self.qualify):
                # `assert x.is_cuda`: what follows fails on an XLA device (ScopeFacts.sure_calls).
                found.append(["assert", self.source(statement.test), "false on an XLA device"])
                break
        for call in calls:
            name = dotted(call.func)
            if name is None:
                continue
            project_calls = sum(form not in ("pkg", "assert") for form, _, _ in found)
            head, _, rest = name.partition(".")
            if self.known(head, imports, local):
                qualified = self.qualify(name, imports)
                description = no_tpu_package(qualified)
                if description is not None:
                    found.append(["pkg", qualified, description])
                elif project_calls < _SURE_CALLS and qualified.split(".", 1)[0] not in _FOREIGN:
                    found.append(["name", qualified, name])
            elif project_calls >= _SURE_CALLS:
                continue
            elif klass is not None and head == "self" and rest and rest.count(".") <= 1:
                found.append(["self" if "." not in rest else "attr", rest, name])
        if found:
            self.facts.sure_calls[key] = found

    def klass(
        self,
        node: ast.ClassDef,
        outer: str,
        imports: dict[str, str],
        enclosing: str | None,
        truths: list[dict[str, Truth]],
    ) -> None:
        # A base class list or a decorator builds nothing (no class_refs).
        self._inert += 1
        for base in (*node.bases, *(k.value for k in node.keywords)):
            self.expression(base, outer, imports, set())
        for decorator in node.decorator_list:
            # A registry decorator's key (`@register("flat_norm")`) names the class it
            # registers, which it selects nothing: `registered_keys` keeps it.
            for argument in getattr(decorator, "args", ()):
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    self._unnamed_strings.add(id(argument))
            self.expression(decorator, outer, imports, set())
        self._inert -= 1
        qualname = self.keys.get(id(node)) or (
            node.name if enclosing is None else f"{enclosing}.{node.name}"
        )
        decorators = [
            dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list
        ]
        if any(
            d.rsplit(".", 1)[-1] not in ("dataclass", "total_ordering", "final") for d in decorators
        ):
            self.facts.registered.append(["class", qualname])
            keys = [
                key
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                for arg in (*d.args, *(k.value for k in d.keywords))
                for key in (
                    [arg.value]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    else []
                    if isinstance(arg, ast.Constant)
                    else ["?"]
                )
            ]
            if keys:
                self.facts.registered_keys[qualname] = keys
        if self.inference_text:
            self._flag_attributes[qualname] = _off_flag_attributes(node, self._may_name_inference)
        saved = _saved_hparam_defaults(node)
        if saved is not None and self.keys.get(id(saved[0])):
            self._hparam_defaults[qualname] = (self.keys[id(saved[0])], saved[1])
        bases = [dotted(b) or "?" for b in node.bases]
        if all(b == "object" for b in bases):
            self._plain_classes.add(qualname)
        selfless = _selfless_methods(node)
        if selfless:
            self._selfless[qualname] = selfless
        for statement in node.body:
            # `interleave: bool = False`: a config class's field and its default
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
            ):
                code = _literal_code(statement.value)
                defaults = self.facts.fields.setdefault(statement.target.id, [])
                value = code[1] if isinstance(code, list) else "?"
                if value not in defaults:
                    defaults.append(value)
        self._constant_scopes.append((*constant_names(node.body), True))  # (no dicts read)
        self._class_methods.append(
            {s.name: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        )
        self.body(node.body, outer, imports, set(), qualname, [{}])
        self._class_methods.pop()
        self._constant_scopes.pop()

    # --- expressions -----------------------------------------------------------------------

    def expression(
        self, node: ast.expr, key: str, imports: dict[str, str], local: set[str]
    ) -> None:
        """Record the calls and references of an expression (lambdas and comprehensions
        included), and the spans `a and b` / `x if c else y` put under a condition."""
        uses = self.facts.uses.setdefault(key, [])
        seen = {tuple(u) for u in uses} if len(uses) < 64 else None
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.Call):
                func = current.func
                self.option_values(current)
                use = self.call_use(current, imports, local, key)
                if use is not None and use[0] == "self" and self._fails_to_bind(current, key):
                    use = None  # `self.m(a, b)` of a method without `self`: TypeError first
                if use is not None and use[0] == "name":
                    built = use[1].rsplit(".", 1)[-1]
                    if built[:1].isupper():
                        # `ActNorm(...)`: where a class is built (ScopeFacts.ref_lines)
                        self._reference_line(key, built, current.lineno)
                if (
                    use is not None
                    and use[0] == "meth"
                    and isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                ):
                    # `runner = lit_runner(cfg)` ... `runner.train()`: the method of a class
                    # named in lower case too, if the name is one (the project model says;
                    # the call by method name stays for a function's result).
                    built = self._built_method(func.value.id, func.attr, imports, key)
                    if built is not None:
                        self._add(uses, seen, ["name", built])
                if use is not None and use[0] in ("meth", "attr"):
                    calls = (
                        self._argument_calls
                        if current.args or current.keywords
                        else self._bare_calls
                    )
                    calls.setdefault(key, set()).add(use[1].rsplit(".", 1)[-1])
                callee = dotted(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
                last = callee.rsplit(".", 1)[-1] if callee is not None else ""
                if (
                    callee is not None
                    and _BUILDS_BY_NAME.search(last)
                    # `model.eval()` is `nn.Module.eval`: only the builtin evaluates a name
                    and not (last in _BUILTIN_BUILDERS and "." in callee)
                ):
                    self.facts.builds_by_name = True
                if key and _builds_own_class(func):
                    # `cls(...)`, `type(self)(...)`, `self.__class__(...)` in a method: its
                    # class, built with arguments read apart (recorded as spread)
                    owner = key.partition("#")[0].rpartition(".")[0]
                    if owner:
                        self.facts.constructions.append([key, "." + owner, [], {}, True])
                if (
                    use is not None
                    and use[0] == "name"
                    and use[1].startswith("torchmetrics.")
                    and key.partition("#")[0].endswith(".__init__")
                ):
                    self.metric_built(current, use[1], key)
                self.run_time_lookup(current, func, imports, local)
                self.inert_arguments(current, func)
                if use is not None:
                    if use[0] == "name":
                        self.class_ref(key, use[1], func)
                    if _useful(use):
                        self._add(uses, seen, use)
                        if key in self.fitted and use[0] != "meth":
                            later = self.facts.after_fit_uses.setdefault(key, [])
                            if use not in later:
                                later.append(use)
                    self.launch(current, use, key, imports, local)
                    if use[0] == "name" and use[1].rsplit(".", 1)[-1][:1].isupper():
                        self.construction(current, use[1], key)
                stack.extend(current.args)
                stack.extend(k.value for k in current.keywords)
                for keyword in current.keywords:
                    if keyword.arg is not None and DATA_KEYS.search(keyword.arg):
                        self.data_argument(keyword.value, imports, local)
                    if keyword.arg == "collate_fn":
                        self.collate_argument(keyword.value, key, imports, local)
                    if (
                        self.inference_text
                        and keyword.arg is not None
                        and name_tokens(keyword.arg) & INFERENCE_TOKENS
                        and not self._off_flag(keyword.value)
                    ):
                        self._flag_on(keyword.arg, key)
                if isinstance(func, ast.Attribute) and func.attr in _TRAINER_RUNS:
                    runs = self.facts.trainer_calls.setdefault(key, [])
                    if func.attr not in runs:
                        runs.append(func.attr)
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in ("append", "extend", "insert")
                    and isinstance(func.value, ast.Name)
                    and DATA_KEYS.search(func.value.id)
                ):
                    # `transforms.append(NeighborList(r_max))`
                    for argument in current.args:
                        self.data_argument(argument, imports, local)
                if (use is None or use[0] == "meth") and isinstance(func, ast.Attribute):
                    # `models.Head(...)` on a value the file does not know: may be a class.
                    self.class_ref(key, dotted(func) or func.attr, func)
                if use is None or use[0] == "meth":
                    # The receiver of a method of a value may hold calls (`make().fit()`).
                    stack.append(func.value if isinstance(func, ast.Attribute) else func)
                continue
            if (
                isinstance(current, ast.Subscript)
                and isinstance(current.ctx, ast.Load)
                and isinstance(current.slice, ast.Constant)
                and dotted(current.value) == "self.hparams"
            ):
                # `self.hparams["use_x"]` reads a saved hyperparameter: it sets nothing
                self._unnamed_strings.add(id(current.slice))
            if isinstance(current, ast.Name):
                if isinstance(current.ctx, ast.Load) and self.known(current.id, imports, local):
                    use = ["ref", self.qualify(current.id, imports)]
                    self.class_ref(key, use[1], current)
                    if _useful(use):
                        self._add(uses, seen, use)
                        self._reference_line(key, current.id, current.lineno)
                elif isinstance(current.ctx, ast.Load) and current.id not in local:
                    # A name the file does not bind (`from ...pkg import Head` above the
                    # package root, a star import): may name a class.
                    self.class_ref(key, current.id, current)
                continue
            elif isinstance(current, ast.Attribute):
                if isinstance(current.ctx, ast.Load):
                    base = current.value
                    if isinstance(base, ast.Name) and base.id == "self":
                        self._add(uses, seen, ["selfref", current.attr])
                        self._reference_line(key, current.attr, current.lineno)
                        continue
                    if (
                        isinstance(base, ast.Attribute)
                        and isinstance(base.value, ast.Name)
                        and base.value.id == "self"
                        # `self.config.interleave`: an option's value, not a method
                        and not _config_receiver(base)
                    ):
                        # `step = self.model.forward_old`: a method of an attribute, called
                        # later through the local (`self.model` itself is walked next).
                        self._add(uses, seen, ["attr", f"{base.attr}.{current.attr}"])
                    text = dotted(current)
                    if text is not None and self.known(text.split(".", 1)[0], imports, local):
                        use = ["ref", self.qualify(text, imports)]
                        self.class_ref(key, use[1], current)
                        if _useful(use):
                            self._add(uses, seen, use)
                        continue
                    if text is not None and text.split(".", 1)[0] not in ("self", "cls"):
                        self.class_ref(key, text, current)  # `models.Head` on a local value
            elif isinstance(current, (ast.IfExp, ast.BoolOp)) and key and self.judged(current):
                self.inline_region(current, key, imports)
            elif isinstance(current, ast.Dict):
                for item_key, item_value in zip(current.keys, current.values, strict=True):
                    if isinstance(item_key, ast.Constant) and isinstance(item_key.value, str):
                        self._option_value(item_key.value, self._keyword_code(item_value))
                self.registry(current)
            elif isinstance(current, ast.Constant) and isinstance(current.value, str):
                if id(current) not in self._unnamed_strings and _STRING_NAME.match(current.value):
                    # a dict key is looked up, a message names nothing
                    self._strings.add(current.value)
                elif id(current) not in self._declared_switches and (
                    switch := _SWITCH.match(current.value)
                ):
                    # `["--use_ema"]` handed to a parser or a subprocess: the code passes it
                    dest = switch.group(1).replace("-", "_")
                    for table in (self.facts.cli_switches, self.facts.cli_defaults):
                        defaults = table.setdefault(dest, [])
                        if "?" not in defaults:
                            defaults.append("?")
            elif isinstance(current, ast.Lambda):
                local = local | {a.arg for a in current.args.args}
            stack.extend(ast_children(current))

    def _reference_line(self, key: str, name: str, line: int) -> None:
        """Note where function `key` refers to `name` without calling it: inside a decided
        statement region (ScopeFacts.ref_lines) or elsewhere."""
        if not key:
            return
        inside = any(
            region[0] == key and region[7] in STATEMENT_REGIONS and region[1] <= line <= region[3]
            for region in self.facts.regions
        )
        if inside:
            self._region_refs.setdefault((key, name), []).append(line)
        else:
            self._outside_refs.add((key, name))

    def option_values(self, node: ast.Call) -> None:
        """Record what a call passes by keyword (`build(interleave=True)`, `dict(...)`) and
        the options a command-line parser declares (`add_argument("--interleave")`)."""
        for keyword in node.keywords:
            if keyword.arg is not None:
                code = self._keyword_code(keyword.value)
                if code == "v" and dotted(node.func) is not None:
                    # `loss_fn(netG=self.netG)`: a value passed to a named callee, which
                    # ProjectScope resolves (a parameter of a function sets no config key)
                    code = ["c", node.lineno]
                self._option_value(keyword.arg, code)
        func = node.func
        got = _option_get(node)
        if got is not None:
            # `cfg.get("use_map", False)`: the option's default where the module reads it
            code = _literal_code(node.args[1]) if len(node.args) > 1 else ["l", None]
            defaults = self.facts.got_defaults.setdefault(got, [])
            value = code[1] if isinstance(code, list) else "?"
            if value not in defaults:
                defaults.append(value)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "merge_from_list"
            and node.args
            and not isinstance(node.args[0], (ast.List, ast.Tuple))
            and "*" not in self.facts.cli_options
        ):
            self.facts.cli_options.append("*")  # `cfg.merge_from_list(args.opts)`: any key
        if isinstance(func, ast.Attribute) and func.attr in ("add_argument", "option", "Option"):
            names = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            names += [
                k.value.value
                for k in node.keywords
                if k.arg == "dest"
                and isinstance(k.value, ast.Constant)
                and isinstance(k.value.value, str)
            ]
            switch = _switch_default(node)
            self._declared_switches.update(id(a) for a in node.args)
            self._declared_switches.update(id(k.value) for k in node.keywords)
            for name in names:
                dest = name.lstrip("-").replace("-", "_")
                if dest and dest not in self.facts.cli_options:
                    self.facts.cli_options.append(dest)
                if dest and name.startswith("--") and func.attr == "add_argument":
                    defaults = self.facts.cli_switches.setdefault(dest, [])
                    if switch not in defaults:
                        defaults.append(switch)
                    default = switch if switch != "?" else _option_default(node)
                    defaults = self.facts.cli_defaults.setdefault(dest, [])
                    if default not in defaults:
                        defaults.append(default)

    def _keyword_code(self, value: ast.expr) -> Any:
        """What a keyword or a string dict key is given: `_literal_code`, or `["f", function
        key, parameter, default]` for a flag parameter of the calling function passed on
        (`Decoder(mask_logits=mask_logits)` in a constructor whose `mask_logits=True`),
        `["o", name]` for a command-line switch read (`Net(use_ema=args.use_ema)`), or
        `["k", name]` for a config option read (`Gate(frame_gate=cfg.frame_gate)`)."""
        code = _literal_code(value)
        constant = self._constant(value)
        if code == "v" and constant is not _NO_CONSTANT:
            return ["l", constant]
        if code == "v":
            forwarded = self._argument_code(value)
            if isinstance(forwarded, list) and forwarded[0] in ("f", "o", "k"):
                return forwarded
        return code

    def _switch_kept(self, name: str, value: ast.expr) -> bool:
        """Whether `value` reads the command-line switch `name` itself (`hparams.use_x`,
        `args.use_x`): a store of it under the key `name` passes the switch on."""
        return _switch_read(value) == name

    def _option_value(self, name: str, code: Any) -> None:
        values = self.facts.keyword_values.setdefault(name, [])
        if code not in values:
            values.append(code)

    def class_ref(self, key: str, qualified: str, node: ast.expr) -> None:
        """A reference that may build a class (a name with a capitalised part)."""
        if self._inert or not any(part[:1].isupper() for part in qualified.split(".")):
            return
        if id(node) in self._tested:
            return
        line = getattr(node, "lineno", 0)
        column = self.column(line, getattr(node, "col_offset", 0))
        registry = self._registry_values.get(id(node))
        self.facts.class_refs.append([key, qualified, line, column, registry])

    def inert_arguments(self, call: ast.Call, func: ast.expr) -> None:
        """Arguments that build nothing: the classes `isinstance(x, Cls)` tests against, the
        text of a message (`print("Cls")`, `logger.info("Cls")`)."""
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in ("isinstance", "issubclass") and len(call.args) == 2:
            tested = call.args[1]
            for node in (*getattr(tested, "elts", ()), tested):
                self._tested.add(id(node))
        elif name in _MESSAGE_CALLS:
            for argument in call.args:
                if isinstance(argument, ast.Constant):
                    self._unnamed_strings.add(id(argument))

    def registry(self, node: ast.Dict) -> None:
        """A dict of string keys to names (`{"pack": PackedDecoder, ...}`): a registry whose
        classes are built when something selects their key."""
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                # A key is looked up, not a selection (`{"pack": ["d_model"]}` beside the
                # registry selects nothing).
                self._unnamed_strings.add(id(k))
                if _STRING_NAME.match(k.value):
                    self._key_strings.add(k.value)
                if isinstance(v, (ast.Name, ast.Attribute)):
                    self._registry_values[id(v)] = k.value

    def run_time_lookup(
        self, call: ast.Call, func: ast.expr, imports: dict[str, str], local: set[str]
    ) -> None:
        """`getattr(module, name)` with a computed name, `globals()[name]`, `eval(text)`:
        names looked up at run time (every class they may name may be built)."""
        name = func.id if isinstance(func, ast.Name) else None
        if isinstance(func, ast.Attribute) and func.attr == "__subclasses__":
            name = "__subclasses__"
        lookups = self.facts.lookups
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "__dict__"
            and func.attr in ("items", "values", "keys", "get")
        ):
            # `for name, cls in losses.__dict__.items(): REGISTRY.register(cls)`: the
            # module's names, looked up as `vars(losses)` is.
            name = "vars"
            call = ast.Call(func=ast.Name("vars"), args=[func.value.value], keywords=[])
        elif name in ("getmembers", "dir") and call.args:
            name = "vars"  # `inspect.getmembers(module)`, `dir(module)`: every name of it
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "getmembers"
            and dotted(func.value) == "inspect"
            and call.args
        ):
            name = "vars"
        if name in ("globals", "vars", "locals") and not call.args:
            found = ""
        elif name in ("eval", "exec"):
            found = "*"
        elif name == "__subclasses__":
            found = "^"
        elif name == "vars" or (
            name == "getattr"
            and len(call.args) >= 2
            and not (isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str))
        ):
            receiver = dotted(call.args[0]) if call.args else None
            if receiver in ("self", "cls") and name == "getattr":
                ending = _fixed_ending(call.args[1])
                if ending and ending not in self.facts.self_lookups:
                    self.facts.self_lookups.append(ending)
            if receiver is None or receiver.split(".", 1)[0] in ("self", "cls"):
                return
            root = receiver.split(".", 1)[0]
            if not self.known(root, imports, local):
                return  # a local value's attribute (`getattr(args, name)`)
            found = self.qualify(receiver, imports)
            if name == "getattr" and _composed(call.args[1]):
                # `getattr(module, f"{kind}_transform")`: no whole name is spelled anywhere,
                # so any class of the module may be the one built ("~": all of them).
                found = "~" + found
        else:
            return
        if found not in lookups:
            lookups.append(found)

    def _off_flag(self, value: ast.expr) -> bool:
        """An off value, or an inference flag that is off here handed on (`_offload_inference=
        _offload_inference`, `predict=self.predict_mode`)."""
        if _off(value) or not self._flag_params:
            return _off(value)
        params, klass = self._flag_params[-1]
        if isinstance(value, ast.Name):
            return value.id in params
        return (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == "self"
            and klass is not None
            and value.attr in self._flag_attributes.get(klass, {})
        )

    def _flag_on(self, name: str, key: str) -> None:
        keys = self.facts.flags_on.setdefault(name, [])
        if key not in keys:
            keys.append(key)

    @staticmethod
    def _add(uses: list[list[str]], seen: set[tuple[str, ...]] | None, use: list[str]) -> None:
        if seen is None:
            if use not in uses:
                uses.append(use)
            return
        item = tuple(use)
        if item not in seen:
            seen.add(item)
            uses.append(use)

    def inline_region(
        self, node: ast.IfExp | ast.BoolOp, key: str, imports: dict[str, str]
    ) -> None:
        if isinstance(node, ast.IfExp):
            truth = self.truth(node.test, imports, [])
            if decided(truth):
                self.region(key, node.body, node.body, truth, True, node.test, "if")
                self.region(key, node.orelse, node.orelse, truth, False, node.test, "else")
            return
        conjunction = isinstance(node.op, ast.And)
        # Each operand's truth once, combined prefix by prefix: a chain of n operands costs n
        # truths, not n * n / 2 (a 10,000-term `and` took most of a minute here).
        parts = [self.truth(v, imports, []) for v in node.values[:-1]]
        for index, truth in enumerate(_prefix_truths(parts, conjunction), start=1):
            if decided(truth):
                value = node.values[index]
                how = "and" if conjunction else "or"
                self.region(key, value, value, truth, conjunction, node.values[:index], how)

    def _imported_names(self, tree: ast.Module) -> dict[str, set[str]]:
        """The names `from M import f` binds anywhere in the module (in a function or a
        branch too), each with the qualified names it may stand for."""
        out: dict[str, set[str]] = {}
        for node in self.index.of_type(tree, ast.ImportFrom):
            assert isinstance(node, ast.ImportFrom)
            base = resolve_relative(
                self.module, self.is_package, node.level or 0, node.module or ""
            )
            if base is None:
                continue
            if base.split(".", 1)[0] in _LIBRARY_ROOTS:
                continue  # not a project's helper (keeps the ordered pairs few)
            for alias in node.names:
                # a function (a class built by name is no helper that fits or tests)
                if alias.name != "*" and not alias.name[:1].isupper():
                    out.setdefault(alias.asname or alias.name, set()).add(f"{base}.{alias.name}")
        return out

    def _fails_to_bind(self, node: ast.Call, key: str) -> bool:
        """`self.m(...)` in a method of a class whose own `m` has no `self` (see
        `_selfless_methods`), passing as many positional arguments as `m` takes or more: the
        instance makes one too many (or a keyword names a parameter the positional ones
        fill: `self.m(x, labels=y)` of `def m(preds, labels)`), so Python raises TypeError
        before `m`'s body runs."""
        func = node.func
        if not isinstance(func, ast.Attribute) or not self._selfless:
            return False
        owner = key.partition("#")[0].rpartition(".")[0]
        params = self._selfless.get(owner, {}).get(func.attr)
        if params is None or any(isinstance(a, ast.Starred) for a in node.args):
            return False
        filled = params[: len(node.args) + 1]  # the instance, then the positional arguments
        return len(node.args) >= len(params) or any(k.arg in filled for k in node.keywords)

    def call_use(
        self, node: ast.Call, imports: dict[str, str], local: set[str], key: str = ""
    ) -> list[str] | None:
        func = node.func
        if isinstance(func, ast.Name):
            if self.known(func.id, imports, local):
                return ["name", self.qualify(func.id, imports)]
            if func.id == "self" and "." in key:
                return ["self", "forward"]  # `self(batch)` in a method: the module's forward
            return None
        if not isinstance(func, ast.Attribute):
            return None
        receiver, method = func.value, func.attr
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            return ["self", method]
        if (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        ):
            return ["super", method]
        if (
            isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"
        ):
            return ["attr", f"{receiver.attr}.{method}"]
        text = dotted(func)
        if text is not None and self.known(text.split(".", 1)[0], imports, local):
            return ["name", self.qualify(text, imports)]
        if isinstance(receiver, ast.Name):
            # `runner = Pretrainer(cfg)` ... `runner.run()`: the class's method.
            built = self._built_method(receiver.id, method, imports, key)
            if built is not None and built.rsplit(".", 2)[-2][:1].isupper():
                return ["name", built]
            annotated = self._param_classes.get((key, receiver.id))
            if annotated is not None and (key, receiver.id) not in self.values:
                return ["name", f"{annotated}.{method}"]
        return ["meth", method]

    def _built_method(
        self, receiver: str, method: str, imports: dict[str, str], key: str
    ) -> str | None:
        """`pkg.Runner.run` for `runner.run()` after `runner = Runner(cfg)` (a name the file
        imports or defines): the method of what the call built, if it is a class."""
        built = self.values.get((key, receiver))
        if not isinstance(built, ast.Call):
            return None
        name = dotted(built.func)
        if name is None or not self.known(name.split(".", 1)[0], imports, set()):
            return None
        return f"{self.qualify(name, imports)}.{method}"

    # --- launches ------------------------------------------------------------------------

    def step_loop(
        self,
        loop: ast.For | ast.AsyncFor | ast.While,
        key: str,
        imports: dict[str, str],
        local: set[str],
    ) -> None:
        """A hand-written training loop (Fabric, torch_xla): what its body calls runs every
        step, like what `training_step` calls."""
        spans = self.facts.step_loops.setdefault(key, [])
        spans.append([loop.lineno, loop.end_lineno or loop.lineno])
        uses = self.facts.step_uses.setdefault(key, [])
        for node in ast_walk(ast.Module(body=loop.body, type_ignores=[])):
            if isinstance(node, ast.Call):
                use = self.call_use(node, imports, local, key)
                if use is not None and _useful(use) and all(u[:2] != use for u in uses):
                    uses.append([*use, node.lineno])

    def call_loop(
        self,
        loop: ast.For | ast.AsyncFor | ast.While,
        key: str,
        imports: dict[str, str],
        local: set[str],
    ) -> None:
        """A loop taking no optimizer step itself: what its body calls of the project (a
        training loop if one of those takes a step, ProjectModel._steps_through)."""
        uses: list[list[Any]] = []
        for node in _outside_loops(loop.body):
            if not isinstance(node, ast.Call):
                continue
            use = self.call_use(node, imports, local, key)
            if (
                use is not None
                and use[0] in ("name", "self", "attr")
                and _useful(use)
                and all(u[:2] != use for u in uses)
            ):
                uses.append([*use, node.lineno])
        if uses:
            self.facts.call_loops.setdefault(key, []).append(uses)

    def collate_argument(
        self, value: ast.expr, key: str, imports: dict[str, str], local: set[str]
    ) -> None:
        """Record what a `collate_fn=` argument runs (ScopeFacts.collate_refs)."""
        found: list[list[str]] = []
        if isinstance(value, ast.Lambda):
            for node in ast_walk(value.body):
                if isinstance(node, ast.Call):
                    use = self.call_use(node, imports, local, key)
                    if use is not None and use[0] in ("name", "self", "attr"):
                        found.append(use)
        elif isinstance(value, ast.Name) and self.known(value.id, imports, local):
            found.append(["name", self.qualify(value.id, imports)])
        elif (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == "self"
        ):
            found.append(["self", value.attr])
        for use in found:
            entry = [key, *use]
            if entry not in self.facts.collate_refs:
                self.facts.collate_refs.append(entry)

    def data_argument(self, value: ast.expr, imports: dict[str, str], local: set[str]) -> None:
        """The classes built or named in a data-pipeline argument (`transforms=[Crop(64)]`,
        `collate_fn=Pad()`, `transform=nn.Sequential(A(), B())`): built for the data loader."""
        for node in ast_walk(value):
            target = node.func if isinstance(node, ast.Call) else node
            if isinstance(target, (ast.Name, ast.Attribute)):
                text = dotted(target)
                if text is not None and self.known(text.split(".", 1)[0], imports, local):
                    name = self.qualify(text, imports)
                    if name not in self.facts.data_uses:
                        self.facts.data_uses.append(name)

    def launch(
        self, node: ast.Call, use: list[str], key: str, imports: dict[str, str], local: set[str]
    ) -> None:
        form, target = use
        if form == "name":
            qualified = target.lstrip(".")
            root = qualified.split(".", 1)[0]
            last = qualified.rsplit(".", 1)[-1]
            parts = qualified.split(".")
            if root in _LIGHTNING_ROOTS and (
                last in ("Trainer", "Fabric", "LightningLite")
                or (len(parts) > 1 and parts[-2] == "Trainer" and last.startswith("from_"))
            ):
                kind = "fabric" if last in ("Fabric", "LightningLite") else "trainer"
                verdict = self.verdict(node, key, imports)
                if verdict == "auto" and any(
                    target.split(".", 1)[0] == "torch_xla"
                    for target in self.module_imports.values()
                ):
                    verdict = "tpu"  # a launching script written for torch_xla
                launch = [kind, verdict, key, node.lineno]
                if self.computed_accelerator(node, key):
                    launch.append("computed")
                if verdict == "auto" and kind == "trainer" and _built_from_flags(node, last):
                    launch.append("flags")  # dropped at the end if the module names a TPU
                if kind == "trainer" and self.one_device(node, key, imports):
                    launch.append("one-device")
                self.facts.launches.append(launch)
            elif (
                last == "instantiate"
                and root == "hydra"
                and node.args
                and (text := dotted(node.args[0])) is not None
                and text.rsplit(".", 1)[-1].lower() == "trainer"
            ):
                # `hydra.utils.instantiate(config.trainer, callbacks=...)`: a Trainer its
                # config builds (what it asks for is the config's: "auto" here).
                self.facts.launches.append(["trainer", "auto", key, node.lineno])
            elif last.endswith("CLI"):
                self.facts.launches.append(
                    ["cli", self.cli_verdict(node), key, node.lineno, target]
                )
            elif qualified in _XLA_SPAWNS or (root == "torch_xla" and last in ("spawn", "launch")):
                self.facts.launches.append(["xla-spawn", "tpu", key, node.lineno])
            elif qualified in _XLA_DEVICE_CALLS and key and "." not in key.split("#", 1)[0]:
                self.facts.launches.append(["xla-device", "tpu", key, node.lineno])
            elif qualified in ("signal.signal",) and len(node.args) >= 2:
                handler = self.reference(node.args[1], imports, local)
                if handler is not None:
                    self.facts.handlers.append(handler)
            return
        if form == "meth" and target == "fit" and key:
            receiver = node.func.value  # type: ignore[attr-defined]
            if isinstance(receiver, ast.Name) and "trainer" in receiver.id.lower():
                self.facts.after_fit.append([key, node.end_lineno or node.lineno])
                self.fitting.add(key)  # what follows the statement runs after the fit

    def reference(
        self, node: ast.expr, imports: dict[str, str], local: set[str]
    ) -> list[str] | None:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return ["self", node.attr]
        text = dotted(node)
        if text is not None and self.known(text.split(".", 1)[0], imports, local):
            return ["name", self.qualify(text, imports)]
        return None

    def verdict(self, node: ast.Call, key: str, imports: dict[str, str]) -> str:
        """How surely a Trainer or Fabric runs on TPUs: "tpu" (`accelerator="tpu"`, an XLA
        strategy, `tpu_cores`), "other" (another accelerator named, `gpus=N` or a list of GPU
        ids, a DDP strategy or Lightning 1's `distributed_backend="ddp"`, apex's AMP:
        `amp_backend="apex"`, `amp_level="O2"`) or "auto" (nothing says: Lightning picks the
        TPU on a TPU VM)."""
        verdicts: set[str] = set()
        for keyword in node.keywords:
            name, value = keyword.arg, keyword.value
            if name is None:
                continue
            # `strategy=strategy` after `strategy = XLAStrategy(...)`, or unpacked from what
            # a function of the module returns (`accelerator, devices, strategy =
            # settings(args)`, one of whose returns says "tpu")
            options = self.keyword_values(value, key)
            value = options[0]
            texts = [t for option in options for t in self.literal_texts(option)]
            xla_class = any(self.is_xla_class(option, imports) for option in options)
            if name == "accelerator":
                if any(t in ("tpu", "xla") for t in texts) or xla_class:
                    return "tpu"
                if texts and all(t in _OTHER_ACCELERATORS for t in texts):
                    verdicts.add("other")
                elif len(options) == 1 and re.search(r"(?i)tpu|xla", self.source(value)):
                    return "tpu"
            elif name in ("strategy", "distributed_backend"):
                if any(t in _XLA_STRATEGY_NAMES for t in texts) or xla_class:
                    return "tpu"
                if texts and all(t.startswith(("ddp", "dp", "deepspeed", "fsdp")) for t in texts):
                    verdicts.add("other")
            elif name in ("tpu_cores", "num_tpu_cores") and not (
                isinstance(value, ast.Constant) and value.value in (None, 0)
            ):
                return "tpu"
            elif name in ("gpus", "num_gpus") and (
                (isinstance(value, ast.Constant) and value.value not in (None, 0, "0", ""))
                or (isinstance(value, (ast.List, ast.Tuple)) and value.elts)
            ):
                verdicts.add("other")
            elif (name == "amp_backend" and texts == ["apex"]) or (
                name == "amp_level" and texts and all(re.fullmatch(r"o[0-3]", t) for t in texts)
            ):
                verdicts.add("other")  # apex's AMP exists only for CUDA
        return "other" if verdicts else "auto"

    def _bind_tpu_returned(
        self,
        names: list[tuple[int | None, str]],
        callee: ast.FunctionDef | ast.AsyncFunctionDef,
        key: str,
        imports: dict[str, str],
    ) -> None:
        """What the returns of a project function a TPU reaches give each unpacked name
        (_tpu_returned); nothing when a reached return's tuple does not match the names."""
        reached = self._tpu_reached.get(id(callee))
        if reached is None:
            imports = dict(imports)
            for statement in callee.body:  # `import torch` in the function itself
                if isinstance(statement, ast.Import):
                    for alias in statement.names:
                        name = alias.asname or alias.name.split(".", 1)[0]
                        imports[name] = alias.name if alias.asname else name
            reached = self._tpu_reached[id(callee)] = self._tpu_returns(callee.body, imports)[0]
        if not reached:
            return
        for place, name in names:
            found: list[ast.expr] = []
            for result in reached:
                if place is None:
                    found.append(result)
                elif isinstance(result, ast.Tuple) and len(result.elts) == len(names):
                    found.append(result.elts[place])
                else:
                    break
            else:
                self._tpu_returned[(key, name)] = found

    def _tpu_returns(
        self, body: list[ast.stmt], imports: dict[str, str]
    ) -> tuple[list[ast.expr], bool]:
        """The values of the `return`s a TPU may reach in a function body, and whether the
        body always ends (returns or raises) on a TPU. An `if` whose test is known on a TPU
        (the same truth the walk gives its branches: `if not torch.cuda.is_available():`)
        reads only the branch a TPU takes; after a branch that always ends, nothing runs."""
        found: list[ast.expr] = []
        for statement in body:
            if isinstance(statement, ast.Return):
                found.append(statement.value or ast.Constant(value=None))
                return found, True
            if isinstance(statement, ast.Raise):
                return found, True
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, ast.If):
                truth = self.truth(statement.test, imports, [{}])
                branches = (
                    [statement.body]
                    if truth is True
                    else [statement.orelse]
                    if truth is False
                    else [statement.body, statement.orelse]
                )
                ends = True
                for branch in branches:
                    values, ended = self._tpu_returns(branch, imports)
                    found.extend(values)
                    ends = ends and ended
                if ends:
                    return found, True
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith)):
                values, ended = self._tpu_returns(statement.body, imports)
                found.extend(values)
                if ended:
                    return found, True
                continue
            for node in ast_walk(statement):  # loops, `try`: any return inside may run
                if isinstance(node, ast.Return):
                    found.append(node.value or ast.Constant(value=None))
        return found, False

    def _bind_returned(
        self, targets: list[ast.expr], value: ast.expr | None, key: str, imports: dict[str, str]
    ) -> None:
        """`name = settings(args)` or `a, name, c = settings(args)` with `settings` a
        top-level function of the module: the values its `return`s give `name` (the element
        at its place of each returned tuple), which a Trainer's `accelerator=name` reads."""
        names: list[tuple[int | None, str]] = []
        for target in targets:
            if isinstance(target, ast.Name):
                names.append((None, target.id))
            elif isinstance(target, ast.Tuple):
                elements = enumerate(target.elts)
                names.extend((i, e.id) for i, e in elements if isinstance(e, ast.Name))
        for _, name in names:
            self._returned.pop((key, name), None)  # a later binding replaces it
            self._tpu_returned.pop((key, name), None)
        if len(targets) != 1 or not isinstance(value, ast.Call) or not names:
            return
        if isinstance(targets[0], ast.Tuple) and len(names) != len(targets[0].elts):
            return  # `a, *rest = ...`, `a, self.b = ...`
        func = value.func
        callee = self._top_functions.get(func.id) if isinstance(func, ast.Name) else None
        if (
            self._class_methods
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            method = self._class_methods[-1].get(func.attr)
            if method is not None:
                self._bind_tpu_returned(names, method, key, imports)
        if callee is None:
            return
        self._bind_tpu_returned(names, callee, key, imports)
        returned = [
            node.value
            for node in ast_walk(callee)
            if isinstance(node, ast.Return) and node.value is not None
        ]
        for place, name in names:
            found: list[ast.expr] = []
            for result in returned:
                if place is None:
                    found.append(result)
                elif isinstance(result, ast.Tuple) and len(result.elts) == len(names):
                    found.append(result.elts[place])
            if found:
                self._returned[(key, name)] = found

    def keyword_values(self, value: ast.expr, key: str) -> list[ast.expr]:
        """What a keyword's value may be: the last value assigned to a plain name, or what
        the module's function it was unpacked from returns there."""
        if isinstance(value, ast.Name):
            returned = self._returned.get((key, value.id)) or self._returned.get(("", value.id))
            if returned and any(self.literal_texts(r) for r in returned):
                return returned
            return [self.values.get((key, value.id)) or self.values.get(("", value.id)) or value]
        return [value]

    def computed_accelerator(self, node: ast.Call, key: str) -> bool:
        """Whether the call's `accelerator=` is computed by the script's code (`accelerator=
        get_device_type()`, or a local name bound to such a call): no YAML config decides
        it, unlike `accelerator=cfg.accelerator`."""
        for keyword in node.keywords:
            if keyword.arg != "accelerator":
                continue
            value = keyword.value
            if isinstance(value, ast.Name):
                value = self.values.get((key, value.id)) or self.values.get(("", value.id)) or value
            return isinstance(value, ast.Call)
        return False

    @contextmanager
    def _branch(self, dead: bool = False, maybe: bool = True) -> Iterator[None]:
        """Walk a branch that a TPU never takes (`dead`) or that may not run (`maybe`)."""
        self._dead += dead
        self._maybe += maybe
        try:
            yield
        finally:
            self._dead -= dead
            self._maybe -= maybe

    def _bind(self, key: str, name: str, one: bool) -> None:
        """A binding of `name` that may run on a TPU: whether it is one device (_one_bound)."""
        if self._dead:
            return
        slot = ("" if key == "__main__" else key, name)
        if self._maybe:
            one = one and self._one_bound.get(slot, True)
        self._one_bound[slot] = one

    def _unbind(self, target: ast.expr, key: str) -> None:
        """Names bound to something unknown (`for devices in ...`, `a, devices = f()`)."""
        for node in ast_walk(target):
            if isinstance(node, ast.Name):
                self._bind(key, node.id, False)

    def one_device_value(
        self, value: ast.expr, imports: dict[str, str], truths: list[dict[str, Truth]]
    ) -> bool:
        """Whether a value of `devices=` is one device on a TPU: the number 1, the string
        "1", a one-element list or tuple of device ids (Lightning's `_parse_tpu_devices`,
        lightning/fabric/accelerators/xla.py:134-179), or the branch of a conditional
        expression a TPU takes (both when the test is unknown)."""
        if isinstance(value, ast.IfExp):
            body = self.one_device_value(value.body, imports, truths)
            orelse = self.one_device_value(value.orelse, imports, truths)
            if body == orelse:
                return body
            # one branch is: the test decides (read only then, as it is rarely needed)
            truth = self.truth(value.test, imports, truths) if self.judged(value.test) else None
            return (truth is False or body) and (truth is True or orelse)
        if isinstance(value, ast.Constant):
            return (type(value.value) is int and value.value == 1) or (
                isinstance(value.value, str) and value.value.strip() == "1"
            )
        return (
            isinstance(value, (ast.List, ast.Tuple))
            and len(value.elts) == 1
            and not isinstance(value.elts[0], ast.Starred)
        )

    def one_device(self, node: ast.Call, key: str, imports: dict[str, str]) -> bool:
        """Whether a Trainer runs on exactly one device under a single-device strategy:
        `devices=1` (or `tpu_cores=1`, `num_tpu_cores=1`, `num_processes=1`, `"1"`, a
        one-element list of device ids, a name every binding of which that reaches the call
        on a TPU is one of these: `if torch.cuda.is_available(): devices = [args.gpu] else:
        devices = 1`), with no `strategy=` but a single-device one, no `num_nodes=` but 1 and
        no `**config` spread (which may name a strategy): one process, with no peers, and
        Lightning's `SingleDeviceXLAStrategy` (accelerator_connector.py:404-408), which is
        not distributed (`is_distributed`, accelerator_connector.py:554-568)."""
        func = dotted(node.func)
        if func is None or func.rsplit(".", 1)[-1] != "Trainer":
            return False  # `Trainer.from_argparse_args(args)`: the parsed flags decide
        found = False
        for keyword in node.keywords:
            name, value = keyword.arg, keyword.value
            if name is None:
                return False
            if name == "strategy":
                reached = (
                    self._tpu_returned.get((key, value.id)) if isinstance(value, ast.Name) else None
                )
                options = reached or self.keyword_values(value, key)
                if not all(
                    any(t in ("auto", "single_xla", "single_device") for t in self.literal_texts(o))
                    or (
                        (text := dotted(o.func if isinstance(o, ast.Call) else o)) is not None
                        and text.rsplit(".", 1)[-1] in _SINGLE_DEVICE_STRATEGIES
                    )
                    for o in options
                ):
                    return False
            elif name == "num_nodes" and not (
                isinstance(value, ast.Constant) and type(value.value) is int and value.value == 1
            ):
                return False
            elif name in ("devices", "tpu_cores", "num_tpu_cores", "num_processes"):
                if isinstance(value, ast.Name):
                    slot = ("" if key == "__main__" else key, value.id)
                    one = self._one_bound.get(slot)
                    if one is None and slot[0]:
                        one = self._one_bound.get(("", value.id))
                    found = found or bool(one)
                else:
                    found = found or self.one_device_value(value, imports, [{}])
        return found

    def literal_texts(self, node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value.lower()]
        if isinstance(node, ast.IfExp):
            return self.literal_texts(node.body) + self.literal_texts(node.orelse)
        return []

    def is_xla_class(self, node: ast.expr, imports: dict[str, str]) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        text = dotted(node)
        if text is None:
            return False
        return text.rsplit(".", 1)[-1] in _XLA_STRATEGY_CLASSES

    def cli_verdict(self, node: ast.Call) -> str:
        for keyword in node.keywords:
            if keyword.arg == "trainer_defaults":
                text = self.source(keyword.value)
                if re.search(r"(?i)['\"](tpu|xla)['\"]|XLAStrategy", text):
                    return "tpu"
                if re.search(r"(?i)['\"](gpu|cuda|cpu|mps)['\"]", text):
                    return "other"
        return "auto"

    # --- truth -----------------------------------------------------------------------------

    def truth(
        self,
        node: ast.expr,
        imports: dict[str, str],
        truths: list[dict[str, Truth]],
        infer: bool = False,
    ) -> Truth:
        """The condition's value on a TPU (see the module docstring). `infer`: its value while
        training, where inference flags that default to False are off."""
        if isinstance(node, ast.BoolOp):
            parts = [self.truth(v, imports, truths, infer) for v in node.values]
            return _and(parts) if isinstance(node.op, ast.And) else _or(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _not(self.truth(node.operand, imports, truths, infer))
        if infer and self._flag_params:
            params, klass = self._flag_params[-1]
            if isinstance(node, ast.Name) and node.id in params:
                self._flags_seen.append(node.id)
                return False
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and klass is not None
                and node.attr in self._flag_attributes.get(klass, {})
            ):
                self._flags_seen += [node.attr, *self._flag_attributes[klass][node.attr]]
                return False
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            compared = self.compare(node.left, node.ops[0], node.comparators[0], imports, truths)
            return compared if compared is not None else self.passed(node)
        if isinstance(node, ast.Call):
            return self.call_truth(node, imports, truths)
        if isinstance(node, ast.Name):
            literal = self.literal_name_truth(node)
            if literal is not None and not (literal[2] and name_tokens(node.id) & _CUDA_TOKENS):
                return literal  # (a flag named for CUDA stays off on a TPU, as below)
            if self._incoming and id(node) in self._incoming[-1] and self._functions:
                # `p = p or self.p`: the `p` read there is what the calls pass
                name, default = self._incoming[-1][id(node)]
                return ["flag", self._functions[-1][0], name, default]
            for scope in reversed(truths):
                if node.id in scope:
                    return scope[node.id]
            if node.id in self.module_imports or node.id in imports:
                qualified = imports.get(node.id, "")
                if qualified.startswith("torch.cuda"):
                    return False
            tokens = name_tokens(node.id)
            if tokens & _CUDA_TOKENS:
                return False
            if tokens & TPU_TOKENS:
                return True
            passed = self.passed(node)
            if passed is not None:
                return passed
            if node.id in self.facts.globals:
                return ["glob", node.id]
            return None
        if isinstance(node, ast.Attribute):
            if node.attr in ("is_cuda", "is_mps"):
                return False
            text = dotted(node)
            if text is not None:
                qualified = self.qualify(text, imports)
                if qualified.startswith(("torch.version.cuda", "torch.backends.cudnn.enabled")):
                    return False
            tokens = name_tokens(node.attr)
            if tokens & _CUDA_TOKENS:
                return False
            if tokens & TPU_TOKENS:
                return True
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr in self.flag_attributes
            ):
                return ["attr", node.attr]
            if _config_receiver(node.value):
                return ["option", node.attr]  # `self.cfg.interleave`: what the configs say
            saved = self._saved_hparam(node)
            if saved is not None:
                return saved  # `self.hparams.use_x` of `save_hyperparameters()`
            if _switch_read(node) is not None:
                return ["switch", node.attr]  # `args.use_ema`: what the launchers pass
            return None
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and _config_receiver(node.value)
        ):
            return ["option", node.slice.value]  # `config["interleave"]`
        saved = self._saved_hparam(node)
        if saved is not None:
            return saved  # `self.hparams["use_x"]` of `save_hyperparameters()`
        hparam = _switch_read(node)
        if hparam is not None:
            return ["switch", hparam]  # `self.hparams["use_x"]` of `Model(vars(args))`
        if isinstance(node, ast.NamedExpr):
            return self.truth(node.value, imports, truths, infer)
        return None

    def _saved_hparam(self, node: ast.expr) -> Truth:
        """`["hparam", constructor key, name, default]` for `self.hparams.<name>` or
        `self.hparams["<name>"]` in a method of a class whose `__init__` saves its
        arguments (`self.save_hyperparameters()`) and declares `name` with a None, True or
        False default it never reassigns: what the class's constructions pass, or that
        default (a command-line switch of that name still decides it first)."""
        if not self._flag_params:
            return None
        klass = self._flag_params[-1][1]
        saved = self._hparam_defaults.get(klass) if klass is not None else None
        if saved is None:
            return None
        if isinstance(node, ast.Attribute):
            receiver, name = node.value, node.attr
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            receiver, name = node.value, node.slice.value
        else:
            return None
        if dotted(receiver) != "self.hparams" or name not in saved[1]:
            return None
        return ["hparam", saved[0], name, saved[1][name]]

    def call_truth(
        self, node: ast.Call, imports: dict[str, str], truths: list[dict[str, Truth]]
    ) -> Truth:
        got = _option_get(node)
        if got is not None:
            return ["option", got]  # `cfg.get("use_map", False)`: what the configs say
        got = _switch_read(node)
        if got is not None:
            return ["switch", got]  # `hparams.get("use_x", False)`: what the launchers pass
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "startswith" and node.args:
            return self.device_compare(func.value, node.args[0], True)
        text = dotted(func)
        if text is not None:
            qualified = self.qualify(text, imports)
            if qualified.startswith(_TORCH_CUDA_CHECKS) or qualified in _DIST_INITIALIZED:
                return False
            if qualified in _AUTOCAST_CHECKS and _cuda_autocast_query(node):
                return False
            last = text.rsplit(".", 1)[-1]
            if last == "isinstance" and len(node.args) == 2:
                classes = node.args[1]
                options = classes.elts if isinstance(classes, ast.Tuple) else [classes]
                names = [dotted(o) or "" for o in options]
                if names and all(name_tokens(n.rsplit(".", 1)[-1]) & _CUDA_TOKENS for n in names):
                    return False
                if any(name_tokens(n.rsplit(".", 1)[-1]) & TPU_TOKENS for n in names):
                    return True
                return self.tensor_param(node.args[0], names, imports)
            if last in ("bool",) and node.args:
                return self.truth(node.args[0], imports, truths)
            tokens = name_tokens(last)
            if last[:1].isupper():
                return None  # a constructor (`NVIDIAAutoEncoder(...)`), no device test
            if tokens & _CUDA_TOKENS and not tokens & {"to", "set", "empty", "synchronize"}:
                return False
            if tokens & TPU_TOKENS and tokens & {"is", "use", "on", "available", "enabled", "has"}:
                return True
            if isinstance(func, ast.Name) and func.id in self.module_names:
                return ["call", "name", "." + func.id]
            if isinstance(func, ast.Name) and func.id in imports:
                return ["call", "name", imports[func.id]]
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                return ["call", "self", func.attr]
        return None

    def passed(self, node: ast.expr) -> Truth:
        """`p is not None` (`["passed", key, p]`) and `p is None` (its negation) of a
        parameter of the function being walked that defaults to None, and `p` (`["flag",
        key, p, default]`) of one that defaults to None, True or False, never reassigned:
        decided by what the project's calls pass. `self.x is not None` (`["attr_passed",
        x]`) of an attribute assigned from such parameters: by what the constructions pass."""
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(left, ast.Constant) and left.value is None:
                left, right = right, left
            if (
                isinstance(node.ops[0], (ast.Is, ast.IsNot))
                and isinstance(right, ast.Constant)
                and right.value is None
                and _self_attribute(left)
                and left.attr in self.flag_attributes  # type: ignore[attr-defined]
            ):
                truth = ["attr_passed", left.attr]  # type: ignore[attr-defined]
                return _not(truth) if isinstance(node.ops[0], ast.Is) else truth
        if not self._none_params or not self._none_params[-1]:
            return None
        params = self._none_params[-1]
        negated = compared = False
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(left, ast.Constant) and left.value is None:
                left, right = right, left
            if not (isinstance(right, ast.Constant) and right.value is None):
                return None
            if not isinstance(op, (ast.Is, ast.IsNot)):
                return None
            negated, compared, node = isinstance(op, ast.Is), True, left
        if not isinstance(node, ast.Name) or node.id not in params:
            return None
        if self._flag_params and node.id in self._flag_params[-1][0]:
            return None  # an inference flag: judged as one (off while training)
        key = self._functions[-1][0]
        default = params[node.id]
        if not compared:
            return None if default == _FILLED else ["flag", key, node.id, default]
        if default == _FILLED:
            # `if p is None: p = ...` fills it in: only "every call passes one" is sure
            truth = ["passed", key, node.id, _FILLED]
        elif default is None:
            truth = ["passed", key, node.id]
        else:
            return None  # `p is None` of a True/False flag: no call's business
        return _not(truth) if negated else truth

    def _kwargs_loop(self, node: ast.For | ast.AsyncFor) -> None:
        """`for key, val in kwargs.items()` (or `for val in kwargs.values()`) over the
        function's own `**kwargs`: `val` holds the values the calls pass by keyword."""
        if not self._kwargs or self._kwargs[-1][0] is None:
            return
        spread, index, values = self._kwargs[-1]
        it = node.iter
        if not (
            isinstance(it, ast.Call)
            and not it.args
            and isinstance(it.func, ast.Attribute)
            and isinstance(it.func.value, ast.Name)
            and it.func.value.id == spread
        ):
            return
        target = node.target
        if it.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        elif it.func.attr != "values":
            return
        if isinstance(target, ast.Name) and not _rebinds(node.body, target.id):
            values[target.id] = index

    def tensor_param(self, subject: ast.expr, classes: list[str], imports: dict[str, str]) -> Truth:
        """`isinstance(p, torch.Tensor)` of a parameter of the function being walked:
        `["tensor_param", function key, index]`, decided by what the project's calls pass
        (a helper that takes an int or a tensor, called with ints only, never runs its tensor
        branch)."""
        if not isinstance(subject, ast.Name) or not self._functions:
            return None
        if not any(self.qualify(c, imports) in _TENSOR_CLASSES for c in classes if c):
            return None
        key, params = self._functions[-1]
        if subject.id not in params:
            spread = self._kwargs[-1][2] if self._kwargs else {}
            if subject.id in spread:
                # a value of the function's `**kwargs`: what the calls pass by keyword
                return ["tensor_param", key, spread[subject.id]]
            return None
        if self._constant_defaults and subject.id in self._constant_defaults[-1]:
            # its default is no tensor: decided by the calls that pass it
            return ["tensor_param", key, params.index(subject.id), True]
        return ["tensor_param", key, params.index(subject.id)]

    def compare(
        self,
        left: ast.expr,
        op: ast.cmpop,
        right: ast.expr,
        imports: dict[str, str],
        truths: list[dict[str, Truth]],
    ) -> Truth:
        equal = isinstance(op, (ast.Eq, ast.Is))
        unequal = isinstance(op, (ast.NotEq, ast.IsNot))
        if isinstance(op, (ast.In, ast.NotIn)):
            # `"cuda" in str(x.device)`
            result = self.device_compare(right, left, True)
            if result is None:
                result = self.device_in(left, right)  # `x.device.type in ("cpu", "cuda")`
            if result is None and self.cuda_error_text(left, right):
                result = False  # `"CUDA out of memory" in str(e)`: XLA raises no CUDA error
            return _not(result) if isinstance(op, ast.NotIn) else result
        if (equal or unequal) and self._functions and _is_main_name_test(left, right):
            # `if __name__ == "__main__":` inside a function: a self-test, true only when the
            # file runs as a script (decided by whether the file starts training itself)
            return _not(["main"]) if unequal else ["main"]
        if equal or unequal:
            for device, other in ((left, right), (right, left)):
                result = self.device_compare(device, other, False)
                if result is None:
                    result = self.device_in(device, ast.Tuple(elts=[other]))
                if result is not None:
                    return _not(result) if unequal else result
            for param, other in ((left, right), (right, left)):
                result = self.string_param_compare(param, other)
                if result is not None:
                    return _not(result) if unequal else result
            for read, other in ((left, right), (right, left)):
                name = _switch_read(read) if _is_none_constant(other) else None
                if name is not None:
                    # `self.hparams.teacher is not None`: what the parser and configs leave it
                    result = ["switch", name, None]
                    return _not(result) if unequal else result
            for read, other in ((left, right), (right, left)):
                if not (
                    isinstance(op, (ast.Eq, ast.NotEq))
                    and isinstance(other, ast.Constant)
                    and isinstance(other.value, (bool, int, float, str))
                ):
                    continue  # (`is None` tests are `passed` questions)
                name = _option_read(read)
                if name is not None:
                    # `cfg["loss"]["kind"] == "focal"`: what the configs set it to
                    result = ["option", name, other.value]
                    return _not(result) if unequal else result
                name = _switch_read(read)
                if name is not None:
                    # `self.hparams.num_classes == 7`: what the parser and configs leave it
                    result = ["switch", name, other.value]
                    return _not(result) if unequal else result
                if _self_attribute(read) and (
                    read.attr in self.flag_attributes  # type: ignore[attr-defined]
                    or other.value in _TRAINER_FUNCTIONS
                ):
                    # `self.kind == "l2"` of `self.kind = cfg["kind"]`: the same, if every
                    # assignment of the attribute reads an option (ProjectScope)
                    result = ["attr_option", read.attr, other.value]  # type: ignore[attr-defined]
                    return _not(result) if unequal else result
            if (
                isinstance(right, ast.Constant)
                and type(right.value) is int
                and isinstance(left, ast.Call)
                and (dotted(left.func) or "").endswith("device_count")
                and self.gpu_count(left, imports)
            ):
                # `torch.cuda.device_count() == 0`: a TPU has no CUDA device
                return (right.value == 0) is equal
            if isinstance(op, (ast.Eq, ast.NotEq)):
                return _attr_number(left, op, right)
            return None
        ordered = _option_order(left, op, right)
        if ordered is not None:
            return ordered
        ordered = _attr_number(left, op, right)
        if ordered is not None:
            return ordered
        # `num_gpus > 0`, `torch.cuda.device_count() > 1`: a GPU count is 0 on a TPU.
        if isinstance(right, ast.Constant) and isinstance(right.value, int):
            count = self.gpu_count(left, imports)
            if count and isinstance(op, (ast.Gt, ast.GtE)):
                limit = right.value if isinstance(op, ast.Gt) else right.value - 1
                return False if limit >= 0 else None
            if count and right.value >= 0 and isinstance(op, (ast.Lt, ast.LtE)):
                return right.value > 0 or isinstance(op, ast.LtE)  # `device_count() < 1`
        return None

    def number_store(self, klass: str, attr: str, value: ast.expr | None, key: str) -> None:
        """Record a store of `self.<attr>` for ScopeFacts.number_attrs: the parameter of
        the function being walked it stores, when that defaults to a number."""
        stored: Any = None
        if (
            isinstance(value, ast.Name)
            and key
            and self._functions
            and self._functions[-1][0] == key
            and self._number_params
            and value.id in self._number_params[-1]
        ):
            stored = [key, value.id, self._number_params[-1][value.id]]
        self.facts.number_attrs.setdefault(klass, {}).setdefault(attr, []).append(stored)

    def _setup_stage(self, value: ast.expr, key: str) -> bool:
        """Whether `value`, in the function `key`, is the stage a `setup(self, stage)` method
        was given (`stage`, or `"fit" if stage is None else stage`): Lightning calls a
        module's `setup` with the name of the Trainer's function, "fit" in a training run
        (ProjectScope decides whose `setup` it is)."""
        if not self._functions or self._functions[-1][0] != key:
            return False
        params = self._functions[-1][1]
        if key.split("#", 1)[0].rsplit(".", 1)[-1] != "setup" or len(params) < 2:
            return False
        stage = params[1]
        if isinstance(value, ast.IfExp):
            parts = [value.body, value.orelse]
            if not any(isinstance(p, ast.Name) and p.id == stage for p in parts):
                return False
            return all(
                (isinstance(p, ast.Name) and p.id == stage)
                or (isinstance(p, ast.Constant) and p.value == "fit")
                for p in parts
            )
        return (
            isinstance(value, ast.Name)
            and value.id == stage
            and not (self._string_params and stage in self._string_params[-1])
        )

    def string_param_compare(self, param: ast.expr, other: ast.expr) -> Truth:
        """`mode == "cpu"` of a parameter of the function being walked that defaults to a
        string and is never reassigned: `["equals", key, name, default, literal]`, decided
        by what the project's calls pass."""
        if not (
            isinstance(param, ast.Name)
            and isinstance(other, ast.Constant)
            and isinstance(other.value, str)
            and self._string_params
            and self._functions
        ):
            return None
        key = self._functions[-1][0]
        if param.id in self._string_params[-1]:
            return ["equals", key, param.id, self._string_params[-1][param.id], other.value]
        if self._required_params and param.id in self._required_params[-1]:
            # no default: what every call passes decides it
            return ["equals", key, param.id, REQUIRED, other.value]
        return None

    def cuda_error_text(self, text: ast.expr, error: ast.expr) -> bool:
        """`"CUDA out of memory" in str(e)` (or `e.args[0]`, `repr(e)`, `e`) in an `except
        ... as e:` handler: a message that names CUDA, in the text of the caught error."""
        if not (
            isinstance(text, ast.Constant)
            and isinstance(text.value, str)
            and "cuda" in text.value.lower()
        ):
            return False
        while isinstance(error, (ast.Call, ast.Subscript, ast.Attribute)):
            if isinstance(error, ast.Call):
                if not (isinstance(error.func, ast.Name) and error.func.id in ("str", "repr")):
                    return False
                if len(error.args) != 1:
                    return False
                error = error.args[0]
            else:
                error = error.value
        return isinstance(error, ast.Name) and error.id in self._exceptions

    def gpu_count(self, node: ast.expr, imports: dict[str, str]) -> bool:
        if isinstance(node, ast.Call):
            text = dotted(node.func)
            if text is not None and self.qualify(text, imports).startswith("torch.cuda."):
                return True
            if (
                node.func
                and isinstance(node.func, ast.Name)
                and node.func.id == "len"
                and node.args
            ):
                return self.gpu_count(node.args[0], imports)
            return False
        text = dotted(node)
        return text is not None and bool(name_tokens(text.rsplit(".", 1)[-1]) & _CUDA_TOKENS)

    def device_in(self, device: ast.expr, options: ast.expr) -> Truth:
        """`device.type in ("cpu", "cuda")` (False on a TPU: no CUDA device, and the model's
        own device in a step or hook is XLA's), `in ("xla", "cpu")` (True)."""
        if not isinstance(options, (ast.Tuple, ast.List, ast.Set)) or not options.elts:
            return None
        names = [
            e.value.lower().split(":", 1)[0]
            for e in options.elts
            if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        if len(names) != len(options.elts) or not _is_device_text(device):
            return None
        if any(n in _TPU_DEVICE_NAMES for n in names):
            return True
        if all(n in _CUDA_DEVICE_NAMES for n in names):
            return False
        if all(n in _CUDA_DEVICE_NAMES or n == "cpu" for n in names) and self.model_device(device):
            return False
        return None

    def model_device(self, node: ast.expr) -> bool:
        """Whether an expression holds the device of the module's own parameters, read in a
        step or hook Lightning calls once the model is on its device (not `__init__`,
        `setup`, `configure_model`, nor a helper they may call): `self.device`,
        `next(self.parameters()).device`, their `.type` or text, or a local name bound to
        one. In a training run on TPUs that is the XLA device."""
        if not self._functions:
            return False
        key = self._functions[-1][0]
        method = key.split("#", 1)[0]
        if "." not in method or not _DEVICE_HOOK.match(method.rsplit(".", 1)[-1]):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
            if not node.args:
                return False
            node = node.args[0]
        if isinstance(node, ast.Attribute) and node.attr == "type":
            node = node.value
        if isinstance(node, ast.Name):
            bound = self.values.get((key, node.id))
            if bound is None:
                return False
            if isinstance(bound, ast.Attribute) and bound.attr == "type":
                bound = bound.value
            node = bound
        if not (isinstance(node, ast.Attribute) and node.attr == "device"):
            return False
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            # Lightning's `device` property, unless the file keeps a device of its own.
            return not re.search(r"self\.device\s*=[^=]|def device\b", self.text)
        return (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "next"
            and any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "parameters"
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
                for n in ast_walk(receiver)
            )
        )

    def device_compare(self, device: ast.expr, other: ast.expr, prefix: bool) -> Truth:
        """`device.type == "cuda"` (False on a TPU), `== "xla"` (True); `prefix`: `other` is
        a prefix or part of the device's text (`str(d).startswith("cuda")`)."""
        if not (isinstance(other, ast.Constant) and isinstance(other.value, str)):
            return None
        if not _is_device_text(device):
            return None
        value = other.value.lower()
        name = value.split(":", 1)[0]
        if name in _CUDA_DEVICE_NAMES:
            return False
        if name in _TPU_DEVICE_NAMES:
            return True
        return None


def _composed(key: ast.expr) -> bool:
    """A name built from pieces: an f-string with text, `a + "_x"`, `"%s_x" % a`,
    `"{}_x".format(a)`, `"_".join(...)`."""
    if isinstance(key, ast.JoinedStr):
        return any(isinstance(v, ast.Constant) and v.value for v in key.values)
    if isinstance(key, ast.BinOp) and isinstance(key.op, (ast.Add, ast.Mod)):
        return True
    return (
        isinstance(key, ast.Call)
        and isinstance(key.func, ast.Attribute)
        and key.func.attr in ("format", "join")
    )


def _fixed_ending(key: ast.expr) -> str:
    """The fixed text a name built from pieces ends with: `"_step"` for `f"{stage}_step"`,
    `stage + "_step"`, `"%s_step" % stage` and `"{}_step".format(stage)`; "" when none."""
    text = ""
    if isinstance(key, ast.JoinedStr) and key.values:
        last = key.values[-1]
        if isinstance(last, ast.Constant) and isinstance(last.value, str):
            text = last.value
    elif isinstance(key, ast.BinOp) and isinstance(key.op, ast.Add):
        if isinstance(key.right, ast.Constant) and isinstance(key.right.value, str):
            text = key.right.value
    elif isinstance(key, ast.BinOp) and isinstance(key.op, ast.Mod):
        if isinstance(key.left, ast.Constant) and isinstance(key.left.value, str):
            pieces = re.split(r"%[-#0 +]*\d*(?:\.\d+)?[a-z]", key.left.value)
            text = pieces[-1] if len(pieces) > 1 else ""
    elif (
        isinstance(key, ast.Call)
        and isinstance(key.func, ast.Attribute)
        and key.func.attr == "format"
        and isinstance(key.func.value, ast.Constant)
        and isinstance(key.func.value.value, str)
    ):
        pieces = re.split(r"\{[^{}]*\}", key.func.value.value)
        text = pieces[-1] if len(pieces) > 1 else ""
    return text if text.isidentifier() else ""


def _off(node: ast.expr | None) -> bool:
    """`False`, `None` or `0`: a flag's off value."""
    return isinstance(node, ast.Constant) and node.value in (False, None)


def _off_flag_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters named for inference (INFERENCE_TOKENS) that default to an off value and
    that the body never reassigns."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    pairs = [
        *zip(positional, [*defaults, *args.defaults], strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    flags = {
        arg.arg
        for arg, default in pairs
        if default is not None and _off(default) and name_tokens(arg.arg) & INFERENCE_TOKENS
    }
    if flags:
        for child in ast_walk(node):
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                flags.discard(child.id)
    return flags


# The "default" of a None-default parameter that the body reassigns only where it is None
# (`if length is None: length = x.size(-1)`): it is not None after that test if every
# call passes one, and unknown otherwise.
_FILLED = "filled"
_NO_CONSTANT = object()  # a name that holds no one literal (ScopeWalker._constant)


def _attribute_pairs(node: ast.stmt) -> list[tuple[ast.expr, ast.expr]] | None:
    """The (target, element) pairs of an assignment of a tuple of attributes of `self` from a
    tuple of as many elements (`self.a, self.b = (a, b)`), None for any other assignment."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target, value = node.targets[0], node.value
    sequences = (ast.Tuple, ast.List)
    if not isinstance(target, sequences) or not isinstance(value, sequences):
        return None
    if len(target.elts) != len(value.elts) or len(target.elts) < 2:
        return None
    if any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)):
        return None
    if not all(_self_attribute(t) for t in target.elts):
        return None
    names = [t.attr for t in target.elts]  # type: ignore[attr-defined]
    if len(set(names)) != len(names):
        return None
    for element in value.elts:
        # (an element reading an attribute the assignment sets: swapped, not copied)
        if any(isinstance(n, ast.Attribute) and n.attr in names for n in ast_walk(element)):
            return None
    return list(zip(target.elts, value.elts, strict=True))


def _saved_hparam_defaults(
    node: ast.ClassDef,
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, dict[str, Any]] | None:
    """The `__init__` of a class that saves its arguments as its hyperparameters
    (`self.save_hyperparameters()`, `self.save_hyperparameters(logger=False, ignore=[...])`,
    or naming some of them: `self.save_hyperparameters("use_x")`) with its parameters that
    default to None, True or False and are never reassigned (`_literal_default_params`). None
    for one that saves another object (`self.save_hyperparameters(hparams)`: its keys are
    that object's, not the parameters') or whose methods assign `self.hparams` or a key of
    it."""
    init = next(
        (
            s
            for s in node.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__"
        ),
        None,
    )
    if init is None:
        return None
    for child in ast_walk(node):
        if isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            if any(
                dotted(t) == "self.hparams"
                or (
                    isinstance(t, (ast.Subscript, ast.Attribute))
                    and dotted(t.value) == "self.hparams"
                )
                for t in targets
            ):
                return None  # (`self.hparams.use_x = True` in a method: set by code)
    saves = False
    for child in ast_walk(init):
        if (
            isinstance(child, ast.Call)
            and isinstance(child.func, ast.Attribute)
            and child.func.attr == "save_hyperparameters"
            and dotted(child.func.value) == "self"
        ):
            if not all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in child.args
            ):
                return None
            saves = True
    if not saves:
        return None
    params = {
        name: default
        for name, default in _literal_default_params(init).items()
        if default != _FILLED
    }
    return (init, params) if params else None


def _literal_default_params(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[str, bool | str | None]:
    """The parameters that default to None, True or False and that the body never
    reassigns, with their default; `_FILLED` for one that defaults to None and is
    reassigned only under `if p is None:`."""
    args = node.args
    pairs = defaulted_params(args)
    params: dict[str, bool | str | None] = {
        arg.arg: default.value
        for arg, default in pairs
        if isinstance(default, ast.Constant)
        and (default.value is None or isinstance(default.value, bool))
    }
    if params:
        nodes = list(ast_walk(node))  # walked once for both passes
        filling: dict[int, str] = {}  # id of a store under `if p is None:` -> p
        refined: set[int] = set()  # ids of `p = p.view(...)` under `if p is not None:`
        for child in nodes:
            if isinstance(child, ast.If) and _is_none_test(child.test):
                name = child.test.left.id  # type: ignore[attr-defined]
                for statement in child.body:
                    for inner in ast_walk(statement):
                        if isinstance(inner, ast.Name) and inner.id == name:
                            filling[id(inner)] = name
            elif isinstance(child, ast.If) and _is_none_test(child.test, ast.IsNot):
                # `if mask is not None: mask = mask.view(...)`: still not None where it is
                name = child.test.left.id  # type: ignore[attr-defined]
                for statement in child.body:
                    if _refines(statement, name) and params.get(name, 0) is None:
                        refined.add(id(statement.targets[0]))  # type: ignore[attr-defined]
        filled: set[str] = set()
        for child in nodes:
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                if id(child) in refined:
                    continue
                if filling.get(id(child)) == child.id and params.get(child.id, 0) is None:
                    filled.add(child.id)
                else:
                    params.pop(child.id, None)
                    filled.discard(child.id)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                for name in child.names:
                    params.pop(name, None)
                    filled.discard(name)
        for name in filled & params.keys():
            params[name] = _FILLED
    return params


def _constant_default_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters whose default is a literal (a number, a string, None, True, False)."""
    args = node.args
    pairs = defaulted_params(args)
    return {
        arg.arg
        for arg, default in pairs
        if isinstance(default, ast.Constant) and not isinstance(default.value, bytes)
    }


def _incoming_reads(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[int, tuple[str, bool | None]]:
    """The reads of a parameter that defaults to None, True or False that stand for the
    value the call passes, by id: the first operand of `p = p or <fallback>` when that
    statement is of the function's own body (no branch or loop around it) and is the only
    store of `p` in the function (so nothing before it changed `p`)."""
    args = node.args
    pairs = defaulted_params(args)
    defaults = {
        arg.arg: default.value
        for arg, default in pairs
        if isinstance(default, ast.Constant)
        and (default.value is None or isinstance(default.value, bool))
    }
    found: dict[int, tuple[str, bool | None]] = {}
    if not defaults:
        return found
    candidates: dict[str, ast.Name] = {}
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id in defaults
            and isinstance(statement.value, ast.BoolOp)
            and isinstance(statement.value.op, ast.Or)
            and isinstance(statement.value.values[0], ast.Name)
            and statement.value.values[0].id == statement.targets[0].id
        ):
            candidates.setdefault(statement.targets[0].id, statement.value.values[0])
    if not candidates:
        return found
    stores: dict[str, int] = {}
    for child in ast_walk(node):
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            stores[child.id] = stores.get(child.id, 0) + 1
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            for name in child.names:
                stores[name] = 2
    for name, read in candidates.items():
        if stores.get(name) == 1:
            found[id(read)] = (name, defaults[name])  # type: ignore[assignment]
    return found


# Names of values that hold a project's configuration (`cfg`, `self.config`, `model_cfg`,
# `cfg.model`): what their options are is what the project's config files and config classes
# say. Command-line namespaces (`args`, `opt`) are not among them: users set those.
_CONFIG_NAMES = ("cfg", "config", "conf", "cfgs", "configs")


def _config_receiver(node: ast.expr) -> bool:
    while (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        node = node.value  # `config["model"]["match"]`: a section of the config
    text = dotted(node)
    if text is None:
        return False
    return any(
        part.lower().endswith(_CONFIG_NAMES) and not part.lower().endswith("args")
        for part in text.split(".")
    )


def _switch_default(node: ast.Call) -> Any:
    """What an `add_argument(...)` leaves its dest when the command line does not name it,
    if it is a switch: False for `action="store_true"` (its `default` unset or False), True
    for `action="store_false"`; "?" for any other option."""
    action = default = _NO_CONSTANT
    for keyword in node.keywords:
        if keyword.arg == "action":
            action = keyword.value.value if isinstance(keyword.value, ast.Constant) else "?"
        elif keyword.arg == "default":
            default = keyword.value.value if isinstance(keyword.value, ast.Constant) else "?"
    if action == "store_true" and default in (_NO_CONSTANT, False):
        return False
    if action == "store_false" and default in (_NO_CONSTANT, True):
        return True
    return "?"


def _switch_read(node: ast.expr) -> str | None:
    """The command-line option `args.use_ema` (`self.args.use_ema`, `opt.use_ema`) reads:
    an attribute of a value named for parsed arguments; or a module's hyperparameters, which
    a script fills from them (`Model(hparams=vars(args))`): `self.hparams.use_ema`,
    `hparams["use_ema"]`, `self.hparams.get("use_ema", False)`."""
    if isinstance(node, ast.Subscript):
        if (
            isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and _hparams_receiver(node.value)
        ):
            return node.slice.value
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and 1 <= len(node.args) <= 2
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and _hparams_receiver(func.value)
        ):
            return node.args[0].value
        return None
    if not isinstance(node, ast.Attribute):
        return None
    if _hparams_receiver(node.value):
        return node.attr
    text = dotted(node.value)
    if text is None:
        return None
    last = text.rsplit(".", 1)[-1].lower()
    return node.attr if last.endswith("args") or last in ("opt", "opts", "flags") else None


def _is_none_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _hparams_receiver(node: ast.expr) -> bool:
    """Whether a value is named for a module's hyperparameters (`self.hparams`, `hparams`)."""
    text = dotted(node)
    return text is not None and text.rsplit(".", 1)[-1].lower() in ("hparams", "hparam")


def _option_default(node: ast.Call) -> Any:
    """What `add_argument("--depth", default=5)` leaves its dest without the option: the
    literal default (None without one), "?" for another value."""
    for keyword in node.keywords:
        if keyword.arg == "default":
            value = keyword.value
            if isinstance(value, ast.Constant) and isinstance(
                value.value, (bool, int, float, str, type(None))
            ):
                return value.value
            return "?"
        if keyword.arg in ("action", "nargs", "dest", "const"):
            return "?"  # (`append`, `count`, lists, another dest: not one literal)
    return None


def _option_get(node: ast.expr) -> str | None:
    """The option a config's `get` reads (`self.cfg.get("use_map", False)`), if it is one."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and 1 <= len(node.args) <= 2
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and _config_receiver(node.func.value)
    ):
        return node.args[0].value
    return None


def _option_read(node: ast.expr) -> str | None:
    """The option a config read names (`self.cfg.kind`, `config["kind"]`,
    `cfg.get("kind", "l2")`), if it is one."""
    if isinstance(node, ast.Attribute) and _config_receiver(node.value):
        return node.attr
    got = _option_get(node)
    if got is not None:
        return got
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
        and _config_receiver(node.value)
    ):
        return node.slice.value
    return None


_ORDERS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_ORDERS_AND_EQUALITY = {**_ORDERS, ast.Eq: "==", ast.NotEq: "!="}


def _against_number(
    left: ast.expr, right: ast.expr
) -> Iterator[tuple[ast.expr, int | float, bool]]:
    """(the other operand, the number, whether the number is on the left) of a comparison
    with a number literal on either side (not a bool)."""
    for read, other, flipped in ((left, right, False), (right, left, True)):
        if (
            isinstance(other, ast.Constant)
            and isinstance(other.value, (int, float))
            and not isinstance(other.value, bool)
        ):
            yield read, other.value, flipped


def _option_order(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Truth:
    """`cfg["train"]["ff_weight"] > 0` (or `0 < cfg.ff_weight`): a config option ordered
    against a number, `["option_order", name, op, number]` (ProjectScope: true or false
    when every value the repository may give the option is a number and they agree)."""
    sign = _ORDERS.get(type(op))
    if sign is None:
        return None
    for read, number, flipped in _against_number(left, right):
        name = _option_read(read)
        if name is not None:
            return ["option_order", name, _FLIPPED[sign] if flipped else sign, number]
    return None


def _attr_number(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Truth:
    """`self.threshold > 0` (or `0 < self.threshold`, `self.weight == 0`): an attribute
    compared with a number, `["attr_number", attribute, op, number]` (ProjectScope: decided
    when every store of the attribute keeps a number-default constructor parameter and the
    constructions agree)."""
    sign = _ORDERS_AND_EQUALITY.get(type(op))
    if sign is None:
        return None
    for read, number, flipped in _against_number(left, right):
        if _self_attribute(read):
            sign = _FLIPPED.get(sign, sign) if flipped else sign
            return ["attr_number", read.attr, sign, number]  # type: ignore[attr-defined]
    return None


def _attr_number_in(test: ast.expr) -> bool:
    """Whether a test compares an attribute of `self` with a number (`self.weight > 0`)."""
    return any(
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and _attr_number(node.left, node.ops[0], node.comparators[0]) is not None
        for node in ast_walk(test)
    )


def _option_reads(node: ast.expr) -> bool:
    """Whether a test reads a config option (`self.cfg.flag`, `config["flag"]`)."""
    for child in ast_walk(node):
        if isinstance(child, ast.Attribute) and _config_receiver(child.value):
            return True
        if isinstance(child, (ast.Attribute, ast.Subscript)) and _switch_read(child) is not None:
            return True
        if isinstance(child, ast.Subscript) and _config_receiver(child.value):
            return True
    return False


# The names of Lightning's Trainer functions (`TrainerFn`), which its `setup(stage)` hooks get.
_TRAINER_FUNCTIONS = frozenset({"fit", "validate", "test", "predict"})


def _stage_compare(test: ast.expr) -> bool:
    """Whether a test compares an attribute of `self` with the name of a Trainer function
    (`self.stage == "validate"`: the stage `setup` stored, decided by ProjectScope)."""
    for node in ast_walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            sides = (node.left, node.comparators[0])
            if any(_self_attribute(s) for s in sides) and any(
                isinstance(s, ast.Constant) and s.value in _TRAINER_FUNCTIONS for s in sides
            ):
                return True
    return False


def _literal_code(value: ast.expr | None) -> Any:
    """["l", literal] of a None, bool, number or string constant; "v" for anything else."""
    if isinstance(value, ast.Constant) and (
        value.value is None or isinstance(value.value, (bool, int, float, str))
    ):
        return ["l", value.value]
    if (
        isinstance(value, ast.UnaryOp)
        and isinstance(value.op, ast.USub)
        and isinstance(value.operand, ast.Constant)
        and isinstance(value.operand.value, (int, float))
    ):
        return ["l", -value.operand.value]
    return "v"


# The "default" of a parameter that has none (ScopeFacts.string_params, `["equals", ...]`).
REQUIRED = "<required>"


def _unassigned_required_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters without a default (`self` and `cls` aside) that the body never
    reassigns."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    required = [a.arg for a in positional[: len(positional) - len(args.defaults)]]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    params = {name for name in required if name not in ("self", "cls")}
    if params:
        for child in ast_walk(node):
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                params.discard(child.id)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                params.difference_update(child.names)
    return params


def _number_default_params(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[str, int | float]:
    """The parameters that default to a number (not a bool) and that the body never
    reassigns."""
    params = {
        arg.arg: default.value
        for arg, default in defaulted_params(node.args)
        if isinstance(default, ast.Constant)
        and isinstance(default.value, (int, float))
        and not isinstance(default.value, bool)
    }
    if params:
        for child in ast_walk(node):
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                params.pop(child.id, None)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                for name in child.names:
                    params.pop(name, None)
    return params


def _string_default_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """The parameters that default to a string and that the body never reassigns."""
    args = node.args
    pairs = defaulted_params(args)
    params = {
        arg.arg: default.value
        for arg, default in pairs
        if isinstance(default, ast.Constant) and isinstance(default.value, str)
    }
    if params:
        for child in ast_walk(node):
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                params.pop(child.id, None)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                for name in child.names:
                    params.pop(name, None)
    return params


# Regions made of whole statements (a line places code in or out of them).
STATEMENT_REGIONS = frozenset({"if", "else", "after", "dead", "unreachable", "except"})


# The exceptions only CUDA raises (torch.OutOfMemoryError is the CUDA caching allocator's:
# XLA reports running out of memory as a RuntimeError, RESOURCE_EXHAUSTED).
_CUDA_ERRORS = frozenset(
    {"torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError", "torch.cuda.CudaError"}
)


def _catches_cuda_error(node: ast.expr, imports: dict[str, str]) -> bool:
    """`except torch.cuda.OutOfMemoryError:` (or a tuple of CUDA errors only)."""
    options = node.elts if isinstance(node, ast.Tuple) else [node]
    names = []
    for option in options:
        text = dotted(option)
        if text is None:
            return False
        root, _, rest = text.partition(".")
        target = imports.get(root)
        names.append(f"{target}.{rest}" if target and rest else (target or text))
    return bool(names) and all(n in _CUDA_ERRORS for n in names)


def _self_attribute(node: ast.expr) -> bool:
    """`self.<name>`."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _refines(statement: ast.stmt, name: str) -> bool:
    """`name = name.view(...).expand_as(x)`: a method chain on the name itself (a value
    that is not None when the name is not)."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
        and isinstance(statement.value, ast.Call)
    ):
        return False
    node: ast.expr = statement.value
    while isinstance(node, (ast.Call, ast.Attribute)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == name and statement.value.func is not node


def _is_none_test(test: ast.expr, op: type[ast.cmpop] = ast.Is) -> bool:
    """`p is None` of a name (`op=ast.IsNot`: `p is not None`)."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _off_flag_attributes(
    node: ast.ClassDef, may_name: Callable[[ast.stmt], bool]
) -> dict[str, list[str]]:
    """The `self.<attr>` flags named for inference that the class's methods set only to an
    off value or from a parameter that defaults to one (`self.predict_mode = predict_mode`),
    with those parameters' names. `may_name`: whether a method's text may name such a flag
    (the methods that cannot are not walked)."""
    found: dict[str, list[str]] = {}
    other: set[str] = set()
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not may_name(method):
            continue
        params: set[str] | None = None
        for child in ast_walk(method):
            if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                value = child.value
            else:
                continue
            for target in targets:
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and name_tokens(target.attr) & INFERENCE_TOKENS
                ):
                    continue
                if isinstance(child, ast.AugAssign) or value is None:
                    other.add(target.attr)
                elif _off(value):
                    found.setdefault(target.attr, [])
                elif isinstance(value, ast.Name):
                    if params is None:
                        params = _off_flag_params(method)
                    if value.id in params:
                        found.setdefault(target.attr, []).append(value.id)
                    else:
                        other.add(target.attr)
                else:
                    other.add(target.attr)
    return {attr: names for attr, names in found.items() if attr not in other}


def _is_device_text(node: ast.expr) -> bool:
    """An expression that holds a device, its type or its text: `x.device`, `x.device.type`,
    `self.device.type`, `str(x.device)`, `device`, `args.device`, `accelerator`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return bool(node.args) and _is_device_text(node.args[0])
    text = dotted(node)
    if text is None:
        return False
    last = text.rsplit(".", 1)[-1].lower()
    return last in ("device", "type", "device_type", "accelerator", "backend") or last.endswith(
        ("_device", "device_type")
    )


# Packages whose names never lead into the project's code. Third-party names a project
# folder of the same name may shadow are kept (a namespace folder `lightning/` beside the
# scripts, `from lightning.utils import loss2dict`): the project model's lookup decides.
_EXTERNAL_ROOTS = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "torchmetrics",
        "numpy",
        "pandas",
        "scipy",
        "math",
        "os",
        "sys",
        "re",
        "json",
        "time",
        "random",
        "typing",
        "typing_extensions",
        "collections",
        "functools",
        "itertools",
        "dataclasses",
        "abc",
        "logging",
        "warnings",
        "pathlib",
        "torch_xla",
    }
)


def _useful(use: list[str]) -> bool:
    """Whether a use may name the project's code (not `torch.nn.Linear`, `os.path.join`)."""
    return use[0] not in ("name", "ref") or use[1].split(".", 1)[0] not in _EXTERNAL_ROOTS


# Libraries whose functions transform a tensor (never a model a loop feeds back into).
_TENSOR_LIBRARIES = frozenset({"torch", "numpy", "math", "einops", "scipy", "jax"})


def _runs_as_command(decorator: str) -> bool:
    """A decorator that makes a function a command line's entry: `@hydra.main(...)`,
    `@click.command()`, `@app.command()` (typer), `@cli.command()`."""
    root = decorator.lstrip(".").split(".", 1)[0]
    last = decorator.rsplit(".", 1)[-1]
    return root in ("hydra", "click", "typer", "fire") or last in ("command", "main", "group")


_NESTED = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _outside_loops(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of `body` outside its own loops and nested definitions (lambdas and
    comprehensions included: a superset)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue
        yield node
        stack.extend(ast_children(node))


def _steps_once(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function takes an optimizer step outside its own loops (`loss.backward()`,
    `self.opt.step()` in its body): one step per call."""
    for node in _outside_loops(function.body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in ("backward", "optimizer_step", "manual_backward"):
                return True
            if name == "step" and "opt" in (dotted(node.func.value) or "").lower():
                return True
    return False


def _plain_class(annotation: ast.expr | None) -> str | None:
    """The class a plain annotation names (`Algorithm`, `algos.Algorithm`), else None."""
    if not isinstance(annotation, (ast.Name, ast.Attribute)):
        return None
    text = dotted(annotation)
    if text is None or not text.rsplit(".", 1)[-1][:1].isupper():
        return None
    return text


def _steps(loop: ast.For | ast.AsyncFor | ast.While, index: TreeIndex | None = None) -> bool:
    """Whether a loop's body takes an optimizer step: `loss.backward()`,
    `fabric.backward(loss)`, `xm.optimizer_step(opt)`, `optimizer.step()` (the calls of its
    body read from the tree's index when it holds the loop: any order gives the answer).
    Not an epoch loop (`_epoch_loop`): its inner loops are the training loops."""
    return _steps_in(loop, index) and not _epoch_loop(loop)


def _epoch_loop(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """`for epoch in range(n):` whose body steps only in loops of its own, none of them a
    loop over optimizers (`for opt in optimizers:`): one turn per epoch, the inner loops
    step; what the body calls beside them (an evaluation, a scheduler) runs once an epoch."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not _counts(loop.iter):
        return False
    if any(_step_call(node) for node in _outside_loops(loop.body)):
        return False
    inner = [
        node
        for node in ast_walk(ast.Module(body=loop.body, type_ignores=[]))
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and _steps_in(node)
    ]
    return bool(inner) and not any(
        isinstance(node, (ast.For, ast.AsyncFor)) and "opt" in ast.unparse(node.iter).lower()
        for node in inner
    )


def _counts(iterator: ast.expr) -> bool:
    """`range(n)`, `trange(n)`, `tqdm(range(n))`: a loop counting turns."""
    if not isinstance(iterator, ast.Call):
        return False
    name = (dotted(iterator.func) or "").rsplit(".", 1)[-1]
    if name in ("range", "trange"):
        return True
    return name == "tqdm" and bool(iterator.args) and _counts(iterator.args[0])


def _step_call(node: ast.AST) -> bool:
    """`loss.backward()`, `optimizer.step()` and the like (see `_steps`)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    name = node.func.attr
    if name in ("backward", "optimizer_step", "manual_backward"):
        return True
    return name == "step" and "opt" in (dotted(node.func.value) or "").lower()


def _steps_in(loop: ast.For | ast.AsyncFor | ast.While, index: TreeIndex | None = None) -> bool:
    """Whether a loop's body takes an optimizer step anywhere in it (see `_steps`)."""
    if index is not None and index.holds(loop):
        calls = [call for statement in loop.body for call in index.of_type(statement, ast.Call)]
    else:
        calls = list(ast_walk(ast.Module(body=loop.body, type_ignores=[])))
    return any(_step_call(node) for node in calls)


def _is_hook_name(name: str) -> bool:
    """A Lightning step or hook (`validation_step` that generates is still validation code)."""
    return name.endswith("_step") or name.startswith("on_") or name == "forward"


def _is_main_name_test(left: ast.expr, right: ast.expr) -> bool:
    """`__name__` compared with `"__main__"`, either way round."""
    for name, value in ((left, right), (right, left)):
        if (
            isinstance(name, ast.Name)
            and name.id == "__name__"
            and isinstance(value, ast.Constant)
            and value.value == "__main__"
        ):
            return True
    return False


def _is_main_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _stores(target: ast.expr, local: set[str]) -> None:
    for node in ast_walk(target):
        if isinstance(node, ast.Name):
            local.add(node.id)


def _trainer_calls(statement: ast.stmt, method: str, index: TreeIndex) -> set[str]:
    """The receivers (`trainer`, `cli.trainer`, `runner`) of the `.<method>(...)` calls in a
    statement (of the tree `index` indexes)."""
    out = set()
    for node in index.of_type(statement, ast.Call):
        assert isinstance(node, ast.Call)
        if isinstance(node.func, ast.Attribute) and node.func.attr == method:
            receiver = dotted(node.func.value)
            if receiver is not None:
                out.add(receiver)
    return out


def _selfless_methods(node: ast.ClassDef) -> dict[str, list[str]]:
    """The methods of a class written without `self`: undecorated, with no `*args`, whose
    first positional parameter is not named `self` or `cls` (`def compute_metrics(preds,
    labels)` in a LightningModule), each with its positional parameters. A name the class
    defines twice is left out (the later definition wins; not worth following)."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for statement in node.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        name = statement.name
        if name in seen:
            out.pop(name, None)
            continue
        seen.add(name)
        args = statement.args
        positional = [*args.posonlyargs, *args.args]
        if (
            statement.decorator_list
            or args.vararg is not None
            or (positional and positional[0].arg in ("self", "cls"))
        ):
            continue
        out[name] = [a.arg for a in positional]
    return out


_TPU_WORD = re.compile(r"(?i)(?<![a-z])(?:tpu|xla)")


def _built_from_flags(node: ast.Call, last: str) -> bool:
    """A Trainer built from a parsed command line as a whole, Lightning 1's generic Trainer
    flags: `Trainer.from_argparse_args(args, ...)`, `Trainer(**vars(args))`."""
    if last == "from_argparse_args":
        return True
    return any(
        k.arg is None
        and isinstance(k.value, ast.Call)
        and isinstance(k.value.func, ast.Name)
        and k.value.func.id == "vars"
        for k in node.keywords
    )


def _names_tpu(tree: ast.Module, index: TreeIndex) -> bool:
    """Whether a module's code names a TPU or XLA: a string (`"--tpu_cores"`, `"tpu"`), a
    name, attribute or parameter (`args.tpu_cores`, `TPUSpawnPlugin`, `import torch_xla`)."""
    for node in index.of_type(tree, ast.Constant):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, str) and _TPU_WORD.search(value):
            return True
    for node in ast_walk(tree):
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.arg):
            text = node.arg
        elif isinstance(node, ast.alias):
            text = node.name
        elif isinstance(node, ast.keyword):
            text = node.arg or ""
        else:
            continue
        if _TPU_WORD.search(text):
            return True
    return False


_FIT, _TEST = "<fit>", "<test>"
# Imports that name no project helper that fits or tests (ScopeFacts.fit_test_calls).
_LIBRARY_ROOTS = frozenset(
    {*sys.stdlib_module_names, "torch", "numpy", "lightning", "pytorch_lightning", "transformers"}
)


def _called_names(node: ast.AST, index: TreeIndex) -> set[str]:
    """The plain names a node calls (`train(...)`, `best = evaluate(model)`)."""
    out = set()
    for call in index.of_type(node, ast.Call):
        assert isinstance(call, ast.Call)
        if isinstance(call.func, ast.Name):
            out.add(call.func.id)
    return out


def _trainer_runs(node: ast.AST, method: str, index: TreeIndex) -> bool:
    """Whether a node calls `.<method>(...)` on a receiver named for a trainer."""
    return any("trainer" in r.lower() for r in _trainer_calls(node, method, index))  # type: ignore[arg-type]


def _fit_test_order(
    tree: ast.Module, index: TreeIndex, imported: dict[str, set[str]]
) -> tuple[set[str], set[str], list[list[Any]]]:
    """The module's top-level functions that fit and that test (ScopeFacts.fitters,
    .testers: a trainer's `.fit(...)`/`.test(...)` in the body, or a call of such a function
    of the module, two levels deep), and the pairs of calls a block makes one after the
    other (ScopeFacts.fit_test_calls, "<fit>"/"<test>" standing for this module's fits and
    tests; [<fit>, <test>] is a fit and then a test in this module), each with the line and
    `ast` column of the two calls."""
    functions = {
        s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    calls = {name: _called_names(fn, index) & set(functions) for name, fn in functions.items()}
    roles: dict[str, set[str]] = {}
    for method, token in (("fit", _FIT), ("test", _TEST)):
        found = {name for name, fn in functions.items() if _trainer_runs(fn, method, index)}
        for _ in range(2):
            found |= {name for name, called in calls.items() if called & found}
        roles[token] = found

    def tokens(statement: ast.stmt) -> set[tuple[str, int, int]]:
        out = set()
        for call in index.of_type(statement, ast.Call):
            assert isinstance(call, ast.Call)
            where = (call.lineno, call.col_offset)
            func = call.func
            if isinstance(func, ast.Name):
                if func.id in functions:
                    out |= {(t, *where) for t, found in roles.items() if func.id in found}
                else:
                    out |= {(t, *where) for t in imported.get(func.id, set())}
            elif isinstance(func, ast.Attribute) and func.attr in ("fit", "test"):
                receiver = dotted(func.value)
                if receiver is not None and "trainer" in receiver.lower():
                    out.add((f"<{func.attr}>", *where))
        return out

    pairs: set[tuple[str, str, int, int, int, int]] = set()
    # the values each call runs under (`_guarded_blocks`), by line and column
    conditions: dict[tuple[int, int], _Guards] = {}

    def walk(
        statements: list[ast.stmt], before: frozenset[tuple[str, int, int]], guards: _Guards
    ) -> None:
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(statement.body, frozenset(), {})
                continue
            blocks = _guarded_blocks(statement, guards)
            called = tokens(statement)
            if blocks:
                for block, inner in blocks:
                    walk(block, before, inner)
            else:
                for call in called:
                    conditions.setdefault(call[1:], guards)
                pairs.update(
                    (first[0], later[0], *first[1:], *later[1:])
                    for first in before
                    for later in called
                    if first[0] != _TEST
                    and later[0] != _FIT
                    and not _exclusive(conditions.get(first[1:], {}), guards)
                )
            before = before | called

    walk(tree.body, frozenset(), {})
    # the later call, then the earlier one (the order of ScopeFacts.tests_after_fit)
    ordered = sorted(pairs, key=lambda p: (p[0], p[1], p[4], p[5], p[2], p[3]))
    return roles[_FIT], roles[_TEST], [[f, t, l2, c2, l1, c1] for f, t, l1, c1, l2, c2 in ordered]


def _mode_guard(test: ast.expr) -> tuple[str, frozenset[Any]] | None:
    """The value a test pins one name to (`mode == "train"`, `args.mode in ("test", "tune")`,
    an `or` of such tests on one name): the name and the constants it may equal."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [_mode_guard(value) for value in test.values]
        if not parts or any(p is None or p[0] != parts[0][0] for p in parts):  # type: ignore[index]
            return None
        return parts[0][0], frozenset().union(*(p[1] for p in parts))  # type: ignore[index]
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(test.ops[0], ast.Eq):
        if isinstance(left, ast.Constant):
            left, right = right, left
        subject = dotted(left)
        if subject is None or not isinstance(right, ast.Constant):
            return None
        return subject, frozenset({right.value})
    if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
        subject = dotted(left)
        if subject is None or not all(isinstance(e, ast.Constant) for e in right.elts):
            return None
        return subject, frozenset(e.value for e in right.elts)  # type: ignore[attr-defined]
    return None


_Guards = dict[str, frozenset[Any]]


def _guarded_blocks(statement: ast.stmt, guards: _Guards) -> list[tuple[list[ast.stmt], _Guards]]:
    """The blocks of a compound statement (`_blocks`), each with the values it runs under:
    the body of `if mode == "train":` runs only with `mode` "train"."""
    if isinstance(statement, ast.If):
        guard = _mode_guard(statement.test)
        inner = guards
        if guard is not None:
            name, values = guard
            inner = {**guards, name: guards.get(name, values) & values}
        return [(statement.body, inner), (statement.orelse, guards)]
    return [(block, guards) for block in _blocks(statement)]


def _exclusive(first: _Guards, later: _Guards) -> bool:
    """Whether two calls never run in one run: each sits under a test of one name for
    values the other's excludes (`if mode == "train": fit()` then `if mode in ("test",
    "tune"): test()`, the two ifs one after the other)."""
    return any(not (values & later[name]) for name, values in first.items() if name in later)


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of a compound statement, none for a simple one."""
    blocks: list[list[ast.stmt]] = [
        block
        for name in ("body", "orelse", "finalbody")
        if isinstance(block := getattr(statement, name, None), list)
    ]
    blocks += [h.body for h in getattr(statement, "handlers", ())]
    blocks += [c.body for c in getattr(statement, "cases", ())]
    return blocks


def _tests_after_fit(
    statements: list[ast.stmt],
    fitted: frozenset[tuple[str, int, int]],
    index: TreeIndex,
    out: set[tuple[int, int, int, int]],
    guards: _Guards | None = None,
    conditions: dict[tuple[int, int], _Guards] | None = None,
) -> None:
    """Where a block calls `<trainer>.test(...)` after `<trainer>.fit(...)` ran in it or in
    a block around it (`trainer.fit(m); trainer.test(m)`, `if not args.two_steps:
    trainer.test()` after the fit), the same receiver or both named for a trainer: (test
    line, `ast` column, fit line, column) into `out`. The branches of one `if` do not follow
    each other (`if train: fit() else: test()`), nor do the bodies of two ifs that test one
    name for values apart (`if mode == "train": fit()` then `if mode == "test": test()`).
    `guards`: the values the block runs under (`_guarded_blocks`); `conditions`: those of
    each fit call, by line and column."""
    if conditions is None:
        conditions = {}
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _tests_after_fit(statement.body, frozenset(), index, out, {}, conditions)
            continue
        blocks = _guarded_blocks(statement, guards or {})
        if blocks:
            for block, inner in blocks:
                _tests_after_fit(block, fitted, index, out, inner, conditions)
        else:
            for _, line, column in _trainer_call_sites(statement, "fit", index):
                conditions.setdefault((line, column), guards or {})
            for receiver, line, column in _trainer_call_sites(statement, "test", index):
                trainer = "trainer" in receiver.lower()
                for fit, fit_line, fit_column in fitted:
                    if _exclusive(conditions.get((fit_line, fit_column), {}), guards or {}):
                        continue  # (`if mode == "train": fit()` ... `if mode == "test":`)
                    if fit == receiver or (trainer and "trainer" in fit.lower()):
                        out.add((line, column, fit_line, fit_column))
        # What follows may run after a fit anywhere in the statement (one branch of an `if`).
        fitted = fitted | set(_trainer_call_sites(statement, "fit", index))


def _trainer_call_sites(
    statement: ast.stmt, method: str, index: TreeIndex
) -> list[tuple[str, int, int]]:
    """The receivers of the `.<method>(...)` calls in a statement with each call's line and
    `ast` column (see `_trainer_calls`)."""
    out = []
    for node in index.of_type(statement, ast.Call):
        assert isinstance(node, ast.Call)
        if isinstance(node.func, ast.Attribute) and node.func.attr == method:
            receiver = dotted(node.func.value)
            if receiver is not None:
                out.append((receiver, node.lineno, node.col_offset))
    return out


# Statements after which the rest of their block never runs.
_LEAVING = (ast.Return, ast.Continue, ast.Break)


def _always_raises(statement: ast.stmt) -> bool:
    """`raise ...` or an assertion of a constant false value (`assert False`, `assert 0,
    "msg"`): the statements after it in its block never run."""
    if isinstance(statement, ast.Raise):
        return True
    return (
        isinstance(statement, ast.Assert)
        and isinstance(statement.test, ast.Constant)
        and not statement.test.value
    )


def _early_exit(statement: ast.stmt) -> ast.expr | None:
    """`if TEST: ...; return` (or raise/continue/break) with no else: what follows runs only
    when TEST is false."""
    if not isinstance(statement, ast.If) or statement.orelse or not statement.body:
        return None
    if isinstance(statement.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return statement.test
    return None


def _calls_function(test: ast.expr) -> bool:
    """Whether an expression calls a plain name or a method of `self` (what
    `_Walker.call_truth` follows into the project)."""
    for node in ast_walk(test):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) or (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                return True
    return False


def _cuda_autocast_query(node: ast.Call) -> bool:
    """`torch.is_autocast_enabled()` or `(..."cuda")`/`(device_type="cuda")`."""
    values = [*node.args, *(k.value for k in node.keywords if k.arg == "device_type")]
    if not values:
        return True
    first = values[0]
    return isinstance(first, ast.Constant) and first.value == "cuda"


def _without_gradients(
    function: ast.FunctionDef | ast.AsyncFunctionDef, decorators: list[str], imports: dict[str, str]
) -> bool:
    """The function runs without gradients: decorated with `torch.no_grad` or
    `torch.inference_mode`, or its body's statements sit in `with torch.no_grad():` after
    at most a docstring."""
    if _NO_GRAD & set(decorators):
        return True
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body or not isinstance(body[0], ast.With):
        return False
    for item in body[0].items:
        call = item.context_expr
        target = call.func if isinstance(call, ast.Call) else call
        name = dotted(target)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        qualified = imports.get(head, head) + (f".{rest}" if rest else "")
        if qualified in _NO_GRAD:
            return True
    return False


def _holds_any(node: ast.AST, types: tuple[type, ...], index: TreeIndex | None) -> bool:
    """Whether `node` or a node under it is of one of these types (exactly: node types that
    no other node type derives from), read from the tree's index when it holds `node`."""
    if index is not None and index.holds(node):
        return bool(index.of_type(node, *types))
    return any(isinstance(n, types) for n in ast_walk(node))


def _sure_calls(
    body: list[ast.stmt],
    index: TreeIndex | None = None,
    asserts: list[ast.Assert] | None = None,
) -> list[ast.Call]:
    """The calls a block makes on every run that gets past it: in its simple statements and
    `with` blocks, up to the first compound statement that may `return` (what follows it may
    not run); not inside branches, loops, `try`, lambdas, conditional expressions or the later
    operands of `and`/`or`. `asserts` receives the `assert` statements among them."""
    calls: list[ast.Call] = []

    def expression(node: ast.AST) -> None:
        if isinstance(node, _COMPREHENSIONS):
            # the first iterable is evaluated on every run (`[f(g) for g in dgl.unbatch(b)]`)
            expression(node.generators[0].iter)
            return
        if isinstance(node, (ast.Lambda, ast.comprehension)):
            return
        if isinstance(node, ast.IfExp):
            expression(node.test)
            return
        if isinstance(node, ast.BoolOp):
            expression(node.values[0])
            return
        if isinstance(node, ast.Call):
            calls.append(node)
        for child in ast_children(node):
            expression(child)

    def block(statements: list[ast.stmt]) -> bool:
        """False once a statement may end the function early."""
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, (ast.With, ast.AsyncWith)):
                for item in statement.items:
                    expression(item.context_expr)
                if not block(statement.body):
                    return False
                continue
            if isinstance(statement, (ast.Return, ast.Raise)):
                if isinstance(statement, ast.Return) and statement.value is not None:
                    expression(statement.value)
                return False
            if isinstance(statement, ast.Assert) and asserts is not None:
                asserts.append(statement)
            if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try)) or (
                type(statement).__name__ in ("Match", "TryStar")
            ):
                if _holds_any(statement, (ast.Return, ast.Yield, ast.YieldFrom), index):
                    return False
                continue
            expression(statement)
        return True

    block(body)
    return calls


def _asserts_cuda(
    test: ast.expr, imports: dict[str, str], qualify: Callable[[str, dict[str, str]], str]
) -> bool:
    """Whether an `assert`'s test requires CUDA: it is, or is a conjunction (`a and b`) with a
    part that is, `x.is_cuda`, `torch.cuda.is_available()` or `x.device.type == "cuda"` (all
    false on an XLA device, so the assertion fails there)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.Attribute) and part.attr == "is_cuda":
            return True
        if isinstance(part, ast.Call) and not part.args:
            name = dotted(part.func)
            if name is not None and qualify(name, imports) == "torch.cuda.is_available":
                return True
        if (
            isinstance(part, ast.Compare)
            and len(part.ops) == 1
            and isinstance(part.ops[0], (ast.Eq, ast.Is))
            and isinstance(part.left, ast.Attribute)
            and part.left.attr == "type"
            and isinstance(part.comparators[0], ast.Constant)
            and part.comparators[0].value == "cuda"
        ):
            return True
    return False


# How many calls of project functions a function's sure calls keep (the first ones), and
# the roots of libraries whose calls are never the project's.
_SURE_CALLS = 12
_FOREIGN = frozenset({"torch", "numpy", "math", "os", "sys", "lightning", "pytorch_lightning"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _feedback_loop(
    function: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, str]
) -> bool:
    """An autoregressive loop: its body grows a sequence with an element computed from that
    sequence (`nxt = self(x)[:, -1:]; x = torch.cat((x, nxt))`, `token = next_token(model,
    token); tokens.append(token)`), or feeds a call's result back into the same call of the
    model (`img = self.p_sample(img, t)`). A chain of tensor operations on one value
    (`noise = F.interpolate(noise, ...)`) or a list of per-parameter numbers is not one."""
    for loop in _loops(function.body):
        body = list(ast_walk(ast.Module(body=loop.body, type_ignores=[])))
        assigns = [
            (node.targets[0].id, node.value)
            for node in body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ]
        growth: list[tuple[str, ast.expr]] = []  # (sequence, what is added to it)
        for node in body:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and isinstance(node.func.value, ast.Name)
                and node.args
            ):
                growth.append((node.func.value.id, node.args[0]))
        for target, value in assigns:
            callee = dotted(value.func) if isinstance(value, ast.Call) else None
            if callee is None:
                continue
            arguments = [*value.args, *(k.value for k in value.keywords)]  # type: ignore[union-attr]
            if callee.split(".", 1)[0] == target and callee.rsplit(".", 1)[-1] in _WRITES:
                # `idx = idx.index_copy(0, pos, nxt)`: the sequence written with new elements
                growth.extend((target, argument) for argument in arguments)
                continue
            names = _names_in(arguments)
            if target not in names:
                continue
            if callee.rsplit(".", 1)[-1] in ("cat", "concat", "concatenate", "hstack"):
                for argument in value.args:
                    for element in getattr(argument, "elts", [argument]):
                        if not (isinstance(element, ast.Name) and element.id == target):
                            growth.append((target, element))
            elif imports.get(callee.split(".", 1)[0], "").split(".", 1)[0] not in _TENSOR_LIBRARIES:
                return True  # `img = self.p_sample(img, t)`
        for sequence, added in growth:
            derived = {sequence}
            changed = True
            while changed:  # the names computed from the sequence in the loop
                changed = False
                for target, value in assigns:
                    if target not in derived and _names_in([value]) & derived:
                        derived.add(target)
                        changed = True
            if _names_in([added]) & (derived - {sequence}):
                return True
    return False


# Tensor methods that return the tensor with new elements written in.
_WRITES = frozenset(
    {"index_copy", "index_put", "scatter", "masked_scatter", "index_add", "index_fill"}
)


# Calls that build an object from a name (a config's `_target_`, a registry key, a string).
# Builders that are builtins: a method of that name (`model.eval()`) is something else.
_BUILTIN_BUILDERS = frozenset({"eval", "__import__"})
# Calls whose string arguments are messages, not names.
_MESSAGE_CALLS = frozenset(
    {"print", "info", "debug", "warning", "warn", "error", "exception", "critical", "log"}
)

# A string that may name a class or a registry key (`"pkg.optim.Lamb"`, `"pack"`, an entry
# point's `"pkg.plugins:Lamb"`).
_STRING_NAME = re.compile(r"^[A-Za-z_][\w.:\-]{0,79}$")
_SWITCH = re.compile(r"^--([A-Za-z_][\w\-]{0,79})(?:=.*)?$", re.DOTALL)

_BUILDS_BY_NAME = re.compile(
    r"instantiate|^(?:eval|import_module|__import__|locate|get_obj_from_str|import_string"
    r"|build_from_cfg|from_config|get_class|load_class|class_from_name)$",
    re.IGNORECASE,
)


def _builds_own_class(func: ast.expr) -> bool:
    """`cls`, `type(self)`, `self.__class__` called: the method's class built anew."""
    if isinstance(func, ast.Name):
        return func.id == "cls"
    if isinstance(func, ast.Attribute):
        return func.attr == "__class__"
    return (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "type"
        and len(func.args) == 1
    )


def _self_attributes_in(node: ast.expr) -> set[str]:
    """The names of the `self.<name>` a test reads."""
    return {n.attr for n in ast_walk(node) if _self_attribute(n)}  # type: ignore[attr-defined]


def _names_in(nodes: list[ast.expr]) -> set[str]:
    return {n.id for node in nodes for n in ast_walk(node) if isinstance(n, ast.Name)}


def _loops(statements: list[ast.stmt]) -> list[ast.For | ast.While | ast.AsyncFor]:
    out: list[ast.For | ast.While | ast.AsyncFor] = []
    stack = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for child in ast_children(node):
            if isinstance(child, ast.stmt):
                stack.append(child)
    return out


def scope_facts(tree: ast.Module, summary: Any, text: str, keys: dict[int, str]) -> ScopeFacts:
    """The scope facts of a parsed file whose summary is `summary` (`keys`: the summary's
    function keys by `id` of their `def` node)."""
    walker = _Walker(summary, text, keys)
    facts = walker.run(tree)
    if "self." in text:
        _held_modules(tree, facts, keys, walker)
    if "setattr" in text:
        _setattr_stores(tree, facts, keys)
    if "yaml" in text:
        facts.yaml_args = _loads_yaml_args(tree)
    if "cpp_extension" in text:
        _cuda_extensions(tree, facts, walker)
    facts.digest = text_digest(text)
    return facts


_EXTENSION_LOADERS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")


def _cuda_extensions(tree: ast.Module, facts: ScopeFacts, walker: Any) -> None:
    """Record the CUDA extensions the file builds (ScopeFacts.cuda_extensions,
    cuda_extension_modules)."""
    imports = walker.module_imports
    top: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    top[target.id] = statement.value

    def cuda_sources(call: ast.Call) -> bool:
        """A `.cu` file among its sources (also through a module-level list), `cuda_sources=`
        or `with_cuda=True`."""
        for keyword in call.keywords:
            if keyword.arg == "cuda_sources":
                return True
            if (
                keyword.arg == "with_cuda"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value is True
            ):
                return True
        todo: list[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
        seen: set[str] = set()
        while todo:
            node = todo.pop()
            for inner in ast_walk(node):
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    if inner.value.endswith((".cu", ".cuh")):
                        return True
                elif isinstance(inner, ast.Name) and inner.id in top and inner.id not in seen:
                    seen.add(inner.id)
                    todo.append(top[inner.id])
        return False

    def qualified(call: ast.Call) -> str:
        name = dotted(call.func)
        return walker.qualify(name, imports) if name is not None else ""

    def top_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
        """The module's statements, also in its `if`/`try`/`with` blocks (not in functions
        or classes)."""
        for statement in statements:
            yield statement
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for name in ("body", "orelse", "finalbody"):
                yield from top_level(getattr(statement, name, []))
            for handler in getattr(statement, "handlers", []):
                yield from top_level(handler.body)

    names: list[str] = []

    def bind(statements: Iterator[ast.AST], declared: set[str] | None) -> None:
        """Record the names `statements` bind to a CUDA extension (`declared`: the module
        names a function declares `global`; None at the top level)."""
        for statement in statements:
            if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
                continue
            call = statement.value
            if qualified(call) not in _EXTENSION_LOADERS or not cuda_sources(call):
                continue
            for target in statement.targets:
                if (
                    isinstance(target, ast.Name)
                    and (declared is None or target.id in declared)
                    and target.id not in names
                ):
                    names.append(target.id)

    bind(top_level(tree.body), None)
    modules: list[str] = []
    for node in ast_walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            declared = {
                n for inner in ast_walk(node) if isinstance(inner, ast.Global) for n in inner.names
            }
            if declared:
                bind(ast_walk(node), declared)
        elif isinstance(node, ast.Call) and (
            qualified(node) == "torch.utils.cpp_extension.CUDAExtension"
        ):
            # `CUDAExtension("pkg._C", [...])` or `CUDAExtension(name="pkg._C", ...)`
            name = node.args[0] if node.args else None
            for keyword in node.keywords:
                if keyword.arg == "name":
                    name = keyword.value
            if (
                isinstance(name, ast.Constant)
                and isinstance(name.value, str)
                and name.value not in modules
            ):
                modules.append(name.value)
    facts.cuda_extensions = names
    facts.cuda_extension_modules = modules


def _held_modules(tree: ast.Module, facts: ScopeFacts, keys: dict[int, str], walker: Any) -> None:
    """Record the sub-modules each class holds in an attribute, and how its methods use
    them (ScopeFacts.held)."""
    imports = walker.module_imports

    def constructed(value: ast.expr) -> str | None:
        if isinstance(value, ast.Call):
            text = dotted(value.func)
            if text is not None and text.rsplit(".", 1)[-1][:1].isupper():
                return walker.qualify(text, imports)
        return None

    def listed(value: ast.expr) -> list[str] | None:
        """`nn.ModuleList([Block(...) for _ in range(n)])`, `nn.ModuleList([A(), A()])`."""
        if not (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords):
            return None
        text = dotted(value.func)
        if text is None or text.rsplit(".", 1)[-1] != "ModuleList":
            return None
        items = value.args[0]
        if isinstance(items, (ast.ListComp, ast.GeneratorExp)):
            elements = [items.elt]
        elif isinstance(items, (ast.List, ast.Tuple)):
            elements = list(items.elts)
        else:
            return None
        built = [constructed(e) if isinstance(e, ast.Call) else None for e in elements]
        return [b for b in built if b is not None] if all(built) else None

    index = tree_index(tree)

    def method(function: ast.FunctionDef | ast.AsyncFunctionDef, klass: str) -> None:
        key = keys.get(id(function))
        # The parents from the tree's index (the parent of the method itself, which the
        # index also knows, is never asked for a `Call`).
        nodes = list(ast_walk(function))
        if index.holds(function):
            parents = index.parent
        else:
            local: dict[int, ast.AST] = {}
            for node in nodes:
                for child in iter_child_nodes(node):
                    local[id(child)] = node
            parents = lambda node: local.get(id(node))  # noqa: E731
        if function.name == "__init__":
            kept(function, klass, parents, nodes)
        for node in nodes:
            if isinstance(node, ast.Call):
                wrapped(node)
                if isinstance(node.func, ast.Name) and node.func.id == "self":
                    # `self(x)` in a method: a call of the class's own `forward` that the
                    # project model keeps no call site of
                    facts.held.append(["selfcall", klass])
            attr = self_attribute_name(node)
            if attr is None:
                continue
            parent = parents(node)
            if isinstance(node.ctx, ast.Store):  # type: ignore[attr-defined]
                if isinstance(parent, ast.Assign) and parent.targets == [node]:
                    one = constructed(parent.value)
                    many = listed(parent.value)
                    if one is not None:
                        facts.held.append(["one", klass, attr, one])
                    for built in many or ():
                        facts.held.append(["list", klass, attr, built])
                continue
            if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                facts.held.append(["escape", klass, attr])
                continue
            if isinstance(parent, ast.Call) and parent.func is node:
                continue  # `self.attn(x)`: a call the project model resolves
            if isinstance(parent, ast.Attribute):
                grand = parents(parent)
                if not (isinstance(grand, ast.Call) and grand.func is parent):
                    continue  # `self.attn.num_heads`, `self.attn.proj.weight`
                # `self.attn.parameters()`, `self.kernel.step(u)`: a method of the held
                # module, which runs its `forward` only through a call the model sees
                # (`self.forward(x)`) or a `self(x)` ("selfcall"); the scope decides
                facts.held.append(["meth", klass, attr, parent.attr])
                continue
            if (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id in ("len", "hasattr", "isinstance")
                and parent.args[:1] == [node]
            ):
                continue
            if (
                isinstance(parent, (ast.For, ast.AsyncFor))
                and parent.iter is node
                and isinstance(parent.target, ast.Name)
                and key is not None
                and _loop_calls(parent, parent.target.id, key, klass, attr, facts, walker)
            ):
                continue
            facts.held.append(["escape", klass, attr])

    def wrapped(call: ast.Call) -> None:
        """`SkipConnection(Attention(dim))`: a module built as an argument of a class."""
        wrapper = constructed(call)
        if wrapper is None:
            return
        slots = [(str(i), a) for i, a in enumerate(call.args)]
        slots += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        for slot, value in slots:
            inner = constructed(value)
            if inner is not None:
                facts.held.append(["arg", wrapper, slot, inner])

    def kept(
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: str,
        parents: Callable[[ast.AST], ast.AST | None],
        nodes: list[ast.AST],
    ) -> None:
        """`self.module = module` in `__init__`, the parameter used nowhere else (`nodes`:
        the method's, in `ast.walk`'s order)."""
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args][1:]]
        params += [a.arg for a in function.args.kwonlyargs]
        loads: dict[str, list[ast.Name]] = {}
        for node in nodes:
            if isinstance(node, ast.Name) and node.id in params:
                loads.setdefault(node.id, []).append(node)
        positional = len(function.args.posonlyargs) + len(function.args.args) - 1
        for index, name in enumerate(params):
            found = loads.get(name, [])
            if len(found) != 1 or not isinstance(found[0].ctx, ast.Load):
                continue
            parent = parents(found[0])
            if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
                continue
            attr = self_attribute_name(parent.targets[0])
            if attr is not None:
                slot = str(index) if index < positional else ""
                facts.held.append(["kept", klass, slot, name, attr])

    def visit(node: ast.AST, klass: str | None) -> None:
        for child in ast_children(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{klass}.{child.name}" if klass else child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if klass is not None:
                    method(child, klass)
                else:
                    visit(child, None)
            else:
                visit(child, klass)

    visit(tree, None)


def _loop_calls(
    loop: ast.For | ast.AsyncFor,
    name: str,
    key: str,
    klass: str,
    attr: str,
    facts: ScopeFacts,
    walker: Any,
) -> bool:
    """`for layer in self.layers:` whose body uses `layer` only by calling it: record the
    calls (ScopeFacts.held "loop"); False (nothing recorded) when it uses it otherwise."""
    calls: list[ast.Call] = []
    callees: set[int] = set()
    for statement in loop.body:
        for node in ast_walk(statement):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == name
            ):
                calls.append(node)
                callees.add(id(node.func))
    for statement in [*loop.body, *loop.orelse]:
        for node in ast_walk(statement):
            if isinstance(node, ast.Name) and node.id == name and id(node) not in callees:
                return False
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return False  # (a closure may keep it)
    for call in calls:
        spread = any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        )
        positional = [walker._argument_code(a) for a in call.args]
        keywords = {k.arg: walker._argument_code(k.value) for k in call.keywords if k.arg}
        facts.held.append(["loop", key, klass, attr, positional, keywords, spread])
    return True


def _loads_yaml_args(tree: ast.Module) -> bool:
    """Whether a file that reads YAML sets what it read on a parsed command line:
    `setattr(namespace, key, value)` or `namespace.__dict__.update(config)` (an
    `argparse.Action` loading `--conf`), `vars(args).update(config)`,
    `args.__dict__.update(config)`, `parser.set_defaults(**config)`."""
    for node in ast_walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) == 3:
            receiver = dotted(node.args[0]) or ""
            if receiver.rsplit(".", 1)[-1].lower() in ("namespace", "args"):
                return True
        if not isinstance(func, ast.Attribute):
            continue
        if func.attr == "set_defaults" and any(k.arg is None for k in node.keywords):
            return True
        if func.attr == "update" and len(node.args) == 1:
            target = func.value
            if isinstance(target, ast.Call) and dotted(target.func) == "vars" and target.args:
                target = target.args[0]
            elif isinstance(target, ast.Attribute) and target.attr == "__dict__":
                target = target.value
            else:
                continue
            name = (dotted(target) or "").rsplit(".", 1)[-1].lower()
            if name == "namespace" or name.endswith("args"):
                return True
    return False


def _setattr_stores(tree: ast.Module, facts: ScopeFacts, keys: dict[int, str]) -> None:
    """`setattr(model, "flag", x)` is a store of `flag` on another value; `setattr(self,
    name, x)` with a computed name may set any attribute of the class (`"*"`)."""

    def visit(node: ast.AST, klass: str | None) -> None:
        for child in ast_children(node):
            if isinstance(child, ast.ClassDef):
                nested = f"{klass}.{child.name}" if klass else child.name
                visit(child, keys.get(id(child)) or nested)
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "setattr"
                and len(child.args) >= 2
            ):
                receiver, name = child.args[0], child.args[1]
                literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
                mine = isinstance(receiver, ast.Name) and receiver.id == "self"
                if literal and not mine and name.value not in facts.foreign_stores:
                    facts.foreign_stores.append(name.value)
                elif literal and mine and klass is not None:
                    facts.attributes.setdefault(klass, {}).setdefault(name.value, []).append(None)
                elif mine and klass is not None:
                    facts.attributes.setdefault(klass, {})["*"] = [None]
            visit(child, klass)

    visit(tree, None)


def text_digest(text: str) -> int:
    """A cheap digest of a file's text: whether facts are of the text being checked."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _rebinds(body: list[ast.stmt], name: str) -> bool:
    """Whether a loop body binds `name` again before the statement that first tests it with
    `isinstance` (`val = torch.as_tensor(val)` first): then what the test sees is not only
    what the calls passed. A store inside that statement (`val = val.item()` under the
    test) comes after the test."""
    for statement in body:
        nodes = list(ast_walk(statement))
        if any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == name
            for node in nodes
        ):
            return not isinstance(statement, ast.If)  # the test heads an `if`, or unsure
        if any(
            isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
            for node in nodes
        ):
            return True
    return False
