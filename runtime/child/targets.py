"""Import the user's target in the child and turn it into a LightningModule (and DataModule),
built directly or by LightningCLI from the --config files (cli_config.py), with the Lightning
package the module is written against (`lightning` or `pytorch_lightning`, flavour.py).

Every way this can go wrong (no such module or file, no such name, not a LightningModule, an
exception in the user's import or constructor, nothing to train on) is a VerifyError with one
line naming the problem and, where the user's code raised, the user's file:line; the full
traceback travels as its detail, shown with -v. Child process only: imports lightning.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tpulint.runtime.child.flavour import (
    INSTALL,
    LIGHTNING,
    PYTORCH_LIGHTNING,
    Flavour,
    flavour,
    package_of,
)
from tpulint.runtime.environment import installed_version
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.spec import RunSpec, TargetRef

MODULE, DATAMODULE = "LightningModule", "LightningDataModule"


@dataclass
class LoadedTarget:
    module: Any  # the LightningModule instance
    datamodule: Any | None
    files: list[str]  # source files the targets were loaded from
    roots: list[str]  # directories whose files count as the user's code
    description: dict[str, Any] = field(default_factory=dict)
    package: Flavour | None = None  # the Lightning package the module is written against
    # From --config: the `trainer:` arguments that differ from the defaults (objects built),
    # the same as written, and fit() arguments verify does not pass on, with the reason.
    trainer_args: dict[str, Any] = field(default_factory=dict)
    shown_trainer_args: dict[str, Any] = field(default_factory=dict)
    ignored_fit_args: dict[str, tuple[Any, str]] = field(default_factory=dict)
    optimizer_patch: dict[str, Any] | None = None  # see cli_config._optimizer_patch


class SourceOverrides(importlib.abc.MetaPathFinder):
    """Load another file in place of a module's file (--compare runs the `tpulint fix` output
    under the original module name, so the rest of the project imports it unchanged)."""

    def __init__(self, overrides: dict[str, str]) -> None:
        self.overrides = {os.path.realpath(k): v for k, v in overrides.items()}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin:
            return None
        replacement = self.overrides.get(os.path.realpath(spec.origin))
        if replacement is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, replacement, submodule_search_locations=spec.submodule_search_locations
        )


def _display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _user_error(
    prefix: str, exc: BaseException, code: CodeFilter | None, files: Sequence[str] = ()
) -> VerifyError:
    """`prefix: ExcType: message (file.py:12)`, pointing at the innermost user frame."""
    site = code.site_of_traceback(exc.__traceback__) if code else None
    if site is None and files:
        site = CodeFilter([os.path.dirname(f) for f in files]).site_of_traceback(exc.__traceback__)
    where = f" ({_display(site.path)}:{site.line})" if site else ""
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return VerifyError(f"{prefix}: {_one_line(exc)}{where}", detail)


def module_name_for_file(path: str) -> tuple[str, str]:
    """(dotted module name, directory to put on sys.path) for a source file, walking up
    through packages (directories with __init__.py) so relative imports keep working."""
    directory, filename = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(filename)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts), directory


def _same_file(a: str | None, b: str) -> bool:
    return bool(a) and os.path.realpath(a) == os.path.realpath(b)


def import_target_module(ref: TargetRef) -> ModuleType:
    if ref.kind == "file":
        name, search_root = module_name_for_file(ref.location)
        if search_root not in sys.path:
            sys.path.insert(0, search_root)
        existing = sys.modules.get(name)
        if existing is not None and not _same_file(
            getattr(existing, "__file__", None), ref.location
        ):
            # The file's natural name is taken by an installed module (say a `datasets.py`
            # next to the HuggingFace package): load it under a private name instead.
            return _import_file_as(f"_tpulint_target_{abs(hash(ref.location))}", ref)
        where = _display(ref.location)
    else:
        name = ref.location
        where = f"`{name}`"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        _missing_lightning(exc, where, ref.location if ref.kind == "file" else None)
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise VerifyError(
                f"cannot import {where}: no module named `{exc.name}`"
                " (run verify from the directory your code imports from, or install the package)",
                "".join(traceback.format_exception(exc)),
            ) from None
        raise _user_error(f"importing {where} failed", exc, None, _candidate_files(ref)) from None
    except (Exception, SystemExit) as exc:
        raise _user_error(f"importing {where} failed", exc, None, _candidate_files(ref)) from None


def _missing_lightning(
    exc: ModuleNotFoundError, where: str, target_file: str | None = None
) -> None:
    """A module written against a Lightning package that is not installed: say what to install.
    A submodule missing from an installed package is another Lightning version's API (Lightning
    2.0 removed `pytorch_lightning.utilities.apply_func` and many more): installing is no help."""
    top = (exc.name or "").split(".")[0]
    if top not in (PYTORCH_LIGHTNING, LIGHTNING):
        return
    if exc.name != top and importlib.util.find_spec(top) is not None:
        version = installed_version(top.replace("_", "-")) or "as installed"
        site = _import_site(exc, target_file)
        raise VerifyError(
            f"{where} imports `{exc.name}`{site}, which {top} {version} does not have: the code"
            f" is written for another Lightning version; use a release of it made for {top}"
            f" {version.split('.')[0]}.x, or the {top} version it was written for",
            "".join(traceback.format_exception(exc)),
        ) from None
    raise VerifyError(
        f"{where} imports `{exc.name}`, which is not installed: {INSTALL[top]}"
        + (
            " (verify trains modules written against it with its own Trainer)"
            if top == PYTORCH_LIGHTNING
            else ""
        ),
        "".join(traceback.format_exception(exc)),
    ) from None


def _import_site(exc: BaseException, target_file: str | None) -> str:
    """` (at path:line)`: the import statement that failed, when it is not in the target's file
    itself (`where` names that already) but in a package the target imports."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if not frames:
        return ""
    last = frames[-1].filename
    if _same_file(last, __file__) or _same_file(last, importlib.__file__ or ""):
        return ""
    if target_file and _same_file(last, target_file):
        return ""
    return f" (at {_display(last)}:{frames[-1].lineno})"


def _import_file_as(name: str, ref: TargetRef) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ref.location)
    if spec is None or spec.loader is None:
        raise VerifyError(f"cannot load {_display(ref.location)} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        if isinstance(exc, ModuleNotFoundError):
            _missing_lightning(exc, _display(ref.location), ref.location)
        raise _user_error(
            f"importing {_display(ref.location)} failed", exc, None, [ref.location]
        ) from None
    return module


def _candidate_files(ref: TargetRef) -> list[str]:
    if ref.kind == "file":
        return [ref.location]
    return [os.path.join(os.getcwd(), ref.location.split(".")[0])]


def is_kind(value: Any, kind: str) -> bool:
    """Whether a class derives from Lightning's `kind` class (LightningModule or
    LightningDataModule) of either package, without importing either."""
    if not inspect.isclass(value) or package_of(value) is None:
        return False
    return any(
        base.__name__ == kind and package_of(base) is not None for base in inspect.getmro(value)
    )


def _classes_deriving(module: ModuleType, kind: str) -> list[str]:
    return sorted(
        name
        for name, value in vars(module).items()
        if is_kind(value, kind) and value.__module__ == module.__name__
    )


def resolve_attribute(module: ModuleType, ref: TargetRef, kind: str = MODULE) -> Any:
    value: Any = module
    for part in ref.attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            candidates = _classes_deriving(module, kind)
            close = difflib.get_close_matches(part, candidates or list(vars(module)), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            if candidates and not close:
                hint = f"; {kind}s there: {', '.join(candidates)}"
            raise VerifyError(f"{_module_where(module, ref)} has no `{part}`{hint}") from None
    return value


def _module_where(module: ModuleType, ref: TargetRef) -> str:
    if ref.kind == "file":
        return _display(ref.location)
    return f"module `{module.__name__}`"


def check_class(value: Any, ref: TargetRef, kind: str) -> None:
    """A class given as a target must derive from Lightning's `kind` class."""
    if inspect.isclass(value) and not is_kind(value, kind):
        bases = ", ".join(b.__name__ for b in value.__mro__[1:-1]) or "object"
        raise VerifyError(f"`{ref.raw}` is not a {kind} (its bases: {bases})")


def instantiate(
    value: Any, ref: TargetRef, kind: str, init_args: dict[str, Any], code: CodeFilter
) -> Any:
    """A class deriving from Lightning's `kind` class is called with `init_args`; an instance
    is used as is; any other callable is a factory (called with `init_args`) that must return
    an instance."""
    option = "--init-args" if kind == MODULE else "--datamodule-args"
    if inspect.isclass(value):
        check_class(value, ref, kind)
        return _call(value, ref, init_args, code, f"constructing {value.__name__}", option)
    if package_of(value) is not None and is_kind(type(value), kind):
        if init_args:
            raise VerifyError(f"`{ref.raw}` is already an instance; {option} cannot apply to it")
        return value
    if callable(value) and not isinstance(value, type):
        result = _call(value, ref, init_args, code, f"calling {ref.attribute}()", option)
        if not is_kind(type(result), kind):
            raise VerifyError(f"`{ref.raw}` returned a {type(result).__name__}, not a {kind}")
        return result
    raise VerifyError(f"`{ref.raw}` is a {type(value).__name__}, not a {kind} class or a factory")


def _call(
    factory: Any,
    ref: TargetRef,
    init_args: dict[str, Any],
    code: CodeFilter,
    what: str,
    option: str = "--init-args",
) -> Any:
    try:
        return factory(**init_args)
    except (Exception, SystemExit) as exc:
        shown = f" with {option} {init_args}" if init_args else ""
        raise _user_error(f"{what}{shown} failed", exc, code) from None


def _roots_for(module: ModuleType) -> tuple[str | None, list[str]]:
    """The module's file, and the directory of the user's code around it: its top-level
    package, or its own directory for a plain module."""
    path = getattr(module, "__file__", None)
    if not path:
        return None, []
    name, search_root = module_name_for_file(path)
    top = name.split(".")[0]
    package_dir = os.path.join(search_root, top)
    root = package_dir if os.path.isdir(package_dir) else os.path.dirname(path)
    return path, [root]


def _packages_of(values: list[tuple[Any, str]], spec: RunSpec) -> dict[str, str]:
    """Which Lightning package each of the target's classes derives from, before anything is
    built (a factory: the class its return annotation names); with --config and no TARGET, the
    package of the config's class_path."""
    found: dict[str, str] = {}
    for value, what in values:
        if value is None:
            continue
        candidate = value
        if not inspect.isclass(value) and package_of(value) is None and callable(value):
            try:
                annotation = inspect.signature(value).return_annotation
            except (TypeError, ValueError):
                annotation = None
            candidate = annotation if inspect.isclass(annotation) else None
        package = package_of(candidate) if candidate is not None else None
        if package:
            found[what] = package
    if not found and spec.configs:
        from tpulint.runtime.child.cli_config import class_path_of

        for key, what in (("model", "the model"), ("data", "the DataModule")):
            path = class_path_of(spec.configs, key)
            cls = _import_class(path) if path else None
            package = package_of(cls) if cls is not None else None
            if package:
                found[what] = package
    return found


def _one_package(found: dict[str, str]) -> str | None:
    if len(set(found.values())) > 1:
        parts = " and ".join(f"{what} on `{package}`" for what, package in found.items())
        raise VerifyError(
            f"{parts}: one Trainer cannot train both; write them against the same Lightning package"
        )
    return next(iter(found.values()), None)


def _import_class(path: str) -> Any:
    """`pkg.module.Class` imported, or None (LightningCLI then reports the problem)."""
    module_name, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name, None)
    except Exception:
        return None


def _installed(path: str) -> bool:
    real = os.path.realpath(path)
    return any(os.sep + marker + os.sep in real for marker in ("site-packages", "dist-packages"))


def _class_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def load(spec: RunSpec) -> LoadedTarget:
    """Import and build the spec's LightningModule (and DataModule), or raise VerifyError."""
    if spec.overrides:
        sys.meta_path.insert(0, SourceOverrides(spec.overrides))
    if spec.cwd and spec.cwd not in sys.path:
        sys.path.insert(0, spec.cwd)  # as `python -m` would: the project's own imports resolve

    files: list[str] = []
    roots: list[str] = []
    if spec.cwd and os.path.realpath(spec.cwd) not in (
        "/",
        os.path.realpath(os.path.expanduser("~")),
    ):
        roots.append(spec.cwd)

    def resolve(ref: TargetRef | None, kind: str) -> Any:
        if ref is None:
            return None
        module = import_target_module(ref)
        path, extra = _roots_for(module)
        if path:
            files.append(path)
        roots.extend(extra)
        return resolve_attribute(module, ref, kind)

    model_value = resolve(spec.target, MODULE)
    datamodule_value = resolve(spec.datamodule, DATAMODULE)
    found = _packages_of([(model_value, "the model"), (datamodule_value, "the DataModule")], spec)
    loaded = LoadedTarget(None, None, files, roots)
    built_args: dict[str, Any] = {}
    if spec.configs:  # LightningCLI of the package is needed before anything is built
        loaded.package = flavour(_one_package(found))
        built_args = _build_from_config(spec, loaded, model_value, datamodule_value)
    else:
        code = CodeFilter(roots)
        loaded.module = instantiate(model_value, spec.target, MODULE, spec.init_args, code)  # type: ignore[arg-type]
        if datamodule_value is not None:
            loaded.datamodule = instantiate(
                datamodule_value,
                spec.datamodule,
                DATAMODULE,
                spec.datamodule_args,
                code,  # type: ignore[arg-type]
            )
    model, datamodule = loaded.module, loaded.datamodule
    # What was built decides (a factory's result is known only now).
    found = {
        what: package
        for what, built in (("the model", model), ("the DataModule", datamodule))
        if built is not None and (package := package_of(built))
    }
    package = flavour(_one_package(found))
    loaded.package = package
    for built in (model, datamodule):
        # A class LightningCLI built from a class_path is the user's code too, unless it is
        # an installed library's (e.g. Lightning's demo models).
        source = sys.modules.get(type(built).__module__) if built is not None else None
        if source is not None:
            path, extra = _roots_for(source)
            if path and path not in files and not _installed(path):
                files.append(path)
                roots.extend(extra)
    _check_trainable(spec, model, datamodule)
    loaded.roots = sorted(set(roots))
    loaded.description = {
        "class": _class_name(model),
        "datamodule": _class_name(datamodule) if datamodule is not None else None,
        "files": files,
        "package": package.distribution,
    }
    loaded.description.update(built_args)
    return loaded


def _build_from_config(
    spec: RunSpec, loaded: LoadedTarget, model_value: Any, datamodule_value: Any
) -> dict[str, Any]:
    """Build through LightningCLI; returns the resolved init args for the report."""
    from tpulint.runtime.child.cli_config import build_from_config

    for value, ref, kind in (
        (model_value, spec.target, MODULE),
        (datamodule_value, spec.datamodule, DATAMODULE),
    ):
        if value is None or ref is None:
            continue
        check_class(value, ref, kind)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            raise VerifyError(
                f"`{ref.raw}` is a {type(value).__name__}: with --config, name the class"
                " LightningCLI builds from the config"
            )
    built = build_from_config(
        spec.configs,
        loaded.package,  # type: ignore[arg-type]
        model_value,
        datamodule_value,
        spec.init_args,
        spec.datamodule_args,
        CodeFilter(loaded.roots),
        _user_error,
    )
    loaded.module, loaded.datamodule = built.model, built.datamodule
    loaded.trainer_args = built.trainer_args
    loaded.shown_trainer_args = built.shown_trainer_args
    loaded.ignored_fit_args = built.ignored_fit_args
    loaded.optimizer_patch = built.optimizer_patch
    return {
        "init_args": built.model_args,
        "datamodule_args": built.datamodule_args or {},
    }


def _check_trainable(spec: RunSpec, model: Any, datamodule: Any | None) -> None:
    from tpulint.runtime.child.flavour import FLAVOURS

    package = FLAVOURS[package_of(model) or LIGHTNING]
    is_overridden = package.module("utilities.model_helpers").is_overridden
    shown = spec.target.raw if spec.target else f"`{_class_name(model)}` (from --config)"
    if spec.target:
        shown = f"`{shown}`"
    name = type(model).__name__
    if not is_overridden("training_step", model):
        raise VerifyError(f"{shown}: {name} defines no training_step(); nothing to verify")
    if not is_overridden("configure_optimizers", model):
        raise VerifyError(f"{shown}: {name} defines no configure_optimizers()")
    if datamodule is not None:
        if not is_overridden("train_dataloader", datamodule):
            where = f"`{spec.datamodule.raw}`" if spec.datamodule else _class_name(datamodule)
            raise VerifyError(
                f"no train dataloader: the DataModule {where} defines no train_dataloader()"
            )
    elif not is_overridden("train_dataloader", model):
        raise VerifyError(
            f"no train dataloader: {name} defines no train_dataloader();"
            " pass the DataModule that provides it with --datamodule module:Class"
            + (" or `data:` in the config" if spec.configs else "")
        )


# For the script runner (script.py): the same roots and the same one-line user errors.
roots_for = _roots_for
user_error = _user_error
