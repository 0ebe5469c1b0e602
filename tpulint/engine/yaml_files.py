"""YAML configs on disk, for the runner: what a Hydra Trainer group file inherits from its
group (`defaults: [default]`), read once the walk has found the file, before any check.

Light on imports (the YAML reader only, which imports PyYAML on first use), so that the
runner's walk does not wait for the engine's libcst import."""

from __future__ import annotations

from tpulint.analysis.config_facts import trainer_verdict
from tpulint.analysis.yaml_config import (
    hydra_base_files,
    is_yaml_path,
    read_hydra_bases,
    read_yaml,
)


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
