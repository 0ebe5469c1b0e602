"""Configuration: `[tool.tpulint]` in the nearest pyproject.toml, overridden by CLI flags.

Every problem with a configuration is a ConfigError whose message is one line that names the
file and the key; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpulint.config.globs import path_matches
from tpulint.config.registry import (
    SelectionError,
    SelectionLayer,
    codes_matching,
    resolve_selection,
    selection_warnings,
    validate_selector,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

if TYPE_CHECKING:
    from tpulint.datatypes.diagnostics import Diagnostic

DEFAULT_EXCLUDES = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pypackages__",
    # macOS's zip tool stores each file's AppleDouble metadata as `__MACOSX/<path>/._<name>`:
    # binary, never source, though the copies keep the `.py` names.
    "__MACOSX",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
    ".tpulint_cache",
)
OUTPUT_FORMATS = ("text", "full", "json", "sarif", "github")
# Analysing a file takes several hundred bytes of memory per byte of source (libcst's tree;
# bench/memory.py): 2 MB keeps one file under about a gigabyte, and real hand-written modules
# are far smaller (the largest of the 4,215 corpus files is under 500 KB).
DEFAULT_MAX_FILE_SIZE = 2_000_000
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 2**10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 2**20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 2**30,
}


class ConfigError(Exception):
    """A one-line, user-facing configuration problem."""


@dataclass(frozen=True)
class Config:
    """Everything that shapes a run. Build it with `load_config` or `Config.from_mapping`."""

    layers: tuple[SelectionLayer, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    unsafe_fixes: bool = False
    # Ruff's preview mode: rules (and shapes of rules) that have not earned the default set
    # run only with it; `explicit_preview_rules` enables preview rules only by exact code.
    preview: bool = False
    explicit_preview_rules: bool = False
    batch_multiple: int = 8
    hot_methods: tuple[str, ...] = ()
    lightning_version: str = "2.6"
    torch_xla_version: str = "2.9"
    output_format: str = "text"
    cache_dir: str = ".tpulint_cache"
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes; larger files are skipped (0: no limit)
    # Which findings are shown: "tpu" (code that trains on a TPU: tpulint.analysis.scope) or
    # "all". Every finding is marked either way; the scope only chooses what is reported.
    scope: str = "tpu"
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None

    # --- derived ---------------------------------------------------------------------

    @property
    def enabled(self) -> frozenset[str]:
        cached = self.__dict__.get("_enabled")
        if cached is None:
            cached = resolve_selection(
                self.layers,
                preview=self.preview,
                explicit_preview=self.preview and self.explicit_preview_rules,
            )
            object.__setattr__(self, "_enabled", cached)
        return cached

    def selection_warnings(self) -> list[str]:
        """Selections that enable nothing because their rules are in preview and preview is
        off (the CLI prints them as warnings, as Ruff does)."""
        return selection_warnings(self.layers, self.preview)

    def enabled_for(self, relpath: str) -> frozenset[str]:
        """Enabled codes for a file, after per-file ignores."""
        if not self.per_file_ignores:
            return self.enabled
        ignored: set[str] = set()
        for pattern, selectors in self.per_file_ignores:
            if path_matches(relpath, pattern):
                ignored |= codes_matching(selectors)
        return self.enabled - ignored

    def shows(self, diagnostic: Diagnostic) -> bool:
        """Whether the scope reports a finding (every finding under `scope = "all"`; those
        whose code trains on a TPU under "tpu")."""
        return self.scope == "all" or diagnostic.scope is None

    def fingerprint(self) -> str:
        """A hash of everything that changes what a check reports (for the cache key)."""
        payload = {
            "enabled": sorted(self.enabled),
            "per_file_ignores": self.per_file_ignores,
            "preview": self.preview,
            "batch_multiple": self.batch_multiple,
            "hot_methods": self.hot_methods,
            "lightning_version": self.lightning_version,
            "torch_xla_version": self.torch_xla_version,
        }
        return hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def with_cli(
        self,
        *,
        select: Sequence[str] | None = None,
        extend_select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        **changes: Any,
    ) -> Config:
        """A copy with a command-line selection layer and other overrides applied."""
        layers = self.layers
        if select is not None or extend_select or ignore:
            layers = (
                *layers,
                SelectionLayer(
                    select=_selectors(select, "--select") if select is not None else None,
                    extend_select=_selectors(extend_select, "--extend-select"),
                    ignore=_selectors(ignore, "--ignore"),
                ),
            )
        new = replace(self, layers=layers, **changes)
        new.__dict__.pop("_enabled", None)
        return new

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, root: Path | None = None, source: Path | None = None
    ) -> Config:
        """Build a Config from `[tool.tpulint]`-style keys (kebab-case)."""
        where = f"{source.name if source else 'configuration'}: [tool.tpulint]"
        unknown = [k for k in data if k not in _KEYS]
        if unknown:
            key = unknown[0]
            import difflib

            close = difflib.get_close_matches(key, list(_KEYS), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise ConfigError(f"{where}: unknown key `{key}`{hint}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            values[_KEYS[key][0]] = _KEYS[key][1](value, f"{where} `{key}`")
        if "select" in values and not values["select"]:
            raise ConfigError(
                f"{where} `select` is empty, so no rule would run: name the rules to run, "
                "or remove `select` for the default set"
            )
        layer = SelectionLayer(
            select=values.pop("select", None),
            extend_select=values.pop("extend_select", ()),
            ignore=values.pop("ignore", ()),
        )
        layers = (layer,) if layer != SelectionLayer() else ()
        return cls(layers=layers, root=root or Path.cwd(), source=source, **values)


# --- value parsers -----------------------------------------------------------------------


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    return tuple(value)


def _selectors(value: Any, where: str) -> tuple[str, ...]:
    items = []
    for item in _str_list(value, where):
        for part in item.split(","):
            if part.strip():
                try:
                    items.append(validate_selector(part))
                except SelectionError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
    return tuple(items)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _batch_multiple(value: Any, where: str) -> int:
    if isinstance(value, bool) or value not in (8, 128):
        raise ConfigError(f"{where} must be 8 or 128, got {value!r}")
    return int(value)


def _version(value: Any, where: str) -> str:
    text = str(value)
    parts = text.split(".")
    if not (1 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
        raise ConfigError(f'{where} must be a version like "2.6", got {value!r}')
    return text


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable glob (tpulint.config.globs), or None: an unclosed or
    reversed character class would otherwise match nothing, silently."""
    if not pattern.strip():
        return "an empty pattern matches nothing"
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            end = pattern.find(
                "]", index + 2 if pattern[index + 1 : index + 2] == "]" else index + 1
            )
            if end == -1:
                return "unclosed `[` character class"
            body = pattern[index + 1 : end].lstrip("!")
            for match in re.finditer(r"(.)-(.)", body):
                if match.group(1) > match.group(2):
                    return f"invalid range `{match.group(0)}` in a character class"
            index = end
        index += 1
    for part in pattern.replace(os.sep, "/").split("/"):
        if "**" in part and part != "**":
            return "`**` must be a whole path component (`tests/**/*.py`)"
    return None


def _glob(pattern: Any, where: str) -> str:
    if not isinstance(pattern, str):
        raise ConfigError(f"{where}: patterns must be strings, got {pattern!r}")
    problem = glob_problem(pattern)
    if problem is not None:
        raise ConfigError(f"{where}: invalid pattern {pattern!r}: {problem}")
    return pattern


def _globs(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_glob(p, where) for p in _str_list(value, where))


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table of glob = [codes], got {value!r}")
    return tuple((_glob(k, where), _selectors(v, f"{where}[{k!r}]")) for k, v in value.items())


def _output_format(value: Any, where: str) -> str:
    if value not in OUTPUT_FORMATS:
        raise ConfigError(f"{where} must be one of {', '.join(OUTPUT_FORMATS)}, got {value!r}")
    return str(value)


def _identifier_list(value: Any, where: str) -> tuple[str, ...]:
    items = _str_list(value, where)
    for item in items:
        if not item.isidentifier():
            raise ConfigError(f"{where}: `{item}` is not a method name")
    return items


def parse_size(value: Any, where: str) -> int:
    """A size in bytes from an integer or a string like "2MB", "512 KiB", "0" (no limit)."""
    if isinstance(value, bool):
        raise ConfigError(f'{where} must be a size like "2MB", got {value!r}')
    if isinstance(value, int):
        number, unit = float(value), ""
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", value)
        if not match or match.group(2).lower() not in _SIZE_UNITS:
            raise ConfigError(
                f'{where} must be a size like "2MB", "512KB" or 0 (no limit), got {value!r}'
            )
        number, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise ConfigError(f'{where} must be a size like "2MB", got {value!r}')
    if number < 0:
        raise ConfigError(f"{where} must not be negative, got {value!r}")
    return int(number * _SIZE_UNITS[unit])


SCOPES = ("tpu", "all")


def _scope(value: Any, where: str) -> str:
    if value not in SCOPES:
        raise ConfigError(f'{where} must be "tpu" or "all", got {value!r}')
    return str(value)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value


_KEYS = {
    "select": ("select", _selectors),
    "extend-select": ("extend_select", _selectors),
    "ignore": ("ignore", _selectors),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _globs),
    "extend-exclude": ("extend_exclude", _globs),
    "respect-gitignore": ("respect_gitignore", _bool),
    "force-exclude": ("force_exclude", _bool),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "preview": ("preview", _bool),
    "explicit-preview-rules": ("explicit_preview_rules", _bool),
    "batch-multiple": ("batch_multiple", _batch_multiple),
    "hot-methods": ("hot_methods", _identifier_list),
    "lightning-version": ("lightning_version", _version),
    "torch-xla-version": ("torch_xla_version", _version),
    "output-format": ("output_format", _output_format),
    "cache-dir": ("cache_dir", _string),
    "max-file-size": ("max_file_size", parse_size),
    "scope": ("scope", _scope),
}


# --- finding and reading the file --------------------------------------------------------


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.tpulint] table, else
    the nearest pyproject.toml at all (it marks the project root)."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    first_plain = None
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if os.path.isfile(candidate):  # never raises (a folder we may not search)
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "[tool.tpulint" in text:
                return candidate
            if first_plain is None:
                first_plain = candidate
    return first_plain


def load_config(config_file: Path | None = None, start: Path | None = None) -> Config:
    """Read `config_file` (any TOML with [tool.tpulint], or a tpulint.toml with top-level
    keys), or the nearest pyproject.toml above `start` (default: the working directory)."""
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return _read(path, explicit=True)
    found = find_pyproject(start or Path.cwd())
    if found is None:
        # No project file: like Ruff, the working directory is the project root.
        return Config(root=Path.cwd().resolve())
    return _read(found, explicit=False)


def _read(path: Path, explicit: bool) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, Mapping):
        raise ConfigError(f"{path}: `tool` must be a table ([tool.tpulint]), got {tool!r}")
    if path.name == "pyproject.toml":
        section = tool.get("tpulint", {})
    else:
        section = tool.get("tpulint", data)
    if not isinstance(section, Mapping):
        raise ConfigError(f"{path}: [tool.tpulint] must be a table")
    return Config.from_mapping(section, root=path.parent.resolve(), source=path)
