"""Import the user's target in the child and turn it into a LightningModule (and DataModule).

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

from tpulint.runtime.errors import VerifyError
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.spec import RunSpec, TargetRef


@dataclass
class LoadedTarget:
    module: Any  # the LightningModule instance
    datamodule: Any | None
    files: list[str]  # source files the targets were loaded from
    roots: list[str]  # directories whose files count as the user's code
    description: dict[str, Any] = field(default_factory=dict)


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
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise VerifyError(
                f"cannot import {where}: no module named `{exc.name}`"
                " (run verify from the directory your code imports from, or install the package)",
                "".join(traceback.format_exception(exc)),
            ) from None
        raise _user_error(f"importing {where} failed", exc, None, _candidate_files(ref)) from None
    except (Exception, SystemExit) as exc:
        raise _user_error(f"importing {where} failed", exc, None, _candidate_files(ref)) from None


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
        raise _user_error(
            f"importing {_display(ref.location)} failed", exc, None, [ref.location]
        ) from None
    return module


def _candidate_files(ref: TargetRef) -> list[str]:
    if ref.kind == "file":
        return [ref.location]
    return [os.path.join(os.getcwd(), ref.location.split(".")[0])]


def _classes_deriving(module: ModuleType, base: type) -> list[str]:
    return sorted(
        name
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, base)
        and value is not base
        and value.__module__ == module.__name__
    )


def resolve_attribute(module: ModuleType, ref: TargetRef, base: type) -> Any:
    value: Any = module
    for part in ref.attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            candidates = _classes_deriving(module, base)
            close = difflib.get_close_matches(part, candidates or list(vars(module)), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            if candidates and not close:
                hint = f"; {base.__name__}s there: {', '.join(candidates)}"
            raise VerifyError(f"{_module_where(module, ref)} has no `{part}`{hint}") from None
    return value


def _module_where(module: ModuleType, ref: TargetRef) -> str:
    if ref.kind == "file":
        return _display(ref.location)
    return f"module `{module.__name__}`"


def _foreign_lightning(cls: type) -> bool:
    """A class built on the standalone `pytorch_lightning` package, whose classes the
    `lightning` Trainer does not accept."""
    return any(base.__module__.startswith("pytorch_lightning") for base in inspect.getmro(cls)[1:])


def instantiate(
    value: Any, ref: TargetRef, base: type, init_args: dict[str, Any], code: CodeFilter
) -> Any:
    """A class deriving from `base` is called with `init_args`; an instance is used as is; any
    other callable is a factory (called with `init_args`) that must return an instance."""
    kind = base.__name__
    if inspect.isclass(value):
        if not issubclass(value, base):
            if _foreign_lightning(value):
                raise VerifyError(
                    f"`{ref.raw}` derives from pytorch_lightning's {kind}; verify trains with the"
                    " `lightning` package (`import lightning.pytorch as pl`)"
                )
            bases = ", ".join(b.__name__ for b in value.__mro__[1:-1]) or "object"
            raise VerifyError(f"`{ref.raw}` is not a {kind} (its bases: {bases})")
        return _call(value, ref, init_args, code, f"constructing {value.__name__}")
    if isinstance(value, base):
        if init_args:
            raise VerifyError(f"`{ref.raw}` is already an instance; --init-args cannot apply to it")
        return value
    if callable(value) and not isinstance(value, type):
        result = _call(value, ref, init_args, code, f"calling {ref.attribute}()")
        if not isinstance(result, base):
            raise VerifyError(f"`{ref.raw}` returned a {type(result).__name__}, not a {kind}")
        return result
    raise VerifyError(f"`{ref.raw}` is a {type(value).__name__}, not a {kind} class or a factory")


def _call(
    factory: Any, ref: TargetRef, init_args: dict[str, Any], code: CodeFilter, what: str
) -> Any:
    try:
        return factory(**init_args)
    except (Exception, SystemExit) as exc:
        shown = f" with --init-args {init_args}" if init_args else ""
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


def load(spec: RunSpec) -> LoadedTarget:
    """Import and build the spec's LightningModule (and DataModule), or raise VerifyError."""
    from lightning.pytorch import LightningDataModule, LightningModule
    from lightning.pytorch.utilities.model_helpers import is_overridden

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

    def build(ref: TargetRef, base: type, init_args: dict[str, Any]) -> Any:
        module = import_target_module(ref)
        path, extra = _roots_for(module)
        if path:
            files.append(path)
        roots.extend(extra)
        value = resolve_attribute(module, ref, base)
        return instantiate(value, ref, base, init_args, CodeFilter(roots))

    model = build(spec.target, LightningModule, spec.init_args)
    datamodule = build(spec.datamodule, LightningDataModule, {}) if spec.datamodule else None

    name = type(model).__name__
    if not is_overridden("training_step", model):
        raise VerifyError(
            f"`{spec.target.raw}`: {name} defines no training_step(); nothing to verify"
        )
    if not is_overridden("configure_optimizers", model):
        raise VerifyError(f"`{spec.target.raw}`: {name} defines no configure_optimizers()")
    if datamodule is not None:
        if not is_overridden("train_dataloader", datamodule):
            raise VerifyError(
                f"no train dataloader: the DataModule `{spec.datamodule.raw}`"  # type: ignore[union-attr]
                " defines no train_dataloader()"
            )
    elif not is_overridden("train_dataloader", model):
        raise VerifyError(
            f"no train dataloader: {name} defines no train_dataloader();"
            " pass the DataModule that provides it with --datamodule module:Class"
        )
    description = {
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "datamodule": (
            f"{type(datamodule).__module__}.{type(datamodule).__qualname__}" if datamodule else None
        ),
        "files": files,
    }
    return LoadedTarget(model, datamodule, files, sorted(set(roots)), description)
