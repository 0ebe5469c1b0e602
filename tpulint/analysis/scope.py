"""What code of the project trains on a TPU: the default scope of a check.

A finding is outside the scope, with the reason, when its code:
- sits in a branch that cannot run on XLA: the body of `if torch.cuda.is_available():`,
  `if x.is_cuda:`, `if self.device.type == "cuda":`, `if self.use_fused:` where
  `use_fused = torch.cuda.is_available() and ...`, what follows `if not cuda_ok(): return`,
  the later operands of `cuda_autocast_on() and x != 0` (`torch.is_autocast_enabled()`
  without a device type asks about CUDA autocast), the `else` of `if args.use_tpu:`,
  a branch that imports a CUDA-only package (bitsandbytes, flash_attn), the handler of a
  CUDA error (`except torch.cuda.OutOfMemoryError:`, what follows `if "CUDA out of memory"
  not in str(e): raise`);
- is a function that cannot complete on a TPU (`cannot_complete`): on every run it calls a
  CUDA-only package or one with no XLA backend (tpulint.analysis.gpu_packages), or a
  function of the project that cannot, through a call the project model resolves;
- sits in a branch no run takes: a parameter's test (`p is None`, `p`, `mode == "cpu"`)
  that every call of the function decides the same way (a module's `forward`: every call
  of the attributes and module lists that hold its instances, `_module_call_arguments`; an
  autograd Function's: its `Fn.apply(...)` calls, `_apply_arguments`; its own calls under
  that very test left out while no other call passes the parameter, `_guarded_recursion`),
  an attribute kept from such a constructor parameter (`self.fused`, `self.ignore is not
  None`, `self.threshold > 0`: `_attr_number_truth`; for a class configs build, by the
  key: `_key_arguments`, what any code, config or command line of the repository sets a
  key of that name to, without the default when
  every config mapping that builds the class sets the key: `_configs_always_give`), a
  caller's own parameter passed on being what the caller's calls pass, a config option
  (`self.cfg.flag`, or `cfg["kind"] == "ce"`) that the project's config classes and files
  leave at one truth (`_option_truth`; yacs-style default modules, `_C.LOSS.KIND = "focal"`,
  matched by the last key in any case: `_config_defaults`), a command-line switch
  (`args.use_ema` of `action="store_true"`) that no launcher, README command, config or code
  passes, or an option the YAML configs a `--conf` loads into the command line set
  (`self.hparams.num_classes == 7` with `num_classes: 5` in every config) (`_switch_values`);
  calls made where the code never runs are not counted;
- is a function every call (and reference) of which sits where the code never runs
  (`_called_only_where_dead`; `Metric.score`, an attribute of a class that does not inherit
  the method's, names another object), or a method of a class built or named only there
  (`_class_built_only_where_dead`);
- is inference: `predict_step`, `on_predict_*` and what only they reach, generation
  loops (a function named for generating or sampling, or under `torch.no_grad`, that feeds
  its output back into a call in a loop) with what only they reach, unless a Lightning
  `training_step` reaches the loop (sampling every training step is training), and
  branches taken only when an inference flag is on (`if _offload_inference:` where the
  parameter defaults to False, the `else` of `if not self.predict_mode:` where the
  attribute is set only from such a parameter) while no training code of the project
  passes or sets it on; branches of an attribute turned on only by a method that only code
  that never trains calls (`enable_context()` from a scoring CLI: `_called_only_off_training`);
  and a class only inference builds (see `_inference_only_classes`: every construction or
  `load_from_checkpoint` is in a script or CLI command that predicts, tests or validates and
  never fits, in a function every chain of callers of which starts at a script or CLI command
  that never trains, or in the methods of a class only such code builds, while the
  repository has a script that fits), with what only its methods reach;
- is evaluation after training: `test_step` and the other hooks of `trainer.test`
  (`test_dataloader`, `on_test_*`, `test_epoch_end`) with what only they reach (the classes
  only they build too), unless a script of the project tests after fitting in the same run
  (`trainer.fit(m); trainer.test(m)`: the test loop then runs on the TPU that trained).
  `trainer.fit` runs the training and validation loops only (lightning/pytorch/trainer/
  trainer.py `_run_stage`; the fit loop's `val_loop`), so `validation_step` stays, and so does
  what training or validation also reaches (a `test_step` returning
  `self.validation_step(...)` keeps the validation step in);
- is dead: the statements after `raise ...` or `assert False` / `assert 0, "msg"` in the
  same block;
- is compiled by another system (`@triton.jit`, `@numba.jit`, `@jax.jit`, `@wp.kernel`):
  its values are that system's, not PyTorch tensors;
- is a Lightning 1 hook that Lightning 2 never calls (`on_keyboard_interrupt`);
- runs only in hand-written training loops (not Lightning's) whose tensors go to CUDA or to
  a CUDA/MPS-or-CPU choice (`.cuda()`, `x.to(DEVICE)` with `DEVICE = torch.device("cuda" if
  torch.cuda.is_available() else "cpu")`), in a module that does not use torch_xla: on a TPU
  host that is the CPU or nothing (ProjectModel.off_tpu_loop);
- is test code (`_test_code`): a module pytest collects or one of a test folder (`tests/`, a
  package named for tests that holds test modules: `testhiml/`), unless code outside the
  tests imports it (a `testing.py` helper training uses); for every finding, breakage too;
- is used only by tests (`_test_only_in`): a class every construction, call or reference of
  which is in test code, or a module-level function only tests call, in a repository that
  trains; unresolved uses, configs, strings, text files, package exports, registries and
  subclasses that are not test-only keep it;
- is not reached from the project's TPU entry points, when it has some, or, in a project
  (a repository) with none, from its training entry points on another accelerator or
  "auto" (`_training_groups`): the scripts a port moves to the TPU;
- is a module no script of its application imports (see `_unimported`), on any accelerator
  (the application holds the namespace folders beside its scripts' folder that they import
  from, and the packages there its repository does not distribute, with no `setup.py`,
  `setup.cfg` or packaging `pyproject.toml`: `_namespace_siblings`);
- is in a class of an application that nothing can build (see `_unbuilt`): no code that runs,
  config, string or selected registry key names it, and no built subclass inherits it; a
  run-time lookup of its module (`getattr(module, key)`) builds only the names spelled
  somewhere (a string, a config, a text file, a dict's key; a name built from pieces,
  `f"{kind}_block"`, any class of the module), and configs in a folder for
  inference (`configs/inference/`) that no training script reads build nothing for training
  (`_inference_configs`). An application is the folder of a training script in no package,
  or in one whose README or shell scripts run it as a file (`python pkg/train.py`). A
  repository with a training script outside a folder of examples is judged so in every
  folder (`_training_repositories`), its installed packages too, keeping what its packages
  export and what a decorator registers under a key the code does not spell; what only
  module-level functions nothing calls or names build is built by nothing
  (`_unused_functions`).

Entry points are the places that start training on TPUs: a script (its `__main__` block or
top level, or a function a CLI framework runs: `@hydra.main`, `@app.command()`) that builds
a Trainer or Fabric asking for TPUs (`accelerator="tpu"`, an XLA strategy, `tpu_cores`),
or launches processes with `xmp.spawn` / `torch_xla.launch`. Once a project has one,
entry points whose accelerator is "auto" (or not given) count too: on a TPU VM Lightning's
"auto" picks the XLA accelerator (lightning/pytorch/trainer/connectors/
accelerator_connector.py `_choose_auto_accelerator`), and a project that configures TPUs
somewhere runs its "auto" scripts on the same machines. The project's YAML configs decide an
"auto" Trainer's accelerator unless the script's code computes it (`accelerator=
device_kind()`). Entry points that name another accelerator (`accelerator="gpu"`, `gpus=2`, a
DDP strategy, apex's AMP) do not. An entry point whose code tests, validates or predicts and
never fits (an evaluation script; a script's top level and `__main__` block together, its top
level run as inference too), or that takes an XLA device and never trains (no training
loop, `backward`, optimizer step or `fit`: a demo, a self-test), reaches its code as inference.

A project with no TPU entry point whose scripts train on another accelerator or on "auto"
(`Trainer(accelerator="gpu", strategy="ddp")`, `gpus=2`, configs with `accelerator: gpu`)
is being ported: the scripts that train it today are the ones the port moves to the TPU.
Its entry points of another accelerator or "auto" are then the roots, exactly as TPU entry
points are (evaluation scripts among them reach their code as inference), once one of them
trains (a Trainer that fits, a LightningCLI, a Fabric loop that steps); its configs for
another accelerator are its training configs and build their classes. Code they never
reach (a policy only a data-collection script builds, a module only preprocessing uses, a
notebook script) is "not reached from the training entry points (train.py)". Such roots
are weaker evidence than a TPU's, so they only ever take code out: they claim only their
applications' folders (`_application_folders`: not a package the repository distributes
beside `examples/`), what they reach keeps the library's inference and epoch-end roles
(`_role`), a module their scripts import that the call graph never loaded stays unknown
(in scope), the classes of modules whose names reached code looks up at run time may all
be built (`_looked_up`), and the group says nothing unless what its training roots alone
reach shows what trains. Where TPU entry points exist, the scripts of another accelerator
stay outside, and so does another machine's program in a folder of its own in the same
repository that the TPU entry points never load (`_other_programs`: a vendored project's
script and CUDA training loop); a library with no training entry point keeps today's
behaviour.

Reach is followed call by call: a class is live once reached code builds it (or names it:
`LightningCLI(Model)`, a class passed on, a classmethod like `load_from_checkpoint`), and then
the methods its framework calls are reached (Lightning's hooks, `forward`, dunders, and every
method of a class with another external base, whose framework may call any); other methods
run when reached code calls them (`self.m()`, `self.x.m()` through what `x` holds,
`self.x.y.m()` through what `y` of that holds, an attribute a LightningModule never assigns
through what callbacks' hooks store in it, `pl_module.meter = Meter()`, or, on a
value whose class is not known, any live class's method of that name, unless every such call
passes no argument and the method needs one: `model.train()` is `nn.Module.train`).
Names rooted at a third-party package a project folder may shadow (a namespace folder
`lightning/` beside the scripts) are looked up in the project. A
module's top level runs when reached code imports it; decorated top-level functions and
classes (registries, CLI commands) run with it.

The entry points only speak for the code they could reach: the folders of the packages and
scripts they reach (and of the entry scripts themselves) and folders inside or around
those. Code elsewhere (another project checked in the same run, Lightning's own source) is
judged as a library with no entry point: in scope unless one of the other reasons holds.
Each project's training entry points are a group of their own, claiming only their folders
and dropped when their reach says nothing (`_informative`).

Unimported modules are a separate, weaker question than the reach, asked of training
entry points of ANY accelerator, beside TPU entry points too: a module no script imports
cannot run on any machine, so whether the scripts target TPUs does not matter. It is asked
by imports only (not call by call: beside a TPU entry point, a GPU script's reach says
nothing about what a TPU runs, but its imports do say what exists at run time), only
inside the folder of a training script that sits in no package (an application: a library's
package beside an `examples/` script, or a library module with a `__main__` demo, keeps
today's behaviour), and not at all when the application imports by
computed names or builds from configs the model has not seen.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tpulint.analysis import text_reads
from tpulint.analysis.gpu_packages import NO_XLA_PACKAGES, no_xla_package
from tpulint.analysis.hooks import (
    LIGHTNING1_HOOKS,
    LIGHTNING_HOOKS,
    MODULE_API,
    PREDICT_HOOKS,
    TEST_HOOKS,
    is_end_hook,
)
from tpulint.analysis.kinds import ClassKind
from tpulint.analysis.modules import package_root
from tpulint.analysis.scope_facts import (
    DATA_KEYS,
    REQUIRED,
    STATEMENT_REGIONS,
    TPU_TOKENS,
    Truth,
    name_tokens,
)
from tpulint.analysis.summary import ClassSummary, FunctionSummary, ModuleSummary
from tpulint.analysis.text_reads import note
from tpulint.datatypes.diagnostics import unreached_reason

if TYPE_CHECKING:
    from tpulint.analysis.project import ProjectModel, _Class, _Function

_UNSET = object()  # a memo's missing answer (None is an answer)
TRAIN = 3
EPOCH = 2  # once per epoch or fit: an epoch-end hook and what only it reaches
INFER = 1
# Bases that give a class no framework calling its methods.
_PLAIN_BASES = frozenset(
    {
        "object",
        "abc.ABC",
        "typing.Generic",
        "typing.Protocol",
        "typing.NamedTuple",
        "enum.Enum",
        "enum.IntEnum",
        "dict",
        "list",
        "tuple",
        "str",
        "int",
        "Exception",
        "ValueError",
        "RuntimeError",
    }
)
_LIGHTNING_ROOTS = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})
_MAX_CLIMB = 400
# Calls that import a module by a name computed at run time.
_DYNAMIC_IMPORTS = frozenset(
    {"import_module", "__import__", "spec_from_file_location", "run_path", "load_source"}
)
# Calls that build an object from a name in a config.
_DYNAMIC_BUILDERS = frozenset(
    {
        "instantiate",
        "instantiate_from_config",
        "instantiate_class",
        "get_obj_from_str",
        "import_module",
        "locate",
        "import_string",
        "build_from_cfg",
        "from_config",
    }
)


# Of those, the ones that build a config's whole object (its `_target_`, `type`, `target`).
_CONFIG_BUILDERS = frozenset(
    {"instantiate", "instantiate_from_config", "instantiate_class", "build_from_cfg", "from_config"}
)

# Calls that train: a backward pass, an optimizer step (torch_xla's or Lightning's manual one).
_TRAINING_CALLS = frozenset({"backward", "manual_backward", "optimizer_step", "fit"})


@dataclass(frozen=True)
class Entry:
    """A place that starts training: `path:line` of the launch, the function (key) it is
    in, and how surely it runs on TPUs ("tpu", "auto", "other")."""

    path: str
    line: int
    key: str
    kind: str
    verdict: str
    # A Trainer built from the script's parsed command line as a whole (Lightning 1's
    # generic flags: `Trainer.from_argparse_args(args)`) in a module that names no TPU.
    flags: bool = False
    # A Trainer that asks for exactly one device (`devices=1`): one process, no peers.
    one_device: bool = False


@dataclass
class _State:
    roles: dict[str, int] = field(default_factory=dict)  # node -> TRAIN / EPOCH / INFER
    why: dict[str, str] = field(default_factory=dict)  # node -> the inference root's name
    live: set[str] = field(default_factory=set)  # instantiated class gkeys
    # method name -> the live classes with a method of that name in their hierarchy (in the
    # order they became live): `v.<name>(...)` on a value of unknown class looks only there
    by_method: dict[str, list[str]] = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)  # module paths whose top level ran
    rta: set[str] = field(default_factory=set)  # method names called on unknown values
    rta_args: set[str] = field(default_factory=set)  # ... with arguments somewhere
    configured: bool = False  # classes named in configs were built
    queue: deque[tuple[str, int, str]] = field(default_factory=deque)


def _is_function(value: Any) -> bool:
    """A project function of the model (tpulint.analysis.project._Function)."""
    return isinstance(getattr(value, "summary", None), FunctionSummary)


def _is_class(value: Any) -> bool:
    return isinstance(getattr(value, "summary", None), ClassSummary)


def module_node(path: str, main: bool = False) -> str:
    return f"{path}:{'__main__' if main else ''}"


def _in_tests(path: str) -> bool:
    return _is_test_path(path)


_TEST_FOLDERS = frozenset({"tests", "test", "testing", "unittests", "unit_tests"})

# Per-path answers are kept for absolute paths only: a relative path's folder depends on the
# working directory. The model asks about the same few thousand files over and over (the
# classes nothing builds ask once per class and per reference: 158,889 questions for the
# corpus's 4,215 files, a fifth of the model build's CPU); bounded, for long-lived processes.
_PATH_CACHE = 1 << 16


def _folder_of(path: str) -> str:
    """The folder of a file, absolute: `os.path.dirname(os.path.abspath(path))`."""
    if os.path.isabs(path):
        return _absolute_folder(path)
    return os.path.dirname(os.path.abspath(path))


@lru_cache(maxsize=_PATH_CACHE)
def _absolute_folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path))


def _is_test_path(path: str) -> bool:
    """See `_test_path` (kept per absolute path)."""
    if os.path.isabs(path):
        return _absolute_test_path(path)
    return _test_path(path)


@lru_cache(maxsize=_PATH_CACHE)
def _absolute_test_path(path: str) -> bool:
    return _test_path(path)


def _test_path(path: str) -> bool:
    """A test module: `test_*.py`, `*_test.py`, `conftest.py`, or a module in a `tests`
    (`test`, `testing`, `unittests`) folder of its package (or a script in one), or in a
    package named for tests (`testhiml/`, `testSSL/`: a name starting with "test", of a folder
    between the package root and the file, that holds test modules or sits in a folder with a
    `conftest.py`; the folder a loose script sits in counts by the exact names only, since it
    may be any checkout's name)."""
    name = os.path.basename(path)
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return _test_folder(path) is not None


def _test_folder(path: str) -> str | None:
    """The test folder a module sits in (see `_is_test_path`), or None."""
    if os.path.isabs(path):
        return _absolute_test_folder(path)
    return _find_test_folder(os.path.abspath(path))


@lru_cache(maxsize=_PATH_CACHE)
def _absolute_test_folder(path: str) -> str | None:
    return _find_test_folder(os.path.abspath(path))


def _find_test_folder(path: str) -> str | None:
    root = str(package_root(path))
    folder = os.path.dirname(path)
    if folder == root:
        return root if os.path.basename(root) in _TEST_FOLDERS else None
    found = None
    while folder != root and len(folder) > len(root):
        base = os.path.basename(folder)
        if base in _TEST_FOLDERS or (base.lower().startswith("test") and _holds_tests(folder)):
            found = folder
        folder = os.path.dirname(folder)
    return found


@lru_cache(maxsize=1024)
def _holds_tests(folder: str) -> bool:
    """Whether a folder holds test modules (`test_*.py`, `*_test.py`, `conftest.py`), or its
    parent a `conftest.py`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    if any(n.endswith(".py") and (n.startswith("test_") or n.endswith("_test.py")) for n in names):
        return True
    return "conftest.py" in names or os.path.exists(
        os.path.join(os.path.dirname(folder), "conftest.py")
    )


def _test_shown(path: str) -> str:
    """How a test module is named in a reason: its test folder (`tests/...`), else its file."""
    folder = _test_folder(path)
    return f"{os.path.basename(folder)}/..." if folder is not None else os.path.basename(path)


_REPOSITORY_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


@lru_cache(maxsize=4096)
def _repository_of(folder: str) -> str | None:
    """The nearest folder at or above `folder` that marks a repository (None: none). A
    `setup.py` inside a package (beside an `__init__.py`) that imports no packaging tool is
    one of the package's modules (`pkg/setup.py` setting up a training run), no marker."""
    if any(
        os.path.exists(note(os.path.join(folder, marker)))
        and (marker != "setup.py" or _packaging_script(folder))
        for marker in _REPOSITORY_MARKERS
    ):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _repository_of(parent)


_PACKAGING_TOOLS = re.compile(r"\b(setuptools|distutils|skbuild|numpy\.distutils)\b")


def _packaging_script(folder: str) -> bool:
    """Whether the `setup.py` of `folder` packages a distribution: any `setup.py` outside a
    package, one inside a package that imports a packaging tool."""
    if not os.path.exists(note(os.path.join(folder, "__init__.py"))):
        return True
    try:
        with open(os.path.join(folder, "setup.py"), encoding="utf-8", errors="replace") as f:
            text = f.read(_MAX_TEXT_BYTES)
    except OSError:
        return True
    return bool(_PACKAGING_TOOLS.search(text))


# Files besides the Python code and YAML configs that may name a class or a registry key:
# shell scripts (`python train.py --encoder packed`), JSON, TOML, INI and gin configs,
# packaging metadata (plugin entry points).
_TEXT_SUFFIXES = (".sh", ".json", ".jsonnet", ".toml", ".cfg", ".ini", ".gin", ".conf")
_SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})
_MAX_TEXT_FILES = 2000
_MAX_TEXT_BYTES = 512 * 1024
_WORD = re.compile(r"[A-Za-z_][\w\-]*")


def _text_words(folder: str) -> frozenset[str]:
    """The identifier-like words of the text files under `folder` and of its repository's
    shell scripts and packaging files (`*` alone: too many files to read, any name may be
    spelled somewhere)."""
    words: set[str] = set()
    files: list[str] = []
    repository = _repository_of(folder)
    # The application's folder, and its repository's shell scripts and packaging files.
    walks = [(folder, _TEXT_SUFFIXES)]
    if repository is not None and repository != folder:
        walks.append((repository, (".sh", "pyproject.toml", "setup.cfg")))
    for top, suffixes in walks:
        for root, dirs, names in os.walk(top):
            note(root)  # a file added or removed changes the folder's modification time
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS]
            files += [note(os.path.join(root, n)) for n in names if n.endswith(suffixes)]
            if len(files) > _MAX_TEXT_FILES:
                return frozenset({"*"})
    for path in files:
        try:
            if os.path.getsize(path) > _MAX_TEXT_BYTES:
                continue  # data, not a config
            with open(path, encoding="utf-8", errors="replace") as handle:
                words.update(_WORD.findall(handle.read()))
        except OSError:
            continue
    return frozenset(words)


# Bases of metaclasses (a class statement's `metaclass=` builds them).
_METACLASS_BASES = frozenset({"type", "ABCMeta", "EnumMeta", "EnumType"})
# Folders of a library's examples and demos: their training shows users how to train.
_EXAMPLE_TOKENS = frozenset(
    {"example", "examples", "demo", "demos", "tutorial", "tutorials", "notebooks", "docs"}
)
# Folders of configs for inference (`configs/inference/`, `scripts/sampling/configs/`).
_INFERENCE_FOLDER_TOKENS = frozenset({"inference", "infer", "predict", "prediction", "sampling"})
_PATH_TEXT = re.compile(r"[\w.\-]+(?:/[\w.\-]+)+")


@lru_cache(maxsize=256)
def _run_commands(repository: str) -> tuple[str, ...]:
    """The lines of a repository's README and shell scripts: the commands that run its
    scripts (`python topognn/train_model.py --model GNN`)."""
    paths = [note(os.path.join(repository, n)) for n in ("README.md", "README.rst", "README")]
    for root, dirs, files in os.walk(repository):
        note(root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS]
        paths += [note(os.path.join(root, n)) for n in files if n.endswith(".sh")]
        if len(paths) > _MAX_TEXT_FILES:
            break
    lines: list[str] = []
    for path in paths:
        try:
            if os.path.getsize(path) > _MAX_TEXT_BYTES:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines += [line for line in handle if ".py" in line]
        except OSError:
            continue
    return tuple(lines)


# A command's TPU flag: `--tpu_cores 8`, `--tpus=8`, `--accelerator tpu`.
_TPU_FLAG = re.compile(r"--(?:tpu\w*|num_tpu\w*)\b|--accelerator[\s=]+[\"']?(?:tpu|xla)\b", re.I)


def _runs_with_tpu_flags(path: str) -> bool:
    """Whether a command of the repository's README or shell scripts runs the script
    `path` (by its file name) with a TPU flag of Lightning's generic Trainer flags."""
    repository = _repository_of(os.path.dirname(os.path.abspath(path)))
    if repository is None:
        return False
    name = re.compile(r"(?:^|[\s/])" + re.escape(os.path.basename(path)) + r"(?:\s|$)")
    return any(name.search(line) and _TPU_FLAG.search(line) for line in _run_commands(repository))


def _run_as_file(path: str) -> bool:
    """Whether the README or a shell script of the repository of a module inside a package
    runs it as a file by its path (`python topognn/train_model.py`): a script of an
    application that sits in its own package, not a library module's demo."""
    repository = _repository_of(os.path.dirname(os.path.abspath(path)))
    if repository is None:
        return False
    relative = os.path.relpath(os.path.abspath(path), repository).replace(os.sep, "/")
    pattern = re.compile(r"(?:^|[\s/])(?:\./)?" + re.escape(relative) + r"(?:\s|$)")
    return any(pattern.search(line) for line in _run_commands(repository))


@lru_cache(maxsize=256)
def _training_config_mentions(repository: str, scripts: tuple[str, ...]) -> frozenset[str]:
    """The existing files and folders of `repository` that its training scripts, or the
    lines of its README and shell scripts that run them (`python main.py --base
    configs/example_training/toy/mnist_cond.yaml`), spell as paths: where the training reads
    its configs."""
    names = {os.path.basename(script) for script in scripts}
    texts: list[tuple[str, str]] = []  # (folder a path is relative to, text)
    for script in scripts:
        try:
            with open(script, encoding="utf-8", errors="replace") as handle:
                texts.append((os.path.dirname(script), handle.read()))
        except OSError:
            continue
    lines = [line for line in _run_commands(repository) if any(n in line for n in names)]
    texts.append((repository, "\n".join(lines)))
    found: set[str] = set()
    for folder, text in texts:
        for match in _PATH_TEXT.findall(text):
            for base in (folder, repository):
                path = os.path.normpath(os.path.join(base, match))
                if _nested(path, repository) and path != repository and os.path.exists(note(path)):
                    found.add(path)
    return frozenset(found)


# Sections of a `pyproject.toml` that make it package and install code (not a tool's settings
# alone: `[tool.ruff]`).
_PACKAGING_SECTION = re.compile(
    r"^\[(?:project|build-system|tool\.(?:setuptools|poetry|flit|hatch|pdm))[\].]", re.M
)


@lru_cache(maxsize=256)
def _distributes(folder: str, repository: str) -> bool:
    """Whether a packaging file at `folder` or above it, up to its repository's root, would
    install the packages of `folder` (`setup.py`, `setup.cfg`, a `pyproject.toml` with a
    `[project]`, `[build-system]` or build tool's section): then they are a library others
    may import from anywhere."""
    while True:
        if os.path.exists(note(os.path.join(folder, "setup.cfg"))) or (
            os.path.exists(note(os.path.join(folder, "setup.py"))) and _packaging_script(folder)
        ):
            return True
        pyproject = note(os.path.join(folder, "pyproject.toml"))
        try:
            with open(pyproject, encoding="utf-8", errors="replace") as handle:
                if _PACKAGING_SECTION.search(handle.read()):
                    return True
        except OSError:
            pass
        if folder == repository or not folder.startswith(repository + os.sep):
            return False
        folder = os.path.dirname(folder)


@lru_cache(maxsize=256)
def _holds_suffix(folder: str, suffix: str) -> bool:
    """Whether a file of the folder or below it (hidden folders aside) ends with `suffix`."""
    for root, dirs, names in os.walk(folder):
        note(root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS]
        if any(n.endswith(suffix) for n in names):
            return True
    return False


# What says, outside the Python code, that a repository runs on TPU VMs: a requirements
# file that installs torch_xla or libtpu, a shell script or Dockerfile that selects the TPU
# runtime (`PJRT_DEVICE=TPU`, XRT's `XRT_TPU_CONFIG`) or installs torch_xla.
_REQUIREMENTS_XLA = re.compile(r"(?im)^\s*(torch[_-]xla|libtpu)\b")
_LAUNCHER_XLA = re.compile(
    r"(?i)(PJRT_DEVICE=[\"']?TPU\b|XRT_TPU_CONFIG|pip3?\s+install\b[^\n]*\btorch[_-]xla\b)"
)


def _requirements_file(name: str, folder: str) -> bool:
    lowered = name.lower()
    if lowered.endswith(".txt"):
        return "requirements" in lowered or os.path.basename(folder) == "requirements"
    return lowered.startswith("environment") and lowered.endswith((".yml", ".yaml"))


def _own_folders(top: str) -> Iterator[tuple[str, list[str]]]:
    """The folders of a project (`os.walk` order, sorted), with their file names: not hidden
    or skipped folders, nor folders with a repository marker of their own (another project)."""
    for root, dirs, files in os.walk(top):
        note(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED_FOLDERS
            and _repository_of(os.path.join(root, d)) != os.path.join(root, d)
        )
        yield root, files


@lru_cache(maxsize=256)
def _tpu_host_text(repository: str) -> str | None:
    """The first requirements file, shell script or Dockerfile of a repository that says it
    runs on TPU VMs, with what it says (`requirements_tpu.txt installs torch_xla`)."""
    found: list[tuple[str, str]] = []
    count = 0
    for root, files in _own_folders(repository):
        for name in sorted(files):
            requirements = _requirements_file(name, root)
            launcher = name.endswith(".sh") or name.startswith("Dockerfile")
            if not requirements and not launcher:
                continue
            count += 1
            path = note(os.path.join(root, name))
            try:
                if os.path.getsize(path) > _MAX_TEXT_BYTES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
            pattern = _REQUIREMENTS_XLA if requirements else _LAUNCHER_XLA
            match = pattern.search(text)
            if match is not None:
                shown = os.path.relpath(path, repository)
                said = match.group(0).strip()
                what = (
                    f"installs {said}"
                    if requirements or "install" in said.lower()
                    else f"sets {said.split('=', 1)[0] if '=' in said else said}"
                    + ("=TPU" if "PJRT" in said.upper() else "")
                )
                found.append((shown, what))
        if found or count > _MAX_TEXT_FILES:
            break
    if not found:
        return None
    shown, what = min(found)
    return f"{shown} {what}"


_MAX_JSON_FILES = 500


@lru_cache(maxsize=256)
def _json_configs(project: str) -> tuple[tuple[str, Any], ...]:
    """The JSON files of a project folder (not its hidden folders, nor folders that are
    repositories of their own), parsed: (path shown from the project, data)."""
    import json

    out: list[tuple[str, Any]] = []
    for root, files in _own_folders(project):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = note(os.path.join(root, name))
            try:
                if os.path.getsize(path) > _MAX_TEXT_BYTES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as handle:
                    data = json.load(handle)
            except (OSError, ValueError, RecursionError):
                continue
            out.append((os.path.relpath(path, project), data))
            if len(out) >= _MAX_JSON_FILES:
                return tuple(out)
    return tuple(out)


def forget_text_reads() -> None:
    """Start noting the text files the analysis reads afresh (before a model is built): the
    cached readers would otherwise answer a second build without noting what they read."""
    text_reads.reset()
    for cached in (
        _repository_of,
        _run_commands,
        _training_config_mentions,
        _distributes,
        _holds_suffix,
        _tpu_host_text,
        _json_configs,
    ):
        cached.cache_clear()


def _data_key_path(path: str) -> bool:
    """A config key path of a data-pipeline object: `data.init_args.transforms`,
    `datamodule.collate_fn`, `dataset.augmentations`."""
    keys = path.split(".")
    if any(DATA_KEYS.search(k) for k in keys):
        return True
    return (
        bool(keys)
        and keys[0] in ("data", "datamodule", "dataset", "datasets")
        and not any(k in ("model", "net", "network") for k in keys)
    )


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(b + os.sep) or b.startswith(a + os.sep)


@lru_cache(maxsize=4096)
def _import_root(folder: str) -> str:
    """The folder the imports of a file in `folder` start from: above the topmost of its
    folders that is a package (`src/__init__.py` for `src/losses/loss.py`, even when
    `losses/` has none), else `folder` itself."""
    root, current = folder, folder
    for _ in range(32):
        parent = os.path.dirname(current)
        if parent == current:
            break
        if os.path.exists(os.path.join(current, "__init__.py")):
            root = parent
        current = parent
    return root


def same_repository(a: str, b: str) -> bool:
    """Whether two files belong to one project: the same repository (the nearest folder
    with `.git`, `pyproject.toml`, `setup.py` or `setup.cfg`), or, without one, folders
    inside or around each other (several projects checked in one run stay apart)."""
    folder_a = _folder_of(a)
    folder_b = _folder_of(b)
    repo_a, repo_b = _repository_of(folder_a), _repository_of(folder_b)
    if repo_a is not None and repo_b is not None:
        return repo_a == repo_b
    return _nested(folder_a, folder_b)


_same_repository = same_repository


def _tpu_project_folder(path: str) -> str:
    """The folder of the project of `path` whose files say where it runs: its repository,
    or, when it has none of its own (no marker, or one only above a hidden folder such as a
    checkout of several packages), the folder its imports start from (above `src/`)."""
    folder = os.path.dirname(os.path.abspath(path))
    repository = _repository_of(folder)
    if repository is not None and not any(
        part.startswith(".") and part != "."
        for part in os.path.relpath(folder, repository).split(os.sep)
    ):
        return repository
    root = _import_root(folder)
    return os.path.dirname(root) if os.path.basename(root) == "src" else root


def _shown_path(path: str, repository: str) -> str:
    absolute = os.path.abspath(path)
    if absolute.startswith(repository + os.sep):
        return os.path.relpath(absolute, repository)
    return os.path.basename(path)


class ProjectScope:
    """The scope of a project model (see the module docstring). `lightning_version` says
    which hooks run ("1.x" runs Lightning 1's)."""

    def __init__(self, model: ProjectModel, lightning_version: str = "2.6") -> None:
        self.model = model
        self.lightning1 = lightning_version.split(".", 1)[0] == "1"
        self._index: dict[str, list[tuple[str, list[str]]]] | None = None
        self._target_memo: dict[tuple[str, str, str], tuple[list[Any], str | None]] = {}
        self._function_targets: dict[tuple[str, str, str], list[_Function]] = {}  # use_targets
        self._dirs: dict[str, str] = {}
        self._entries: list[Entry] = []
        self.claimed: list[str] = []  # folders the entry points speak for
        # Each group of roots: the folders it claims, the files its reasons name,
        # what they are ("TPU", or "training": a project with no TPU entry point,
        # `_training_groups`), and what they reach.
        self._groups: list[tuple[list[str], list[str], str, _State]] = []
        # Modules a training group's scripts import that its reach did not load: unknown.
        self._unsure: set[str] = set()
        self.reach: _State | None = None  # from the entry points (TPU or training ones)
        self.library: _State | None = None  # every root of the rest of the project
        self._truths: dict[tuple[str, Any, str | None, int], Truth] = {}
        self._incomplete: dict[str, list[str] | None] = {}
        self._computed = False
        # module path -> why no script of its application imports it (see `_unimported`)
        self.unimported: dict[str, str] = {}
        # class gkey -> why nothing can build it (see `_unbuilt`)
        self.unbuilt: dict[str, str] = {}
        # an application's folder -> every folder of it (its namespace siblings too)
        self._app_folders: dict[str, set[str]] = {}
        self._live_methods: dict[tuple[str, str], _Function | None] = {}  # see _live_method
        self._callers_memo: dict[str, list[str]] = {}  # see callers
        self._one_device: dict[tuple[str, bool], bool] = {}  # see trained_on_one_device
        self._entry_live: dict[int, set[str]] = {}  # launch index -> classes its reach builds
        self._all_sites: list[Entry] | None = None  # every launch (trained_on_one_device)
        self._callee_memo: dict[tuple[str, str, str, bool], list[str]] = {}  # _callees_of_use
        self._ref_memo: dict[tuple[int, str], tuple[str, ...] | None] = {}  # see _ref_targets
        self._data_class_memo: dict[str, bool] = {}  # see _data_class
        self._dead_refs: dict[tuple[int, int, int, str | None], bool] = {}  # _dead_reference

    def unbuilt_classes(self) -> dict[str, str]:
        """Class gkey -> why nothing can build it (see `_unbuilt`)."""
        self.compute()
        return self.unbuilt

    @property
    def entries(self) -> list[Entry]:
        """The entry points whose reach is the scope: the TPU entry points, and the training
        entry points of each project with none (`_training_groups`); empty: the project is
        judged as a library."""
        self.compute()
        return self._entries

    def trained_on_one_device(self, class_gkey: str, fitting: bool = False) -> bool:
        """Whether every entry point whose reach builds the class (or a subclass) is a
        Trainer that runs on exactly one device under a single-device strategy
        (`Trainer(devices=1)`, or `devices=` a name bound to 1 or `[k]` wherever a TPU runs
        the script: scope_facts' `one_device`): the class then trains in one process, with
        no peers and no collective (and at least one entry point builds it; a library, or
        a class only a LightningCLI or another Trainer trains, is not). `fitting`: only the
        entry points that fit count (a Trainer that only tests or predicts never runs the
        training step)."""
        memo = (class_gkey, fitting)
        cached = self._one_device.get(memo)
        if cached is not None:
            return cached
        self.compute()
        wanted = {class_gkey, *self.model.subclasses(class_gkey)}
        if self._all_sites is None:
            self._all_sites = self._launch_sites()
        reaching = []
        for index, site in enumerate(self._all_sites):
            # Every launch of the project, not only the scope's entry points: a Trainer in a
            # function nothing runnable calls is reached from that function.
            roots = self._entry_roots(site) or [self._launch_node(site)]
            if fitting and all(self._evaluates_only(site, root) for root in roots):
                continue
            live = self._entry_live.get(index)
            if live is None:
                reach = {root: site for root in roots}
                live = self._entry_live[index] = self._reach(reach).live
            if wanted & live:
                reaching.append(site)
        result = bool(reaching) and all(site.one_device for site in reaching)
        self._one_device[memo] = result
        return result

    # --- nodes -----------------------------------------------------------------------------

    def _facts(self, module: ModuleSummary) -> Any:
        return module.scope

    def _uses(self, node: str) -> list[list[str]]:
        path, _, key = node.rpartition(":")
        module = self.model.modules.get(path)
        if module is None:
            return []
        return module.scope.uses.get(key, [])

    def _function(self, node: str) -> _Function | None:
        return self.model.functions.get(node)

    def directory(self, path: str) -> str:
        """The folder a module's imports resolve from: its top-level package's parent, or a
        script's own folder."""
        found = self._dirs.get(path)
        if found is None:
            found = self._dirs[path] = str(package_root(path))
        return found

    # --- resolving uses --------------------------------------------------------------------

    def _targets(self, node: str, use: list[str]) -> tuple[list[Any], str | None]:
        """What a use of `node` may run: project functions, classes (built) and modules
        (imported), and a method name to look for on every live class when the receiver is
        not known. Memoised as ProjectModel.resolve_call is (shared: read the list, do not
        change it)."""
        memo_key = (node, use[0], use[1])
        found = self._target_memo.get(memo_key)
        if found is not None:
            return found
        recursion = self.model._recursion
        outer = recursion.take_stand_in_flag()
        out = self._find_targets(node, use)
        used = recursion.take_stand_in_flag()
        recursion.restore_stand_in_flag(outer or used)
        if not used:
            self._target_memo[memo_key] = out
        return out

    def _find_targets(self, node: str, use: list[str]) -> tuple[list[Any], str | None]:
        path, _, key = node.rpartition(":")
        module = self.model.modules.get(path)
        if module is None:
            return [], None
        fn = self.model.functions.get(node) if key not in ("", "__main__") else None
        owner = fn.owner if fn is not None else None
        form, target = use
        if form == "selfref":
            form = "self"
        if form in ("name", "ref"):
            found = self.model.lookup(target, module)
            if found is None and "." in target.lstrip("."):
                # `Model.load_from_checkpoint(...)`: a classmethod from outside the project.
                prefix = self.model.lookup(target.rsplit(".", 1)[0], module)
                return ([prefix] if _is_class(prefix) else []), None
            if _is_function(found) and found.owner is not None:
                cls = self.model.classes.get(found.owner)
                return [found, *([cls] if cls is not None else [])], None
            return ([found] if found is not None else []), None
        if form in ("self", "super"):
            if owner is None:
                return [], None
            return list(self.model.resolve_call(module, owner, form, target, virtual=True)), None
        if form == "attr":
            if owner is None:
                return [], target.partition(".")[2] or None
            found = self.model.resolve_call(module, owner, "attr", target)
            if found:
                return list(found), None
            return [], target.partition(".")[2] or None
        if form == "meth":
            return [], target
        return [], None

    def use_targets(self, node: str, use: list[str]) -> list[_Function]:
        """The project functions a use of `node` may run (resolved calls and references; a
        method of a value of unknown class is not followed). Kept where `_targets` keeps its
        answer (the hot set asks it of every use of every function it reaches, in each of its
        passes; shared: read the list, do not change it)."""
        if use[0] == "meth":
            return []
        key = (node, use[0], use[1])
        kept = self._function_targets.get(key)
        if kept is not None:
            return kept
        targets, _ = self._targets(node, use)
        out = [t for t in targets if _is_function(t)]
        if key in self._target_memo:
            self._function_targets[key] = out
        return out

    def _index_of_uses(self) -> dict[str, list[tuple[str, list[str]]]]:
        """Simple name -> (node, use) for every use of the project: the callers of a
        function are among the uses of its name."""
        if self._index is None:
            index: dict[str, list[tuple[str, list[str]]]] = {}
            for path, module in self.model.modules.items():
                for key, uses in module.scope.uses.items():
                    node = f"{path}:{key}"
                    for use in uses:
                        name = use[1].rsplit(".", 1)[-1]
                        index.setdefault(name, []).append((node, use))
            self._index = index
        return self._index

    def callers(self, node: str) -> list[str]:
        """The nodes whose uses may run `node`. Memoised as `_targets` is (an answer that
        used no cycle's stand-in; shared: read the list, do not change it)."""
        found = self._callers_memo.get(node)
        if found is not None:
            return found
        recursion = self.model._recursion
        outer = recursion.take_stand_in_flag()
        out = self._find_callers(node)
        used = recursion.take_stand_in_flag()
        recursion.restore_stand_in_flag(outer or used)
        if not used:
            self._callers_memo[node] = out
        return out

    def _find_callers(self, node: str) -> list[str]:
        fn = self._function(node)
        if fn is None:
            return []
        out = []
        name = fn.summary.name
        # `_may_call`: a method needing arguments is not run by a call passing none.
        needs = fn.summary.cls is not None and bool(fn.module.scope.needs.get(fn.summary.key))
        for caller, use in self._index_of_uses().get(name, ()):
            targets, called = self._targets(caller, use)
            if fn in targets or (
                called == name
                and fn.summary.cls is not None
                and not (needs and self._bare_call(caller, called))
            ):
                out.append(caller)
        return out

    def _may_call(self, node: str, name: str, fn: _Function) -> bool:
        """Whether `v.<name>(...)` in `node`, on a value of unknown class, may run `fn`: only
        a method can be (a module's function is called through its module's name), and not
        one that needs arguments when every such call passes none (`model.train()`, which is
        `nn.Module.train`, never runs a project's `def train(self, loader)`)."""
        if fn.summary.cls is None:
            return False
        return not (fn.module.scope.needs.get(fn.summary.key) and self._bare_call(node, name))

    def _bare_call(self, node: str, name: str) -> bool:
        """Whether `node` calls `<name>` on values of unknown class only without arguments."""
        path, _, key = node.rpartition(":")
        module = self.model.modules.get(path)
        return module is not None and name in module.scope.bare.get(key, ())

    # --- entry points ----------------------------------------------------------------------

    def _launch_sites(self) -> list[Entry]:
        sites = []
        for path, module in self.model.modules.items():
            if not module.scope.launches:
                continue
            if _is_test_path(path) or (module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                continue
            for launch in module.scope.launches:
                kind, verdict, key, line = launch[:4]
                if kind == "cli":
                    verdict = self._cli_verdict(module, launch)
                    if verdict is None:
                        continue
                fn = self.model.functions.get(f"{path}:{key}")
                if fn is not None and fn.summary.name.startswith("test_"):
                    continue
                computed = kind != "cli" and "computed" in launch[4:]
                if verdict == "auto" and kind in ("trainer", "fabric", "cli") and not computed:
                    verdict = self._config_verdict(path) or verdict
                flags = kind == "trainer" and "flags" in launch[4:]
                one = kind == "trainer" and "one-device" in launch[4:]
                sites.append(Entry(path, line, key, kind, verdict, flags, one))
        return sites

    def _config_verdict(self, path: str) -> str | None:
        """What the configs of a script's repository say about its Trainer (`accelerator:
        tpu` in a config the script reads into `Trainer(accelerator=cfg.accelerator)`):
        "tpu" if some config asks for TPUs, "other" if all name another accelerator."""
        verdicts = {
            config.trainer
            for config in self.model.configs
            if config.trainer is not None and self._same_project(config.path, path)
        }
        if "tpu" in verdicts:
            return "tpu"
        return "other" if verdicts == {"other"} else None

    def _cli_verdict(self, module: ModuleSummary, launch: list[Any]) -> str | None:
        """A `XxxCLI(...)` call: a LightningCLI when the class is Lightning's or derives from
        it (None otherwise)."""

        target = launch[4] if len(launch) > 4 else ""
        qualified = target.lstrip(".")
        found = self.model.lookup(target, module)
        lightning = qualified.split(".", 1)[0] in _LIGHTNING_ROOTS or (
            _is_class(found)
            and any(
                base.rsplit(".", 1)[-1] == "LightningCLI"
                for base in self.model.external_bases(found.gkey)
            )
        )
        if not lightning:
            return None
        return launch[1]

    def _runnable(self, node: str) -> bool:
        """Whether a node is run by someone outside the project: a script's top level or
        `__main__` block, or a function a CLI framework runs (decorated at the top level)."""
        path, _, key = node.rpartition(":")
        module = self.model.modules.get(path)
        if module is None:
            return False
        if key == "__main__":
            return True
        if key == "":
            # A script: it has a `__main__` block, or sits in no package (run as a file).
            loose = module.module is None or ("." not in module.module and not module.is_package)
            return "__main__" in module.scope.uses or loose
        return key in module.scope.commands

    @staticmethod
    def _launch_node(site: Entry) -> str:
        """The node (function or module) a launch is in."""
        if site.key == "__main__":
            return module_node(site.path, main=True)
        return module_node(site.path) if site.key == "" else f"{site.path}:{site.key}"

    def _entry_roots(self, site: Entry) -> list[str]:
        """The runnable nodes of the launch's own project whose calls lead to it."""
        start = (
            module_node(site.path) if site.key in ("", "__main__") else f"{site.path}:{site.key}"
        )
        if site.key == "__main__":
            start = module_node(site.path, main=True)
        roots: list[str] = []
        seen = {start}
        queue = deque([start])
        while queue and len(seen) < _MAX_CLIMB:
            node = queue.popleft()
            if self._runnable(node):
                roots.append(node)
                if node.endswith(":"):
                    roots.append(node + "__main__")
                continue
            for caller in self.callers(node):
                if caller not in seen and self._same_project(caller.rpartition(":")[0], site.path):
                    seen.add(caller)
                    queue.append(caller)
        return roots

    # --- reach -------------------------------------------------------------------------------

    def compute(self) -> None:
        if self._computed:
            return
        self._computed = True
        sites = self._launch_sites()
        self._compute_reach(sites)
        self.unimported = self._unimported(sites)
        self.unbuilt = self._unbuilt(sites)

    def _compute_reach(self, sites: list[Entry]) -> None:
        """The scope's roots and what they reach. The TPU entry points are the roots where a
        project has some; a project (a repository) with none, whose scripts train on another
        accelerator or on "auto" (`Trainer(accelerator="gpu")`, `gpus=2`, a LightningCLI
        whose configs ask for GPUs), has its training entry points as roots instead: a port
        to the TPU moves the scripts that train today, so what they never reach (a policy
        only a data-collection script builds, a module only preprocessing uses) is not what
        the port runs. Each group of roots must be informative (`_informative`) and speaks
        only for the folders it claims (`_claims`); the rest is judged as a library."""
        groups: list[tuple[dict[str, Entry], _State, list[str], str]] = []
        tpu = [s for s in sites if s.verdict == "tpu"]
        roots = {root: site for site in tpu for root in self._entry_roots(site)}
        reach = self._reach(roots) if roots else None
        # The entry points build their model in a way the project does not show (a
        # registry, a config read at run time): their reach says nothing.
        if reach is not None and self._informative(reach):
            claimed = self._claims(reach, roots)
            auto = [
                s
                for s in sites
                if s.verdict == "auto"
                and self._claimed(s.path, claimed)
                and not (s.flags and not _runs_with_tpu_flags(s.path))
            ]
            more = {root: site for site in auto for root in self._entry_roots(site)}
            if set(more) - set(roots):
                roots.update(more)
                reach = self._reach(roots)
                claimed = self._claims(reach, roots)
            claimed = sorted(set(claimed) | set(self._other_programs(sites, reach, roots, claimed)))
            groups.append((roots, reach, claimed, "TPU"))
        # The projects checked in the same run with no TPU entry point of their own.
        others = [s for s in sites if not any(same_repository(s.path, t.path) for t in tpu)]
        # A script whose code names a TPU (a `--tpu_cores` option, a TPU strategy chosen from
        # its flags) is configured for TPUs: its siblings with Lightning 1's generic flags
        # alone train elsewhere, unless a shipped command gives them a TPU flag.
        configured = [s for s in others if self._names_tpu(s.path)]
        others = [
            s
            for s in others
            if not (
                s.flags
                and any(same_repository(s.path, c.path) for c in configured)
                and not _runs_with_tpu_flags(s.path)
            )
        ]
        groups += self._training_groups(others, sites, [c for group in groups for c in group[2]])
        if not groups:
            self.library = self._library_reach()
            return
        roots = {root: site for group in groups for root, site in group[0].items()}
        self._groups = [
            (group[2], self._shown(group[0], group[3]), group[3], group[1]) for group in groups
        ]
        self._entries = sorted(set(roots.values()), key=lambda e: (e.path, e.line))
        self.reach = groups[0][1]
        self.claimed = sorted({c for group in groups for c in group[2]})
        self.library = self._library_reach()

    def _shown(self, roots: dict[str, Entry], what: str) -> list[str]:
        """The files a group's reasons name: a TPU group's entry points; a training group's
        scripts that train (the file run, `train_seg.py`, not the helper module that builds
        its Trainer; its evaluation scripts are roots too, of inference)."""
        if what == "training":
            return sorted(
                {
                    os.path.basename(root.rpartition(":")[0])
                    for root, site in roots.items()
                    if self._trains(site, root)
                }
            )
        return sorted({os.path.basename(site.path) for site in roots.values()})

    def _training_groups(
        self, sites: list[Entry], every: list[Entry], taken: list[str]
    ) -> list[tuple[dict[str, Entry], _State, list[str], str]]:
        """The training entry points of each project (repository) among `sites` that has no
        TPU entry point, as roots: every entry point of another accelerator or "auto"
        (evaluation scripts among them reach their code as inference, `_reach`), when one of
        them trains (a Trainer that fits, a LightningCLI, a Fabric loop that steps) and its
        reach is informative. They claim the folders of their applications (`_applications`
        of `every` site: the script's folder, a package inside it, the namespace folders and
        undistributed packages beside it), not a package the repository distributes beside
        an `examples/` folder, nor a folder a TPU group claims (`taken`)."""
        by_project: dict[str, list[Entry]] = {}
        for site in sites:
            if site.verdict not in ("other", "auto") or _is_test_path(site.path):
                continue
            folder = os.path.dirname(os.path.abspath(site.path))
            key = _repository_of(folder) or self.directory(site.path)
            by_project.setdefault(key, []).append(site)
        out: list[tuple[dict[str, Entry], _State, list[str], str]] = []
        for key in sorted(by_project):
            roots = {root: site for site in by_project[key] for root in self._entry_roots(site)}
            if not any(self._trains(site, root) for root, site in roots.items()):
                continue
            reach = self._reach(roots, training=True)
            if not self._informative(reach):
                continue
            # What the training ones reach must show what trains (an evaluation script that
            # loads a known model says nothing about a model built from an unseen config).
            training = {root: site for root, site in roots.items() if self._trains(site, root)}
            if len(training) < len(roots) and not self._informative(
                self._reach(training, training=True)
            ):
                continue
            claimed = self._application_folders(every, roots)
            if not claimed or any(_nested(c, t) for c in claimed for t in taken):
                continue
            # The modules the scripts import that the reach never loaded: an import the
            # call graph does not resolve (a relative import above the package root) leaves
            # what they hold unknown, not unreached.
            scripts = {root.rpartition(":")[0] for root in roots}
            if self._import_closure(scripts, set(claimed))[1]:
                continue  # they import by computed names, or build what no config names
            imported, _ = self._import_closure(scripts, set(claimed), configs=False)
            self._unsure |= imported - reach.loaded
            out.append((roots, reach, claimed, "training"))
            taken = taken + claimed
        return out

    def _application_folders(self, sites: list[Entry], roots: dict[str, Entry]) -> list[str]:
        """The folders of the applications (see `_unimported`) that hold these roots' scripts:
        each application's folder, what its scripts import from beside it as part of it, and
        the top-level folder that holds scripts importing from it (`_application_folder`)."""
        scripts = {root.rpartition(":")[0] for root in roots}
        out: set[str] = set()
        for app, loaded, _, _ in self._applications(sites):
            folders = self._app_folders.get(app, {app}) | {self._application_folder(app, loaded)}
            if any(self._inside(script, folders) for script in scripts):
                out |= folders
        return sorted(out)

    def _trains(self, site: Entry, root: str) -> bool:
        """Whether an entry point trains from this root: a Trainer that fits (`fit`, `tune`),
        a LightningCLI (its default subcommand fits), a Fabric loop that steps."""
        if site.kind == "cli":
            return True
        if site.kind == "trainer":
            return bool({"fit", "tune"} & (self._trainer_methods(root) or set()))
        return not self._never_trains(root)

    def _informative(self, reach: _State) -> bool:
        """Whether the entry points' reach shows what trains: a LightningModule of the project
        built, or (a Fabric or torch_xla loop) one of its torch modules; and no module is
        imported by a name computed at run time (`importlib.import_module(cfg.module)`)
        unless configs named the classes it builds."""
        if not reach.configured and self._imports_dynamically(reach):
            return False
        for gkey in reach.live:
            kind = self.model.class_kind(gkey)
            if kind & (ClassKind.LIGHTNING_MODULE | ClassKind.TORCH_MODULE):
                return True
        return False

    def _claims(self, reach: _State, roots: dict[str, Entry]) -> list[str]:
        """The folders the entry points speak for: each entry script's own folder, and the
        folders of the packages they reach that hold it (a repository's top-level package
        beside `scripts/train_tpu.py`). A package reached in a folder of its own (another
        project checked in the same run) is not theirs to judge."""
        own = {self.directory(root.rpartition(":")[0]) for root in roots}
        dirs = set(own)
        for node in reach.roles:
            if node.startswith("class:"):
                continue
            folder = self.directory(node.rpartition(":")[0])
            if folder in dirs:
                continue
            if any(entry.startswith(folder + os.sep) for entry in own):
                dirs.add(folder)
        return sorted(dirs)

    def _other_programs(
        self, sites: list[Entry], reach: _State, roots: dict[str, Entry], claimed: list[str]
    ) -> list[str]:
        """The folders of the TPU entry points' repository that hold a training program of
        another machine: a folder imports resolve from (`eg3d/` beside `interpreter/train.py`)
        that the entry points do not claim, with a script of its own (a `__main__` block, a
        CLI command) and code that trains (a hand-written step loop, a Trainer that fits),
        every launch of which names another accelerator (`gpus=2`, a DDP strategy) and none
        of whose modules imports torch_xla or is loaded by the TPU reach. A vendored project
        with its own CUDA training loop is then "not reached from the TPU entry points":
        the TPU ones say where the TPU path is. Not a folder the repository's packaging
        distributes (a library its users import), nor one holding the entry points' own
        folders (the repository's root)."""
        scripts = {root.rpartition(":")[0] for root in roots}
        repositories = {
            _repository_of(os.path.dirname(os.path.abspath(script))) for script in scripts
        } - {None}
        if not repositories:
            return []
        by_folder: dict[str, list[str]] = {}
        for path in self.model.modules:
            by_folder.setdefault(self.directory(path), []).append(path)
        training = set(self._training_scripts())
        launches: dict[str, set[str]] = {}
        for site in sites:
            launches.setdefault(site.path, set()).add(site.verdict)
        out: list[str] = []
        for folder, paths in sorted(by_folder.items()):
            repository = _repository_of(folder)
            if (
                repository not in repositories
                or folder == repository
                or any(_nested(folder, c) for c in claimed)
                or _is_test_path(os.path.join(folder, "x.py"))
                or _distributes(folder, repository)
            ):
                continue
            mine = [p for p in paths if not _is_test_path(p)]
            if not any(p in training for p in mine):
                continue
            if not any(
                "__main__" in self.model.modules[p].scope.uses
                or self.model.modules[p].scope.commands
                for p in mine
            ):
                continue
            if any(
                p in reach.loaded
                or self.model.modules[p].xla_import
                or launches.get(p, {"other"}) != {"other"}
                for p in paths
            ):
                continue
            out.append(folder)
        return out

    def _claimed(self, path: str, claimed: list[str]) -> bool:
        """Whether a module's folder is one the entry points speak for, or inside one."""
        folder = self.directory(path)
        return any(folder == c or folder.startswith(c + os.sep) for c in claimed)

    def _group_of(self, path: str) -> tuple[list[str], list[str], str, _State] | None:
        """The group of roots that speaks for a module: a TPU group for the modules whose
        import folder it claims (`_claims`), a training group for the modules inside its
        applications' folders (`_application_folders`)."""
        for group in self._groups:
            folders, _, what, _ = group
            if what == "TPU":
                if self._claimed(path, folders):
                    return group
            elif self._inside(path, set(folders)) and path not in self._unsure:
                return group
        return None

    def _is_claimed(self, path: str) -> bool:
        return self.reach is not None and self._group_of(path) is not None

    def _tpu_claimed(self, path: str) -> bool:
        group = self._group_of(path) if self.reach is not None else None
        return group is not None and group[2] == "TPU"

    def _role(self, path: str, node: str) -> tuple[int, str | None]:
        """The role of a node (TRAIN, EPOCH, INFER; 0: not reached) and why, in the state
        that speaks for its module. Reached code of a training group keeps the library's
        inference and epoch-end roles too (`_library_reach`): the call graph builds a metric
        in `__init__` though only an epoch-end hook calls it, and its roots are the scripts
        of another machine, not a TPU's, so they only ever take code out."""
        group = self._group_of(path) if self.reach is not None else None
        state = group[3] if group is not None else self.library
        if state is None:
            return 0, None
        role, why = state.roles.get(node, 0), state.why.get(node)
        if group is not None and group[2] == "training" and role and self.library is not None:
            other = self.library.roles.get(node, 0)
            if other and other < role:
                role, why = other, self.library.why.get(node)
        return role, why

    def _reach(self, roots: dict[str, Entry], training: bool = False) -> _State:
        """What the roots reach. `training`: they are the training entry points of a project
        with no TPU entry point, whose configs for another accelerator are its training
        configs (with TPU entry points, those configs are another machine's)."""
        state = _State()
        for root, site in roots.items():
            evaluates = self._evaluates_only(site, root)
            name = os.path.basename(root.rpartition(":")[0])
            if evaluates is not None:
                why = f"`trainer.{evaluates}` in {os.path.basename(site.path)}, which never fits"
                self._visit(state, root, INFER, why)
            elif site.kind == "xla-device" and self._never_trains(root):
                why = f"{name}, which takes an XLA device and never trains"
                self._visit(state, root, INFER, why)
            else:
                self._visit(state, root, TRAIN, "")
        for site in {site for site in roots.values() if site.kind == "cli"}:
            # A LightningCLI builds the classes it is given, or any subclass a config or the
            # command line names (`--model.class_path`, subclass mode).
            module = self.model.modules[site.path]
            for key, qualified, *_ in module.scope.class_refs:
                found = self.model.lookup(qualified, module) if key == site.key else None
                if _is_class(found):
                    for gkey in (found.gkey, *self.model.subclasses(found.gkey)):
                        self._instantiate(state, gkey, TRAIN, "")
        self._drain(state)
        if training:
            self._looked_up(state)
        cli = any(site.kind == "cli" for site in roots.values())
        if self.model.configs and (cli or self._builds_from_configs(state)):
            # The classes the configs of the entry points' repositories name are built at run
            # time (those of configs for another accelerator are not, beside TPU entry points).
            scripts = [root.rpartition(":")[0] for root in roots]
            for config in self.model.configs:
                if (config.trainer == "other" and not training) or not any(
                    self._same_project(config.path, script) for script in scripts
                ):
                    continue
                for _, name in config.classes:
                    found = self.model.lookup(name, None)
                    if _is_class(found):
                        self._instantiate(state, found.gkey, TRAIN, "")
                        state.configured = True
                    elif _is_function(found):
                        self._visit(state, found.gkey, TRAIN, "")
            self._drain(state)
        return state

    def _looked_up(self, state: _State) -> None:
        """Build the classes of the modules whose names reached code looks up at run time
        (`getattr(parts, key)()`, `globals()[name]`, `eval(text)`: the call graph does not see
        which they build; `_unbuilt` tells those named nowhere), until no more are loaded."""
        done: set[str] = set()
        while True:
            todo = sorted(path for path in state.loaded if path not in done)
            if not todo:
                return
            for path in todo:
                done.add(path)
                module = self.model.modules.get(path)
                if module is None or not module.scope.lookups:
                    continue
                targets: set[str] = set()
                for lookup in module.scope.lookups:
                    if lookup in ("", "*"):
                        targets.add(path)
                    if lookup == "*":
                        for name in module.imports.values():
                            found = self.model.lookup(name, module)
                            if _is_class(found):
                                self._instantiate(state, found.gkey, TRAIN, "")
                            elif isinstance(found, ModuleSummary):
                                targets.add(found.path)
                    elif lookup not in ("", "^"):
                        found = self.model.lookup(lookup.lstrip("~"), module)
                        if isinstance(found, ModuleSummary):
                            targets.add(found.path)
                for gkey in self._classes_in(targets):
                    self._instantiate(state, gkey, TRAIN, "")
            self._drain(state)

    def _classes_in(self, paths: set[str]) -> list[str]:
        """The project classes defined in `paths`, in the model's order of classes."""
        index = self.__dict__.get("_classes_by_path")
        if index is None:
            index = {}
            for position, (gkey, cls) in enumerate(self.model.classes.items()):
                index.setdefault(cls.module.path, []).append((position, gkey))
            self.__dict__["_classes_by_path"] = index
        found = [entry for path in paths for entry in index.get(path, ())]
        return [gkey for _, gkey in sorted(found)]

    def _evaluates_only(self, site: Entry, root: str) -> str | None:
        """The Trainer method (`test`, `validate`, `predict`) an entry point runs when it only
        evaluates: what the root calls (through the project's functions) tests or predicts and
        never fits (an evaluation script with `max_epochs=0` and `trainer.test(model)`).
        None when it fits or says nothing."""
        cache = self.__dict__.setdefault("_evaluating", {})
        if root in cache:
            return cache[root]
        found: str | None = None
        if site.kind == "trainer":
            # A script's top level and its `__main__` block run together: a notebook-style
            # script (top-level code, no `__main__` block) that predicts evaluates from both.
            path, _, key = root.rpartition(":")
            nodes = [root]
            if key in ("", "__main__"):
                nodes = [module_node(path), module_node(path, main=True)]
            methods: set[str] | None = set()
            for node in nodes:
                more = self._trainer_methods(node)
                methods = None if more is None or methods is None else methods | more
            if methods is not None and not methods & {"fit", "tune"}:
                found = next((m for m in ("test", "validate", "predict") if m in methods), None)
        cache[root] = found
        return found

    def _trainer_methods(self, root: str) -> set[str] | None:
        """The Trainer methods (`fit`, `test`, ...) what a runnable root calls (through the
        project's functions) calls; None when the walk is too long to say."""
        cache = self.__dict__.setdefault("_trainer_methods_of", {})
        if root in cache:
            return cache[root]
        methods: set[str] = set()
        seen = {root}
        queue = deque([root])
        while queue and len(seen) < _MAX_CLIMB:
            node = queue.popleft()
            path, _, key = node.rpartition(":")
            module = self.model.modules.get(path)
            if module is not None:
                methods.update(module.scope.trainer_calls.get(key, ()))
            for callee in self._callees(node, by_name=False):
                if callee not in seen:
                    seen.add(callee)
                    queue.append(callee)
        cache[root] = methods if len(seen) < _MAX_CLIMB else None
        return cache[root]

    def _never_trains(self, root: str) -> bool:
        """Whether nothing a runnable root calls (through the project's functions) trains: no
        hand-written training loop, no `backward` or optimizer step, no `fit` (a demo or
        self-test that takes an XLA device to run a model forward, an inference script)."""
        cache = self.__dict__.setdefault("_never_training", {})
        if root in cache:
            return cache[root]
        seen = {root}
        queue = deque([root])
        trains = False
        while queue and len(seen) < _MAX_CLIMB and not trains:
            node = queue.popleft()
            path, _, key = node.rpartition(":")
            module = self.model.modules.get(path)
            if module is not None:
                facts = module.scope
                trains = (
                    key in facts.step_loops
                    or bool({"fit", "tune"} & set(facts.trainer_calls.get(key, ())))
                    or any(
                        use[1].rsplit(".", 1)[-1] in _TRAINING_CALLS
                        for use in facts.uses.get(key, ())
                    )
                )
            # Followed by name too: in doubt, the root trains.
            for callee in self._callees(node):
                if callee not in seen:
                    seen.add(callee)
                    queue.append(callee)
        cache[root] = not trains and len(seen) < _MAX_CLIMB
        return cache[root]

    def _same_project(self, config: str, script: str) -> bool:
        """Whether a config belongs to a script's project: the same repository (the nearest
        folder with `.git`, `pyproject.toml`, `setup.py` or `setup.cfg`), or, without one,
        a folder inside or around the script's."""
        a = _repository_of(_folder_of(config))
        b = _repository_of(_folder_of(script))
        if a is not None and b is not None:
            return a == b
        return _nested(_folder_of(config), self.directory(script))

    def _imports_dynamically(self, state: _State) -> bool:
        for node in state.roles:
            if node.startswith("class:"):
                continue
            for use in self._uses(node):
                if use[1].rsplit(".", 1)[-1] in _DYNAMIC_IMPORTS:
                    return True
        return False

    def _builds_from_configs(self, state: _State) -> bool:
        """Whether reached code builds objects named in configs: Hydra's `instantiate`,
        `instantiate_from_config`, `importlib.import_module`, ..."""
        for node in state.roles:
            if node.startswith("class:"):
                continue
            for use in self._uses(node):
                if use[1].rsplit(".", 1)[-1] in _DYNAMIC_BUILDERS or use[1].endswith("CLI"):
                    return True
        return False

    def _visit(self, state: _State, node: str, role: int, why: str) -> None:
        if state.roles.get(node, 0) >= role:
            # Visited already with this role or a higher one (its module loaded then); a
            # generation loop's role only goes down.
            return
        path, _, key = node.rpartition(":")
        if path not in state.loaded:
            # A script run as an evaluation root runs its top level for inference too.
            top = key in ("", "__main__")
            self._load(state, path, role if top else TRAIN, why if top else "")
        fn = self._function(node) if key not in ("", "__main__") else None
        if (
            fn is not None
            and role == TRAIN
            and fn.summary.key in fn.module.scope.generation
            and fn.gkey not in self._training_steps_reach()
        ):
            role, why = INFER, f"`{fn.summary.name}` (a generation loop)"
        if state.roles.get(node, 0) >= role:
            return
        state.roles[node] = role
        if why:
            state.why[node] = why
        state.queue.append((node, role, why))

    def _load(
        self, state: _State, path: str, role: int = TRAIN, why: str = "", by: int = 0
    ) -> None:
        """A module's top level runs: its imports load, its registered code becomes live.
        `role`: the top level's, lower for a script an evaluation root runs (`_reach`); an
        import by training code (`by`: the importer's role) raises it."""
        if path in state.loaded:
            if by == TRAIN and state.roles.get(module_node(path), TRAIN) < TRAIN:
                self._visit(state, module_node(path), TRAIN, "")
            return
        state.loaded.add(path)
        module = self.model.modules.get(path)
        if module is None:
            return
        self._visit(state, module_node(path), role, why)
        for kind, name in module.scope.registered:
            if kind == "function":
                # A CLI command that tests, validates or predicts and never fits (`predict`
                # beside `train` in a click group) runs its code as inference.
                node = f"{path}:{name}"
                methods = self._trainer_methods(node) if name in module.scope.commands else None
                evaluates = next(
                    (m for m in ("test", "validate", "predict") if m in (methods or ())), None
                )
                if methods is not None and evaluates and not methods & {"fit", "tune"}:
                    why = f"`trainer.{evaluates}` in {os.path.basename(path)}, which never fits"
                    self._visit(state, node, INFER, why)
                else:
                    self._visit(state, node, TRAIN, "")
            else:
                self._instantiate(state, f"{self.model.prefix(module)}.{name}", TRAIN, "")

    def _drain(self, state: _State) -> None:

        steps = 0
        while state.queue:
            node, role, why = state.queue.popleft()
            if state.roles.get(node, 0) > role:
                continue
            steps += 1
            if node.endswith(":"):
                module = self.model.modules.get(node[:-1])
                if module is not None:
                    for target in module.imports.values():
                        found = self.model.lookup(target, module)
                        if found is None:
                            continue
                        mod = (
                            found if not (_is_class(found) or _is_function(found)) else found.module
                        )
                        self._load(state, mod.path, by=role)
            for use in self._uses(node):
                targets, name = self._targets(node, use)
                for target in targets:
                    if _is_function(target):
                        self._visit(state, target.gkey, role, why)
                    elif _is_class(target):
                        self._instantiate(state, target.gkey, role, why)
                    else:
                        self._load(state, target.path, by=role)
                if name is not None:
                    state.rta.add(name)
                    bare = self._bare_call(node, name)
                    if not bare:
                        state.rta_args.add(name)
                    classes = state.by_method.get(name)
                    if not classes:
                        continue
                    # `_may_call`, with `_bare_call` asked once for the use.
                    for gkey in list(classes):  # what the visits make live is not looked at
                        found = self._live_method(gkey, name)
                        if (
                            found is not None
                            and found.summary.cls is not None
                            and not (bare and found.module.scope.needs.get(found.summary.key))
                        ):
                            self._visit(state, found.gkey, role, why)
            fn = self._function(node)
            if fn is not None:
                # A nested function runs with its enclosing one (or is handed on from it).
                for inner in self._nested(fn):
                    self._visit(state, inner.gkey, role, why)

    def _nested(self, fn: _Function) -> list[_Function]:
        nested = self.__dict__.get("_nested_index")
        if nested is None:
            nested = {}
            for other in self.model.functions.values():
                if other.summary.parent is not None:
                    nested.setdefault(f"{other.module.path}:{other.summary.parent}", []).append(
                        other
                    )
            self.__dict__["_nested_index"] = nested
        return nested.get(fn.gkey, [])

    def _live_method(self, gkey: str, name: str) -> _Function | None:
        """`find_method` for a live class, kept: its hierarchy was resolved when it became
        live (`_index_methods`), so the answer no longer changes."""
        memo = self._live_methods
        key = (gkey, name)
        found = memo.get(key, _UNSET)
        if found is _UNSET:
            found = memo[key] = self.model.find_method(gkey, name)
        return found  # type: ignore[return-value]

    def _index_methods(self, state: _State, gkey: str) -> None:
        """Record a class that became live under every method name its hierarchy defines
        (`find_method` finds nothing for the other names)."""
        names: set[str] = set()
        for name in self.model.mro(gkey):
            cls = self.model.classes.get(name)
            if cls is not None:
                names.update(cls.summary.methods)
        for method in sorted(names):
            state.by_method.setdefault(method, []).append(gkey)

    def _instantiate(self, state: _State, gkey: str, role: int, why: str) -> None:

        marker = f"class:{gkey}"
        if state.roles.get(marker, 0) >= role:
            return
        state.roles[marker] = role
        if gkey not in state.live:
            state.live.add(gkey)
            self._index_methods(state, gkey)
        kind = self.model.class_kind(gkey)
        lightning = kind & (
            ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE | ClassKind.CALLBACK
        )
        external = [b for b in self.model.external_bases(gkey) if b not in _PLAIN_BASES]
        # A method a class nearer in the MRO defines again runs on this instance only
        # through that override's `super().m(...)` (or `Base.m(self, ...)`): Lightning calls
        # the override's `training_step`, not a base's every built subclass replaces.
        shadowed: set[str] = set()
        for name in self.model.mro(gkey):
            cls = self.model.classes.get(name)
            if cls is None:
                continue
            if cls.module.path not in state.loaded:
                self._load(state, cls.module.path)
            functions = self.model._module_functions[id(cls.module)]
            overrides: list[str] = []
            for method, key in cls.summary.methods.items():
                fn = functions.get(key)
                if fn is None:
                    continue
                if not self._passes_up(fn, method):
                    overrides.append(method)
                if method in shadowed:
                    continue
                runs = self._framework_calls(method, fn, kind, bool(lightning), bool(external))
                if runs and method == "forward" and self._steps_without_forward(gkey, kind):
                    # Lightning's fit loop runs `training_step`, never `forward`: a step that
                    # calls `self(x)` reaches it; otherwise only Lightning's default
                    # `predict_step` (`return self(batch)`) runs it, for inference.
                    if self.model.find_method(gkey, "predict_step") is None:
                        self._visit(state, fn.gkey, INFER, "`predict_step` (Lightning's own)")
                    runs = False
                if not runs and (
                    method not in state.rta
                    or (method not in state.rta_args and fn.module.scope.needs.get(key))
                ):
                    continue
                if lightning and (
                    method in PREDICT_HOOKS
                    or (method in TEST_HOOKS and not self._tests_in_fit_run(fn.module.path))
                ):
                    self._visit(state, fn.gkey, INFER, f"`{method}`")
                elif lightning and is_end_hook(method) and role > EPOCH:
                    self._visit(state, fn.gkey, EPOCH, f"`{method}`")
                else:
                    self._visit(state, fn.gkey, role, why)
            shadowed.update(overrides)

    def _passes_up(self, fn: _Function, method: str) -> bool:
        """Whether a method may run the definition of `method` a class later in the MRO
        holds: `super().m(...)` or `Base.m(self, ...)` (a name ending in `.m`)."""
        return any(
            (form == "super" and target == method)
            or (form in ("name", "ref") and target.rsplit(".", 1)[-1] == method)
            for form, target in fn.module.scope.uses.get(fn.summary.key, ())
        )

    def _steps_without_forward(self, gkey: str, kind: Any) -> bool:
        """Whether a LightningModule's hierarchy defines its own `training_step`: Lightning
        then calls `forward` only through that step's (or another hook's) `self(...)`."""
        return bool(kind & ClassKind.LIGHTNING_MODULE) and (
            self.model.find_method(gkey, "training_step") is not None
        )

    def _framework_calls(
        self, method: str, fn: _Function, kind: Any, lightning: bool, external: bool
    ) -> bool:
        """Whether building the class makes `method` run without the project calling it."""

        if method.startswith("__") and method.endswith("__"):
            return True
        decorators = fn.summary.decorators
        if any(
            d.rsplit(".", 1)[-1] in ("property", "cached_property", "setter") for d in decorators
        ):
            return True
        if lightning:
            if method in LIGHTNING_HOOKS or (self.lightning1 and method in LIGHTNING1_HOOKS):
                return True
            if method.startswith("on_") or method in LIGHTNING1_HOOKS:
                return False  # a hook this Lightning never calls
            return method in MODULE_API
        if kind & (ClassKind.TORCH_MODULE | ClassKind.METRIC):
            return method in MODULE_API
        return external

    # --- data pipelines ---------------------------------------------------------------------

    def data_classes(self) -> set[str]:
        """The torch module classes that are data code: every sign of where their instances
        go is the data pipeline (built in a `transforms=`/`collate_fn=` argument or into a
        name or list called so, or a plain class's `self.transforms`, in a Dataset's or
        DataModule's method or a collate function,
        or named under a data key of a config: `data.transforms`), none is a model (built in
        a model's method, named under `model:` in a config; tests say nothing), in a project
        that transforms no batch on the device (`on_after_batch_transfer`). Their `forward`
        runs in the data loader's workers on host tensors, per sample: not every step on the
        TPU."""
        cached = self.__dict__.get("_data_classes")
        if cached is not None:
            return cached
        candidates: set[str] = set()
        for module in self.model.modules.values():
            for name in module.scope.data_uses:
                found = self.model.lookup(name, module)
                if _is_class(found):
                    candidates.add(found.gkey)
        model_named: set[str] = set()
        for config in self.model.configs:
            for path, name in config.classes:
                found = self.model.lookup(name, None)
                if not _is_class(found):
                    continue
                if _data_key_path(path):
                    candidates.add(found.gkey)
                elif path.split(".", 1)[0] in ("model", "module", "net", "network"):
                    model_named.add(found.gkey)
        for fn in self.model.functions.values():
            # a collate function's classes (`SimpleCopyPaste()(*zip(*batch))`) run in the loader
            if fn.summary.cls is None and "collate" in fn.summary.name.lower():
                for use in self._uses(fn.gkey):
                    if use[0] in ("name", "ref"):
                        found = self.model.lookup(use[1], fn.module)
                        if _is_class(found):
                            candidates.add(found.gkey)
        for gkey, cls in self.model.classes.items():
            if not self._data_class(gkey):
                continue
            candidates |= self._classes_named_by_methods(cls)
        for node in self._data_functions():
            # `get_transform(name)`, a function only the data pipeline calls: what it builds
            fn = self._function(node)
            for use in self._uses(node):
                if fn is not None and use[0] in ("name", "ref"):
                    found = self.model.lookup(use[1], fn.module)
                    if _is_class(found):
                        candidates.add(found.gkey)
        out: set[str] = set()
        models = set(model_named)
        on_device = self._device_batch_transforms()
        tried: set[str] = set()
        while candidates:
            tried |= candidates
            # the data modules of the rounds before (not of this one: no order dependence)
            self.__dict__["_data_modules_so_far"] = frozenset(out)
            for gkey in sorted(candidates):
                if not self.model.class_kind(gkey) & ClassKind.TORCH_MODULE:
                    continue
                if gkey in model_named or self._model_evidence(gkey):
                    models.add(gkey)
                    continue
                path = self.model.classes[gkey].module.path
                if any(self._same_project(path, hook) for hook in on_device):
                    continue  # its transforms may run on the device, in `on_after_batch_transfer`
                out.add(gkey)
            # The modules a data transform builds in its own methods (a vocoder its audio
            # processor holds) are parts of the transform, unless code of a model builds them.
            candidates = {
                found
                for gkey in out
                for found in self._classes_named_by_methods(self.model.classes[gkey])
                if found not in tried
            }
        self.__dict__.pop("_data_modules_so_far", None)
        out |= self._data_families(out, models)
        self.__dict__["_data_classes"] = out
        return out

    def _device_batch_transforms(self) -> list[str]:
        """The modules whose classes transform batches on the device: a DataModule's or a
        LightningModule's `on_after_batch_transfer` (Lightning's own source aside). A project
        with one may apply its `transforms` there, every step on the TPU."""
        out = []
        for path, module in self.model.modules.items():
            if (module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                continue
            if any(fn.name == "on_after_batch_transfer" for fn in module.functions):
                out.append(path)
        return out

    def _data_families(self, data: set[str], models: set[str]) -> set[str]:
        """Classes nothing builds in the project (a library's users build them), whose
        nearest project base has subclasses built somewhere and all of those for the data
        pipeline: `TorchNeighborList(NeighborListTransform)` beside a
        `MatScipyNeighborList(NeighborListTransform)` that configs name under
        `data.transforms`."""
        if not data:
            return set()
        evidenced = data | models
        out = set()
        for gkey in self.model.classes:
            if gkey in evidenced or not self.model.class_kind(gkey) & ClassKind.TORCH_MODULE:
                continue
            if self._built_somewhere(gkey):
                continue
            for base in self.model.mro(gkey):
                family = [c for c in self.model.subclasses(base) if c in evidenced]
                if not family:
                    continue
                if all(c in data for c in family):
                    out.add(gkey)
                break
        return out

    def _built_somewhere(self, gkey: str) -> bool:
        """Whether code other than the class's own (`super(Cls, self)`) names it."""
        cls = self.model.classes[gkey]
        for node, use in self._index_of_uses().get(cls.summary.name, ()):
            if use[0] not in ("name", "ref") or node.endswith((":", ":__main__")):
                continue  # a base class list or a registry at the top level builds nothing
            fn = self._function(node)
            if fn is not None and fn.owner == gkey:
                continue
            module = self.model.modules.get(node.rpartition(":")[0])
            found = self.model.lookup(use[1], module) if module is not None else None
            if _is_class(found) and found.gkey == gkey:
                return True
        return False

    def _data_class(self, gkey: str) -> bool:
        """A Dataset, a DataModule, a sampler or a collator: code of the data loader. Kept
        per class: asked for the owner of every method the data pipeline's questions meet."""
        kept = self._data_class_memo.get(gkey)
        if kept is None:
            kept = self._data_class_memo[gkey] = bool(
                self.model.class_kind(gkey) & ClassKind.LIGHTNING_DATAMODULE
            ) or any(
                base.rsplit(".", 1)[-1].endswith(("Dataset", "DataPipe", "Sampler", "Collator"))
                for base in self.model.external_bases(gkey)
            )
        return kept

    def _classes_named_by_methods(self, cls: _Class) -> set[str]:
        """The classes a class's methods build or name."""
        out = set()
        functions = self.model._module_functions[id(cls.module)]
        for key in cls.summary.methods.values():
            fn = functions.get(key)
            if fn is None:
                continue
            for use in self._uses(fn.gkey):
                if use[0] in ("name", "ref"):
                    found = self.model.lookup(use[1], cls.module)
                    if _is_class(found):
                        out.add(found.gkey)
        return out

    def _data_node(self, node: str) -> bool:
        """Whether a function is code of the data pipeline: a method of a Dataset, a
        DataModule, a sampler or a collator (or of a data transform being decided), a collate
        function, a function only such code calls (`_data_functions`), or a function nested
        in one."""
        fn = self._function(node)
        so_far = self.__dict__.get("_data_modules_so_far") or set()
        while fn is not None:
            if fn.owner is not None:
                return self._data_class(fn.owner) or fn.owner in so_far
            if "collate" in fn.summary.name.lower():
                return True
            if fn.gkey in self._data_functions():
                return True
            parent = fn.summary.parent
            fn = self.model.functions.get(f"{fn.module.path}:{parent}") if parent else None
        return False

    def _data_functions(self) -> set[str]:
        """The module-level functions only the data pipeline runs: every call of which (tests
        aside) sits in a Dataset's, DataModule's, sampler's or collator's method, a collate
        function or another such function, or in code that never trains (an inference
        script's `main`, `_off_training_roots`), with at least one call of the first kind
        (`get_transform(name)` that a DataModule's `__init__` calls). Followed from the data
        classes' methods down the calls they make."""
        found = self.__dict__.get("_data_function_set")
        if found is not None:
            return found
        found = set()
        self.__dict__["_data_function_set"] = found  # (read by `_data_node` while it grows)
        queue: deque[str] = deque()
        for fn in self.model.functions.values():
            if (fn.owner is not None and self._data_class(fn.owner)) or (
                fn.summary.cls is None and "collate" in fn.summary.name.lower()
            ):
                queue.append(fn.gkey)
        seen = set(queue)
        off_training: tuple[Any, ...] | None = None
        while queue and len(seen) < 4 * _MAX_CLIMB:
            for callee in self._callees(queue.popleft(), by_name=False):
                fn = self._function(callee)
                if (
                    callee in seen
                    or fn is None
                    or fn.summary.cls is not None
                    or fn.summary.parent is not None
                    or _is_test_path(fn.module.path)
                ):
                    continue
                callers = [
                    c for c in self.callers(callee) if not _is_test_path(c.rpartition(":")[0])
                ]
                rest = [c for c in callers if not self._data_node(c)]
                if rest:
                    # (calls from code that never trains, in a repository with a script that
                    # fits: `_called_only_off_training`)
                    if not any(same_repository(p, fn.module.path) for p in self._fitting_scripts()):
                        continue
                    if off_training is None:
                        off_training = (self._inference_only_classes(), *self._names_by_text())
                    if any(self._off_training_roots(c, *off_training) is None for c in rest):
                        continue
                if len(rest) == len(callers):
                    continue
                seen.add(callee)
                found.add(callee)
                queue.append(callee)
        return found

    def _model_evidence(self, gkey: str) -> bool:
        """Whether some code other than the data pipeline (and tests) builds or names the class
        (a model's `__init__`, a step): then its instances may be layers of a model."""
        cls = self.model.classes[gkey]
        for node, use in self._index_of_uses().get(cls.summary.name, ()):
            if use[0] not in ("name", "ref") or node.endswith((":", ":__main__")):
                continue  # top-level code (registries, scripts) says nothing either way
            path = node.rpartition(":")[0]
            if _is_test_path(path):
                continue  # a test builds what it tests by hand: no sign of where it runs
            module = self.model.modules.get(path)
            if module is None or use[1] in module.scope.data_uses or self._data_node(node):
                continue
            found = self.model.lookup(use[1], module)
            if _is_class(found) and found.gkey == gkey:
                return True
        return False

    # --- test code ------------------------------------------------------------------------------

    def _imported_outside_tests(self) -> set[str]:
        """The module paths that code outside the tests imports (at the top, inside a function,
        or by a qualified name): a test helper module that training imports (`testing.py`,
        `pkg/testing/fakes.py`) runs in training too."""
        found = self.__dict__.get("_imported_outside")
        if found is None:
            found = set()
            for path, module in self.model.modules.items():
                if _in_tests(path):
                    continue
                targets = [*module.imports.values(), *module.scope.star_imports]
                for uses in module.scope.uses.values():
                    targets += [t for form, t in uses if form in ("name", "ref") and "." in t]
                for target in targets:
                    hit = self.model.lookup(target, module)
                    if _is_class(hit) or _is_function(hit):
                        found.add(hit.module.path)
                    elif isinstance(hit, ModuleSummary):
                        found.add(hit.path)
                    parts = target.lstrip(".").split(".")
                    for i in range(len(parts), 0, -1):
                        named = self.model.module_named(".".join(parts[:i]), module)
                        if named is not None:
                            found.add(named.path)
                            break
            self.__dict__["_imported_outside"] = found
        return found

    def _test_code(self, path: str) -> str | None:
        """Why a module is test code (None: it is not): a module pytest collects or one of a
        test folder, unless code outside the tests imports it (a test helper training uses)."""
        if not _in_tests(path) or path in self._imported_outside_tests():
            return None
        return f"test code ({_test_shown(path)})"

    def _test_only(self) -> dict[str, str]:
        """Classes and module-level functions of the project (outside the tests) that only
        test code builds, calls or names, with the reason (see `_test_only_in`)."""
        found = self.__dict__.get("_test_only_of")
        if found is None:
            found = self.__dict__["_test_only_of"] = self._test_only_in()
        return found

    def _test_only_in(self) -> dict[str, str]:
        """Classes and module-level functions every use of which is in test code: tests build
        or call them (at least one use), and no code outside the tests names them (a call, a
        reference, a qualified name; a use the model cannot resolve counts as one of them),
        no config, string of the code or text file of the repository spells the name, no
        package's `__init__.py` re-exports them, no decorator registers them, no subclass
        that is not test-only inherits them, and their module's names are not looked up at
        run time. Only in a repository that has a training script of its own (any
        accelerator): a library without one is built by its users, whose code is not seen."""
        trains = self._training_scripts()
        if not trains:
            return {}
        index = self._index_of_uses()
        # The names test code uses at all (most projects' tests are not checked: nothing to do).
        tested_names = {
            name
            for name, entries in index.items()
            if any(_in_tests(node.rpartition(":")[0]) for node, _ in entries)
        }
        for where, module in self.model.modules.items():
            if _in_tests(where):
                for ref in module.scope.class_refs:
                    tested_names.update(ref[1].lstrip(".").split("."))
        if not tested_names:
            return {}
        exported = self._exported()
        configured = self._configured_classes()
        words: dict[str, set[str]] = {}  # repository anchor -> names spelled outside the code

        def spelled(path: str) -> set[str]:
            repository = _repository_of(os.path.dirname(os.path.abspath(path)))
            key = repository or os.path.dirname(os.path.abspath(path))
            if key not in words:
                names: set[str] = set()
                for config in self.model.configs:
                    if same_repository(config.path, path):
                        names.update(config.words)
                for other, module in self.model.modules.items():
                    if not _in_tests(other) and same_repository(other, path):
                        names.update(
                            t.replace(":", ".").rsplit(".", 1)[-1] for t in module.scope.strings
                        )
                        if "^" in module.scope.lookups:
                            names.add("*")
                texts = self.__dict__.setdefault("_text_words_of", {})
                if key not in texts:
                    texts[key] = _text_words(key)
                names.update(texts[key])
                words[key] = names
            return words[key]

        def uses_of(name: str, target: Any) -> tuple[bool, bool]:
            """(a test uses it, code outside the tests may)"""
            tested = outside = False
            for node, use in index.get(name, ()):
                where = node.rpartition(":")[0]
                module = self.model.modules.get(where)
                if module is None:
                    continue
                hit = self.model.lookup(use[1], module) if use[0] in ("name", "ref") else None
                if _is_function(hit) and hit is not target and hit.owner is not None:
                    hit = self.model.classes.get(hit.owner)  # `Cls.create(...)`
                if hit is not None and hit is not target:
                    continue  # another object of the same name
                if (
                    hit is None
                    and use[0] not in ("name", "ref", "attr")
                    and (_is_function(target) or use[0] != "meth")
                ):
                    continue  # `self.x()`, `v.x()`: a method of that name, not this
                if _in_tests(where):
                    tested = tested or hit is target
                else:
                    outside = True
            return tested, outside

        def refs_outside(gkey: str, name: str) -> bool:
            for where, module in self.model.modules.items():
                if _in_tests(where):
                    continue
                for _, qualified, _, _, _ in module.scope.class_refs:
                    if name in qualified.split(".") and gkey in self._ref_targets(
                        qualified, module, {name: [gkey]}
                    ):
                        return True
            return False

        exported_functions: set[str] = set()
        for module in self.model.modules.values():
            if module.is_package:
                for target in module.imports.values():
                    hit = self.model.lookup(target, module)
                    if _is_function(hit):
                        exported_functions.add(hit.gkey)
        out: dict[str, str] = {}
        candidates: dict[str, Any] = {}
        for gkey, cls in self.model.classes.items():
            path = cls.module.path
            name = cls.summary.name
            if _in_tests(path) or cls.summary.qualname != name or name not in tested_names:
                continue
            if not any(same_repository(path, t) for t in trains):
                continue
            if (cls.module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                continue
            if gkey in exported or gkey in configured or cls.module.scope.lookups:
                continue
            if any(
                "__init_subclass__" in self.model.classes[base].summary.methods
                for base in self.model.mro(gkey)[1:]
                if base in self.model.classes
            ):
                continue
            words_here = spelled(path)
            if "*" in words_here or name in words_here:
                continue
            tested, outside = uses_of(name, cls)
            if not tested or outside or refs_outside(gkey, name):
                continue
            candidates[gkey] = name
        # A subclass that is not test-only may inherit and run the methods.
        for gkey, name in candidates.items():
            if all(sub in candidates for sub in self.model.subclasses(gkey)):
                out[gkey] = f"in `{name}`, which only tests build"
        for gkey, fn in self.model.functions.items():
            summary = fn.summary
            path = fn.module.path
            if summary.cls is not None or summary.parent is not None or _in_tests(path):
                continue
            if summary.name not in tested_names:
                continue
            if not any(same_repository(path, t) for t in trains):
                continue
            facts = fn.module.scope
            if facts.lookups or summary.key in facts.commands or _framework_called(summary.name):
                continue
            if ["function", summary.key] in facts.registered or fn.module.is_package:
                continue
            if gkey in exported_functions:
                continue  # a package's API
            words_here = spelled(path)
            if "*" in words_here or summary.name in words_here:
                continue
            tested, outside = uses_of(summary.name, fn)
            if tested and not outside:
                out[gkey] = f"`{summary.name}`, which only tests call"
        return out

    # --- modules no script imports ------------------------------------------------------------

    def _unimported(self, sites: list[Entry]) -> dict[str, str]:
        """The modules of an application that no script of it imports, with the reason.

        An application is the folder of a script that starts training on any accelerator
        (a Trainer it builds and runs: `fit`, `test`, ...; Fabric, a LightningCLI, a
        torch_xla launcher) and sits in
        no package (`train.py`, `tools/train.py`; a library's module with a `__main__`
        demo makes no application) or in one its repository's README or shell scripts run
        as a file (`python pkg/train.py`), and what that folder holds: a package outside it
        that its repository installs (`mypkg/` beside `examples/train.py`, with a
        `setup.py`) may be a library its users import from anywhere, and keeps today's
        scope; a folder beside it that its code imports from as a namespace package (no
        `__init__.py`: `data/` beside `experiments/`), or a package there that its
        repository does not distribute, is part of it (`_namespace_siblings`). Its scripts
        are the training entry points and every module with a `__main__` block, a CLI
        command or a top level that runs code (`print(...)`, a loop: a file a shell script
        runs); the modules they import, directly or through others (at the top or inside functions,
        with the packages that hold them, and the classes its configs name), can run.
        A module of the application none of them imports cannot run on any machine (a
        vendored extension's copy nobody imports, a loss file dropped from the package),
        so no TPU runs it either. Tests, `__init__` files and the scripts themselves stay.
        An application whose imported code imports modules by computed names
        (`importlib.import_module(cfg.name)`), or builds objects from configs that name no
        class of it, says nothing."""
        out: dict[str, str] = {}
        for app, loaded, shown, dynamic in self._applications(sites):
            if dynamic:
                continue
            why = f"imported by no script of its project (its training entry points: {shown})"
            for path, module in self.model.modules.items():
                if path in loaded or module.is_package or _is_test_path(path):
                    continue
                if os.path.basename(path) == "__init__.py" or not self._inside(
                    path, self._app_folders.get(app, {app})
                ):
                    continue
                if (module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                    continue
                out[path] = why
        return out

    def _applications(self, sites: list[Entry]) -> list[tuple[str, set[str], str, bool]]:
        """The applications of the training entry points (see `_unimported`), each with the
        modules its scripts import, its entry scripts' names (shown in reasons), and whether
        it imports by computed names or builds from configs that name none of its classes
        (then what it imports is not known)."""
        cached = self.__dict__.get("_applications_of")
        if cached is not None:
            return cached
        entry_roots: set[str] = set()
        folders: set[str] = set()
        for site in sites:
            for root in self._entry_roots(site):
                path = root.rpartition(":")[0]
                entry_roots.add(path)
                module = self.model.modules.get(path)
                if module is None or (self._in_package(module) and not _run_as_file(path)):
                    continue
                if site.kind != "trainer" or self._trainer_methods(root):
                    folders.add(os.path.dirname(os.path.abspath(path)))
        out: list[tuple[str, set[str], str, bool]] = []
        if folders:
            scripts = {
                path
                for path, module in self.model.modules.items()
                if not _is_test_path(path)
                and (
                    "__main__" in module.scope.uses
                    or module.scope.commands
                    or module.scope.runs_code
                )
            }
            # An application's folder inside another's is part of it.
            for app in sorted(
                f for f in folders if not any(f.startswith(o + os.sep) for o in folders)
            ):
                apps = {app}
                while True:
                    roots = {path for path in entry_roots | scripts if self._inside(path, apps)}
                    loaded, dynamic = self._import_closure(roots, apps)
                    more = self._namespace_siblings(app, loaded) - apps
                    if not more:
                        break
                    apps |= more
                self._app_folders[app] = apps
                names = sorted(
                    {
                        os.path.basename(site.path)
                        for site in sites
                        if self._inside(site.path, apps) and not _is_test_path(site.path)
                    }
                )
                shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
                out.append((app, loaded, shown, dynamic))
        self.__dict__["_applications_of"] = out
        return out

    def _folder_modules(self, folder: str) -> list[str]:
        """The project's modules in a folder (not below it)."""
        index = self.__dict__.get("_by_folder")
        if index is None:
            index = {}
            for path in self.model.modules:
                index.setdefault(os.path.dirname(os.path.abspath(path)), []).append(path)
            self.__dict__["_by_folder"] = index
        return index.get(folder, [])

    def _namespace_siblings(self, app: str, loaded: set[str]) -> set[str]:
        """The folders beside an application's folder that its code imports from as namespace
        packages (`from data.loaders import X` in `experiments/train.py`, where `data/`, beside
        `experiments/`, has no `__init__.py`): run with their parent on the path, they are
        part of the application, not a library. So are the packages beside it that its
        repository does not distribute (`pare/__init__.py` beside `scripts/train.py`, no
        `setup.py`, `setup.cfg` or packaging `pyproject.toml` at their parent or above it up
        to the repository's root): nobody installs them to import from elsewhere. A package
        the repository installs (`mylib/__init__.py` beside `examples/`, `find_packages()`
        in `setup.py`) stays a library. Only inside the application's repository."""
        repository = _repository_of(app)
        parent = os.path.dirname(app)
        if repository is None or not (
            parent == repository or parent.startswith(repository + os.sep)
        ):
            return set()
        out: set[str] = set()
        for path in loaded:
            full = os.path.abspath(path)
            if not full.startswith(parent + os.sep) or full.startswith(app + os.sep):
                continue
            top = full[len(parent) + 1 :].split(os.sep)[0]
            folder = os.path.join(parent, top)
            if (
                os.path.isdir(folder)
                and (
                    not os.path.exists(os.path.join(folder, "__init__.py"))
                    or not _distributes(parent, repository)
                )
                and not _is_test_path(os.path.join(folder, "x.py"))
            ):
                out.add(folder)
        return out

    # --- classes nothing builds ---------------------------------------------------------------

    def _unbuilt(self, sites: list[Entry]) -> dict[str, str]:
        """The classes of an application (see `_unimported`) that nothing can build, with
        the reason: no code of the project that runs names the class (a call, a reference
        handed on, `Cls.from_pretrained`), tests aside; no config names it (`class_path`,
        `_target_`, its bare name) and no string of the code does (`"pkg.optim.Lamb"`); no
        registry dict holds it under a key that a config or the code selects (a project
        without YAML configs may select any); no built subclass inherits its methods; and it
        is not registered by a decorator. A reference counts only from code that may run: a
        module's function or top level, or a method of a class that may be built itself (a
        loss built only by a task class nothing builds is not built either), and not from a
        branch the project never takes (`norm = ActNorm` under `if use_actnorm:` where every
        construction passes False). A class of a module whose names are looked up at run
        time (`getattr(module, key)`, `globals()[name]`) may be built when a config, a string
        of the code, a text file or a dict's key spells its name; the classes `eval(text)`
        sees (its file's and what it imports) may all be; an application that calls
        `__subclasses__` says nothing. Configs for inference no training reads
        (`_inference_configs`) name nothing. Modules imported by computed names
        (`import_module(cfg.target)`) are judged all the same: what they build is looked up
        by a name that the configs, the code, a shell script or another text file of the
        application spells."""
        out: dict[str, str] = {}
        for app, loaded, shown, _ in self._applications(sites):
            folders = {self._application_folder(app, loaded)}
            folders |= self._app_folders.get(app, set()) - {app}
            out.update(self._unbuilt_in(folders, shown))
        for repository, scripts in self._training_repositories().items():
            names = sorted({os.path.basename(p) for p in scripts})
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            for gkey, why in self._unbuilt_in({repository}, shown, repository=True).items():
                out.setdefault(gkey, why)
        return out

    def _training_scripts(self) -> list[str]:
        """The modules (tests aside) that start or run training on any accelerator: a
        launch (a Trainer, Fabric, a LightningCLI, a torch_xla launcher), a hand-written
        step loop, a `fit` call."""
        found = self.__dict__.get("_training_scripts_of")
        if found is None:
            found = sorted(
                {site.path for site in self._launch_sites()}
                | {
                    path
                    for path, module in self.model.modules.items()
                    if not _in_tests(path)
                    and (
                        module.scope.step_loops
                        or any("fit" in calls for calls in module.scope.trainer_calls.values())
                    )
                }
            )
            self.__dict__["_training_scripts_of"] = found
        return found

    def _training_repositories(self) -> dict[str, list[str]]:
        """The repositories that train (see `_unbuilt`): each with its training scripts
        that fit (`trainer.fit`, a LightningCLI, a step loop) outside a folder of examples
        or demos (`examples/train.py` shows a library's users how to train: the library's
        classes are theirs to build)."""
        out: dict[str, list[str]] = {}
        for path in self._training_scripts():
            module = self.model.modules.get(path)
            if module is None or _is_test_path(path):
                continue
            fits = module.scope.step_loops or any(
                {"fit", "tune"} & set(calls) for calls in module.scope.trainer_calls.values()
            )
            if not fits and not any(launch[0] == "cli" for launch in module.scope.launches):
                continue
            repository = _repository_of(os.path.dirname(os.path.abspath(path)))
            if repository is None:
                continue
            parts = os.path.relpath(os.path.abspath(path), repository).split(os.sep)[:-1]
            if any(name_tokens(part) & _EXAMPLE_TOKENS for part in parts):
                continue
            out.setdefault(repository, []).append(path)
        return out

    def _application_folder(self, app: str, loaded: set[str]) -> str:
        """The folder whose classes an application's scripts speak for: the scripts' own, or,
        when the scripts sit inside a top-level folder of their repository and import its
        modules (`pkg/train/train.py` importing `pkg.models`), that whole folder: the
        application is the package that holds its scripts. A package beside the scripts'
        folder (`mylib/` beside `examples/`) stays a library its users build from."""
        repository = _repository_of(app)
        if repository is None or app == repository:
            return app
        top = os.path.join(repository, os.path.relpath(app, repository).split(os.sep)[0])
        if top == app:
            return app
        inside = {top}
        if any(self._inside(path, inside) and not self._inside(path, {app}) for path in loaded):
            return top
        return app

    def _unbuilt_in(self, apps: set[str], shown: str, repository: bool = False) -> dict[str, str]:
        """The classes of `apps` nothing builds (see `_unbuilt`). `repository`: `apps` is a
        repository that trains, whose packages may be installed and imported: a class its
        package exports stays, and so does one its decorator registers under a key the
        facts do not see; one registered under keys (`@register("flat_norm")`) or its name
        is built when a config, a string or a text file spells one of them."""
        app = sorted(apps)[0]
        candidates: dict[str, Any] = {}
        by_name: dict[str, list[str]] = {}
        looked_up: set[str] = set()  # module paths whose names are looked up at run time
        composed: set[str] = set()  # of those, looked up by a name built from pieces
        evaluated: set[str] = set()  # classes a file that calls `eval` imports
        for path, module in self.model.modules.items():
            if _is_test_path(path) or not self._inside(path, apps):
                continue
            lookups = module.scope.lookups
            if "^" in lookups:
                return {}
            if "" in lookups or "*" in lookups:
                looked_up.add(path)
            if "*" in lookups:
                # `eval(text)` sees the file's own names and what it imports.
                for target in module.imports.values():
                    found = self.model.lookup(target, module)
                    if _is_class(found):
                        evaluated.add(found.gkey)
                    elif isinstance(found, ModuleSummary):
                        looked_up.add(found.path)
            for target in lookups:
                if target not in ("", "*", "^"):
                    found = self.model.lookup(target.lstrip("~"), module)
                    if isinstance(found, ModuleSummary):
                        looked_up.add(found.path)
                        if target.startswith("~"):
                            composed.add(found.path)
        configured = self._configured_classes(training=True)
        exported: set[str] = set()
        registered: dict[str, list[str]] = {}  # decorated class gkey -> the keys it is under
        # Class gkey -> the packages whose `__init__.py` imports it: a package whose names
        # are looked up at run time (`losses.__dict__.items()` into a registry) selects them
        # by name, as the classes it defines.
        exporters: dict[str, set[str]] = {}
        for module in self.model.modules.values():
            if module.is_package and self._inside(module.path, apps):
                for target in module.imports.values():
                    found = self.model.lookup(target, module)
                    if _is_class(found):
                        exporters.setdefault(found.gkey, set()).add(module.path)
        if repository:
            configured = self._configured_classes(training=True, registries=False)
            exported = {
                g for g in self._exported() if not exporters.get(g) or exporters[g] - looked_up
            }
            for module in self.model.modules.values():
                if not self._inside(module.path, apps):
                    continue
                prefix = self.model.prefix(module)
                keys = module.scope.registered_keys
                for kind, qualname in module.scope.registered:
                    if kind == "class":
                        registered[f"{prefix}.{qualname}"] = keys.get(qualname, [])
        by_lookup: set[str] = set()  # classes of a module whose names are looked up
        for gkey, cls in self._judged_classes():
            path = cls.module.path
            if not self._inside(path, apps):
                continue
            if gkey in evaluated or gkey in configured:
                continue
            if gkey in exported or "?" in registered.get(gkey, ()):
                continue  # a package's API; registered under a key the facts do not see
            candidates[gkey] = cls
            by_name.setdefault(cls.summary.name, []).append(gkey)
            if path in looked_up or exporters.get(gkey, set()) & looked_up:
                by_lookup.add(gkey)
        if not candidates:
            return {}
        # Names in configs and strings of the code: built by name.
        anchor = app + os.sep + "x.py"  # a file of the application, for same_repository
        words: set[str] = set()
        has_configs = False
        skipped = self._inference_configs()
        inference_words: dict[str, list[str]] = {}  # name -> configs for inference naming it
        for config in self.model.configs:
            if self._same_project(config.path, anchor):
                has_configs = True
                if config.path not in skipped:
                    words.update(config.words)
                    continue
                for word in config.words:
                    inference_words.setdefault(word, []).append(config.path)
        # Another project checked in the same run spells its own names (it builds this one's
        # classes only through imports, which resolve).
        strings: set[str] = set()
        keys: set[str] = set()
        for path, module in self.model.modules.items():
            if (
                not _is_test_path(path)
                and path not in self.unimported
                and same_repository(path, anchor)
            ):
                strings.update(module.scope.strings)
                keys.update(module.scope.key_strings)
        for text in strings:
            words.add(text.replace(":", ".").rsplit(".", 1)[-1])
        # read once per model: a long-running server builds a new model when files change
        texts = self.__dict__.setdefault("_text_words_of", {})
        for folder in apps:
            if folder not in texts:
                texts[folder] = _text_words(folder)
            words.update(texts[folder])
        if "*" in words:
            return {}  # too many text files to read: any class may be named in one
        if repository and not self._configs_shown(apps, texts):
            return {}
        built: set[str] = {g for g, c in candidates.items() if c.summary.name in words}
        # A registry decorator's keys select it as its name does.
        built.update(
            g for g, keys in registered.items() if g in candidates and words.intersection(keys)
        )
        # A run-time lookup builds the classes of its module whose names the code, a config or
        # a text file spells, or a dict's key (`{"Triangle_transform": 3}` iterated into
        # `getattr(module, key)`); a class of that module named nowhere is built by none.
        built.update(g for g in by_lookup if candidates[g].summary.name in keys)
        # A name built from pieces (`f"{kind}_transform"`) may be any class of its module.
        built.update(g for g in by_lookup if candidates[g].module.path in composed)
        # In a repository: its module-level functions nothing calls or names (no use of the
        # name outside the function, no string, config or text word spelling it, no package
        # export, decorator or CLI command, no run-time lookup of its module): what they
        # build is built by nobody (`make_model` of a vendored package whose `train()` no
        # script calls).
        unused = self._unused_functions(apps, words) if repository else set()
        # References: target class -> owners of the code that names it (None: code that runs
        # whenever its module does).
        owners: dict[str, set[str | None]] = {}
        for path, module in self.model.modules.items():
            if _is_test_path(path) or path in self.unimported:
                continue
            # A LightningCLI builds the classes it is given, or any subclass a config or the
            # command line names (`--data.class_path`, subclass mode).
            nearby = by_name if same_repository(path, anchor) else {}
            cli_keys = {launch[2] for launch in module.scope.launches if launch[0] == "cli"}
            for key, qualified, _, _, _ in module.scope.class_refs:
                if key in cli_keys:
                    for target in self._ref_targets(qualified, module, nearby):
                        built.update({target, *self.model.subclasses(target)})
            for key, qualified, line, column, registry in module.scope.class_refs:
                targets = self._ref_targets(qualified, module, nearby)
                if repository:
                    # By the name too: an import the model resolves to another class of the
                    # same name (a script's folder first on `sys.path`) may be this one.
                    targets = targets + [
                        g
                        for part in qualified.lstrip(".").split(".")
                        if part[:1].isupper()
                        for g in nearby.get(part, ())
                        if g not in targets
                    ]
                if not targets:
                    continue
                if registry is not None and has_configs and registry not in words:
                    continue  # a registry key nothing selects
                fn = self.model.functions.get(f"{path}:{key}") if key else None
                owner = fn.owner if fn is not None else None
                if unused and key and f"{path}:{_top_key(key)}" in unused:
                    continue  # in a function nothing calls
                for target in targets:
                    if target not in candidates or target == owner or target in built:
                        continue
                    if self._dead_reference(module, line, column, owner):
                        break
                    owners.setdefault(target, set()).add(owner)
        changed = True
        while changed:
            changed = False
            for gkey in candidates:
                if gkey in built:
                    continue
                if any(
                    owner is None or owner not in candidates or owner in built
                    for owner in owners.get(gkey, ())
                ) or any(
                    sub not in candidates or sub in built for sub in self.model.subclasses(gkey)
                ):
                    built.add(gkey)
                    changed = True
        why = (
            "in `{}`, a class nothing builds (no code that runs, config or string of its "
            f"project names it, tests aside; its training entry points: {shown})"
        )
        if repository:
            why = (
                "in `{}`, a class nothing in its repository builds (no code that runs, "
                "config, registry key or string of the repository names it, tests aside; "
                f"the repository trains in {shown})"
            )
        out = {}
        for gkey, cls in candidates.items():
            if gkey in built:
                continue
            named = inference_words.get(cls.summary.name)
            if named:
                folders = sorted({os.path.relpath(os.path.dirname(p), app) for p in named})
                out[gkey] = (
                    f"in `{cls.summary.name}`, a class only configs for inference name "
                    f"({', '.join(f + '/' for f in folders[:2])}), which no training reads "
                    f"(its training entry points: {shown})"
                )
            else:
                out[gkey] = why.format(cls.summary.name)
        return out

    def _config_builders(self) -> list[tuple[str, bool, bool]]:
        """Per module outside tests (`_configs_shown`): whether it imports gin, and whether
        it builds objects from configs (a LightningCLI, a call of a config builder). The
        same for every application: kept."""
        found = self.__dict__.get("_config_builders_of")
        if found is not None:
            return found
        found = []
        for path, module in self.model.modules.items():
            if _is_test_path(path):
                continue
            builds = any(launch[0] == "cli" for launch in module.scope.launches) or any(
                use[1].rsplit(".", 1)[-1] in _CONFIG_BUILDERS
                for uses in module.scope.uses.values()
                for use in uses
            )
            gin = any(t.split(".", 1)[0] == "gin" for t in module.imports.values())
            found.append((path, gin, builds))
        self.__dict__["_config_builders_of"] = found
        return found

    def _judged_classes(self) -> list[tuple[str, _Class]]:
        """The classes `_unbuilt_in` may judge, whatever the application: outside tests and
        Lightning's own source, named at the top of their module in upper case (nested
        classes and classes named in lower case are not judged), with no base that registers
        its subclasses as they are defined (`__init_subclass__`) and no metaclass base (every
        class statement naming it builds it). The same for every application: kept."""
        found = self.__dict__.get("_judged_classes_of")
        if found is not None:
            return found
        found = []
        for gkey, cls in self.model.classes.items():
            if any(
                "__init_subclass__" in self.model.classes[base].summary.methods
                for base in self.model.mro(gkey)[1:]
                if base in self.model.classes
            ):
                continue  # a base registers its subclasses as they are defined
            if _is_test_path(cls.module.path):
                continue
            if (cls.module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                continue
            name = cls.summary.name
            if cls.summary.qualname != name or not name[:1].isupper():
                continue  # nested classes, classes named in lower case: not judged
            if any(
                base.rsplit(".", 1)[-1] in _METACLASS_BASES
                for base in self.model.external_bases(gkey)
            ):
                continue  # a metaclass: every class statement naming it builds it
            found.append((gkey, cls))
        self.__dict__["_judged_classes_of"] = found
        return found

    def _configs_shown(self, apps: set[str], texts: dict[str, frozenset[str]]) -> bool:
        """Whether the configs that build objects of `apps` by name are in the checkout: gin
        (`import gin`, `@gin.configurable("Key")`) needs a `.gin` file; a LightningCLI or a
        call that builds from a config (`instantiate`, `build_from_cfg`; not an import by a
        name, `import_module(path)`, whose name the code may spell) a config
        (not the tests') or text file naming a class of it. Without them the configs are
        elsewhere (user configs, a folder left out of the checkout) and may name any class."""
        gin = builds = False
        for path, module_gin, module_builds in self._config_builders():
            if not self._inside(path, apps):
                continue
            gin = gin or module_gin
            builds = builds or module_builds
        if gin and not any(_holds_suffix(folder, ".gin") for folder in apps):
            return False
        if not builds:
            return True
        seen = {
            w
            for c in self.model.configs
            if self._inside(c.path, apps) and not _is_test_path(c.path)
            for w in c.words
        }
        for folder in apps:
            seen |= texts.get(folder, frozenset())
        return any(
            cls.summary.name in seen
            for cls in self.model.classes.values()
            if self._inside(cls.module.path, apps)
        )

    def _unused_functions(self, apps: set[str], words: set[str]) -> set[str]:
        """The module-level functions of `apps` (tests aside) that nothing calls or names
        (`path:name`): no use of the project outside them (a call, a reference handed on,
        `module.fn`; a use the model does not resolve counts when it may be the function:
        not a method call on `self` or on a value) has the name, or only uses inside other
        such functions (to a fixpoint: `train()` nobody calls and the `make_model` only it
        calls); no string, config or text word (`words`) spells it, no package's
        `__init__.py` imports it and no module imports it without using it (a re-export),
        it has no decorator, is no CLI command and no `main`, and its module's names are
        not looked up at run time."""
        index = self._index_of_uses()
        reexported = self._reexported_names()
        functions: dict[str, Any] = {}  # `path:name` -> the function
        for fn in self.model.functions.values():
            summary = fn.summary
            path = fn.module.path
            if summary.cls is not None or summary.parent is not None or _is_test_path(path):
                continue
            if not self._inside(path, apps) or fn.module.is_package:
                continue
            facts = fn.module.scope
            name = summary.name
            if facts.lookups or summary.decorators or summary.key in facts.commands:
                continue
            if name in words or name in reexported or name == "main" or name.startswith("_"):
                continue
            functions[f"{path}:{name}"] = fn
        callers: dict[str, set[str]] = {}  # `path:name` -> the `path:name` of its users
        for own, fn in list(functions.items()):
            users: set[str] = set()
            for node, use in index.get(fn.summary.name, ()):
                where, _, key = node.rpartition(":")
                module = self.model.modules.get(where)
                if module is None or _is_test_path(where):
                    continue
                hit = self.model.lookup(use[1], module) if use[0] in ("name", "ref") else None
                if hit is not None and hit is not fn:
                    continue  # another object of the same name
                if hit is None and use[0] not in ("name", "ref", "attr"):
                    continue  # `self.x()`, `v.x()`: a method of that name
                users.add(f"{where}:{_top_key(key)}" if key else f"{where}:")
            users.discard(own)
            callers[own] = users
        unused = set(functions)
        changed = True
        while changed:
            changed = False
            for own in list(unused):
                if callers[own] - unused:
                    unused.discard(own)
                    changed = True
        return unused

    def _reexported_names(self) -> set[str]:
        """The names a package's `__init__.py` imports, or a module imports without using
        them (a re-export), as imported and as their targets' last names. The same for every
        application (`_unused_functions`): kept."""
        found = self.__dict__.get("_reexported_of")
        if found is not None:
            return found
        found = set()
        for module in self.model.modules.values():
            used_here = {
                use[1].rsplit(".", 1)[-1] for uses in module.scope.uses.values() for use in uses
            }
            for local, target in module.imports.items():
                if module.is_package or local not in used_here:
                    found.update({local, target.rsplit(".", 1)[-1]})
        self.__dict__["_reexported_of"] = found
        return found

    def _ref_targets(
        self, qualified: str, module: ModuleSummary, by_name: dict[str, list[str]]
    ) -> list[str]:
        """The classes a reference may name: the longest prefix the model resolves to a class
        (`Cls.from_pretrained`); a name it does not resolve to one may be any judged class of
        a name it spells. What the model resolves is kept per module and reference:
        `_unbuilt_in` asks it of every reference of the project once per application."""
        memo = self._ref_memo
        key = (id(module), qualified)
        if key in memo:
            resolved = memo[key]
        else:
            resolved = memo[key] = self._resolved_ref(qualified, module)
        if resolved is not None:
            return list(resolved)
        # Not resolved to a class (an import the model cannot follow, a module's attribute
        # it does not know): any judged class of a name it spells.
        parts = qualified.lstrip(".").split(".")
        return [g for part in parts if part[:1].isupper() for g in by_name.get(part, ())]

    def _resolved_ref(self, qualified: str, module: ModuleSummary) -> tuple[str, ...] | None:
        """The classes the model resolves a reference to (see `_ref_targets`); None: it
        resolves to none."""
        parts = qualified.lstrip(".").split(".")
        for size in range(len(parts), 0, -1):
            if ".".join(parts[:size]) in self.model.classes:
                return (".".join(parts[:size]),)
            text = ("." if qualified.startswith(".") else "") + ".".join(parts[:size])
            found = self.model.lookup(text, module)
            if _is_class(found):
                return (found.gkey,)
            if _is_function(found):
                # `Cls.from_pretrained(...)`: its classmethod; a module's function: no class
                return (found.owner,) if found.owner is not None else ()
        return None

    def _dead_reference(
        self, module: ModuleSummary, line: int, column: int, owner: str | None
    ) -> bool:
        """Whether a reference sits in a branch the project never takes (see `reason`). Kept
        per reference: `_unbuilt_in` asks it once per application."""
        key = (id(module), line, column, owner)
        kept = self._dead_refs.get(key)
        if kept is None:
            kept = self._dead_refs[key] = self._find_dead_reference(module, line, column, owner)
        return kept

    def _find_dead_reference(
        self, module: ModuleSummary, line: int, column: int, owner: str | None
    ) -> bool:
        for region in module.scope.regions:
            key, l1, c1, l2, c2, truth, wanted, how = region[:8]
            if how.startswith("infer-") or not ((l1, c1) <= (line, column) <= (l2, c2)):
                continue
            region_owner = owner
            if key:
                region_fn = self.model.functions.get(f"{module.path}:{key}")
                region_owner = region_fn.owner if region_fn is not None else owner
            value = self.truth(truth, module, region_owner)
            if value is not None and value != wanted:
                return True
        return False

    @staticmethod
    def _tail_match(name: str, by_tail: dict[str, list[str]], anywhere: bool) -> list[str]:
        """The application modules a dotted name the model cannot resolve may import: the
        longest run of its parts (its first parts, unless `anywhere`) that ends an
        application module's path (`pointnet2_utils` for an import of
        `pointnet2_utils.furthest_point_sample` after a `sys.path` insert; `datasets.semseg`
        for a config's `mix3d.datasets.semseg.SemanticSegmentationDataset`)."""
        parts = name.lstrip(".").split(".")
        for size in range(len(parts), 0, -1):
            for start in range(len(parts) - size + 1 if anywhere else 1):
                found = by_tail.get(".".join(parts[start : start + size]))
                if found:
                    return found
        return []

    @staticmethod
    def _in_package(module: ModuleSummary) -> bool:
        """Whether a module is part of an importable package (not a script run as a file)."""
        return module.is_package or (module.module is not None and "." in module.module)

    @staticmethod
    def _inside(path: str, folders: set[str]) -> bool:
        folder = _folder_of(path)
        return any(folder == f or folder.startswith(f + os.sep) for f in folders)

    def _import_closure(
        self, roots: set[str], apps: set[str], configs: bool = True
    ) -> tuple[set[str], bool]:
        """The modules the roots import, directly or not (with the packages holding them),
        and whether any of them imports by a computed name or builds from configs that name
        none of the application's classes. A name the project model cannot resolve that
        names a folder or file of the application (a `sys.path` insert before `import
        pointnet2_utils`) loads every module it may be. `configs`: the modules of the classes
        the application's configs name are loaded too."""
        # Every dotted tail of an application module's path (`pointnet2_utils`,
        # `pointnet2.pointnet2_utils`): what an import the model cannot resolve may name.
        by_tail: dict[str, list[str]] = {}
        for path in self.model.modules:
            full = os.path.abspath(path)
            app = next((a for a in sorted(apps) if full.startswith(a + os.sep)), None)
            if app is None:
                continue
            parts = os.path.relpath(full, app)[: -len(".py")].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for i in range(len(parts)):
                by_tail.setdefault(".".join(parts[i:]), []).append(path)
        loaded: set[str] = set(roots)
        queue = deque(sorted(roots))
        builds = False
        dynamic = False

        def load(path: str) -> None:
            if path not in loaded:
                loaded.add(path)
                queue.append(path)

        configured = False
        for config in self.model.configs if configs else ():
            if not self._inside(config.path, apps):
                continue
            for _, name in config.classes:
                found = self.model.lookup(name, None)
                if _is_class(found) or _is_function(found):
                    load(found.module.path)
                    configured = True
                else:  # a package prefix the project model does not know (`mix3d.datasets...`)
                    for other in self._tail_match(name, by_tail, anywhere=True):
                        load(other)
        while queue:
            path = queue.popleft()
            module = self.model.modules.get(path)
            if module is None:
                continue
            if module.module:
                parts = module.module.split(".")
                for i in range(1, len(parts)):
                    package = self.model.module_named(".".join(parts[:i]), module)
                    if package is not None:
                        load(package.path)
            # Imports at the top, and the qualified names functions use (their own imports).
            targets = [*module.imports.values(), *module.scope.star_imports]
            for uses in module.scope.uses.values():
                for form, target in uses:
                    name = target.rsplit(".", 1)[-1]
                    if name in _DYNAMIC_IMPORTS and module.scope.package_imports:
                        # `import_module("." + m, __name__)`: any module of its own folder
                        folder = os.path.dirname(os.path.abspath(path))
                        for other in self._folder_modules(folder):
                            load(other)
                        continue
                    dynamic |= name in _DYNAMIC_IMPORTS
                    builds |= name in _DYNAMIC_BUILDERS
                    if form in ("name", "ref") and "." in target.lstrip("."):
                        targets.append(target)
            for target in targets:
                found = self.model.lookup(target, module)
                if _is_class(found) or _is_function(found):
                    load(found.module.path)
                elif isinstance(found, ModuleSummary):
                    load(found.path)
                # The module a name is taken from (`from pkg.data import X` runs
                # `pkg/data/__init__.py` when X is defined elsewhere).
                parts = target.lstrip(".").split(".")
                source = next(
                    (
                        named
                        for i in range(len(parts), 0, -1)
                        if (named := self.model.module_named(".".join(parts[:i]), module))
                    ),
                    None,
                )
                if source is not None:
                    load(source.path)
                elif found is None:
                    for other in self._tail_match(target, by_tail, anywhere=False):
                        load(other)
            # A relative import above the package root (namespace packages): the modules
            # its dotted name may end with; one that names none of them leaves the
            # application unknown.
            for target in module.scope.beyond_root_imports:
                matched = self._tail_match(target, by_tail, anywhere=False)
                dynamic |= not matched
                for other in matched:
                    load(other)
        return loaded, dynamic or (builds and not configured)

    # --- the library (no entry point) ------------------------------------------------------

    def _library_reach(self) -> _State:
        """Roles in the modules no entry point speaks for. Everything there may run (a
        library's users call what they like), except what only inference or the end of an
        epoch reaches: the functions reached from the inference roots (predict hooks,
        generation loops, INFER) and from the epoch-end hooks (`on_validation_epoch_end`,
        `on_fit_end`, EPOCH) that no other code calls, with the classes only those functions
        build. Only those get a role; the rest is in scope."""
        state = _State()

        def unclaimed(path: str) -> bool:
            # A training group's modules keep their library roles (see `_role`).
            return not self._tpu_claimed(path)

        roots: dict[str, tuple[int, str]] = {}
        for path, module in self.model.modules.items():
            generation = module.scope.generation
            hooks = [
                fn
                for fn in module.functions
                if fn.cls is not None
                and (
                    fn.name in PREDICT_HOOKS
                    or is_end_hook(fn.name)
                    or (fn.name in TEST_HOOKS and not self._tests_in_fit_run(path))
                )
            ]
            if not (generation or module.scope.named_inference or hooks) or not unclaimed(path):
                continue
            functions = self.model._module_functions[id(module)]
            for key in generation:
                fn = functions.get(key)
                if fn is not None and fn.gkey not in self._training_steps_reach():
                    roots[fn.gkey] = (INFER, f"`{fn.summary.name}` (a generation loop)")
            for key in module.scope.named_inference:
                fn = functions.get(key)
                if fn is not None and fn.summary.name not in self._called_names():
                    # Nothing of the project calls it (a serving entry point): inference.
                    why = f"`{fn.summary.name}` (named for inference, run without gradients)"
                    roots[fn.gkey] = (INFER, why)
            for summary in hooks:
                fn = functions.get(summary.key)
                if (
                    fn is not None
                    and fn.owner is not None
                    and self.model.class_kind(fn.owner).is_lightning
                    and fn.gkey not in roots
                ):
                    evaluates = summary.name in PREDICT_HOOKS or (
                        summary.name in TEST_HOOKS and not self._tests_in_fit_run(path)
                    )
                    role = INFER if evaluates else EPOCH
                    roots[fn.gkey] = (role, f"`{summary.name}`")
        # The methods of a LightningModule that only inference entry points build.
        for gkey, why in self._inference_only_classes().items():
            cls = self.model.classes[gkey]
            if not unclaimed(cls.module.path):
                continue
            functions = self.model._module_functions[id(cls.module)]
            for key in cls.summary.methods.values():
                fn = functions.get(key)
                if fn is not None and fn.gkey not in roots:
                    roots[fn.gkey] = (INFER, why)
        if not roots:
            return state
        # What the roots reach, through calls the model resolves (a method called on a value
        # of unknown class is not followed: in doubt, code stays in scope), and the classes
        # only epoch-end or test-hook code names (`SoftLoss(gamma=1)(a, b)` in
        # `on_validation_epoch_end`, an example writer in `test_step`; not a generation
        # loop's or a predict hook's: they load the model that trains).
        reached: dict[str, tuple[int, str]] = dict(roots)
        queue = deque(roots)
        expanded: set[str] = set()
        while queue:
            while queue:
                node = queue.popleft()
                for target in self._callees(node, by_name=False):
                    if unclaimed(target.rpartition(":")[0]) and (
                        target not in reached or reached[target][0] < reached[node][0]
                    ):
                        reached[target] = reached[node]
                        queue.append(target)
            for gkey, via in self._classes_named_only_by(reached, expanded):
                cls = self.model.classes[gkey]
                functions = self.model._module_functions[id(cls.module)]
                for key in cls.summary.methods.values():
                    fn = functions.get(key)
                    if fn is not None and fn.gkey not in reached:
                        reached[fn.gkey] = reached[via]
                        queue.append(fn.gkey)
        # What other code calls among them trains (and so does what it calls in turn).
        names = {self.model.functions[n].summary.name for n in reached if n in self.model.functions}
        # `self.encoder(x)` calls a forward (or `__call__`) by the attribute's name.
        module_calls = bool(names & {"forward", "__call__"})
        trained: set[str] = set()
        reached_methods: dict[tuple[str, bool], list[str]] = {}
        for path, module in self.model.modules.items():
            if self._test_code(path) is not None:
                # A test calls what it tests by hand (`queue.add(frame)` in a test of the
                # queue): a test run is not a training run.
                continue
            for key, uses in module.scope.uses.items():
                node = f"{path}:{key}"
                if node in reached:
                    continue
                for use in uses:
                    form, target = use
                    if form == "attr" and "." not in target:
                        if not module_calls:
                            continue
                    elif form == "self" and target not in names:
                        # `self.post(x)` where `self.post = Post()`: the instance's `__call__`
                        if not module_calls:
                            continue
                    elif target.rsplit(".", 1)[-1] not in names:
                        continue
                    # A method name on a value of unknown class counts (any class may be
                    # it); one on `self.x.y` is a component's, never these classes' own.
                    if form == "meth":
                        # The same for every node but by whether it passes arguments: the
                        # reached ones, once.
                        meth_key = (target, self._bare_call(node, target))
                        callees = reached_methods.get(meth_key)
                        if callees is None:
                            callees = reached_methods[meth_key] = [
                                c for c in self._callees_of_use(node, use) if c in reached
                            ]
                    else:
                        callees = self._callees_of_use(node, use, by_name=False)
                    for callee in callees:
                        if callee in reached and (
                            callee not in roots or self._called_test_hook(callee, form, roots)
                        ):
                            if form == "meth" and not self._same_project(
                                callee.rpartition(":")[0], path
                            ):
                                continue  # another project's value of its own classes
                            trained.add(callee)
        # Lightning calls a reached hook of fit itself (a `test_step` that returns
        # `self.validation_step(batch, i)`: the validation step still runs in fit).
        inference_only = self._inference_only_classes()
        for node in reached:
            fn = self.model.functions.get(node)
            if (
                fn is not None
                and fn.owner is not None
                and fn.owner not in inference_only
                and self._fit_hook(fn)
            ):
                trained.add(node)
        queue = deque(trained)
        while queue:
            node = queue.popleft()
            for target in self._callees(node):
                if target in reached and target not in roots and target not in trained:
                    trained.add(target)
                    queue.append(target)
        for node, (role, why) in reached.items():
            if node not in trained:
                state.roles[node] = role
                state.why[node] = why
        return state

    def _inference_only_classes(self) -> dict[str, str]:
        """The project's classes that only inference builds, with the reason: every
        construction or reference (`Model(...)`, `Model.load_from_checkpoint(path)`,
        `Decoder(labels)`), tests and the class's own methods aside, sits in code that never
        trains, while a script of the same repository fits (it trains other classes). Code
        that never trains is: a function whose Trainer calls are `predict`, `test` or
        `validate` and never `fit` (a prediction CLI command, an evaluation script); a
        function every chain of callers of which starts at a script's `__main__` block or a
        CLI command that never trains (no `fit`, `backward`, optimizer step or training loop
        in what it calls: a transcription, test or search script), with no caller the model
        cannot see (a module's top level, a function a config, a string or a run-time lookup
        may name); and the methods of a class only such code builds (a layer only an
        inference-only model builds). A class a config, a registry, a string of the code or
        a run-time lookup may name, a subclass, or a class whose base a config names,
        stays: a fit may build it."""
        found = self.__dict__.get("_inference_only")
        if found is not None:
            return found
        found = {}
        self.__dict__["_inference_only"] = found
        fitting = self._fitting_scripts()
        if not fitting:
            return found  # a library with no training entry point
        configured = self._configured_classes(training=True)
        words, looked_up = self._names_by_text()
        refs: dict[str, list[tuple[str, str]]] = {}
        by_name: dict[str, list[str]] = {}
        for gkey, cls in self.model.classes.items():
            by_name.setdefault(cls.summary.name, []).append(gkey)
        for path, module in self.model.modules.items():
            for key, qualified, _, _, registry in module.scope.class_refs:
                # A name the model does not resolve may be any class it spells.
                for target in self._ref_targets(qualified, module, by_name):
                    marker = "registry" if registry is not None else key
                    refs.setdefault(target, []).append((path, marker))
        if "^" in looked_up:
            return found  # `__subclasses__`: any class may be built
        candidates = []
        for gkey, cls in self.model.classes.items():
            path = cls.module.path
            if _is_test_path(path) or path in looked_up or gkey not in refs:
                continue
            if (cls.module.module or "").split(".", 1)[0] in _LIGHTNING_ROOTS:
                continue
            if cls.summary.name in words:
                continue
            if any(g in configured for g in self.model.mro(gkey)):
                continue
            if not any(same_repository(where, path) for where in fitting):
                continue
            candidates.append(gkey)
        # A class only an inference-only class builds is inference-only too: to a fixpoint.
        changed = True
        while changed:
            changed = False
            for gkey in candidates:
                if gkey not in found:
                    if any(sub not in found for sub in self.model.subclasses(gkey)):
                        continue  # a subclass training may build (one only inference builds
                        # leaves it: its own methods run only where the subclass's do)
                    why = self._built_only_off_training(gkey, refs[gkey], found, words, looked_up)
                    if why is not None:
                        found[gkey] = why
                        changed = True
        return found

    def _inference_configs(self) -> set[str]:
        """The config files of a folder for inference (`configs/inference/svd.yaml`), in a
        repository whose training scripts are known to read their configs elsewhere: the
        scripts, or the README and shell script lines that run them, spell a config path
        (`configs/example_training/...`) and none inside or around that folder. Classes
        only such configs name are not built by a training run."""
        found = self.__dict__.get("_inference_configs_of")
        if found is not None:
            return found
        found = set()
        self.__dict__["_inference_configs_of"] = found
        folders: dict[tuple[str, str], list[str]] = {}  # (repository, folder) -> configs
        for config in self.model.configs:
            repository = _repository_of(os.path.dirname(os.path.abspath(config.path)))
            if repository is None:
                continue
            parts = os.path.relpath(os.path.abspath(config.path), repository).split(os.sep)[:-1]
            for i, part in enumerate(parts):
                if name_tokens(part) & _INFERENCE_FOLDER_TOKENS:
                    folder = os.path.join(repository, *parts[: i + 1])
                    folders.setdefault((repository, folder), []).append(config.path)
                    break
        for (repository, folder), paths in folders.items():
            scripts = tuple(
                sorted(
                    os.path.abspath(p)
                    for p in self._fitting_scripts()
                    if _repository_of(os.path.dirname(os.path.abspath(p))) == repository
                )
            )
            if not scripts:
                continue
            mentions = _training_config_mentions(repository, scripts)
            held = [os.path.abspath(c.path) for c in self.model.configs]
            configs = [
                m
                for m in mentions
                if m.endswith((".yaml", ".yml"))
                or (os.path.isdir(m) and any(_nested(h, m) for h in held))
            ]
            if configs and not any(_nested(m, folder) for m in configs):
                found.update(paths)
        return found

    def _fitting_scripts(self) -> list[str]:
        """The modules (tests aside) whose code calls `trainer.fit` or `trainer.tune`."""
        found = self.__dict__.get("_fitting")
        if found is None:
            found = [
                path
                for path, module in self.model.modules.items()
                if not _is_test_path(path)
                and any(
                    {"fit", "tune"} & set(calls) for calls in module.scope.trainer_calls.values()
                )
            ]
            self.__dict__["_fitting"] = found
        return found

    def _names_by_text(self) -> tuple[set[str], set[str]]:
        """The names the configs and the strings of the code spell (a class or function
        built or called by name), and the modules whose names are looked up at run time
        (`getattr(module, name)`; "^" among them: `__subclasses__`, any class)."""
        found = self.__dict__.get("_text_names")
        if found is None:
            words: set[str] = set()
            skipped = self._inference_configs()
            for config in self.model.configs:
                if config.path not in skipped:
                    words.update(config.words)
            looked_up: set[str] = set()
            for path, module in self.model.modules.items():
                words.update(t.replace(":", ".").rsplit(".", 1)[-1] for t in module.scope.strings)
                for target in module.scope.lookups:
                    if target in ("", "*", "^"):
                        looked_up.add(path if target != "^" else "^")
                        continue
                    hit = self.model.lookup(target.lstrip("~"), module)
                    if isinstance(hit, ModuleSummary):
                        looked_up.add(hit.path)
            found = (words, looked_up)
            self.__dict__["_text_names"] = found
        return found

    def _called_only_off_training(self, node: str) -> bool:
        """Whether every call of a method runs only from code that never trains (see
        `_off_training_roots`: a scoring CLI's `model.enable_context()`), in a repository
        with a script that fits; not a method a framework may call, nor one a config, a
        string or a run-time lookup may name, nor one nothing calls."""
        cache = self.__dict__.setdefault("_off_training_calls", {})
        if node in cache:
            return bool(cache[node])
        cache[node] = False
        fn = self._function(node)
        if fn is None or _framework_called(fn.summary.name):
            return False
        if not any(same_repository(p, fn.module.path) for p in self._fitting_scripts()):
            return False
        words, looked_up = self._names_by_text()
        if fn.summary.name in words or fn.module.path in looked_up or "^" in looked_up:
            return False
        callers = [c for c in self.callers(node) if not _is_test_path(c.rpartition(":")[0])]
        inference = self._inference_only_classes()
        cache[node] = bool(callers) and all(
            self._off_training_roots(c, inference, words, looked_up) is not None for c in callers
        )
        return bool(cache[node])

    def _imported(self, path: str) -> bool:
        """Whether a module of the project imports the module at `path`."""
        known = self.__dict__.get("_imported_paths")
        if known is None:
            imported: set[str] = set()
            packages: set[str] = set()  # `import pkg.sub` binds only `pkg`: any module inside
            for module in self.model.modules.values():
                for name, target in module.imports.items():
                    found = self.model.lookup(target, module)
                    if found is None:
                        continue
                    where = found.path if isinstance(found, ModuleSummary) else found.module.path
                    imported.add(where)
                    if name == target and os.path.basename(where) == "__init__.py":
                        packages.add(os.path.dirname(where) + os.sep)
            known = (imported, tuple(sorted(packages)))
            self.__dict__["_imported_paths"] = known
        return path in known[0] or path.startswith(known[1])

    def _never_called(self, node: str) -> bool:
        """Whether nothing calls or names a method (`collecting()`, a context manager the
        repository never enters), in a repository with a script that fits: not a method a
        framework may call, nor one a config, a string or a run-time lookup may name."""
        cache = self.__dict__.setdefault("_never_called_cache", {})
        if node not in cache:
            fn = self._function(node)
            cache[node] = (
                fn is not None
                and fn.owner is not None
                and not _framework_called(fn.summary.name)
                and any(same_repository(p, fn.module.path) for p in self._fitting_scripts())
                and not self._index_of_uses().get(fn.summary.name)
                and self._named_nowhere(fn)
            )
        return bool(cache[node])

    def _named_nowhere(self, fn: _Function) -> bool:
        words, looked_up = self._names_by_text()
        return not (fn.summary.name in words or fn.module.path in looked_up or "^" in looked_up)

    def _built_only_off_training(
        self,
        gkey: str,
        refs: list[tuple[str, str]],
        found: dict[str, str],
        words: set[str],
        looked_up: set[str],
    ) -> str | None:
        """Why a class is built only by code that never trains (see
        `_inference_only_classes`), or None."""
        cls = self.model.classes[gkey]
        evaluators: set[tuple[str, str]] = set()
        evaluates: set[str] = set()
        roots: set[str] = set()
        for where, key in refs:
            if _is_test_path(where):
                continue
            if key == "registry":
                return None
            fn = self.model.functions.get(f"{where}:{key}") if key else None
            if fn is not None and fn.owner == gkey:
                continue  # its own methods (`super(Model, self)`)
            methods = self._trainer_methods(f"{where}:{key}") if key else None
            if methods and not methods & {"fit", "tune"}:
                asked = next((m for m in ("predict", "test", "validate") if m in methods), None)
                if asked is not None:
                    evaluators.add((where, key))
                    evaluates.add(asked)
                    continue
            if not key:
                # A module's top level runs wherever the module is imported; a script's that
                # nothing imports (a serving script loading the model) runs only as itself.
                if (
                    os.path.basename(where) == "__init__.py"
                    or self._imported(where)
                    or where in self._fitting_scripts()
                    or not self._never_trains(module_node(where))
                    or not self._never_trains(module_node(where, main=True))
                ):
                    return None
                roots.add(f"the top level of {os.path.basename(where)}")
                continue
            starts = self._off_training_roots(f"{where}:{key}", found, words, looked_up)
            if starts is None:
                return None
            roots.update(starts)
        if not roots and evaluators:
            where, key = sorted(evaluators)[0]
            fn = self.model.functions.get(f"{where}:{key}")
            shown = fn.summary.name if fn is not None else key
            name = f"`{shown}` in {os.path.basename(where)}"
            calls = ", ".join(f"`trainer.{m}`" for m in sorted(evaluates))
            kind = "model" if self.model.class_kind(gkey) & ClassKind.LIGHTNING_MODULE else "class"
            return (
                f"`{cls.summary.name}`, a {kind} only {name} builds or loads, which "
                f"calls {calls} and never fits"
            )
        if not roots:
            return None
        for where, key in evaluators:
            fn = self.model.functions.get(f"{where}:{key}")
            roots.add(
                f"`{fn.summary.name if fn is not None else key}` in {os.path.basename(where)}"
            )
        shown = sorted(roots)
        text = ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "")
        return f"`{cls.summary.name}`, a class only code that never trains builds, from {text}"

    def _off_training_roots(
        self, node: str, found: dict[str, str], words: set[str], looked_up: set[str]
    ) -> set[str] | None:
        """Where every chain of calls that runs `node` starts, shown (`main` in
        transcribe.py, or an inference-only class whose methods call it), when each start
        is a script's `__main__` block or a CLI command that never trains, or a method of a
        class in `found`; None when one may train or is not known: a method of another
        class (its framework may call it), a module's top level, a function with no caller
        the model sees or one a config, a string or a run-time lookup may name."""
        starts: set[str] = set()
        seen = {node}
        queue = deque([node])
        while queue:
            current = queue.popleft()
            path, _, key = current.rpartition(":")
            if _is_test_path(path):
                continue
            fn = self._function(current)
            if fn is not None and fn.owner is not None:
                owner = next((g for g in self._enclosing_classes(fn.owner) if g in found), None)
                if owner is None:
                    return None
                starts.add(f"the methods of `{self.model.classes[owner].summary.name}`")
                continue
            if key == "__main__" or (key and self._runnable(current)):
                if not self._never_trains(current):
                    return None
                shown = "`__main__`" if key == "__main__" else f"`{fn.summary.name}`" if fn else key
                starts.add(f"{shown} in {os.path.basename(path)}")
                continue
            if fn is None or path in looked_up or fn.summary.name in words:
                return None
            callers = self.callers(current)
            if not callers:
                return None
            for caller in callers:
                if caller not in seen:
                    seen.add(caller)
                    if len(seen) > _MAX_CLIMB:
                        return None
                    queue.append(caller)
        return starts or None

    def _called_names(self) -> frozenset[str]:
        """The last names of everything the project's code calls (`offline_inference` of
        `self.inference.offline_inference(x)`), however the call is spelled."""
        names = self.__dict__.get("_called_names_cache")
        if names is None:
            names = frozenset(
                target.rsplit(".", 1)[-1]
                for module in self.model.modules.values()
                for uses in module.scope.uses.values()
                for _form, target in uses
            )
            self.__dict__["_called_names_cache"] = names
        return names

    def _training_steps_reach(self) -> set[str]:
        """The functions a Lightning `training_step` calls, directly or through others (calls
        the model resolves): a generation loop among them runs every training step (online
        preference optimisation samples from the model it trains), not as inference."""
        found = self.__dict__.get("_training_reach")
        if found is None:
            found = self._resolved_closure(
                fn.gkey
                for fn in self.model.functions.values()
                if fn.summary.name == "training_step"
                and fn.owner is not None
                and self.model.class_kind(fn.owner).is_lightning
            )
            self.__dict__["_training_reach"] = found
        return found

    def lightning_training_reach(self) -> set[str]:
        """The functions a Lightning run calls while it trains, and what they call (calls the
        model resolves, not by name): the training and validation steps of its
        LightningModules, their `on_*` hooks (not the test or predict ones:
        `on_train_epoch_end`, `on_validation_epoch_end`, `on_save_checkpoint`) and their
        constructors; none of a class nothing builds. A Callback's hooks only when code
        builds the callback (`callbacks=[Latency()]`) or a config names it: a callback class
        exported from a package is often one a config may list (a latency estimate timed
        with CUDA events, listed in a commented-out line), not one the run builds."""
        found = self.__dict__.get("_lightning_training_reach")
        if found is not None:
            return found
        model = self.model
        unbuilt = self.unbuilt_classes()
        configured = {name for config in model.configs for _, name in config.classes}
        roots = []
        for fn in model.functions.values():
            if fn.owner is None or fn.owner in unbuilt:
                continue
            kind = model.class_kind(fn.owner)
            name = fn.summary.name
            if (
                kind & ClassKind.LIGHTNING_MODULE
                and (name in ("training_step", "validation_step") or name == "__init__")
            ) or (
                kind & (ClassKind.LIGHTNING_MODULE | ClassKind.CALLBACK)
                and name.startswith("on_")
                and "test" not in name
                and "predict" not in name
                and (
                    kind & ClassKind.LIGHTNING_MODULE
                    or self._built_somewhere(fn.owner)
                    or any(c.endswith(f".{fn.owner.rsplit('.', 1)[-1]}") for c in configured)
                )
            ):
                roots.append(fn.gkey)
        found = self.__dict__["_lightning_training_reach"] = self._resolved_closure(roots)
        return found

    def _resolved_closure(self, roots: Iterable[str]) -> set[str]:
        """`roots` and every function they call, directly or through others (calls the
        model resolves, not by name)."""
        queue = deque(roots)
        found = set(queue)
        while queue:
            node = queue.popleft()
            for target in self._callees(node, by_name=False):
                if target not in found:
                    found.add(target)
                    queue.append(target)
        return found

    def _tests_in_fit_run(self, path: str) -> bool:
        """Whether the project of `path` runs `trainer.test(...)` after `trainer.fit(...)`
        in one run (a script that trains, then tests the trained model on the same
        machine): its test loop runs on the TPU like its validation loop."""
        testing = self.__dict__.get("_testing_after_fit")
        if testing is None:
            testing = [
                where
                for where, module in self.model.modules.items()
                if not _is_test_path(where)
                and (
                    any(self._both_run(module, site) for site in module.scope.tests_after_fit)
                    or self._fits_then_tests(module)
                )
            ]
            self.__dict__["_testing_after_fit"] = testing
        return any(same_repository(where, path) for where in testing)

    def _untold_siblings_only(self) -> dict[str, str]:
        """Where no group of roots speaks for the code (a library's reading): the functions
        and module tops that only sibling scripts with Lightning 1's generic Trainer flags
        reach (Entry.flags, no shipped command giving them a TPU flag), in a repository with
        a script configured for TPUs (a TPU entry point, or a launching module that names a
        TPU: a `--tpu_cores` option), with why. Those scripts train elsewhere (README "What
        trains on a TPU"); what the repository's other launching scripts reach stays."""
        found = self.__dict__.get("_untold_siblings")
        if found is not None:
            return found
        found = self.__dict__["_untold_siblings"] = {}
        sites = [s for s in self._launch_sites() if not _is_test_path(s.path)]
        if not any(s.flags for s in sites):
            return found
        by_repository: dict[str, list[Entry]] = {}
        for site in sites:
            folder = os.path.dirname(os.path.abspath(site.path))
            key = _repository_of(folder) or self.directory(site.path)
            by_repository.setdefault(key, []).append(site)
        for group in by_repository.values():
            untold = [s for s in group if s.flags and not _runs_with_tpu_flags(s.path)]
            rest = [s for s in group if s not in untold]
            if not untold or not any(s.verdict == "tpu" or self._names_tpu(s.path) for s in rest):
                continue
            siblings = self._reach({r: s for s in untold for r in self._entry_roots(s)})
            others = self._reach({r: s for s in rest for r in self._entry_roots(s)})
            if not self._informative(others):
                continue  # (the other scripts build their model in a way the model misses)
            shown = sorted({os.path.basename(s.path) for s in untold})
            names = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
            why = (
                f"reached only from {names}, whose Trainer takes Lightning 1's generic flags"
                " and which no shipped command runs with a TPU flag (the repository's TPU"
                " path is another script)"
            )
            for node in siblings.roles:
                if node not in others.roles:
                    found[node] = why
        return found

    def _names_tpu(self, path: str) -> bool:
        module = self.model.modules.get(path)
        return module is not None and module.scope.names_tpu

    def _fits_then_tests(self, module: ModuleSummary) -> bool:
        """Whether a block of the module calls a helper that fits and then one that tests,
        helpers of other modules of the project (`best = train(**kw)` ... `if args.test:
        test(ckpt=best)`, each running a Trainer's `fit`/`test` in its body or through a
        function of its own module)."""
        return any(
            self._runs_trainer(module, pair[0], "fit")
            and self._runs_trainer(module, pair[1], "test")
            and self._both_run(module, pair[2:])
            for pair in module.scope.fit_test_calls
        )

    def _both_run(self, module: ModuleSummary, site: list[Any]) -> bool:
        """Whether a test call and the fit before it (ScopeFacts.tests_after_fit: test line,
        column, fit line, column) may both run in a TPU run: neither sits in a branch the
        project decides off (`if cfg.get("test"):` where every shipped config sets `test:
        false`, as for the findings in such a branch)."""
        return not (
            self._dead_reference(module, *site[:2], None)
            or self._dead_reference(module, *site[2:4], None)
        )

    def _runs_trainer(self, module: ModuleSummary, name: str, method: str) -> bool:
        if name.startswith("<"):
            return name == f"<{method}>"
        found = self.model.lookup(name, module)
        if not _is_function(found) or found.owner is not None:
            return False
        facts = found.module.scope
        return found.summary.qualname in (facts.fitters if method == "fit" else facts.testers)

    def _fit_hook(self, fn: _Function) -> bool:
        """A method of a Lightning class that `trainer.fit` calls (a step, a batch or start
        hook, `forward`): not inference, evaluation or an epoch's end."""
        name = fn.summary.name
        if name in PREDICT_HOOKS or name in TEST_HOOKS or is_end_hook(name):
            return False
        if not (name in LIGHTNING_HOOKS or (self.lightning1 and name in LIGHTNING1_HOOKS)):
            return False
        if fn.owner is None:
            return False
        kind = self.model.class_kind(fn.owner)
        if name == "forward" and self._steps_without_forward(fn.owner, kind):
            return False  # fit runs it only through a step's `self(x)`, a call of its own
        return kind.is_lightning

    @staticmethod
    def _called_test_hook(node: str, form: str, roots: dict[str, tuple[int, str]]) -> bool:
        """Whether a call of a root from code outside the reach trains it: a test hook the
        class calls itself (a `validation_step` that returns `self.test_step(batch, i)`)."""
        return form in ("self", "super") and roots[node][1].strip("`") in TEST_HOOKS

    def _classes_named_only_by(
        self, reached: dict[str, tuple[int, str]], expanded: set[str]
    ) -> list[tuple[str, str]]:
        """The project classes (not Lightning's) that reached epoch-end or test-hook functions
        name and no
        other code does (a top-level name, a base class list or a test counts as other code;
        a class a registry or a config may build is never one), each with a reached function
        that names it. `expanded` holds the classes already looked at."""
        configured = self._configured_classes()
        out = []
        for node, (role, why) in list(reached.items()):
            if node not in self.model.functions:
                continue
            if role != EPOCH and not (role == INFER and why.strip("`") in TEST_HOOKS):
                continue
            for use in self._uses(node):
                if use[0] not in ("name", "ref"):
                    continue
                for target in self._targets(node, use)[0]:
                    if not _is_class(target) or target.gkey in expanded:
                        continue
                    if self.model.class_kind(target.gkey).is_lightning or any(
                        gkey in configured for gkey in self.model.mro(target.gkey)
                    ):
                        continue
                    expanded.add(target.gkey)
                    if self._named_only_by(target.gkey, reached):
                        out.append((target.gkey, node))
        return out

    def _named_only_by(self, gkey: str, reached: dict[str, tuple[int, str]]) -> bool:
        cls = self.model.classes[gkey]
        for node, use in self._index_of_uses().get(cls.summary.name, ()):
            if use[0] not in ("name", "ref") or node in reached:
                continue
            fn = self._function(node)
            if fn is not None and fn.owner == gkey:
                continue  # `super(Cls, self)`, `Cls.CONSTANT` in its own methods
            module = self.model.modules.get(node.rpartition(":")[0])
            found = self.model.lookup(use[1], module) if module is not None else None
            if _is_class(found) and found.gkey == gkey:
                return False
        return True

    def _callees(self, node: str, by_name: bool = True) -> list[str]:
        """The functions a node may call or hand on (every class counted live; with
        `by_name`, any class's method of the name a value of unknown class calls)."""
        out = []
        for use in self._uses(node):
            out += self._callees_of_use(node, use, by_name)
        fn = self._function(node)
        if fn is not None:
            out += [inner.gkey for inner in self._nested(fn)]
        return out

    def _callees_of_use(self, node: str, use: list[str], by_name: bool = True) -> list[str]:
        """Memoised as `_targets` is (shared: read the list, do not change it)."""
        if use[0] == "meth":
            if not by_name:
                return []
            # `v.<name>(...)`: any class's method of the name, whoever calls it (the node
            # says only whether it passes arguments).
            bare = self._bare_call(node, use[1])
            meth_key = ("", "meth", use[1], bare)
            found = self._callee_memo.get(meth_key)
            if found is None:
                found = self._callee_memo[meth_key] = [
                    t.gkey
                    for t in self._methods_named(use[1])
                    if not (bare and t.module.scope.needs.get(t.summary.key))
                ]
            return found
        memo_key = (node, use[0], use[1], by_name)
        found = self._callee_memo.get(memo_key)
        if found is not None:
            return found
        recursion = self.model._recursion
        outer = recursion.take_stand_in_flag()
        targets, name = self._targets(node, use)
        used = recursion.take_stand_in_flag()
        recursion.restore_stand_in_flag(outer or used)
        out = [t.gkey for t in targets if _is_function(t)]
        if name is not None and by_name:
            bare = self._bare_call(node, name)  # `_may_call`, asked once for the use
            out += [
                t.gkey
                for t in self._methods_named(name)
                if t.summary.cls is not None
                and not (bare and t.module.scope.needs.get(t.summary.key))
            ]
        if not used:
            self._callee_memo[memo_key] = out
        return out

    def _methods_named(self, name: str) -> list[_Function]:
        index = self.__dict__.get("_methods_index")
        if index is None:
            index = {}
            for fn in self.model.functions.values():
                if fn.summary.cls is not None:
                    index.setdefault(fn.summary.name, []).append(fn)
            self.__dict__["_methods_index"] = index
        return index.get(name, [])

    # --- truths ------------------------------------------------------------------------------

    def truth(
        self, value: Truth, module: ModuleSummary, owner: str | None, depth: int = 0
    ) -> Truth:
        """A condition's value on a TPU, with the calls and attributes it names resolved
        across the project: True, False or None."""
        if value is None or isinstance(value, bool):
            return value
        if depth > 8:
            return None
        head = value[0]
        d = depth + 1
        if head == "not":
            inner = self.truth(value[1], module, owner, d)
            return None if inner is None else not inner
        if head == "and":
            parts = [self.truth(v, module, owner, d) for v in value[1:]]
            if any(p is False for p in parts):
                return False
            return True if all(p is True for p in parts) else None
        if head == "or":
            parts = [self.truth(v, module, owner, d) for v in value[1:]]
            if any(p is True for p in parts):
                return True
            return False if all(p is False for p in parts) else None
        # The depth is part of the question (an answer cut short at depth 8 is another
        # answer), and one that used a cycle's stand-in is not kept: answers must not depend
        # on the order of questions (tpulint.analysis.recursion).
        key = (module.path, tuple(map(str, value)), owner, depth)
        if key in self._truths:
            return self._truths[key]
        result, keep = self.model._recursion.answer(
            ("truth", key), lambda: self._atom_truth(value, module, owner, d), None
        )
        if keep:
            self._truths[key] = result
        return result

    def _atom_truth(
        self, value: list[Any], module: ModuleSummary, owner: str | None, d: int
    ) -> Truth:

        head = value[0]
        if head == "main":
            # `__name__ == "__main__"` in a function: false wherever the file is imported; a
            # file that starts training itself may be the script that runs
            return None if module.scope.launches else False
        if head == "tensor_param":
            node = f"{module.path}:{value[1]}"
            if len(value) > 3 and self._passed_only_literals_or_host(node, value[2]):
                return False
            passed = self.model.param_value(node, value[2])
            if passed is None or passed.tensor:
                return True if passed is not None else None
            if passed.kind in ("device", "cpu"):
                return True
            return False if passed.kind in ("number", "host", "numpy") else None
        if head == "passed":
            passed = self._passed_truth(f"{module.path}:{value[1]}", value[2])
            # A parameter filled in under `if p is None:` is not None after it either way.
            return passed if len(value) == 3 or passed else None
        if head == "flag":
            return self._flag_truth(f"{module.path}:{value[1]}", value[2], value[3])
        if head == "call":
            form, target = value[1], value[2]
            found = self.model.resolve_call(module, owner, form, target)
            if len(found) != 1 or not _is_function(found[0]):
                return None
            fn = found[0]
            returns = fn.module.scope.returns.get(fn.summary.key)
            if not returns:
                return None
            return self._all(returns, fn.module, fn.owner, d)
        if head == "attr":
            stored = self._attribute_stores(value[1], owner)
            if not stored:
                return None
            results = {self.truth(t, m, o, d) for t, m, o in stored}
            return results.pop() if len(results) == 1 else None
        if head == "attr_passed":
            # `self.x is not None` where every assignment of `x` stores a None-default
            # parameter of a constructor or method (`self.x = x`): what the calls pass.
            stored = self._attribute_stores(value[1], owner)
            if stored and all(
                t is False
                and value[1]
                not in m.scope.bool_stores.get(self.model.classes[g].summary.qualname, ())
                for t, m, g in stored
            ):
                # Every store that happens in training is `self.x = None` (`self.stats =
                # {...}` only in a method nothing calls): never anything else.
                return False
            if not stored or not all(_is_none_flag(t) for t, _, _ in stored):
                return None
            results = {self._passed_truth(f"{m.path}:{t[1]}", t[2]) for t, m, _ in stored}
            return results.pop() if len(results) == 1 else None
        if head == "option":
            return self._option_truth(value[1], module.path, *value[2:3])
        if head == "switch":
            switched = self._switch_values(value[1], module.path)
            if switched is None:
                return None
            answers = {v == value[2] if len(value) > 2 else bool(v) for v in switched}
            return answers.pop() if len(answers) == 1 else None
        if head == "hparam":
            # `self.hparams.use_x` of a constructor's `use_x=False` saved by
            # `save_hyperparameters()`: a command-line switch of that name when one decides
            # it (`Model(**vars(args))`), else what the constructions pass (or its default)
            switched = self._switch_values(value[2], module.path)
            if switched is not None:
                answers = {bool(v) for v in switched}
                return answers.pop() if len(answers) == 1 else None
            if self._argparse_built(value[2], module.path):
                return None
            return self._flag_truth(f"{module.path}:{value[1]}", value[2], value[3])
        if head == "attr_option":
            # `self.kind == "l2"` where every assignment of `self.kind` reads one option
            stored = self._attribute_stores(value[1], owner)
            if stored and all(self._fit_stage(t, m, g) for t, m, g in stored):
                # `self.stage == "validate"` of `self.stage = stage` in `setup`: "fit" in
                # training (Lightning's Trainer.fit calls `setup(stage="fit")`); a script
                # that tests after fitting runs `setup("test")` on the same TPU
                if value[2] == "test" and self._tests_in_fit_run(module.path):
                    return None
                return value[2] == "fit"
            if not stored or not all(
                isinstance(t, list) and len(t) == 2 and t[0] == "option" for t, _, _ in stored
            ):
                return None
            results = {self._option_truth(t[1], m.path, value[2]) for t, m, _ in stored}
            return results.pop() if len(results) == 1 else None
        if head == "equals":
            return self._equals_truth(f"{module.path}:{value[1]}", value[2], value[3], value[4])
        if head == "literal_name":
            return self._literal_name_truth(value)
        if head == "option_order":
            return self._option_order_truth(value[1], module.path, value[2], value[3])
        if head == "attr_number":
            return self._attr_number_truth(value[1], owner, value[2], value[3])
        if head == "glob":
            assigned = module.scope.globals.get(value[1])
            if not assigned:
                return None
            return self._all(assigned, module, None, d)
        return None

    def _literal_or_order_reason(
        self, truth: Truth, module: ModuleSummary, owner: str | None, how: str, text: str
    ) -> str | None:
        """The reason of a region that asks only a name bound to one bool literal
        (`use_tpus = False`) or a config option ordered against a number (`cfg["w"] > 0`)."""
        asked = _asked_option(truth, "literal_name") or _asked_option(truth, "option_order")
        if asked is None:
            return None
        if asked[0] == "literal_name":
            calls = f"`{asked[1]}` is bound only to {asked[2]!r} in its scope"
            return _calls_reason(how, text, calls)
        values = self.option_values(asked[1], module.path) or []
        shown = ", ".join(sorted({repr(v) for v in values}))
        given = self.truth(asked, module, owner)
        state = "true" if given else "false"
        calls = (
            f"the project's config classes and files set `{asked[1]}` only to {shown}, which"
            f" makes `{asked[1]} {asked[2]} {asked[3]!r}` {state}"
        )
        return _calls_reason(how, text, calls)

    def _stage_asked(self, truth: Truth, owner: str | None) -> str | None:
        """The attribute when a region's condition compares the stage `setup` stored
        (`self.stage == "validate"`, see `_fit_stage`), for its reason."""
        todo = [truth]
        while todo:
            current = todo.pop()
            if not isinstance(current, list) or not current:
                continue
            if current[0] == "attr_option":
                stored = self._attribute_stores(current[1], owner)
                if stored and all(self._fit_stage(t, m, g) for t, m, g in stored):
                    return str(current[1])
            elif current[0] in ("and", "or", "not"):
                todo.extend(current[1:])
        return None

    def _fit_stage(self, truth: Truth, module: ModuleSummary, gkey: str) -> bool:
        """Whether an attribute's store is the stage a LightningModule's or DataModule's
        `setup(self, stage)` was given (`["fit_stage", key]`), and no method of the project
        calls that `setup` (a script's call before `trainer.fit` is followed by Lightning's):
        in a training run, Lightning 2's `Trainer.fit` sets `state.fn` to
        `TrainerFn.FITTING` ("fit") and `_call_setup_hook` passes it as `stage`
        (lightning/pytorch/trainer/trainer.py:580, call.py:86-110 in 2.6; Lightning 1.x
        passed "fit" too)."""
        if not (isinstance(truth, list) and len(truth) == 2 and truth[0] == "fit_stage"):
            return False
        kind = self.model.class_kind(gkey)
        if not kind & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE):
            return False
        fn = self._function(f"{module.path}:{truth[1]}")
        if fn is None:
            return False
        # The project's own `model.setup(stage=...)` in a script, before `trainer.fit`, is
        # followed by Lightning's; one in a method (a hook, a step) may come during training.
        for caller in self.callers(fn.gkey):
            if _is_test_path(caller.rpartition(":")[0]):
                continue
            calling = self._function(caller)
            if calling is not None and calling.summary.cls is not None:
                return False
        return True

    def cannot_complete(self, fn: _Function) -> list[str] | None:
        """Why `fn` cannot complete on a TPU, as the chain of calls it makes on every run
        (ScopeFacts.sure_calls) down to a package whose calls cannot run on one (`["calls
        `self.ctx.rasterize`", "calls `dr.rasterize` (nvdiffrast's CUDA rasteriser)"]`);
        None when it may. Only calls the project model resolves to one function are followed:
        a call under a branch or in a `try` keeps its caller."""
        node = f"{fn.module.path}:{fn.summary.key}"
        if node in self._incomplete:
            return self._incomplete[node]
        result, keep = self.model._recursion.answer(
            ("complete", node), lambda: self._cannot_complete(fn), None
        )
        if keep:
            self._incomplete[node] = result
        return result

    def _cannot_complete(self, fn: _Function) -> list[str] | None:
        calls = fn.module.scope.sure_calls.get(fn.summary.key, ())
        for form, target, text in calls:
            if form == "pkg":
                return [f"calls `{target}` ({text})"]
            if form == "assert":
                return [f"asserts `{target}` ({text})"]
            if form == "name":
                extension = self._cuda_extension(target, fn.module)
                if extension is not None:
                    return [f"calls `{text}` ({extension})"]
            if form == "self" and fn.owner is not None:
                held = self._held_no_xla_module(fn.owner, target)
                if held is not None:
                    return [f"calls `{text}`, a `{held[0]}` ({held[1]})"]
        # A step is judged by its own calls, not by the modules it runs (a model whose forward
        # needs a CUDA kernel is ported by replacing the kernel), unless what it cannot
        # complete is a package with no XLA backend: its data (a DGL graph batch) are that
        # package's, and no kernel replaced ports them.
        hook = (
            fn.owner is not None
            and fn.summary.name in LIGHTNING_HOOKS
            and self.model.class_kind(fn.owner).is_lightning
        )
        for form, target, text in calls:
            if form in ("pkg", "assert"):
                continue
            if form == "name":
                found = self.model.lookup(target, fn.module)
                if not _is_function(found) and target.endswith(".apply"):
                    # `Fn.apply(x)` of an autograd Function runs its `forward`.
                    found = self._autograd_forward(target[: -len(".apply")], fn.module)
                    if found is not None:
                        inner = self.cannot_complete(found)
                        if inner is not None and (not hook or _no_xla_chain(inner)):
                            return [f"calls `{text}`", *inner]
                        continue
                found = found if _is_function(found) else None
            elif fn.owner is None:
                continue
            else:
                resolved = self.model.resolve_call(
                    fn.module, fn.owner, form, target, virtual=form == "self"
                )
                found = resolved[0] if len(resolved) == 1 and _is_function(resolved[0]) else None
            if found is None or found is fn:
                continue
            if found.summary.name in ("forward", "__call__") and not text.endswith(
                f".{found.summary.name}"
            ):
                # Calling a module (`self.renderer(batch)`) stops here: a model whose forward
                # needs a CUDA kernel is ported by replacing the kernel, and the step that
                # calls it is the TPU's again.
                continue
            inner = self.cannot_complete(found)
            if inner is not None and (not hook or _no_xla_chain(inner)):
                return [f"calls `{text}`", *inner]
        return None

    def _cuda_extension(self, target: str, module: ModuleSummary) -> str | None:
        """What a call's qualified name (`ext.op`, `.ext.op` of the module's own name,
        `pkg.kernels.ext.op`) calls when it is an op of a CUDA extension the project builds
        (ScopeFacts.cuda_extensions, cuda_extension_modules); None otherwise."""
        described = "a CUDA extension the project builds from its `.cu` sources"
        parts = target.lstrip(".").split(".")
        if len(parts) < 2:
            return None
        if target.startswith("."):
            return described if parts[0] in module.scope.cuda_extensions else None
        for i in range(len(parts) - 1, 0, -1):
            owner = self.model.module_named(".".join(parts[:i]), module)
            if owner is not None:
                if parts[i] in owner.scope.cuda_extensions and i < len(parts) - 1:
                    return described
                break
        built = self._cuda_extension_modules()
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in built:
                return described
        return None

    def _held_no_xla_module(self, owner: str, attr: str) -> tuple[str, str] | None:
        """The class and package when every assignment of `self.<attr>` in the class `owner`
        (or a base) builds a module of a package with no XLA backend (`self.conv =
        GraphConv(...)` of DGL: a graph layer takes the package's graphs); None otherwise."""
        built: list[str] = []
        for gkey in self.model.mro(owner):
            cls = self.model.classes.get(gkey)
            if cls is None:
                continue
            for entry in cls.module.scope.held:
                if entry[0] not in ("one", "list") or entry[1:3] != [cls.summary.qualname, attr]:
                    continue
                if entry[0] == "list":
                    return None
                built.append(str(entry[3]))
        if not built:
            return None
        described = [no_xla_package(name) for name in built]
        if any(d is None for d in described):
            return None
        return built[0], str(described[0])

    def _cuda_extension_modules(self) -> frozenset[str]:
        """The modules the project's setup scripts build with `CUDAExtension(...)`."""
        memo = self.__dict__.get("_extension_modules")
        if memo is None:
            memo = frozenset(
                name
                for module in self.model.modules.values()
                for name in module.scope.cuda_extension_modules
            )
            self.__dict__["_extension_modules"] = memo
        return memo

    def _autograd_forward(self, target: str, module: ModuleSummary) -> _Function | None:
        """The `forward` that `Fn.apply(...)` runs when `Fn` is a project subclass of
        `torch.autograd.Function`."""
        found = self.model.lookup(target, module)
        if not _is_class(found):
            return None
        gkey = found.gkey
        if not any(
            base in _AUTOGRAD_FUNCTIONS
            for key in self.model.mro(gkey)
            if key in self.model.classes
            for base in self.model.classes[key].summary.bases
        ):
            return None
        resolved = self.model.resolve_call(found.module, gkey, "self", "forward", virtual=False)
        return resolved[0] if len(resolved) == 1 and _is_function(resolved[0]) else None

    def _attribute_stores(
        self, name: str, owner: str | None
    ) -> list[tuple[Truth, ModuleSummary, str]] | None:
        """What every assignment of `self.<name>` stores, as truths, in the class `owner`, its
        bases and the subclasses `self` may be an instance of, with the module and class of
        each; None when the attribute may hold anything else (set from outside its class, by
        the framework, by `setattr(self, name, ...)`, or assigned something that is no
        condition)."""
        if owner is None or name in self._foreign_stores() or name in _FRAMEWORK_SET_ATTRIBUTES:
            return None
        stored: list[tuple[Truth, ModuleSummary, str]] = []
        for gkey in [*self.model.mro(owner), *self.model.subclasses(owner)]:
            cls = self.model.classes.get(gkey)
            if cls is None:
                continue
            facts = cls.module.scope.attributes.get(cls.summary.qualname, {})
            if "*" in facts:
                return None  # `setattr(self, name, ...)`: any attribute
            assigned = facts.get(name)
            if assigned is None and name in cls.summary.attributes:
                return None  # assigned something that is no device test
            setters = cls.module.scope.setters.get(cls.summary.qualname, {}).get(name)
            if assigned and setters:
                # A store in a method only code that never trains calls (a scoring CLI's
                # `model.enable_context()`), or that nothing calls at all, does not happen
                # in training.
                assigned = list(assigned)
                for key, value in setters:
                    node = f"{cls.module.path}:{key}"
                    if value in assigned and (
                        self._called_only_off_training(node) or self._never_called(node)
                    ):
                        assigned.remove(value)
            stored += [(t, cls.module, gkey) for t in assigned or ()]
        return stored

    def _constructed_flag(self, truth: Truth, owner: str | None) -> str | None:
        """The attribute name when a region asks only `self.<name>` (or its negation, or
        whether it is None) and every assignment of it stores a parameter the calls decide
        (`self.fused = fused`): its truth comes from the constructions, not from the TPU."""
        while isinstance(truth, list) and truth and truth[0] == "not":
            truth = truth[1]
        if not (isinstance(truth, list) and truth and truth[0] in ("attr", "attr_passed")):
            return None
        stored = self._attribute_stores(truth[1], owner)
        if stored and all(isinstance(t, list) and t and t[0] == "flag" for t, _, _ in stored):
            return str(truth[1])
        return None

    def _foreign_stores(self) -> frozenset[str]:
        """The attribute names the project assigns on values other than `self`."""
        found = self.__dict__.get("_foreign")
        if found is None:
            found = frozenset(
                name for m in self.model.modules.values() for name in m.scope.foreign_stores
            )
            self.__dict__["_foreign"] = found
        return found

    def _passed_only_literals_or_host(self, node: str, index: int) -> bool:
        """Whether every call of function `node` (all of them known: `_call_arguments`)
        leaves parameter `index`, whose default is a literal, to it or passes a literal or a
        host value (a Python number, `x.size(1)`): never a tensor."""
        fn = self._function(node)
        if fn is None or index >= len(fn.summary.params):
            return False
        param = fn.summary.params[index]
        arguments = self._call_arguments(node, param)
        if not arguments:
            return False
        if all(a == _DEFAULT or (isinstance(a, tuple) and a[0] == "literal") for a in arguments):
            return True
        passed = self.model.param_value(fn.gkey, index, leaving_out=None, passing=True)
        return passed is not None and not passed.tensor and passed.kind in ("number", "host")

    def _passed_truth(self, node: str, param: str) -> Truth:
        """`p is not None` of a None-default parameter of function `node`: False when every
        call leaves it to its default, True when every call passes it something that is
        neither the literal None nor a value that may be None (the caller's own optional
        parameter forwarded, a local that may hold None); else unknown. The function's own
        calls under `if p is not None` count only when another call passes a value: with
        none, they never run (`_sparse_topk(x, k=2 * k)` inside that branch)."""
        fn = self._function(node)
        recursive = fn is not None and self._calls_itself(fn)
        outside = self._call_arguments(node, param, guarded="passed") if recursive else None
        if outside is not None:
            outside = [self._own_passed(a) for a in outside]
            if all(a in (_DEFAULT, ("literal", None)) for a in outside):
                return False
        arguments = self._call_arguments(node, param)
        if arguments is None:
            return None
        arguments = [self._own_passed(a) for a in arguments]
        if all(a in (_DEFAULT, ("literal", None)) for a in arguments):
            return False
        if all(
            a == _VALUE
            or (isinstance(a, tuple) and a[0] == _SELF_ATTRIBUTE)
            or (isinstance(a, tuple) and a[0] == "literal" and a[1] is not None)
            for a in arguments
        ):
            return True
        return None

    def _calls_itself(self, fn: _Function) -> bool:
        return any(
            caller.gkey == fn.gkey for caller, _, _ in self.model._callers().get(fn.gkey, [])
        )

    def _own_passed(self, argument: Any) -> Any:
        """An argument as `_passed_truth` reads it: a caller's own parameter passed on is a
        value (`_VALUE`), or, when it may be None (it defaults to None), what the caller's
        calls pass it: a value when they all pass one, None when none does."""
        if not (isinstance(argument, tuple) and argument[0] == _OWN_PARAM):
            return argument
        _, caller, name, kind = argument
        if kind != _MAYBE_NONE:
            return kind
        given, _ = self.model._recursion.answer(
            ("passed", caller.gkey, name),
            lambda: self._passed_truth(caller.gkey, name),
            None,
        )
        if given is None:
            return _MAYBE_NONE
        return _VALUE if given else ("literal", None)

    def _argparse_built(self, name: str, path: str) -> bool:
        """Whether users may set the hyperparameter `name` of a module in `path`'s
        repository from the command line in ways its constructions do not show: a
        LightningCLI of the repository (any `--model.<name>` flag sets it), or a parser
        option of that name (`add_argument("--name")`, which a `Model(**vars(args))` or
        `from_argparse_args` may hand on)."""
        for where, module in self.model.modules.items():
            if not same_repository(where, path):
                continue
            if name in module.scope.cli_options:
                return True
            if any(launch[0] == "cli" for launch in module.scope.launches):
                return True
        return False

    def _flag_truth(self, node: str, param: str, default: bool | None) -> Truth:
        """`p` (its truth) of a parameter of function `node` that defaults to None, True or
        False: the one truth every call gives it, by leaving it to its default or passing a
        literal None, True or False; unknown when a call passes anything else."""
        fn = self._function(node)
        if fn is not None and self._calls_itself(fn):
            # its own calls under `if p:` run only once another call made `p` true
            outside = self._call_arguments(node, param, guarded="flag")
            literal = outside and all(
                a == _DEFAULT or (isinstance(a, tuple) and a[0] == "literal") for a in outside
            )
            if literal and not any(
                bool(default) if a == _DEFAULT else bool(a[1]) for a in outside or ()
            ):
                return False
        arguments = self._call_arguments(node, param)
        if arguments is None:
            return None
        values = set()
        for argument in arguments:
            if argument == _DEFAULT:
                values.add(bool(default))
            elif isinstance(argument, tuple) and argument[0] == _FORWARDED:
                # `Encoder(dim, fused=fused)` in a function whose own `fused` is a flag
                _, node_of, name, default_of = argument
                # One memo and one cycle cut for every recursive question of the model
                # (tpulint.analysis.recursion): a cycle of forwarding constructors is unknown.
                given, _ = self.model._recursion.answer(
                    ("flag", node_of, name, default_of),
                    lambda n=node_of, p=name, f=default_of: self._flag_truth(n, p, f),
                    None,
                )
                if given is None:
                    return None
                values.add(bool(given))
            elif isinstance(argument, tuple) and argument[0] == _OWN_PARAM:
                return None  # (the caller's own parameter: a value of any truth)
            elif isinstance(argument, tuple) and argument[0] == _SELF_ATTRIBUTE:
                # `f(x, self.unbounded)`: the truth the caller's class gives its attribute
                _, name, caller = argument
                given = self.truth(["attr", name], caller.module, caller.owner)
                if given is None:
                    return None
                values.add(bool(given))
            elif isinstance(argument, tuple):
                values.add(bool(argument[1]))
            else:
                return None
        return values.pop() if len(values) == 1 else None

    def option_values(self, name: str, path: str) -> list[Any] | None:
        """The values a config option `name` read by the code of `path` (`self.cfg.name`,
        `config["name"]`) may have in its repository: the defaults its config classes
        declare (`name: bool = False`; at least one in the module of `path`, which reads
        its own config class), what the config files set it to, and
        the literals code passes as a keyword or dict key of that name (a `cfg.get("name",
        False)` declares its default where it reads the key). Without a declared default,
        what the YAML configs set when at least one sets the key, no config class of another
        module declares it and no text file spells it. None when a value is not known: no
        declared default nor such configs, a default or a setting that is no literal, a
        command-line option of that name (users set it), an assignment by code."""
        memo = self.__dict__.setdefault("_options", {})
        repository = _repository_of(os.path.dirname(os.path.abspath(path))) or path
        if (name, path) in memo:
            return memo[(name, path)]
        defaults = self._config_defaults(name, path)
        if defaults is not None:
            memo[(name, path)] = defaults
            return defaults
        values: list[Any] | None = []
        declared = elsewhere = got = False
        for where, kind, found in self._option_index().get(name, ()):
            if not same_repository(where, path):
                continue
            if kind == "set":
                values = None
                break
            # The default counts from the reading module's own config class only (`class
            # Config: interleave: bool = False` beside the code): a field of that name
            # elsewhere may belong to another object (a model config read from a hub's JSON).
            declared = declared or (kind == "field" and where == path)
            elsewhere = elsewhere or (kind == "field" and where != path)
            if kind == "get" and where != path:
                continue  # (another file's `get` of that key: another object's default)
            got = got or kind == "get"
            values += found
        configured: list[Any] = []
        shipped = False  # (whether the repository ships YAML configs at all)
        if values is not None:
            for config in self.model.configs:
                if same_repository(config.path, path):
                    configured += config.keys.get(name, [])
                    shipped = True
            values += configured
        # `cfg.get("use_map", False)` declares the default where it reads the key, for a
        # repository whose configs are shipped (a package's users bring their own).
        declared = declared or (got and shipped)
        if values is None or "?" in values:
            values = None
        elif not declared and (
            elsewhere or not configured or self._spelled_in_texts(name, repository)
        ):
            # No default declared: a key the repository's YAML configs set (`use_pbc:
            # false`), which no launcher, JSON or other text config spells and no config
            # class of another module declares (another object's, which a hub's JSON may
            # fill in), is what they set.
            values = None
        memo[(name, path)] = values
        return values

    def _config_defaults(self, name: str, path: str) -> list[Any] | None:
        """The values of an option a yacs-style default config of the repository declares
        (`_C.LOSS.KIND = "focal"`, ScopeFacts.config_defaults), matched by the last key
        without regard to case (`cfg.LOSS.KIND`, `config["loss"]["kind"]` after lower-casing
        the keys): its defaults, the config files' values of that key and the literals
        code passes by that name. None when no such default is declared, or when a value
        is not known: any other assignment of the key (an experiment config's
        `cfg.LOSS.KIND = ...`), a command-line option of that name or a `merge_from_list`
        of the command line, a dotted string naming the key (`"LOSS.KIND"` in an options
        list), a default or a setting that is no literal."""
        lowered = name.lower()
        values: list[Any] = []
        declared = False
        modules = self.model.modules
        root = _import_root(os.path.dirname(os.path.abspath(path)))

        def same_repository(where: str, other: str) -> bool:
            # The repository, or without one the folder its imports start from: a yacs
            # project's default config and its model are often sibling folders of `src/`.
            if _same_repository(where, other):
                return True
            if _repository_of(os.path.dirname(os.path.abspath(where))) is not None:
                return False
            return os.path.abspath(where).startswith(root + os.sep)

        for where, module in modules.items():
            found = module.scope.config_defaults.get(lowered)
            if found is not None and same_repository(where, path):
                declared = True
                values += found
        if not declared:
            return None
        for other, entries in self._option_index().items():
            if other.lower() != lowered and other != "*":
                continue
            for where, kind, found in entries:
                if not same_repository(where, path):
                    continue
                if kind == "set":
                    return None
                if kind == "keyword":
                    values += found
        for where, module in self.model.modules.items():
            if same_repository(where, path) and any(
                "." in text and text.rsplit(".", 1)[-1].lower() == lowered
                for text in module.scope.strings
            ):
                return None
        for config in self.model.configs:
            if same_repository(config.path, path):
                for key, found in config.keys.items():
                    if key.lower() == lowered:
                        values += found
        return None if "?" in values else values

    def _option_index(self) -> dict[str, list[tuple[str, str, list[Any]]]]:
        """Option name -> (file, "field" | "keyword" | "set", values) for what each file
        declares, passes or sets by that name (see `option_values`)."""
        index = self.__dict__.get("_option_index_cache")
        if index is None:
            index = {}
            for where, module in self.model.modules.items():
                facts = module.scope
                for name in (*facts.cli_options, *facts.foreign_stores):
                    index.setdefault(name, []).append((where, "set", []))
                for name, defaults in facts.fields.items():
                    index.setdefault(name, []).append((where, "field", list(defaults)))
                for name, defaults in facts.got_defaults.items():
                    index.setdefault(name, []).append((where, "get", list(defaults)))
                for name, codes in facts.keyword_values.items():
                    passed = self._keyword_option_values(where, name, codes)
                    index.setdefault(name, []).append((where, "keyword", passed))
            self.__dict__["_option_index_cache"] = index
        return index

    def _keyword_option_values(self, where: str, name: str, codes: list[Any]) -> list[Any]:
        """What the keywords and string dict keys `name` of the file `where` give an option
        of that name: their literals, "?" for another value; a value passed by keyword to a
        call the project model resolves to one function (not a constructor) that declares a
        parameter `name` gives none (`loss_fn(netG=self.netG)` of `def loss_fn(netG):` binds
        a parameter, no config key: a function storing it in a config, `cfg["netG"] =
        netG`, is an assignment, which keeps the option open by itself)."""
        passed: list[Any] = []
        for code in codes:
            if isinstance(code, list) and code[0] == "l":
                passed.append(code[1])
            elif code == ["k", name]:
                continue  # (`Gate(use_x=cfg.use_x)`: the option passed on under its name)
            elif not (
                isinstance(code, list)
                and code[0] == "c"
                and self._keyword_binds_parameter(where, name, code[1])
            ):
                passed.append("?")
        return passed

    def _keyword_binds_parameter(self, where: str, name: str, line: int) -> bool:
        """Whether every call on `line` of the file `where` that passes `name` by keyword
        (at least one, in a function of the file) resolves to one project function, no
        class or constructor, with a parameter `name`."""
        module = self.model.modules.get(where)
        if module is None:
            return False
        seen = False
        for fn in self.model._module_functions.get(id(module), {}).values():
            for call in fn.summary.calls:
                if call.line != line or name not in call.keywords:
                    continue
                found = self.model.resolve_call(module, fn.owner, call.form, call.target)
                if not (
                    len(found) == 1
                    and _is_function(found[0])
                    and found[0].summary.name != "__init__"
                    and name in found[0].summary.params
                ):
                    return False
                seen = True
        return seen

    def _switch_value(self, name: str, path: str) -> Any:
        """The one value `_switch_values` knows for `args.<name>`, None when it knows none
        or more than one."""
        values = self._switch_values(name, path)
        return values[0] if values is not None and len(values) == 1 else None

    def _switch_values(self, name: str, path: str) -> list[Any] | None:
        """The values `args.<name>` holds in every run of the repository of `path` when
        `name` is a command-line switch (`add_argument("--use-ema", action="store_true")`,
        ScopeFacts.cli_switches): its default, when every declaration of that dest is such a
        switch with that default and nothing may pass it: no README or shell command line,
        no JSON, TOML or other text config, no YAML config word spells it (`--use_ema`,
        `--use-ema`), no string of the code does (`"--use_ema"` in an argument list), no
        code passes that keyword or dict key another value (`parser.set_defaults(use_ema=
        True)`) or stores it (`args.use_ema = True`). In a repository that loads YAML files
        into the parsed command line (ScopeFacts.yaml_args: `--conf` with an
        `argparse.Action` that sets what the file holds), any option with a literal default
        (`--num-bond-classes`, `default=5`) is what the YAML configs set it to: their literal
        when every config that sets options of the parser (three or more of its dests) sets
        it, else that and the default (`_yaml_option_values`). A module's hyperparameters
        filled from the command line read the same (`self.hparams.use_ema`). None otherwise
        (unknown)."""
        memo = self.__dict__.setdefault("_switches", {})
        repository = _repository_of(os.path.dirname(os.path.abspath(path))) or path
        if (name, repository) in memo:
            return memo[(name, repository)]
        modules = [
            module for where, module in self.model.modules.items() if same_repository(where, path)
        ]
        from_yaml = any(module.scope.yaml_args for module in modules)
        parsed: list[Any] = []  # what the parser leaves the dest
        given: list[Any] = []  # what code passes or stores
        declared = False
        for module in modules:
            facts = module.scope
            table = facts.cli_defaults if from_yaml else facts.cli_switches
            if name in facts.foreign_stores:
                given.append("?")
            elif name in table:
                parsed += table[name]
                declared = declared or name in facts.cli_options
            elif name in facts.cli_options:
                parsed.append("?")  # (declared elsewhere as an option that takes a value)
            for code in facts.keyword_values.get(name, ()):
                if code == ["o", name]:
                    continue  # (`Net(use_ema=args.use_ema)`: the switch itself passed on)
                if from_yaml and isinstance(code, list) and code[0] == "f" and code[2] == name:
                    # `Gnn(use_x=use_x)` of a parameter of that name: what its callers pass
                    # by name (recorded), or its default
                    given.append(code[3])
                    continue
                given.append(code[1] if isinstance(code, list) and code[0] == "l" else "?")
        if from_yaml and declared:
            configured = self._yaml_option_values(name, path, modules)
            if configured is None:
                parsed.append("?")
            elif configured[1]:
                parsed = configured[0]  # (every config of the parser sets it)
            else:
                parsed += configured[0]
        values = parsed + given
        kinds = {(type(v), v) for v in values if not isinstance(v, (list, dict))}
        known = (
            declared
            and bool(kinds)
            and len(values) == sum(not isinstance(v, (list, dict)) for v in values)
            and "?" not in values
        )
        value: list[Any] | None = None
        if known:
            value = [v for _, v in kinds]
            dashed = name.replace("_", "-")
            lines = _run_commands(
                repository if os.path.isdir(repository) else os.path.dirname(repository)
            )
            if (
                self._spelled_in_texts(name, repository)
                or self._spelled_in_texts(dashed, repository)
                or any(f"--{name}" in line or f"--{dashed}" in line for line in lines)
                or (
                    not from_yaml
                    and any(
                        (name in config.words or dashed in config.words)
                        and same_repository(config.path, path)
                        for config in self.model.configs
                    )
                )
            ):
                value = None
        memo[(name, repository)] = value
        return value

    def _yaml_option_values(
        self, name: str, path: str, modules: list[Any]
    ) -> tuple[list[Any], bool] | None:
        """What the YAML configs of the repository of `path` set the command-line option
        `name` to (a repository loading them into its parsed command line), and whether
        every config that sets options of the parser (three or more of the dests `modules`
        declare) sets it. None when one sets it to no literal."""
        dests: set[str] = set()
        for module in modules:
            dests.update(module.scope.cli_defaults)
        values: list[Any] = []
        parsers = 0
        everywhere = True
        for config in self.model.configs:
            if not same_repository(config.path, path):
                continue
            found = config.keys.get(name)
            values += found or []
            if len(dests & config.keys.keys()) >= 3:
                parsers += 1
                everywhere = everywhere and found is not None
        if "?" in values:
            return None
        return values, everywhere and parsers > 0

    def _option_truth(self, name: str, path: str, *compared: Any) -> Truth:
        """`cfg.name` (its truth), or `cfg.name == literal` when `compared` holds the
        literal: the one answer every value the repository may give the option agrees on."""
        values = self.option_values(name, path)
        if not values:
            return None
        truths = {v == compared[0] if compared else bool(v) for v in values}
        return truths.pop() if len(truths) == 1 else None

    def _literal_name_truth(self, value: list[Any]) -> Truth:
        """`if use_tpus:` of a name its scope binds only to one bool literal
        (ScopeFacts `["literal_name", name, literal, where]`): that literal; at a module's
        top level only when no module of the project stores an attribute of that name on
        another object (`script.use_tpus = True`, `setattr(script, "use_tpus", ...)`)."""
        _, name, literal, where = value
        if where == "module" and any(
            name in module.scope.foreign_stores for module in self.model.modules.values()
        ):
            return None
        return bool(literal)

    def _option_order_truth(self, name: str, path: str, sign: str, number: Any) -> Truth:
        """`cfg["train"]["ff_weight"] > 0`: the one answer every value the repository may
        give the option (`option_values`) agrees on, when they are all numbers (a None, a
        string or a bool keeps it open)."""
        values = self.option_values(name, path)
        if not values or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            return None
        compare = {
            ">": lambda v: v > number,
            ">=": lambda v: v >= number,
            "<": lambda v: v < number,
            "<=": lambda v: v <= number,
        }[sign]
        truths = {compare(v) for v in values}
        return truths.pop() if len(truths) == 1 else None

    def _deciding_part(
        self, truth: Truth, value: bool, module: ModuleSummary, owner: str | None
    ) -> list[Any] | None:
        """The operand that decides a conjunction false (a disjunction true), for a region's
        reason: `k is not None` of `k is not None and k < n` when no call passes `k`."""
        if not isinstance(truth, list) or truth[0] != ("and" if not value else "or"):
            return truth if isinstance(truth, list) and truth[0] == "attr_number" else None
        for part in truth[1:]:
            if part is not None and self.truth(part, module, owner) is value:
                return self._deciding_part(part, value, module, owner) or (
                    part if isinstance(part, list) else None
                )
        return None

    def _attr_number_truth(self, name: str, owner: str | None, sign: str, number: Any) -> Truth:
        """`self.threshold > 0` where every store of `self.threshold` in the class, its bases
        and subclasses is `self.threshold = threshold` in `__init__`, a parameter defaulting
        to a number (ScopeFacts.number_attrs): the one answer every value the constructions
        give it agrees on (left out: its default; a number literal); unknown when one passes
        anything else, spreads `**kwargs`, or the class is built where the model does not
        see the arguments (`_constructor_arguments`)."""
        if owner is None or name in self._foreign_stores() or name in _FRAMEWORK_SET_ATTRIBUTES:
            return None
        stores: list[tuple[str, list[Any]]] = []
        for gkey in [*self.model.mro(owner), *self.model.subclasses(owner)]:
            cls = self.model.classes.get(gkey)
            if cls is None:
                continue
            qualname = cls.summary.qualname
            if "*" in cls.module.scope.attributes.get(qualname, {}):
                return None  # `setattr(self, name, ...)`
            kept = cls.module.scope.number_attrs.get(qualname, {}).get(name)
            if kept is None:
                if name in cls.summary.attributes:
                    return None  # assigned something else
                continue
            for entry in kept:
                if entry is None or not entry[0].split("#", 1)[0].endswith("__init__"):
                    return None
                stores.append((cls.module.path, entry))
        if not stores:
            return None
        compare = {
            ">": lambda v: v > number,
            ">=": lambda v: v >= number,
            "<": lambda v: v < number,
            "<=": lambda v: v <= number,
            "==": lambda v: v == number,
            "!=": lambda v: v != number,
        }[sign]
        truths = set()
        for path, (key, param, default) in stores:
            arguments = self._call_arguments(f"{path}:{key}", param)
            if not arguments:
                return None
            for argument in arguments:
                if argument == _DEFAULT:
                    value = default
                elif (
                    isinstance(argument, tuple)
                    and argument[0] == "literal"
                    and isinstance(argument[1], (int, float))
                    and not isinstance(argument[1], bool)
                ):
                    value = argument[1]
                else:
                    return None
                truths.add(compare(value))
        return truths.pop() if len(truths) == 1 else None

    def _equals_truth(self, node: str, param: str, default: Any, literal: Any) -> Truth:
        """`p == "literal"` of a parameter of function `node` that defaults to a literal
        (`mode="gpu"`) or has no default (`REQUIRED`), never reassigned: true or false when
        every call leaves it to its default, passes a literal, or passes on its own such
        parameter (`get_steps(kind, ...)` in `sample(self, kind="uniform")`, decided by what
        its calls pass), and they all agree; unknown when a call passes anything else (a
        variable, an attribute)."""
        arguments = self._call_arguments(node, param)
        if not arguments:
            return None
        values = set()
        for argument in arguments:
            if argument == _DEFAULT and default != REQUIRED:
                values.add(default == literal)
            elif isinstance(argument, tuple) and argument[0] == "literal":
                values.add(argument[1] == literal)
            elif isinstance(argument, tuple) and argument[0] == _OWN_PARAM:
                _, caller, name, _ = argument
                own = caller.module.scope.string_params.get(caller.summary.key, {})
                if name not in own:
                    return None
                # One cycle cut for every recursive question (tpulint.analysis.recursion).
                given, _ = self.model._recursion.answer(
                    ("equals", caller.gkey, name, literal),
                    lambda c=caller, n=name, d=own[name]: self._equals_truth(c.gkey, n, d, literal),
                    None,
                )
                if given is None:
                    return None
                values.add(given)
            else:
                return None
        return values.pop() if len(values) == 1 else None

    def _call_arguments(
        self, node: str, param: str, guarded: str | None = None
    ) -> list[Any] | None:
        """What each call of function `node` passes as `param`: `_DEFAULT` (left out),
        `("literal", None | True | False)`, `(_SELF_ATTRIBUTE, name, calling function)` (an
        attribute of the caller's `self`), `_MAYBE_NONE` or `_VALUE` (anything else). None
        unless the project model resolves at least one call of it, none spreads
        `*args`/`**kwargs`, and every use of its name in the project is such a call (no
        reference hands the function elsewhere, no call on a value of unknown class, no call
        from code outside a function, where the model sees no call list), it is no
        method a framework calls itself and no function a package's `__init__` exports. A
        function with no call seen is decided by no one.
        `guarded` ("passed", "flag"): the function's calls of itself made only under its own
        `if param is not None` (`if param`) are left out (`_guarded_recursion`)."""
        fn = self._function(node)
        if fn is None or param not in fn.summary.params:
            return None
        if fn.summary.name == "__init__" and fn.owner is not None:
            return self._constructor_arguments(fn, param)
        if fn.summary.name == "forward" and fn.owner is not None:
            if self._is_autograd_function(fn.owner):
                return self._apply_arguments(fn, param)
            return self._module_call_arguments(fn, param)
        if fn.summary.cls is not None and _framework_called(fn.summary.name):
            return None  # Lightning or torch calls it too, with arguments the model cannot see
        if fn.owner is None and fn.gkey in self._exported_functions():
            return None  # a package's API: its users call it too
        # A test's call runs under pytest, not in training (a test may try the other way).
        callers = [
            c for c in self.model._callers().get(fn.gkey, []) if not _in_tests(c[0].module.path)
        ]
        if not callers:
            return None
        arguments = self._arguments_of(callers, fn, param, guarded)
        if not arguments or not self._only_called(fn, callers):
            return None
        return arguments

    def _arguments_of(
        self, callers: list[Any], fn: _Function, param: str, guarded: str | None = None
    ) -> list[Any] | None:
        """What these calls of `fn` pass as `param` (see `_call_arguments`); None when one
        spreads `*args`/`**kwargs` or passes `self` itself."""
        index = fn.summary.params.index(param)
        arguments: list[Any] = []
        for caller, call, offset in callers:
            if "*" in call.keywords or "**" in call.keywords:
                return None
            if (
                guarded
                and caller.gkey == fn.gkey
                and self._guarded_recursion(fn, call.line, param, guarded)
            ):
                continue
            if self._dead_region(caller, call.line) is not None:
                continue  # (a retry in a CUDA error's handler: it never runs on a TPU)
            if caller.gkey != fn.gkey and self._called_only_where_dead(caller) is not None:
                continue  # (a caller that never runs: `radius_graph_pbc` when pbc is off)
            if caller.gkey != fn.gkey and self._caller_never_runs(caller):
                continue  # (a caller nothing calls: its call never runs)
            if param in call.keywords:
                key = param
            elif len(call.args) + offset > index:
                if index < offset:
                    return None  # `self` itself
                key = str(index - offset)
            else:
                arguments.append(_DEFAULT)
                continue
            atoms = call.keywords.get(key) if key == param else None
            if atoms is None and key != param and int(key) < len(call.args):
                atoms = call.args[int(key)]
            own = _own_param(atoms, caller)
            if key in call.literals:
                arguments.append(("literal", call.literals[key]))
            elif key in call.self_attributes and caller.owner is not None:
                arguments.append((_SELF_ATTRIBUTE, call.self_attributes[key], caller))
            elif own is not None:
                # the caller's own parameter, as its calls pass it
                kind = _MAYBE_NONE if key in call.maybe_none else _VALUE
                arguments.append((_OWN_PARAM, caller, own, kind))
            elif key in call.maybe_none:
                arguments.append(_MAYBE_NONE)
            else:
                arguments.append(_VALUE)
        return arguments

    def _is_autograd_function(self, gkey: str) -> bool:
        """Whether project class `gkey` derives from `torch.autograd.Function`."""
        return any(
            base in _AUTOGRAD_FUNCTIONS
            for key in self.model.mro(gkey)
            if key in self.model.classes
            for base in self.model.classes[key].summary.bases
        )

    def _closed_class(self, gkey: str) -> Any:
        """The project class `gkey` when nothing outside the project's visible calls can
        build or extend it (no config or string names it, no package exports it, no subclass),
        else None: only then do the calls the model sees say what its methods are passed."""
        cls = self.model.classes.get(gkey)
        if (
            cls is None
            or gkey in self._configured_classes()
            or gkey in self._exported()
            or cls.summary.name in self._string_tails()
            or self.model.subclasses(gkey)
        ):
            return None
        return cls

    def _apply_arguments(self, fn: _Function, param: str) -> list[Any] | None:
        """What each `Fn.apply(...)` of an autograd Function passes its `forward`'s `param`
        (torch runs `forward(ctx, *args)`): None unless the class is used only so (its name
        is no value handed on, no base, no config's or package's export, no direct call of
        its `forward`) and at least one such call is seen."""
        gkey = fn.owner
        assert gkey is not None
        cls = self._closed_class(gkey)
        if cls is None:
            return None
        uses = self._index_of_uses()
        for name in (cls.summary.name, "forward"):
            for user, use in uses.get(name, ()):
                if _in_tests(user.rsplit(":", 1)[0]):
                    continue
                targets, _ = self._targets(user, use)
                if cls in targets or fn in targets:
                    return None  # handed on, subclassed, or its `forward` called directly
        params = fn.summary.params
        if "ctx" in params[:2]:
            offset = params.index("ctx") + 1
        else:
            offset = 1 if params[:1] == ["cls"] else 0
        callers: list[Any] = []
        for user, use in uses.get("apply", ()):
            path = user.rsplit(":", 1)[0]
            if _in_tests(path) or use[0] not in ("name", "ref"):
                continue
            module = self.model.modules.get(path)
            target = use[1][: -len(".apply")] if use[1].endswith(".apply") else ""
            if module is None or not target or self._autograd_forward(target, module) is not fn:
                continue
            caller = self._function(user)
            if caller is None or use[0] == "ref":
                return None  # `Fn.apply` handed on, or called where no call list is kept
            sites = [c for c in caller.summary.calls if c.form == "name" and c.target == use[1]]
            if not sites:
                return None
            callers += [(caller, site, offset) for site in sites]
        if not callers:
            return None
        return self._arguments_of(callers, fn, param)

    def _guarded_recursion(self, fn: _Function, line: int, param: str, head: str) -> bool:
        """Whether the line of `fn` runs only under its own test of `param` (`if k is not
        None and ...:` for "passed", `if k:` for "flag", as a statement region's condition
        or its first conjunct). A call of `fn` from there runs only once some other call
        made the test true: when no other call does, it never runs (`_passed_truth`)."""
        key = fn.summary.key
        for region in fn.module.scope.regions:
            where, l1, _, l2, _, truth, wanted, how = region[:8]
            if where != key or how != "if" or wanted is not True or not l1 <= line <= l2:
                continue
            while isinstance(truth, list) and truth and truth[0] == "and":
                truth = truth[1]
            if (
                isinstance(truth, list)
                and len(truth) >= 3
                and truth[0] == head
                and truth[1] == key
                and truth[2] == param
                and (head != "passed" or len(truth) == 3)
            ):
                return True
        return False

    def _module_call_arguments(self, fn: _Function, param: str) -> list[Any] | None:
        """What each call of a module passes its `forward`'s `param` (torch runs `forward`
        through `__call__`): the calls of the attributes that hold its instances, `self.attn(h)`
        where `self.attn = Attention(...)`, and of the loop variables over a module list,
        `for layer in self.layers: h = layer(h)` where `self.layers = nn.ModuleList([Block(...)
        for ...])`. None unless every construction of the class (tests aside) is so held, the
        holding classes use the attribute only by calling it (or reading its attributes,
        `len(...)` of it), no code calls a method of that name on another value, the class is
        not built by name (a config, a string, a registry), exported by a package, handed on
        or subclassed, the project registers no forward pre-hooks (which may change the
        arguments), and at least one call is seen."""
        gkey = fn.owner
        assert gkey is not None
        cls = self._closed_class(gkey)
        if cls is None:
            return None
        uses = self._index_of_uses()
        if any(
            not _in_tests(user.rsplit(":", 1)[0])
            for name in ("register_forward_pre_hook", "register_module_forward_pre_hook")
            for user, _ in uses.get(name, ())
        ):
            return None
        for user, use in uses.get(cls.summary.name, ()):
            if _in_tests(user.rsplit(":", 1)[0]):
                continue
            targets, _ = self._targets(user, use)
            if cls in targets and use[0] != "name":
                return None  # handed on, a classmethod, a base
        holders: set[tuple[str, str, str]] = set()  # (holding class, attribute, "one" | "list")
        for path, module in self.model.modules.items():
            if _in_tests(path):
                continue
            built = sum(
                1
                for c in module.scope.constructions
                if c[1].rsplit(".", 1)[-1] == cls.summary.name
                and self.model.lookup(c[1], module) is cls
            )
            if not built:
                continue
            prefix = self.model.prefix(module)
            for entry in module.scope.held:
                if entry[0] not in ("one", "list", "arg"):
                    continue
                if entry[3].rsplit(".", 1)[-1] != cls.summary.name:
                    continue
                if self.model.lookup(entry[3], module) is not cls:
                    continue
                built -= 1
                if entry[0] != "arg":
                    holders.add((f"{prefix}.{entry[1]}", entry[2], entry[0]))
                    continue
                # `SkipConnection(Attention(dim))`: held where the wrapper keeps that argument
                wrapper = self.model.lookup(entry[1], module)
                kept = self._kept_attribute(wrapper, entry[2]) if _is_class(wrapper) else None
                if kept is None:
                    return None
                holders.add((wrapper.gkey, kept, "one"))  # type: ignore[union-attr]
            if built:
                return None  # built somewhere else: passed on, returned, kept in a local
        if not holders:
            return None
        arguments: list[Any] = []
        callers = [
            c for c in self.model._callers().get(fn.gkey, []) if not _in_tests(c[0].module.path)
        ]
        held_calls: list[Any] = []  # `self.attn(...)` of the holders
        seen_calls: set[tuple[str, int]] = set()
        for holder, attr, _kind in holders:
            if any(use[0] in ("meth", "attr") for _, use in uses.get(attr, ())):
                return None  # `model.attn(x, mask)` from outside: maybe an instance of it
            family = [*self.model.mro(holder), *self.model.subclasses(holder)]
            for member in family:
                cls_m = self.model.classes.get(member)
                if cls_m is None:
                    continue
                qualname = cls_m.summary.qualname
                for entry in cls_m.module.scope.held:
                    if entry[0] == "escape" and entry[1] == qualname and entry[2] == attr:
                        return None
                    if (
                        entry[0] == "meth"
                        and entry[1] == qualname
                        and entry[2] == attr
                        and not self._method_skips_forward(gkey, entry[3])
                    ):
                        return None
                    if entry[0] == "loop" and entry[2] == qualname and entry[3] == attr:
                        arguments += self._loop_arguments(fn, param, entry)
                        if arguments and arguments[-1] is None:
                            return None
                for other in self._methods_of(member):
                    for call in other.summary.calls:
                        if call.form == "self" and call.target == attr:
                            if (other.gkey, call.line) not in seen_calls:
                                held_calls.append((other, call, 1))
                            seen_calls.add((other.gkey, call.line))
        # Other calls the model resolves to it (`self.forward(x)` in the class itself).
        held_calls += [c for c in callers if (c[0].gkey, c[1].line) not in seen_calls]
        given = self._arguments_of(held_calls, fn, param)
        if given is None:
            return None
        arguments += given
        return arguments or None

    def _method_skips_forward(self, gkey: str, name: str) -> bool:
        """Whether calling method `name` on an instance of module class `gkey` runs its
        `forward` only through calls the project model sees: a method of `nn.Module` that
        never calls it (`parameters`, `to`, `eval`), or one the class or its project bases
        define (not `forward`), none of whose classes calls `self(...)` (a `self.forward(x)`
        in it is a call the model resolves)."""
        if name in _MODULE_API_WITHOUT_FORWARD:
            return True
        if name in ("forward", "__call__") or name.startswith("__"):
            return False
        family = [self.model.classes.get(member) for member in self.model.mro(gkey)]
        known = [c for c in family if c is not None]
        if not any(name in c.summary.methods for c in known) and not all(
            base in ("torch.nn.Module", "torch.nn.modules.module.Module")
            for base in self.model.external_bases(gkey)
        ):
            # (a method of an outside base class; one nothing defines raises, as on an
            # instance of another class the attribute may hold)
            return False
        return not any(
            entry[0] == "selfcall" and entry[1] == c.summary.qualname
            for c in known
            for entry in c.module.scope.held
        )

    def _kept_attribute(self, wrapper: _Class, slot: str) -> str | None:
        """The attribute in which a class's `__init__` keeps the argument at `slot` (a
        position or a keyword: `self.module = module`, the parameter used nowhere else;
        ScopeFacts.held "kept"), if it does."""
        for entry in wrapper.module.scope.held:
            if entry[0] == "kept" and entry[1] == wrapper.summary.qualname:
                _, _, position, name, attr = entry
                if slot in (position, name):
                    return str(attr)
        return None

    def _methods_of(self, gkey: str) -> list[_Function]:
        """The methods the class `gkey` defines itself."""
        index = self.__dict__.get("_methods_by_class")
        if index is None:
            index = {}
            for function in self.model.functions.values():
                if function.owner is not None:
                    index.setdefault(function.owner, []).append(function)
            self.__dict__["_methods_by_class"] = index
        return index.get(gkey, [])

    def _loop_arguments(self, fn: _Function, param: str, entry: list[Any]) -> list[Any]:
        """What a loop's call `layer(h, ...)` (ScopeFacts.held "loop") passes as `param` of
        the module's `forward`: one code, or None when it spreads arguments."""
        _, _, _, _, positional, keywords, spread = entry
        if spread:
            return [None]
        index = fn.summary.params.index(param) - 1  # `self` is bound by the call
        if param in keywords:
            code = keywords[param]
        elif 0 <= index < len(positional):
            code = positional[index]
        elif index < 0:
            return [None]
        else:
            return [_DEFAULT]
        if isinstance(code, list) and code[0] == "l":
            return [("literal", code[1])]
        return [_MAYBE_NONE]  # (the facts do not say whether a name may hold None)

    def _only_called(self, fn: _Function, callers: list[Any], dead_refs: bool = False) -> bool:
        """Whether every use of `fn`'s name in the project (tests aside) is one of these
        calls: no reference hands it elsewhere, no call on a value of unknown class, no call
        from code outside a function. `dead_refs`: references made only where the code never
        runs on a TPU (`fn = self.interleave` under a branch that never runs) do not count."""
        calling = {caller.gkey for caller, _, _ in callers}
        name = fn.summary.name
        for user, use in self._index_of_uses().get(name, ()):
            if _in_tests(user.rsplit(":", 1)[0]):
                continue
            if (
                dead_refs
                and use[0] in ("ref", "selfref")
                and self._refers_only_where_dead(user, name)
            ):
                continue
            if use[0] in ("self", "name", "ref") and user not in calling:
                # `self.name(...)` in another class, `name(...)` of another module's function
                # of that name: a use of another function
                targets, _ = self._targets(user, use)
                if targets and all(t is not fn and _is_function(t) for t in targets):
                    continue
            if use[0] == "ref" and self._other_class_attribute(user, use[1], fn):
                continue  # `Metric.bps`: an enum member (a class attribute) of that name
            if use[0] in ("ref", "selfref", "meth") or user not in calling:
                return False
        return True

    def _other_class_attribute(self, user: str, target: str, fn: _Function) -> bool:
        """Whether a reference `Cls.name` (qualified, from the function or module `user`)
        names an attribute of a project class that neither is nor inherits `fn`'s class:
        another object of that name (an enum member), never `fn`."""
        head, dot, _ = target.rpartition(".")
        if not dot or not head.strip("."):
            return False
        found = self.model.lookup(head, self.model.modules.get(user.rpartition(":")[0]))
        if not _is_class(found):
            return False
        return fn.owner is None or fn.owner not in self.model.mro(found.gkey)

    def _refers_only_where_dead(self, user: str, name: str) -> bool:
        """Whether function `user` refers to `name` only in code that never runs on a TPU."""
        caller = self._function(user)
        if caller is None:
            return False
        lines = caller.module.scope.ref_lines.get(caller.summary.key, {}).get(name)
        return bool(lines) and all(
            line > 0 and self._dead_region(caller, line) is not None for line in lines
        )

    def _dead_region(self, caller: _Function, line: int) -> list[Any] | None:
        """The region of `caller` around `line` that never runs on a TPU (a branch whose
        condition is decided the other way, a CUDA error's handler, code after a `raise`),
        if there is one. Only statement regions: a call on the line of an inline `a if c
        else b` may sit on either side."""
        found = None  # the innermost one (`elif mode == "b":` rather than the outer `else`)
        for region in caller.module.scope.regions:
            key, l1, _, l2, _, truth, wanted, how = region[:8]
            if key != caller.summary.key or how not in STATEMENT_REGIONS:
                continue
            if not l1 <= line <= l2 or (found is not None and l2 - l1 >= found[3] - found[1]):
                continue
            if name_tokens(region[8]) & TPU_TOKENS:
                # `if xla_available() and not _TPU_AVAILABLE:` (a cache filled on first use):
                # a TPU-named flag's value is a guess from its name, fair for the code under
                # it, not firm enough to take the calls in it away from what they call.
                continue
            value = self.truth(truth, caller.module, caller.owner)
            if value is not None and value != wanted:
                found = region
        return found

    def _dead_reference_regions(self, fn: _Function) -> list[Any]:
        """The dead regions where the project refers to `fn`'s name (the first of each
        referring function)."""
        out = []
        for user, use in self._index_of_uses().get(fn.summary.name, ()):
            caller = self._function(user)
            if caller is None or use[0] not in ("ref", "selfref"):
                continue
            lines = caller.module.scope.ref_lines.get(caller.summary.key, {}).get(fn.summary.name)
            if lines:
                region = self._dead_region(caller, lines[0])
                if region is not None:
                    out.append(region)
        return out

    def _class_built_only_where_dead(self, gkey: str | None) -> str | None:
        """Why a class's methods never run on a TPU when every use of its name in the project
        (tests aside) builds or names it in code that never does (`norm = ActNorm` in the
        `else` of `if not use_actnorm:` where every construction leaves `use_actnorm=False`).
        The class must not be one users or configs may build by name (named by a config or
        a registry, exported by a package, or named by a string of the code or a word of a
        config in a repository that builds objects from names)."""
        if gkey is None:
            return None
        memo = self.__dict__.setdefault("_dead_classes", {})
        if gkey in memo:
            return memo[gkey]
        memo[gkey] = None
        cls = self.model.classes.get(gkey)
        found = None
        if (
            cls is not None
            and gkey not in self._configured_classes()
            and gkey not in self._exported()
            and not (
                # objects built from names: from a config, or a string of the code, that
                # names the class (`{"target": "pkg.util.ActNorm"}`)
                (
                    cls.summary.name in self._string_tails()
                    or any(
                        cls.summary.name in config.words
                        and same_repository(config.path, cls.module.path)
                        for config in self.model.configs
                    )
                )
                and any(
                    m.scope.builds_by_name and same_repository(m.path, cls.module.path)
                    for m in self.model.modules.values()
                )
            )
        ):
            name = cls.summary.name
            regions = []
            for user, use in self._index_of_uses().get(name, ()):
                if _in_tests(user.rsplit(":", 1)[0]):
                    continue
                targets, _ = self._targets(user, use)
                if targets and cls not in targets:
                    continue  # (another class of that name: `SineGen` of another module)
                caller = self._function(user)
                if self._use_reaches_no_class(cls, use):
                    continue  # (`self.CannyLoss(x)`: the instance an attribute holds)
                lines = (
                    caller.module.scope.ref_lines.get(caller.summary.key, {}).get(name)
                    if caller is not None and use[0] in ("name", "ref")
                    else None
                )
                never = self._user_never_runs(caller) if caller is not None else None
                if never is not None:
                    regions.append(never)
                    continue  # (built by a class or function that itself never runs)
                if not lines or not all(line > 0 for line in lines):
                    regions = []
                    break
                dead = [self._dead_region(caller, line) for line in lines]  # type: ignore[arg-type]
                if any(region is None for region in dead):
                    regions = []
                    break
                regions += dead
            if regions:
                region = regions[0]
                where = region if isinstance(region, str) else _where(region[7], region[8])
                found = f"its class is built only where the code never runs: {where}"
        memo[gkey] = found
        return found

    def _use_reaches_no_class(self, cls: _Class, use: list[Any]) -> bool:
        """Whether a use of a module-level class's name is `self.<Name>` (an attribute named
        like the class: `self.CannyLoss = CannyLoss(...)` then `self.CannyLoss(x)`): it
        reaches the class only through a store of the name, itself a use judged on its own
        (a class body's `Loss = CannyLoss`, `self.Loss = CannyLoss` are such uses); or a
        name of a package outside the project (`cv2.Canny(...)` beside a class `Canny`)."""
        if use[0] == "self" and "." not in cls.summary.qualname:
            return True
        # `cv2.Canny(...)` of an imported package the project does not hold: not this class
        qualified = use[1]
        root = qualified.split(".", 1)[0]
        return (
            use[0] == "name"
            and "." in qualified
            and not qualified.startswith(".")
            and root not in self.model._roots
        )

    def _user_never_runs(self, caller: _Function) -> str | None:
        """Where a class's use runs, when it never does: in a method of a class built only
        where the code never runs (`self.canny = Canny()` in `CannyLoss.__init__`, where
        `CannyLoss` is built only under `if cfg["w"] > 0` that the configs leave off), or in
        a function called only there. The caller's own reason, for the class's."""
        if caller.owner is not None:
            if self.model.subclasses(caller.owner):
                return None  # (a subclass built elsewhere runs the inherited method)
            dead = self._class_built_only_where_dead(caller.owner)
            if dead is not None:
                owner = self.model.classes[caller.owner].summary.name
                return f"in `{owner}`, whose class is built only where the code never runs"
        if caller.summary.name != "__init__" and self._called_only_where_dead(caller):
            return f"in `{caller.summary.name}`, which is called only where it never runs"
        return None

    def _called_only_where_dead(self, fn: _Function) -> str | None:
        """Why a function never runs on a TPU when every call of it in the project sits in
        code that never does (`elif ties == "breslow": breslow(...)` where every call leaves
        `ties` to "efron"): the first such call's region, as a reason."""
        memo = self.__dict__.setdefault("_dead_callers", {})
        if fn.gkey in memo:
            return memo[fn.gkey]
        # One cycle cut for the questions this asks (a caller's argument may be decided by
        # whether its own callers run: `_arguments_of`); an answer that met a cycle is not kept.
        found, keep = self.model._recursion.answer(
            ("dead_callers", fn.gkey), lambda: self._find_called_only_where_dead(fn), None
        )
        if keep:
            memo[fn.gkey] = found
        return found

    def _caller_never_runs(self, fn: _Function) -> bool:
        """Whether nothing runs the function: no call of it in the project (tests aside), no
        other use of its name (a reference, a call on a value of unknown class), it is no
        method a framework calls, no dunder, and it does not run in training; or it is a
        method of a class nothing builds (`_never_built`)."""
        if fn.owner is not None and not self.model._computing_hot and self._never_built(fn.owner):
            return True  # (a `forward` is a root of its own where no entry point speaks)
        return (
            not self.model._computing_hot  # (what is hot is asked once it is known)
            and not fn.summary.name.startswith("__")
            and not (fn.summary.cls is not None and _framework_called(fn.summary.name))
            and fn.gkey not in self.model.hot
            and not [
                c for c in self.model._callers().get(fn.gkey, []) if not _in_tests(c[0].module.path)
            ]
            and self._only_called(fn, [])
        )

    def _never_built(self, gkey: str) -> bool:
        """Whether the project (tests aside) never uses the name of torch module class
        `gkey`: no construction, no reference, no subclass, no package export, no config or string
        naming it, no registry; its methods then run for no instance (a module kept in a
        file beside the one the model uses)."""
        memo = self.__dict__.setdefault("_never_built_memo", {})
        found = memo.get(gkey)
        if found is None:
            cls = self.model.classes.get(gkey)
            found = (
                cls is not None
                # a plain torch module (a LightningModule, a callback or a metric is built
                # by a framework, a CLI or a user; an optimizer by the Trainer)
                and self.model.class_kind(gkey) == ClassKind.TORCH_MODULE
                and not cls.summary.decorators
                and gkey not in self._exported()
                and gkey not in self._configured_classes()
                and cls.summary.name not in self._string_tails()
                and not self.model.subclasses(gkey)
                and cls.summary.name not in self._used_name_parts()
                and not any(
                    cls.summary.name in m.scope.foreign_stores or cls.summary.name in m.imports
                    for path, m in self.model.modules.items()
                    if path != cls.module.path and not _in_tests(path)
                )
            )
            memo[gkey] = found
        return found

    def _used_name_parts(self) -> frozenset[str]:
        """Every dotted part of every name the project's code (tests aside) uses: `Fn` and
        `apply` of `Fn.apply(x)`, `Model` of `Model.load_from_checkpoint(path)`."""
        found = self.__dict__.get("_used_parts")
        if found is None:
            found = frozenset(
                part
                for path, module in self.model.modules.items()
                if not _in_tests(path)
                for uses in module.scope.uses.values()
                for use in uses
                for part in use[1].split(".")
            )
            self.__dict__["_used_parts"] = found
        return found

    def _find_called_only_where_dead(self, fn: _Function) -> str | None:
        found = None
        if not fn.summary.name.startswith("__") and not (
            fn.summary.cls is not None and _framework_called(fn.summary.name)
        ):
            callers = [
                c for c in self.model._callers().get(fn.gkey, []) if not _in_tests(c[0].module.path)
            ]
            regions = [self._dead_region(caller, call.line) for caller, call, _ in callers]
            for i, (caller, _, _) in enumerate(callers):
                if regions[i] is None and caller.gkey != fn.gkey:
                    # a caller that never runs itself (`radius_graph_pbc`, called only under
                    # `if use_pbc:` that no config turns on): its reason is this one's
                    inherited = self._called_only_where_dead(caller)
                    if inherited is None:
                        # a caller that cannot complete on a TPU (it calls a CUDA kernel on
                        # every run): what only it calls runs in no training on one either
                        chain = self.cannot_complete(caller)
                        if chain is not None:
                            inherited = (
                                f"called only where it cannot run on a TPU: by"
                                f" `{caller.summary.name}`, which {', which '.join(chain)}"
                            )
                    if inherited is not None:
                        regions[i] = [inherited]
            if all(r is not None for r in regions) and self._only_called(fn, callers, True):
                if not regions:
                    # only referred to, where the code never runs (`fn = self.interleave`)
                    regions = self._dead_reference_regions(fn)
                if regions:
                    region = regions[0]
                    assert region is not None
                    if len(region) == 1:
                        found = str(region[0])
                    else:
                        found = f"called only where it never runs: {_where(region[7], region[8])}"
        return found

    def _constructor_arguments(self, init: _Function, param: str) -> list[Any] | None:
        """What each construction of the class whose `__init__` is `init` passes as
        `param` (as `_call_arguments`, a flag parameter of the constructing function passed
        on being `(_FORWARDED, its node, name, default)`). The constructions are those the
        scope facts record with their arguments when every use of the class in the project
        (tests aside) is one of them, at least one is, none spreads `*args` or a mapping that
        is no config section (one spreading a config's, `Net(**cfg["net"])`, gives what it
        does not pass by name by the key: `_key_arguments` and the default), and
        the class is not one users or configs may build with other arguments: named by a
        config or a registry, re-exported by a package's `__init__.py`, subclassed, or
        referenced (handed on, partially applied: `ref` uses), in a repository that builds
        objects from names (`instantiate(cfg)`, `eval(name)`). Otherwise (and when some use
        is seen), by the key: what the constructions seen pass, the default, and every value
        the repository gives a keyword, dict key or config key of that name
        (`_key_arguments`); None when a value is not known."""
        gkey = init.owner
        assert gkey is not None
        cls = self.model.classes.get(gkey)
        if cls is None:
            return None
        exported = gkey in self._exported()
        if exported and not self._config_mappings(cls):
            # A package's API: its users build it as they like, unless the repository's own
            # configs build it: then what they give it is what the repository trains with
            # (a user's other value is another training).
            return None
        index = init.summary.params.index(param) - 1  # `self` is bound by the call
        if index < 0:
            return None
        # Built where the model cannot see the arguments: by a config, a registry, a
        # reference handed on, a subclass, a spread of `**kwargs`.
        open_ = (
            exported
            or gkey in self._configured_classes()
            or any(
                m.scope.builds_by_name and same_repository(m.path, cls.module.path)
                for m in self.model.modules.values()
            )
        )
        constructing: set[str] = set()
        for user, use in self._index_of_uses().get(cls.summary.name, ()):
            if _in_tests(user.rsplit(":", 1)[0]):
                continue
            targets, _ = self._targets(user, use)
            if cls not in targets:
                continue
            module = self.model.modules.get(user.rsplit(":", 1)[0])
            if use[0] == "ref" and module is not None and module.is_package and exported:
                continue  # the export itself (judged by the configs above)
            if use[0] == "ref" and module is not None and self._base_list(cls, module, index):
                open_ = True  # a subclass's base list, its `super().__init__` passes by name
                continue
            if use[0] != "name" or module is None or self.model.lookup(use[1], module) is not cls:
                return None  # a reference, a classmethod
            constructing.add(user)
        arguments: list[Any] = []
        seen: set[str] = set()
        by_key = False
        for path, module in self.model.modules.items():
            if _in_tests(path):
                continue
            for key, qualified, positional, keywords, spread in module.scope.constructions:
                if qualified.rsplit(".", 1)[-1] != cls.summary.name:
                    continue
                if self.model.lookup(qualified, module) is not cls:
                    continue
                seen.add(f"{path}:{key}" if key else module_node(path))
                if spread and spread != "**":
                    return None
                if param in keywords:
                    code = keywords[param]
                elif index < len(positional):
                    code = positional[index]
                elif spread:
                    by_key = True  # `Net(**cfg["net"])`: what the mapping gives the key
                    continue
                else:
                    arguments.append(_DEFAULT)
                    continue
                caller = self.model.functions.get(f"{path}:{key}") if key else None
                if isinstance(code, list) and code[0] == "l":
                    arguments.append(("literal", code[1]))
                elif isinstance(code, list) and code[0] == "a" and caller is not None:
                    arguments.append((_SELF_ATTRIBUTE, code[1], caller))
                elif isinstance(code, list) and code[0] == "f":
                    arguments.append((_FORWARDED, f"{path}:{code[1]}", code[2], code[3]))
                elif isinstance(code, list) and code[0] == "k":
                    # `Gate(frame_gate=cfg.frame_gate)`: what the project's config classes
                    # and files set the option to (`option_values`), when all are literals
                    configured = self.option_values(code[1], path)
                    if not configured:
                        arguments.append(_VALUE)
                    else:
                        arguments += [("literal", v) for v in configured]
                elif isinstance(code, list) and code[0] == "o":
                    # `Net(use_ema=args.use_ema)`: the switch's value when no launcher passes it
                    switched = self._switch_values(code[1], path)
                    if switched is None:
                        arguments.append(_VALUE)
                    else:
                        arguments += [("literal", v) for v in switched]
                else:
                    arguments.append(_VALUE)
        if not constructing <= seen:
            return None
        if by_key and not open_:
            # A mapping spread into the constructor (`Net(**cfg["net"])`, `Net(**cfg.net)`)
            # gives the parameter what the repository's configs and code give that key, or
            # leaves it to its default.
            given = self._key_arguments(param, cls.module.path)
            if given is None:
                return None
            arguments += [_DEFAULT, *given]
        if open_:
            # Every subclass builds through `super().__init__`, passing by name: users of an
            # exported subclass, or of one without its own `__init__`, pass anything.
            for sub in self.model.subclasses(gkey):
                sub_cls = self.model.classes.get(sub)
                if (
                    sub_cls is None
                    or sub in self._exported()
                    or not self._base_list(cls, sub_cls.module, index)
                ):
                    return None
            if self._configs_always_give(cls, param):
                # What the mappings that build it set, and what overrides that build
                # nothing set: not the values other classes' mappings give that key.
                given = self._key_arguments(param, cls.module.path, cls)
            else:
                given = self._key_arguments(param, cls.module.path)
                given = None if given is None else [_DEFAULT, *given]
            if given is None:
                return None
            arguments += given
        if not arguments:
            return None
        return arguments

    def _forwards_given_key(self, node: str, name: str) -> bool:
        """Whether function `node` is the constructor of a class every config mapping that
        builds it gives the key `name` (`_configs_always_give`): what it hands on under that
        name is what the configs set the key to, never its default."""
        fn = self.model.functions.get(node)
        if fn is None or fn.summary.name != "__init__" or fn.owner is None:
            return False
        cls = self.model.classes.get(fn.owner)
        return cls is not None and self._configs_always_give(cls, name)

    def _configs_always_give(self, cls: _Class, param: str) -> bool:
        """Whether the configs of `cls`'s repository are the only ones that build it by name
        and every one of their mappings that builds it gives `param` (`_target_: pkg.Model`
        with `use_pbc: false` beside it): then no construction by name leaves the parameter
        to its default. Not so for a class a registry decorator registers, one with
        subclasses, one a string of the code names (code may build it with other
        arguments), or a mapping that is a partial (`_partial_: true`: the code passes the
        rest)."""
        memo = self.__dict__.setdefault("_always_given", {})
        if (cls.gkey, param) not in memo:
            memo[(cls.gkey, param)] = self._find_configs_always_give(cls, param)
        return bool(memo[(cls.gkey, param)])

    def _find_configs_always_give(self, cls: _Class, param: str) -> bool:
        gkey = cls.gkey
        if self.model.subclasses(gkey):
            return False
        name = cls.summary.name
        for module in self.model.modules.values():
            if not same_repository(module.path, cls.module.path):
                continue
            if module.scope.lookups and name in module.scope.strings:
                return False  # (a name a run-time lookup may build: `getattr(models, name)`)
        if any(
            "." in text and text.rsplit(".", 1)[-1] == name
            for m in self.model.modules.values()
            for text in m.scope.strings
        ):
            return False  # (a dotted path code may build by name)
        for module in self.model.modules.values():
            if ("class", cls.summary.name) in [tuple(r) for r in module.scope.registered]:
                return False
        mappings = self._config_mappings(cls)
        return bool(mappings) and all(
            param in keys and "_partial_" not in keys for keys in mappings
        )

    def _config_mappings(self, cls: _Class) -> list[dict[str, Any]]:
        """What each config mapping of `cls`'s repository that builds it gives its
        constructor (ConfigFacts.given)."""
        memo = self.__dict__.setdefault("_mappings_of", {})
        found = memo.get(cls.gkey)
        if found is None:
            found = []
            for config in self.model.configs:
                if not same_repository(config.path, cls.module.path):
                    continue
                for name, given in config.given.items():
                    if name.rsplit(".", 1)[-1] != cls.summary.name:
                        continue
                    if self.model.lookup(name, None) is cls:
                        found += given
            memo[cls.gkey] = found
        return found

    def _base_list(self, cls: _Class, module: ModuleSummary, index: int) -> bool:
        """Whether `module` names `cls` in the base list of its subclasses, each of which
        has an `__init__` whose `super().__init__(...)` calls pass `cls`'s parameter at
        `index` by name if at all (a spread `**kwargs` is judged by the key; `*args` and a
        positional argument that far are not)."""
        subclasses = [
            self.model.classes.get(g)
            for g in self.model.subclasses(cls.gkey)
            if g.startswith(f"{self.model.prefix(module)}.")
        ]
        if not subclasses:
            return False
        for sub in subclasses:
            if sub is None or sub.module is not module:
                return False
            init = self.model.functions.get(f"{module.path}:{sub.summary.qualname}.__init__#0")
            if init is None:
                return False  # (its constructions pass straight to `cls`'s)
            for call in init.summary.calls:
                if (
                    call.form == "super"
                    and call.target == "__init__"
                    and ("*" in call.keywords or len(call.args) > index)
                ):
                    return False
        return True

    def _string_tails(self) -> frozenset[str]:
        """The last dotted part of every identifier-like string of the project's code
        (`"pkg.quantize.VectorQuantizer"`: a class a config dict of the code may name)."""
        found = self.__dict__.get("_string_tail_set")
        if found is None:
            found = frozenset(
                text.rsplit(".", 1)[-1]
                for m in self.model.modules.values()
                for text in m.scope.strings
            )
            self.__dict__["_string_tail_set"] = found
        return found

    def _key_arguments(self, name: str, path: str, cls: _Class | None = None) -> list[Any] | None:
        """What the repository of `path` may pass as the keyword `name` of a constructor it
        builds where the model cannot see the arguments (from a config, through a spread
        `**kwargs`, by users of a package): every value any of its code (tests included)
        passes as a keyword or string dict key of that name, and every value its YAML configs
        set that key to, as `_call_arguments` codes (a flag of the passing function passed on
        under the same name counts as its default: what else it is given is given by this
        name too). None when one is not known (an expression, an interpolation), or when the
        name may be set in ways the model does not read: a command-line option of that name,
        an assignment on another value (`cfg.name = ...`, `cfg["name"] = ...`), a string of
        the code (`kwargs.setdefault("name", ...)`, an override `"model.name=false"`), or a
        word of a shell script, JSON, TOML or other text config (`model.name=false`).
        With `cls`, a class every config mapping that builds it gives the key
        (`_configs_always_give`): of the configs, only the values those mappings and the
        mappings that build no class set count."""
        memo = self.__dict__.setdefault("_key_args", {})
        repository = _repository_of(os.path.dirname(os.path.abspath(path))) or path
        slot = (name, repository, cls.gkey if cls is not None else None)
        if slot in memo:
            return memo[slot]
        given: list[Any] | None = []
        for where, module in self.model.modules.items():
            if given is None:
                break
            if not same_repository(where, path):
                continue
            facts = module.scope
            if name in facts.cli_options or name in facts.foreign_stores:
                given = None
                break
            if any(name in text.replace("=", ".").split(".") for text in facts.strings):
                given = None
                break
            for code in facts.keyword_values.get(name, ()):
                if isinstance(code, list) and code[0] == "l":
                    given.append(("literal", code[1]))
                elif code == ["k", name]:
                    # `Gate(use_x=cfg.use_x)`: the config key of that name passed on, which
                    # the configs below give (a config class's default aside: then unknown)
                    if self._config_defaults(name, where) is not None or any(
                        name in m.scope.fields for m in self.model.modules.values()
                    ):
                        given = None
                        break
                elif isinstance(code, list) and code[0] == "f" and code[2] == name:
                    if not self._forwards_given_key(f"{where}:{code[1]}", name):
                        given.append(("literal", code[3]))
                elif isinstance(code, list) and code[0] == "f":
                    given.append((_FORWARDED, f"{where}:{code[1]}", code[2], code[3]))
                else:
                    given = None
                    break
        if given is not None:
            for config in self.model.configs:
                if not same_repository(config.path, path):
                    continue
                values = config.keys.get(name, ())
                if cls is not None:
                    values = [*config.loose.get(name, ())]
                    for target, mappings in config.given.items():
                        if self.model.lookup(target, None) is cls:
                            values += [m[name] for m in mappings if name in m]
                for value in values:
                    if value == "?":
                        given = None
                        break
                    given.append(("literal", value))
                if given is None:
                    break
        if given is not None and self._spelled_in_texts(name, repository):
            given = None
        memo[slot] = given
        return given

    def _spelled_in_texts(self, name: str, repository: str) -> bool:
        """Whether a shell script, JSON, TOML or other text config of the repository (or of
        the file's folder without one) spells `name` (`--use_map`, `model.use_map=true`)."""
        texts = self.__dict__.setdefault("_repository_words", {})
        if repository not in texts:
            texts[repository] = _text_words(
                repository if os.path.isdir(repository) else os.path.dirname(repository)
            )
        return name in texts[repository] or "*" in texts[repository]

    def _configured_classes(self, training: bool = False, registries: bool = True) -> set[str]:
        """The project classes a config names or a registry decorator registers: built by
        name, with arguments the code does not show. `training`: configs for inference
        that no training reads (`_inference_configs`) left out; `registries`: False, the
        decorated classes left out (what configs name only)."""
        slot = ("_configured_training" if training else "_configured") + (
            "" if registries else "_by_configs"
        )
        configured = self.__dict__.get(slot)
        if configured is None:
            configured = set()
            skipped = self._inference_configs() if training else set()
            for config in self.model.configs:
                if config.path in skipped:
                    continue
                for _, name in config.classes:
                    found = self.model.lookup(name, None)
                    if _is_class(found):
                        configured.add(found.gkey)
            for module in self.model.modules.values() if registries else ():
                for kind, name in module.scope.registered:
                    if kind == "class":
                        configured.add(f"{self.model.prefix(module)}.{name}")
            self.__dict__[slot] = configured
        return configured

    def _exported(self) -> set[str]:
        """The project classes a package's `__init__.py` imports: its API, for users to
        build as they like."""
        exported = self.__dict__.get("_exported_classes")
        if exported is None:
            exported = set()
            for module in self.model.modules.values():
                if not module.is_package:
                    continue
                for target in module.imports.values():
                    found = self.model.lookup(target, module)
                    if _is_class(found):
                        exported.add(found.gkey)
            self.__dict__["_exported_classes"] = exported
        return exported

    def _exported_functions(self) -> set[str]:
        """The project functions a package's `__init__.py` imports: its API, for users to
        call with what they like (`_call_arguments`)."""
        exported = self.__dict__.get("_exported_fns")
        if exported is None:
            exported = set()
            for module in self.model.modules.values():
                if not module.is_package or _in_tests(module.path):
                    continue
                for target in module.imports.values():
                    found = self.model.lookup(target, module)
                    if _is_function(found) and found.owner is None:
                        exported.add(found.gkey)
            self.__dict__["_exported_fns"] = exported
        return exported

    def _all(self, truths: list[Truth], module: ModuleSummary, owner: str | None, d: int) -> Truth:
        results = {self.truth(t, module, owner, d) for t in truths}
        return results.pop() if len(results) == 1 else None

    # --- findings ------------------------------------------------------------------------------

    def file_digest(self, module: ModuleSummary) -> str:
        """Every scope fact the findings of `module` are marked with (for the result cache)."""
        self.compute()
        path = module.path
        group = self._group_of(path) if self.reach is not None else None
        claimed = group is not None
        state = group[3] if group is not None else self.library
        parts = [f"c{int(claimed)}", self._unreached(path) if claimed else ""]
        parts.append(str(path in self._unsure))
        parts.append(self.unimported.get(path, ""))
        # The classes of the file nothing builds: a shell script naming one changes no reach.
        parts += sorted(
            f"u{gkey}={why}"
            for gkey, why in self.unbuilt.items()
            if self.model.classes[gkey].module.path == path
        )
        parts.append(self._test_code(path) or "")
        if state is not None:
            parts.append(f"l{int(path in state.loaded)}")
            for fn in module.functions:
                role, why = self._role(path, f"{path}:{fn.key}")
                parts.append(f"{fn.key}={role}:{why or ''}")
        for region in module.scope.regions:
            key = region[0]
            region_fn = self.model.functions.get(f"{path}:{key}") if key else None
            owner = region_fn.owner if region_fn is not None else None
            parts.append(str(self.truth(region[5], module, owner)))
            if len(region) > 9:
                parts.append(str(self.flag_turned_on(region[9], path)))
        for fn in module.functions:
            found = self.model.functions.get(f"{path}:{fn.key}")
            if found is not None:
                parts.append(str(self.cannot_complete(found)))
                parts.append(str(self._called_only_where_dead(found)))
                parts.append(str(self._class_built_only_where_dead(found.owner)))
                parts.append(str(self._test_only_reason(found)))
        return "|".join(parts)

    def never_run_branches(self, path: str) -> frozenset[tuple[int, int]]:
        """(line, column) of the first statement of each `if` body or `else` of the module
        that runs only when a parameter is a tensor (`isinstance(p, torch.Tensor)`) or only
        when it is not, and the project's calls decide it never runs (a helper that takes an
        int or a tensor, every call passing the int 2): the value inference leaves out what
        such a branch binds."""
        memo = self.__dict__.setdefault("_never_run", {})
        if path in memo:
            return memo[path]
        found: set[tuple[int, int]] = set()
        module = self.model.modules.get(path)
        if module is not None:
            for region in module.scope.regions:
                key, line, column, _, _, truth, wanted, how = region[:8]
                if not (isinstance(truth, list) and truth and truth[0] == "tensor_param"):
                    continue
                if how not in ("if", "else"):
                    continue
                region_fn = self.model.functions.get(f"{path}:{key}") if key else None
                owner = region_fn.owner if region_fn is not None else None
                value = self.truth(truth, module, owner)
                if value is not None and value != wanted:
                    found.add((line, column))
        memo[path] = frozenset(found)
        return memo[path]

    def reason(
        self,
        path: str,
        line: int,
        column: int,
        current: ModuleSummary | None = None,
        per_step: bool = True,
    ) -> str | None:
        """Why a finding at `path:line:column` is outside the scope (None: inside).
        `current`: the summary of the text being checked when it differs from the model's
        (its functions, lines and regions are used; roles are looked up by function key).
        `per_step`: the finding is about a cost paid every training step (a host sync, a
        recompilation, the data pipeline); one about a breakage (a removed API, a Trainer
        argument, a precision) stands in inference code too, which also runs on the TPU."""
        module = self.model.modules.get(path)
        if module is None:
            return None
        self.compute()
        local = current if current is not None else module
        facts = local.scope
        fn = self._innermost(local, line)
        owner = fn.owner if fn is not None else None
        for region in facts.regions:
            key, l1, c1, l2, c2, truth, wanted, how, text = region[:9]
            if not ((l1, c1) <= (line, column) <= (l2, c2)):
                continue
            if how.startswith("infer-") and (
                not per_step or self.flag_turned_on(region[9] if len(region) > 9 else [], path)
            ):
                continue  # inference runs on the TPU too; or training turns the flag on
            region_owner = owner
            if key:
                region_fn = self.model.functions.get(f"{path}:{key}")
                region_owner = region_fn.owner if region_fn is not None else owner
            value = self.truth(truth, module, region_owner)
            if value is None or value == wanted:
                continue
            if isinstance(truth, list) and truth[0] == "tensor_param" and how in ("if", "and"):
                where = f"under `if {text}`" if how == "if" else f"after `{text} and`"
                return f"{where}, and the project's calls pass it no tensor"
            stage = self._stage_asked(truth, region_owner)
            if stage is not None:
                calls = (
                    f'`self.{stage}` holds the stage `setup` was given, which is "fit" in'
                    " a training run"
                )
                return _calls_reason(how, text, calls)
            option = _asked_option(truth)
            if option is not None and len(option) > 2:
                given = self.truth(option, module, region_owner)
                state = "only" if given else "never"
                calls = (
                    f"the project's config classes and files {state} set `{option[1]}` to"
                    f" {option[2]!r}"
                )
                return _calls_reason(how, text, calls)
            if option is not None:
                state = "true" if self.truth(option, module, region_owner) else "false"
                calls = f"the project's config classes and files leave `{option[1]}` {state}"
                return _calls_reason(how, text, calls)
            special = self._literal_or_order_reason(truth, module, region_owner, how, text)
            if special is not None:
                return special
            switch = _asked_option(truth, "switch")
            if switch is not None and len(switch) > 2:
                state = "only" if self.truth(switch, module, region_owner) else "never"
                calls = (
                    f"the parser's default and the launchers and configs {state} set"
                    f" `--{switch[1]}` to {switch[2]!r}"
                )
                return _calls_reason(how, text, calls)
            if switch is not None:
                state = "true" if self.truth(switch, module, region_owner) else "false"
                calls = (
                    f"no launcher, README command or config passes `--{switch[1]}`, which"
                    f" leaves it {state}"
                )
                return _calls_reason(how, text, calls)
            asked = _passed_param(truth)
            if asked is not None:
                given = self.truth(asked, module, region_owner)
                return _passed_reason(how, text, asked, bool(given))
            attribute = self._constructed_flag(truth, region_owner)
            if attribute is not None:
                asked = truth
                while asked[0] == "not":
                    asked = asked[1]
                given = self.truth(asked, module, region_owner)
                if asked[0] == "attr_passed":
                    state = "set (not None)" if given else "None"
                else:
                    state = "true" if given else "false"
                calls = f"`self.{attribute}` is {state} in every construction of its class"
                return _calls_reason(how, text, calls)
            decisive = self._deciding_part(truth, bool(value), module, region_owner)
            asked = _passed_param(decisive) if decisive is not None else None
            if asked is not None:
                given = self.truth(asked, module, region_owner)
                return _passed_reason(how, text, asked, bool(given))
            if decisive is not None and decisive[0] == "attr_number":
                _, attribute, sign, number = decisive
                calls = (
                    f"every construction of its class makes `self.{attribute} {sign} {number!r}`"
                    f" {'true' if value else 'false'}"
                )
                return _calls_reason(how, text, calls)
            return _region_reason(how, text, value)
        if fn is not None:
            kernel = self._kernel(fn)
            if kernel is not None:
                # A decorator's name, or a compiler call (`warp.Kernel(...)`) given the function.
                how = kernel if kernel.endswith("(...)") else f"@{kernel}"
                return f"compiled by `{how}`, not PyTorch code"
            chain = self.cannot_complete(fn)
            if chain is not None:
                return _cannot_complete_reason(chain)
            dead = (
                self._dead_hook(fn)
                or self._overridden_everywhere(fn)
                or self._called_only_where_dead(fn)
                or self._class_built_only_where_dead(fn.owner)
            )
            if dead is not None:
                return dead
            off_tpu = self._off_tpu(fn)
            if off_tpu is not None:
                return off_tpu
        tests = self._test_code(path)
        if tests is not None:
            return tests
        node = fn.gkey if fn is not None else module_node(path)
        group = self._group_of(path) if self.reach is not None else None
        claimed = group is not None
        if not claimed:
            sibling = self._untold_siblings_only().get(node)
            if sibling is not None:
                return sibling
        # A training group's "not reached" says less than that nothing imports or builds
        # the code (both hold on any accelerator): those reasons come first there.
        training = group is not None and group[2] == "training"
        if (not claimed or training) and path in self.unimported:
            return self.unimported[path]
        if fn is not None:
            only = self._test_only_reason(fn)
            if only is not None:
                return only
        # In a class nothing builds: it never runs, whatever reaches it by name (the TPU
        # reach's "not reached" says more where it applies).
        unbuilt = None
        if fn is not None and fn.owner is not None and self.unbuilt:
            unbuilt = next(
                (self.unbuilt[g] for g in self._enclosing_classes(fn.owner) if g in self.unbuilt),
                None,
            )
        state = group[3] if group is not None else self.library
        if state is None:
            return unbuilt
        role, why = self._role(path, node)
        if fn is None:
            if claimed and path not in state.loaded:
                return self._unreached(path)
            return None
        if role == TRAIN or (unbuilt is not None and training):
            return unbuilt
        if role == INFER:
            if not per_step:
                return unbuilt
            return _inference_reason(why or "inference code")
        if role == EPOCH:
            if not per_step or is_end_hook(fn.summary.name):
                return unbuilt  # the hook's own code: its rules know it runs once per epoch
            return f"once per epoch (reached only from {why or 'an epoch-end hook'})"
        if claimed:
            return self._unreached(path)
        return unbuilt

    def _test_only_reason(self, fn: _Function) -> str | None:
        """Why a function runs only under the tests: it, a function it is nested in, or the
        class it is a method of is test-only (see `_test_only_in`)."""
        only = self._test_only()
        if not only:
            return None
        current: _Function | None = fn
        while current is not None:
            if current.gkey in only:
                return only[current.gkey]
            if current.owner is not None:
                for gkey in self._enclosing_classes(current.owner):
                    if gkey in only:
                        return only[gkey]
            parent = current.summary.parent
            current = (
                self.model.functions.get(f"{current.module.path}:{parent}") if parent else None
            )
        return None

    def _enclosing_classes(self, gkey: str) -> list[str]:
        """A class and the classes its definition is nested in (`Outer.Inner`)."""
        out = [gkey]
        while "." in gkey:
            gkey = gkey.rsplit(".", 1)[0]
            if gkey in self.model.classes:
                out.append(gkey)
        return out

    def _off_tpu(self, fn: _Function) -> str | None:
        """Code that runs only in hand-written training loops whose tensors go to CUDA or
        the CPU (ProjectModel.off_tpu_loop): on a TPU host no XLA device is involved."""
        if self.model._computing_hot:
            return None
        info = self.model.hot.get(fn.gkey)
        if info is None or info.off_tpu is None:
            return None
        return f"runs only in {info.root}, whose tensors go to {info.off_tpu}, not to XLA"

    def flag_turned_on(self, flags: list[str], path: str) -> bool:
        """Whether code of the project of `path` that may train passes or sets one of these
        inference flags on (`f(x, predict_mode=True)`, `model.predict_mode = args.predict`):
        anywhere but in inference or epoch-end code (a predict hook, a generation loop, an
        evaluation script, what only they reach)."""
        self.compute()
        index = self.__dict__.get("_flags_on")
        if index is None:
            index = {}
            for where, module in self.model.modules.items():
                for name, keys in module.scope.flags_on.items():
                    index.setdefault(name, []).extend(
                        (where, f"{where}:{key}" if key else module_node(where)) for key in keys
                    )
            self.__dict__["_flags_on"] = index
        for flag in flags:
            for where, node in index.get(flag, ()):
                if not self._same_project(where, path):
                    continue  # another project's flag of the same name
                if self._role(where, node)[0] not in (INFER, EPOCH):
                    return True
        return False

    def _overridden_everywhere(self, fn: _Function) -> str | None:
        """A method of a class nothing builds or names but as a base, which every subclass
        defines again without handing on (`super().m(...)`, `Base.m(self, ...)`): Lightning
        calls the built class's `training_step`, never the base's. Not for a class a package
        exports (users subclass it), a config, registry, string or run-time lookup names, or
        that code outside its family calls the method of."""
        name = fn.summary.name
        owner = fn.owner
        if owner is None or fn.summary.cls is None or name.startswith("__"):
            return None
        cls = self.model.classes.get(owner)
        if cls is None or cls.summary.methods.get(name) != fn.summary.key:
            return None
        subclasses = self.model.subclasses(owner)
        if not subclasses:
            return None
        for sub in subclasses:
            if self._intermediate_base(sub):
                continue  # its own subclasses decide: it inherits for them alone
            for gkey in self.model.mro(sub):
                if gkey == owner:
                    return None  # inherited, or handed on to
                other = self.model.classes.get(gkey)
                key = other.summary.methods.get(name) if other is not None else None
                if key is None or other is None:
                    continue
                override = self.model._module_functions[id(other.module)].get(key)
                if override is None:
                    return None
                if not self._passes_up(override, name):
                    break
        if owner in self._exported() or owner in self._configured_classes():
            return None
        words, looked_up = self._names_by_text()
        short = cls.summary.name
        if short in words or cls.module.path in looked_up or "^" in looked_up:
            return None
        named, star_exported = self._referenced_names()
        if short in named or cls.module.path in star_exported:
            return None
        configured = self._configured_classes()
        exported = self._exported()
        if not any(
            sub in configured
            or sub in exported
            or (
                (other := self.model.classes.get(sub)) is not None
                and (other.summary.name in named or other.summary.name in words)
            )
            for sub in subclasses
        ):
            # Nothing builds, names or exports a subclass either: the project does not say
            # which class trains (a module handed to `tpulint verify pkg.mod:Base`).
            return None
        family = {owner, *subclasses}
        for caller in self.callers(fn.gkey):
            calling = self._function(caller)
            if calling is None or calling.owner not in family:
                return None
            if any(
                form in ("name", "ref") and target.endswith(f"{short}.{name}")
                for form, target in self._uses(caller)
            ):
                return None  # `Base.m(self, ...)` past an override that does not hand on
        return (
            f"`{short}.{name}` is defined again by every subclass of `{short}`, which is"
            " built only as their base"
        )

    def _intermediate_base(self, gkey: str) -> bool:
        """A class with subclasses of its own that nothing builds or names but as a base (no
        config, export, string or class reference outside base lists spells it): built only
        through its subclasses, so what it inherits runs only where they do not override."""
        if not self.model.subclasses(gkey):
            return False
        if gkey in self._exported() or gkey in self._configured_classes():
            return False
        cls = self.model.classes.get(gkey)
        if cls is None:
            return False
        words, looked_up = self._names_by_text()
        named, star_exported = self._referenced_names()
        short = cls.summary.name
        return not (
            short in words
            or short in named
            or cls.module.path in looked_up
            or "^" in looked_up
            or cls.module.path in star_exported
        )

    def _referenced_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The last parts of the names every module's class references spell (base lists
        left out), and the modules a package's `__init__.py` star-imports (its API)."""
        found = self.__dict__.get("_referenced")
        if found is None:
            named: set[str] = set()
            exported: set[str] = set()
            for module in self.model.modules.values():
                named.update(q.rsplit(".", 1)[-1] for _, q, *_ in module.scope.class_refs)
                if module.is_package:
                    for target in module.scope.star_imports:
                        hit = self.model.lookup(target, module)
                        if isinstance(hit, ModuleSummary):
                            exported.add(hit.path)
            found = self.__dict__["_referenced"] = (frozenset(named), frozenset(exported))
        return found

    def _dead_hook(self, fn: _Function) -> str | None:
        """A Lightning 1 hook (`on_keyboard_interrupt`) of a Lightning class, which Lightning 2
        never calls (unless the project calls it itself)."""
        name = fn.summary.name
        if self.lightning1 or fn.owner is None or fn.summary.cls is None:
            return None
        if not (name.startswith("on_") or name in LIGHTNING1_HOOKS) or name in LIGHTNING_HOOKS:
            return None

        kind = self.model.class_kind(fn.owner)
        if not kind & (
            ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE | ClassKind.CALLBACK
        ):
            return None
        if self.callers(fn.gkey):
            return None
        return f"`{name}` is not a hook Lightning 2 calls"

    def tpu_host(self, path: str) -> str | None:
        """Why the project of `path` runs on TPU VMs, where Lightning's accelerator "auto"
        selects XLA (None: nothing says so): a requirements file, shell script or Dockerfile
        of its repository that installs torch_xla or selects the TPU runtime
        (`PJRT_DEVICE=TPU`), a module of it that imports torch_xla unconditionally, a Trainer
        of it that asks for TPUs, or a config of it whose Trainer does."""
        cache = self.__dict__.setdefault("_tpu_host", {})
        project = _tpu_project_folder(path)
        if project in cache:
            return cache[project]
        why = _tpu_host_text(project)
        if why is None:
            for where, module in sorted(self.model.modules.items()):
                if _is_test_path(where) or _tpu_project_folder(where) != project:
                    continue
                if module.xla_import:
                    why = f"{_shown_path(where, project)} imports torch_xla"
                elif any(
                    launch[0] in ("trainer", "fabric") and launch[1] == "tpu"
                    for launch in module.scope.launches
                ) and not any(t.split(".", 1)[0] == "torch_xla" for t in module.imports.values()):
                    # (a Trainer of a file with an optional torch_xla import is "tpu" to
                    # the scope whatever it asks for: not a sign of its own)
                    why = f"{_shown_path(where, project)} builds a TPU Trainer"
                if why is not None:
                    break
        if why is None:
            for config in sorted(self.model.configs, key=lambda c: c.path):
                if config.trainer == "tpu" and _tpu_project_folder(config.path) == project:
                    why = f"{_shown_path(config.path, project)} asks for TPUs"
                    break
        cache[project] = why
        return why

    def json_values(self, path: str, keys: tuple[str, ...]) -> list[tuple[str, Any]]:
        """The scalar values the JSON configs of the project of `path` hold at a key path
        (`("hardware", "type")`: what `config["hardware"]["type"]` reads from one of them),
        with the config each is in."""
        out: list[tuple[str, Any]] = []
        for shown, data in _json_configs(_tpu_project_folder(path)):
            current = data
            for key in keys:
                current = current.get(key) if isinstance(current, dict) else None
            if current is not None and not isinstance(current, (dict, list)):
                out.append((shown, current))
        return out

    def launcher_function(self, path: str, key: str) -> bool:
        """Whether a function runs only in the process that launches training: a signal
        handler, or what a function calls after its `trainer.fit(...)` returned (or raised).
        Under the XLA strategy that process is not one of the ranks (Lightning's
        strategies/xla.py: `global_rank` is 0 and `barrier()` returns at once while
        `_launched` is False), so no other process waits for it there."""
        module = self.model.modules.get(path)
        if module is None or self._gpu_launcher(module):
            return False
        launchers = self.__dict__.setdefault("_launchers", {})
        found = launchers.get(path)
        if found is None:
            found = set()
            facts = module.scope
            uses = [(module_node(path), use) for use in facts.handlers]
            for caller, later in facts.after_fit_uses.items():
                uses += [(f"{path}:{caller}", use) for use in later]
            for node, use in uses:
                for target in self._callees_of_use(node, use, by_name=False):
                    found.add(target)
                    fn = self._function(target)
                    if fn is not None:
                        found.update(inner.gkey for inner in self._nested(fn))
            launchers[path] = found
        current = self.model.functions.get(f"{path}:{key}")
        while current is not None:
            if current.gkey in found:
                return True
            parent = current.summary.parent
            current = self.model.functions.get(f"{path}:{parent}") if parent else None
        return False

    @staticmethod
    def _gpu_launcher(module: ModuleSummary) -> bool:
        """A file whose Trainers all name another accelerator: its launching process is rank
        0 of DDP, which does take part in collectives."""
        verdicts = {launch[1] for launch in module.scope.launches if launch[0] == "trainer"}
        return bool(verdicts) and verdicts == {"other"}

    def _unreached(self, path: str) -> str:
        """Why claimed code the roots do not reach is out, naming the roots of its group."""
        group = self._group_of(path)
        if group is not None:
            return unreached_reason(group[2], group[1])
        return unreached_reason("TPU", sorted({os.path.basename(e.path) for e in self._entries}))

    def _kernel(self, fn: _Function) -> str | None:
        current: _Function | None = fn
        while current is not None:
            kernel = current.module.scope.kernels.get(current.summary.key)
            if kernel is not None:
                return kernel
            parent = current.summary.parent
            current = (
                self.model.functions.get(f"{current.module.path}:{parent}") if parent else None
            )
        return None

    def _innermost(self, module: ModuleSummary, line: int) -> _Function | None:
        """The project model's function whose body holds `line` in `module` (the summary of
        the text being checked: functions are matched by key)."""
        ends = module.scope.ends
        best = None
        for fn in module.functions:
            end = ends.get(fn.key)
            if end is None or not fn.line <= line <= end:
                continue
            if best is None or fn.line >= best.line:
                best = fn
        if best is None:
            return None
        return self.model.functions.get(f"{module.path}:{best.key}")


# Methods that torch, torchmetrics or an optimizer's caller run themselves (besides the
# Lightning hooks): what they pass is not among the project's calls.
_FRAMEWORK_METHODS = frozenset(
    {
        "forward",
        "step",
        "update",
        "compute",
        "reset",
        "zero_grad",
        "state_dict",
        "load_state_dict",
        "train",
        "eval",
        "backward",
        "get_lr",
        "setup",
        "teardown",
        "prepare_data",
        "extra_repr",
        "reset_parameters",
    }
)


def _top_key(key: str) -> str:
    """The name of the top-level function or class a function key is inside (`make` of
    `make#0` and of `make.inner#0`)."""
    return key.split(".", 1)[0].split("#", 1)[0]


def _framework_called(name: str) -> bool:
    """Whether a method of this name may be called by a framework (a dunder, a Lightning
    hook or step, a torch or torchmetrics method a subclass overrides)."""
    return (
        (name.startswith("__") and name.endswith("__"))
        or name in _FRAMEWORK_METHODS
        or name in LIGHTNING_HOOKS
        or name in LIGHTNING1_HOOKS
        or name.startswith(("on_", "configure_"))
        or name.endswith("_step")
    )


# Methods of `torch.nn.Module` that never run the module's `forward`
# (ProjectScope._method_skips_forward).
_MODULE_API_WITHOUT_FORWARD = frozenset(
    {
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
        "state_dict",
        "load_state_dict",
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "double",
        "bfloat16",
        "type",
        "train",
        "eval",
        "requires_grad_",
        "zero_grad",
        "register_buffer",
        "register_parameter",
        "get_parameter",
        "get_buffer",
        "get_submodule",
        "extra_repr",
    }
)

# What a call passes as a parameter (ProjectScope._call_arguments).
_DEFAULT = "default"


def _is_none_flag(truth: Truth) -> bool:
    """`["flag", key, p, None]`: the truth of a parameter that defaults to None."""
    return isinstance(truth, list) and len(truth) == 4 and truth[0] == "flag" and truth[3] is None


_MAYBE_NONE = "maybe-none"
_VALUE = "value"
_SELF_ATTRIBUTE = "self-attribute"
# Attributes torch sets on a module itself (`model.train()` sets `training`).
_FRAMEWORK_SET_ATTRIBUTES = frozenset({"training"})
_FORWARDED = "forwarded"
# A caller's own parameter passed on unchanged: (_OWN_PARAM, caller, name, _VALUE or
# _MAYBE_NONE), judged as the kind unless a question follows it to the caller's calls.
_OWN_PARAM = "own-param"


def _own_param(atoms: Any, caller: _Function) -> str | None:
    """The name of the calling function's parameter an argument is, when its value is that
    parameter as passed and nothing else (`[["p", index]]`)."""
    if not (isinstance(atoms, list) and len(atoms) == 1):
        return None
    atom = atoms[0]
    if not (isinstance(atom, list) and len(atom) == 2 and atom[0] == "p"):
        return None
    index = atom[1]
    params = caller.summary.params
    return params[index] if isinstance(index, int) and 0 <= index < len(params) else None


def _inference_reason(why: str) -> str:
    """Why code reached only from an inference root is out: a `trainer.test` hook's code is
    evaluation after training (`trainer.fit` runs only the training and validation loops),
    the rest inference."""
    if why.strip("`") in TEST_HOOKS:
        return f"reached only from {why} (evaluation, not training)"
    return f"inference only (reached from {why})"


def _asked_option(truth: Truth, head: str = "option") -> list[Any] | None:
    """The config option a region asks (`self.cfg.flag`, `not cfg.flag`; with `head`
    "switch", the command-line switch: `args.flag`), if that is all it asks."""
    while isinstance(truth, list) and truth and truth[0] == "not":
        truth = truth[1]
    return truth if isinstance(truth, list) and truth and truth[0] == head else None


def _passed_param(truth: Truth) -> list[Any] | None:
    """The truth about a parameter a region asks (`p is not None`, `p is None`:
    `["passed", ...]`; `p`: `["flag", ...]`), if that is all it asks."""
    if isinstance(truth, list):
        if truth[0] in ("passed", "flag", "equals", "hparam"):
            return truth
        if truth[0] == "not":
            return _passed_param(truth[1])
    return None


def _passed_reason(how: str, text: str, asked: list[Any], given: bool) -> str:
    param = asked[2]
    if asked[0] == "equals":
        literal = '"' + str(asked[4]) + '"'
        if given:
            calls = f"every call of the function passes `{param}` {literal}"
        else:
            calls = f"no call of the function passes `{param}` {literal}"
    elif asked[0] == "flag":
        calls = f"`{param}` is {'true' if given else 'false'} in every call of the function"
    elif asked[0] == "hparam":
        calls = (
            f"the saved hyperparameter `{param}` is {'true' if given else 'false'} in every"
            " construction of the module and every config that builds it"
        )
    elif given:
        calls = f"every call of the function passes `{param}` a value that is not None"
    else:
        calls = f"every call of the function leaves `{param}` to its default None"
    return _calls_reason(how, text, calls)


def _calls_reason(how: str, text: str, calls: str) -> str:
    """Why a region the project's own calls or constructions decide never runs."""
    if how == "else":
        return f"in the `else` of `if {text}`, and {calls}"
    if how == "after":
        return f"after `if {text}: return`, and {calls}"
    if how in ("and", "or"):
        return f"after `{text} {how}`, and {calls}"
    return f"under `if {text}`, and {calls}"


def _where(how: str, text: str) -> str:
    """Where a statement region sits, for a reason."""
    if how == "else":
        return f"in the `else` of `if {text}`"
    if how == "after":
        return f"after `if {text}: return`"
    if how in ("dead", "unreachable"):
        return f"after `{text}`"
    if how == "except":
        return f"in the handler of `{text}`, a CUDA error"
    return f"under `if {text}`"


_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


def _no_xla_chain(chain: list[str]) -> bool:
    """Whether a chain of `cannot_complete` ends at a package with no XLA backend (DGL)."""
    return any(f"({described})" in chain[-1] for described in NO_XLA_PACKAGES.values())


def _cannot_complete_reason(chain: list[str]) -> str:
    """`["calls `self.ctx.rasterize`", "calls `nvdiffrast.torch.rasterize` (...)"]`."""
    return "cannot run on a TPU: it " + ", which ".join(chain)


def _region_reason(how: str, text: str, value: bool) -> str:
    state = "true" if value else "false"
    if how.startswith("infer-"):
        flag = "an inference flag that training leaves off"
        if how == "infer-else":
            return f"inference only (the `else` of `if {text}`, {flag})"
        if how == "infer-after":
            return f"inference only (after `if {text}: return`, {flag})"
        return f"inference only (under `if {text}`, {flag})"
    if how == "dead":
        return f"after `{text}`, which always raises: never runs"
    if how == "unreachable":
        return f"after `{text}` in the same block: never runs"
    if how == "cuda-import":
        return f"in a branch that imports a CUDA-only package (under `if {text}`)"
    if how == "except":
        return f"in the handler of `{text}`, a CUDA error a TPU never raises"
    if how == "else":
        return f"in the `else` of `if {text}`, which is {state} on a TPU"
    if how == "after":
        return f"after `if {text}: return`, and `{text}` is {state} on a TPU"
    if how in ("and", "or"):
        return f"after `{text} {how}`, which is {state} on a TPU"
    return f"under `if {text}`, which is {state} on a TPU"
