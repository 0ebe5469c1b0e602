"""The project-wide class index: which classes of the checked project are Lightning classes.

A LightningModule is often defined as `class Model(ProjectBase)` where `ProjectBase` lives in
another file and itself derives from `L.LightningModule`. To know that `Model` is a Lightning
class, tpulint runs two passes: the first scans every file's text (a regular-expression pass
over class headers and imports, no parsing, a few ms per thousand lines) into this index;
the second checks each file with the index at hand.

Classes are keyed by module-qualified name (`pkg.tasks.speaker_diarization.SpeakerDiarization`)
and bases are resolved through each file's own imports, so two classes that share a name in
different modules are never confused.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache


class ClassKind(enum.Flag):
    NONE = 0
    LIGHTNING_MODULE = enum.auto()
    LIGHTNING_DATAMODULE = enum.auto()
    CALLBACK = enum.auto()
    TORCH_MODULE = enum.auto()

    @property
    def is_lightning(self) -> bool:
        return bool(
            self
            & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE | ClassKind.CALLBACK)
        )


LIGHTNING_ROOTS = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})


def kind_of_external(qualname: str) -> ClassKind:
    """The kind of a class outside the project, from its qualified name alone."""
    root, _, _ = qualname.partition(".")
    last = qualname.rsplit(".", 1)[-1]
    if root in LIGHTNING_ROOTS:
        if last == "LightningModule":
            return ClassKind.LIGHTNING_MODULE | ClassKind.TORCH_MODULE
        if last == "LightningDataModule":
            return ClassKind.LIGHTNING_DATAMODULE
        if last == "Callback" or ".callbacks." in qualname:
            return ClassKind.CALLBACK
        return ClassKind.NONE
    if root == "torch" and (
        qualname == "torch.nn.Module"
        or qualname.startswith("torch.nn.modules.")
        or (qualname.startswith("torch.nn.") and last[:1].isupper())
    ):
        return ClassKind.TORCH_MODULE
    if root == "torchmetrics" and last == "Metric":
        return ClassKind.TORCH_MODULE
    return ClassKind.NONE


def _lightning_root_kind(qualname: str) -> ClassKind:
    root, _, _ = qualname.partition(".")
    if root in LIGHTNING_ROOTS and qualname.rsplit(".", 1)[-1] in (
        "LightningModule",
        "LightningDataModule",
        "Callback",
    ):
        return kind_of_external(qualname)
    return ClassKind.NONE


# --- module names from paths -------------------------------------------------------------


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


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


# --- the text scan -----------------------------------------------------------------------

_IMPORT_FROM = re.compile(
    r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)",
    re.MULTILINE,
)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
_CLASS = re.compile(
    r"^([ \t]*)class[ \t]+(\w+)[ \t]*(?:\(((?:[^()]|\([^()]*\))*)\))?[ \t]*:", re.MULTILINE
)
_BASE_NAME = re.compile(r"^[ \t\n]*([A-Za-z_][\w.]*)")


@dataclass
class ModuleScan:
    """What the text scan found in one file."""

    module: str | None
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    classes: dict[str, list[str]] = field(default_factory=dict)  # class name -> base expressions


def scan_source(text: str, module: str | None, is_package: bool) -> ModuleScan:
    scan = ModuleScan(module)
    for m in _statements(text, "from", _IMPORT_FROM):
        dots, target, names = m.groups()
        base = resolve_relative(module, is_package, len(dots), target)
        if base is None:
            continue
        names = names.strip().strip("()").replace("\\\n", " ")
        for item in names.split(","):
            item = item.split("#", 1)[0].strip()
            if not item or item == "*":
                continue
            name, _, asname = item.partition(" as ")
            name = name.strip()
            local = asname.strip() or name
            if name.isidentifier() and local.isidentifier():
                scan.imports[local] = f"{base}.{name}"
    for m in _statements(text, "import", _IMPORT):
        for item in m.group(1).split(","):
            name, _, asname = item.strip().partition(" as ")
            name = name.strip()
            if not name or not all(p.isidentifier() for p in name.split(".")):
                continue
            if asname.strip():
                scan.imports[asname.strip()] = name
            else:
                root = name.split(".", 1)[0]
                scan.imports.setdefault(root, root)
    for m in _statements(text, "class", _CLASS):
        indent, name, bases = m.groups()
        if indent:
            # Nested classes are rarely imported; keep the index to module-level classes.
            continue
        scan.classes[name] = _split_bases(bases or "")
    return scan


def _statements(text: str, keyword: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """The matches `pattern.finditer(text)` gives, found faster: `pattern` is anchored at a
    line start (``^[ \t]*keyword``), which the regex engine would try at every character,
    so only the lines where `keyword` is the first word are tried (a substring search finds
    them)."""
    end = 0
    pos = text.find(keyword)
    while pos != -1:
        line_start = text.rfind("\n", 0, pos) + 1
        if line_start >= end and not text[line_start:pos].strip(" \t"):
            m = pattern.match(text, line_start)
            if m is not None:
                end = m.end()
                yield m
        pos = text.find(keyword, pos + len(keyword))


def _split_bases(bases: str) -> list[str]:
    out: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in bases:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current))
            current = []
        else:
            current.append(ch)
    out.append("".join(current))
    names = []
    for base in out:
        if "=" in base.split("[", 1)[0]:  # metaclass=..., keyword arguments
            continue
        m = _BASE_NAME.match(base)
        if m:
            names.append(m.group(1))
    return names


# --- the index ---------------------------------------------------------------------------


class ProjectIndex:
    """Resolves the kinds of classes across the project's files."""

    def __init__(self, scans: Iterable[ModuleScan] = ()) -> None:
        self._classes: dict[str, list[str]] = {}
        self._modules: dict[str, ModuleScan] = {}
        for scan in scans:
            self.add(scan)
        self._kinds: dict[str, ClassKind] = {}

    def add(self, scan: ModuleScan) -> None:
        if scan.module is None:
            return
        self._modules[scan.module] = scan
        for name, bases in scan.classes.items():
            self._classes[f"{scan.module}.{name}"] = [self._qualify(scan, base) for base in bases]

    @staticmethod
    def _qualify(scan: ModuleScan, dotted: str) -> str:
        root, _, rest = dotted.partition(".")
        target = scan.imports.get(root)
        if target is None:
            target = f"{scan.module}.{root}" if root in scan.classes else root
        return f"{target}.{rest}" if rest else target

    def _follow(self, qualname: str, seen: set[str]) -> str:
        """Follow re-exports (`pkg/__init__.py: from .base import Model`) to the definition."""
        while qualname not in self._classes and qualname not in seen:
            seen.add(qualname)
            module, _, name = qualname.rpartition(".")
            scan = self._modules.get(module)
            if scan is None or name not in scan.imports:
                break
            qualname = scan.imports[name]
        return qualname

    def kind(self, qualname: str, _stack: frozenset[str] = frozenset()) -> ClassKind:
        cached = self._kinds.get(qualname)
        if cached is not None:
            return cached
        if qualname in _stack:
            return ClassKind.NONE
        target = self._follow(qualname, set())
        bases = self._classes.get(target)
        if bases is None:
            kind = kind_of_external(target)
        else:
            # When Lightning's own source is part of the checked tree, its LightningModule,
            # LightningDataModule and Callback are defined there from mixins: they are the
            # roots by name, whatever their bases say.
            kind = _lightning_root_kind(target)
            for base in bases:
                kind |= self.kind(base, _stack | {qualname})
        self._kinds[qualname] = kind
        return kind

    def lightning_table(self) -> dict[str, int]:
        """Every qualified name (definitions and re-exports) that names a project class deriving
        from Lightning or torch.nn.Module, with its kind. This small table is what the checking
        pass needs; its hash is part of every cache key."""
        table: dict[str, int] = {}
        for qualname in self._classes:
            kind = self.kind(qualname)
            if kind:
                table[qualname] = kind.value
        for module, scan in self._modules.items():
            for local, target in scan.imports.items():
                if target in table:
                    table[f"{module}.{local}"] = table[target]
                elif target.rpartition(".")[0] in self._modules:
                    kind = self.kind(target)
                    if kind:
                        table[f"{module}.{local}"] = kind.value
        return table


def table_digest(table: Mapping[str, int]) -> str:
    h = hashlib.sha1()
    for key in sorted(table):
        h.update(f"{key}={table[key]};".encode())
    return h.hexdigest()
