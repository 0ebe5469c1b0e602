"""YAML configs on disk, for the runner: what a Hydra Trainer group file inherits from its
group (`defaults: [default]`), read once the walk has found the file, before any check.

Light on imports (the YAML reader only, which imports PyYAML on first use), so that the
runner's walk does not wait for the engine's libcst import."""

from __future__ import annotations

import os
import re
from typing import Any

from tpulint.analysis.config_facts import trainer_verdict
from tpulint.analysis.yaml_config import (
    hydra_base_files,
    is_yaml_path,
    parse_yaml,
    read_hydra_bases,
    read_yaml,
)

# A `# @package` header: Hydra composes the file where it says, not under its group folder.
_PACKAGE_HEADER = re.compile(r"(?m)^#\s*@package\b")


def hydra_trainer_verdict(path: str, text: str) -> str | None:
    """How a Hydra Trainer group file's Trainer runs ("tpu", "other", "auto"), with the keys
    it inherits through `defaults:`; None for a file that is not one."""
    if "_target_" not in text and "defaults" not in text:
        return None
    file = read_yaml(text, path)
    if file.error is not None or not file.documents:
        return None
    read_hydra_bases(file, hydra_base_files(path, text))
    document = file.hydra_trainer(file.documents[0])
    if document is None:
        return None
    trainer = document.roots[0]
    return trainer_verdict({e.key: e.value for e in trainer.children})


def with_inherited(path: str, text: str) -> str:
    """What a file's findings depend on besides the project model (for its cache key): its
    text, and for a Hydra config the configs it inherits through `defaults:`."""
    if "defaults" not in text or not is_yaml_path(path):
        return text
    bases = hydra_base_files(path, text)
    return "\0".join([text, *(f"{base}\0{base_text}" for base, base_text in bases)])


def splat_section(
    path: str, text: str, splats: list[tuple[tuple[str, ...], str]] | tuple[Any, ...]
) -> tuple[tuple[str, ...], str] | None:
    """Where the YAML file at `path` writes a section some code spreads into a Trainer
    (analysis.trainer_splats): the keys leading to it inside the file (() for the whole file)
    and the code; None when it writes none. Only the file's first document counts (Hydra
    reads one). A file in the group folder the path's first key names holds the group's keys
    (unless a `# @package` header moves them); any other file holds the full path."""
    if not splats:
        return None
    document = parse_yaml(text, path)
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    packaged = _PACKAGE_HEADER.search(text) is not None
    for keys, code in splats:
        keys = tuple(keys)
        candidates = [keys]
        if keys[0] == folder and not packaged:
            candidates.insert(0, keys[1:])  # a config-group file under the group's folder
        for inner in candidates:
            if not inner:
                if document.roots:
                    return (), code
                continue
            entry = document.find(*inner)
            if entry is not None and entry.is_mapping and entry.children:
                return inner, code
    return None


def spread_verdict(
    path: str, text: str, splats: list[tuple[tuple[str, ...], str]] | tuple[Any, ...]
) -> str | None:
    """How the Trainer built from a YAML file's spread section runs ("tpu", "other",
    "auto"); None when the file writes no section the code spreads into a Trainer."""
    found = splat_section(path, text, splats)
    if found is None:
        return None
    document = parse_yaml(text, path)
    section = document.find(*found[0]) if found[0] else None
    entries = section.children if section is not None else document.roots
    return trainer_verdict({e.key: e.value for e in entries})
