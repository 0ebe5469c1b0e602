"""Where a file sits among packages: its dotted module name and the folder its absolute imports
resolve from. Light on purpose (no analysis imports): a run answered from the cache needs these
to find the files that give the checked ones their context, and nothing more of the model."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    """A folder Python imports as a package: it has an `__init__.py` and a name `import` can
    spell (a repository folder `prompt-tuning/` with an `__init__.py` is no package: its
    modules are imported from inside it)."""
    return os.path.basename(directory).isidentifier() and os.path.isfile(
        os.path.join(directory, "__init__.py")
    )


@lru_cache(maxsize=4096)
def _package_parts(directory: str) -> tuple[str, ...]:
    """The package names from the outermost package down to `directory` (empty when
    `directory` is not a package), computed once per folder."""
    if not _is_package_dir(directory):
        return ()
    parent = os.path.dirname(directory)
    if parent == directory:
        return (os.path.basename(directory),)
    return (*_package_parts(parent), os.path.basename(directory))


def module_name_for_path(path: str | os.PathLike[str]) -> tuple[str | None, bool]:
    """(`pkg.sub.mod`, is_package) for a file inside packages, by walking up `__init__.py`s."""
    text = os.fspath(path)
    stem, suffix = os.path.splitext(os.path.basename(text))
    if suffix not in (".py", ".pyi"):
        return None, False
    is_package = stem == "__init__"
    parts = list(_package_parts(os.path.dirname(text) or "."))
    if not is_package:
        parts.append(stem)
    if not parts:
        return None, is_package
    name = ".".join(parts)
    if not name.replace(".", "").replace("_", "").isalnum():
        return None, is_package
    return name, is_package


def resolve_relative(module: str | None, is_package: bool, level: int, target: str) -> str | None:
    """The absolute module for `from <level dots><target> import ...` inside `module`."""
    if level == 0:
        return target
    if module is None:
        return None
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if target:
        base.append(target)
    return ".".join(base) if base else None


def package_root(path: str | os.PathLike[str]) -> Path:
    """The folder that holds the file's top-level package (the file's own folder when it is
    not in a package): what `import` resolves the file's absolute imports from."""
    return Path(_root_of(os.path.dirname(os.path.abspath(path))))


@lru_cache(maxsize=4096)
def _root_of(directory: str) -> str:
    """`package_root` of the files in `directory` (one walk up per folder and run)."""
    parent = os.path.dirname(directory)
    if not _is_package_dir(directory) or parent == directory:
        return directory
    return _root_of(parent)


def table_digest(table: Mapping[str, int]) -> str:
    h = hashlib.sha1()
    for key in sorted(table):
        h.update(f"{key}={table[key]};".encode())
    return h.hexdigest()
