"""What a project's YAML configs say about its classes and Trainers, for the project scope
(tpulint.analysis.scope) and the project model's hot code.

Config-driven projects build their model, data and callbacks from YAML: LightningCLI
(`model: {class_path: pkg.Model}`), Hydra (`_target_: pkg.Model`), `instantiate_from_config`
(`target: pkg.Model`). A config names:
- the classes it builds, with where in the config (`data.transforms`, `model.postprocessors`):
  a class named under a data pipeline key is built for the data loader;
- the Trainer it runs: `trainer:` (at the top, or under `lightning:`/`fit:`) asking for TPUs
  (`accelerator: tpu`, an XLA strategy, `tpu_cores`) or for something else (`gpus: 2`,
  `accelerator: gpu`); an `accelerator:` elsewhere (`experiment: {accelerator: tpu}`) is what a
  script passes its Trainer.

Read with PyYAML's safe loader; a file that is not YAML, too large, or has no such keys gives
no facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Files larger than this are data, not configs.
MAX_CONFIG_BYTES = 512 * 1024
CLASS_KEYS = ("class_path", "_target_", "target")
_PREFILTER = re.compile(r"(?m)^\s*(class_path|_target_|target|trainer|accelerator)\s*:")
_WORD = re.compile(r"[A-Za-z_][\w\-]*")
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")
_XLA_STRATEGIES = frozenset(
    {"xla", "xla_debug", "xla_fsdp", "single_xla", "tpu_spawn", "tpu_spawn_debug", "single_tpu"}
)
_OTHER = frozenset({"gpu", "cuda", "cpu", "mps", "ipu", "hpu", "ddp", "dp"})


@dataclass
class ConfigFacts:
    path: str
    # [key path ("data.init_args.transforms"), qualified class name]
    classes: list[list[str]] = field(default_factory=list)
    trainer: str | None = None  # "tpu", "other", "auto" (a trainer section), None (none)
    # Every key the file sets (at any depth) -> the distinct values it sets it to: a None,
    # bool, number or string scalar, or "?" for a mapping, a list or an interpolation
    # (`${model.flag}`): what a `cfg.<key>` the code reads may be.
    keys: dict[str, list[Any]] = field(default_factory=dict)
    # The identifier-like words of the file (keys, values, comments): a registry key or a
    # class name the config may select (`decoder: pack`, `name: Lamb`).
    words: list[str] = field(default_factory=list)
    # Qualified class name -> for each mapping that builds it, the keys the mapping gives
    # its constructor with their values as in `keys` (`_target_: pkg.Model` with `use_pbc:
    # false` beside it; a `class_path`'s `init_args`): a parameter every construction sets
    # is never left to its default by these configs (ProjectScope._constructor_arguments).
    given: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The keys set in mappings that build no class (an override `model: {net: {use_pbc:
    # true}}` merged into another file's mapping), with their values as in `keys`.
    loose: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "c": self.classes,
            "t": self.trainer,
            "k": self.keys,
            "w": self.words,
            "g": self.given,
            "l": self.loose,
        }

    @classmethod
    def from_json(cls, path: str, data: dict[str, Any]) -> ConfigFacts:
        return cls(path, data["c"], data["t"], data["k"], data["w"], data["g"], data["l"])


def config_facts(path: str, text: str) -> ConfigFacts:
    facts = ConfigFacts(path)
    if len(text) > MAX_CONFIG_BYTES:
        return facts
    facts.words = sorted(set(_WORD.findall(text)))
    try:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        documents = list(yaml.load_all(text, Loader=loader))  # a safe loader
    except Exception:  # not YAML (a template, another format): no facts
        return facts
    for document in documents:
        _keys(document, facts.keys)
        _arguments(document, facts)
    if not _PREFILTER.search(text):
        return facts
    verdicts: list[str] = []
    for document in documents:
        _walk(document, [], facts, verdicts)
    if verdicts:
        facts.trainer = "tpu" if "tpu" in verdicts else ("other" if "other" in verdicts else "auto")
    return facts


def _walk(
    node: Any, keys: list[str], facts: ConfigFacts, verdicts: list[str], depth: int = 0
) -> None:
    if depth > 40:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            name = str(key)
            if name in CLASS_KEYS and isinstance(value, str) and _DOTTED.match(value):
                facts.classes.append([".".join(keys), value])
                continue
            if name == "trainer" and isinstance(value, dict):
                verdicts.append(_trainer_verdict(value))
            elif name == "accelerator" and "trainer" not in keys:
                # `experiment: {accelerator: tpu}`, read by the script into its Trainer.
                verdicts.append(_trainer_verdict({"accelerator": value}))
            _walk(value, [*keys, name], facts, verdicts, depth + 1)
    elif isinstance(node, list):
        for item in node:
            _walk(item, keys, facts, verdicts, depth + 1)


def _keys(node: Any, keys: dict[str, list[Any]], depth: int = 0) -> None:
    if depth > 40:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                _keys(value, keys, depth + 1)
                scalar: Any = "?"
            elif isinstance(value, str) and "${" in value:
                scalar = "?"
            elif value is None or isinstance(value, (bool, int, float, str)):
                scalar = value
            else:
                scalar = "?"  # a date, bytes
            values = keys.setdefault(str(key), [])
            if "?" in values:
                continue
            if scalar == "?" or len(values) >= 8:
                values[:] = ["?"]  # (a key of data records, not an option: many values)
            elif scalar not in values:
                values.append(scalar)
    elif isinstance(node, list):
        for item in node:
            _keys(item, keys, depth + 1)


def _scalar(value: Any) -> Any:
    """A config value as `ConfigFacts.keys` records it: a scalar, or "?"."""
    if isinstance(value, str) and "${" in value:
        return "?"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return "?"


def _arguments(node: Any, facts: ConfigFacts, depth: int = 0) -> None:
    """Fill `facts.given` and `facts.loose`: what each mapping that builds a class gives its
    constructor, and what the mappings that build none set."""
    if depth > 40:
        return
    if isinstance(node, list):
        for item in node:
            _arguments(item, facts, depth + 1)
        return
    if not isinstance(node, dict):
        return
    built = next(
        (
            (k, v)
            for k, v in node.items()
            if str(k) in CLASS_KEYS and isinstance(v, str) and _DOTTED.match(v)
        ),
        None,
    )
    arguments: Any = node
    if built is not None and built[0] == "class_path":
        arguments = node.get("init_args") or {}
    if built is not None and isinstance(arguments, dict):
        facts.given.setdefault(built[1], []).append(
            {str(k): _scalar(v) for k, v in arguments.items() if str(k) not in CLASS_KEYS}
        )
        for k, value in node.items():
            if arguments is not node and k == "init_args":
                for inner in arguments.values():
                    _arguments(inner, facts, depth + 1)
            elif str(k) not in CLASS_KEYS:
                _arguments(value, facts, depth + 1)
        return
    for k, value in node.items():
        scalar = _scalar(value)
        values = facts.loose.setdefault(str(k), [])
        if scalar not in values:
            values.append(scalar)
        _arguments(value, facts, depth + 1)


def _text(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("class_path", "_target_", "target", "name"):
            if isinstance(value.get(key), str):
                return value[key]
        return ""
    return str(value) if value is not None else ""


def trainer_verdict(trainer: dict[str, Any]) -> str:
    """How surely a Trainer given these arguments runs on TPUs: "tpu", "other" or "auto"."""
    return _trainer_verdict(trainer)


def _trainer_verdict(trainer: dict[str, Any]) -> str:
    """How surely a config's Trainer runs on TPUs (as scope_facts reads Trainer calls)."""
    accelerator = _text(trainer.get("accelerator")).lower()
    strategy = _text(trainer.get("strategy"))
    last = strategy.rsplit(".", 1)[-1]
    if accelerator in ("tpu", "xla") or accelerator.endswith("xlaaccelerator"):
        return "tpu"
    if strategy.lower() in _XLA_STRATEGIES or last in ("XLAStrategy", "XLAFSDPStrategy"):
        return "tpu"
    if trainer.get("tpu_cores") not in (None, 0):
        return "tpu"
    if accelerator in _OTHER or trainer.get("gpus") not in (None, 0, "0"):
        return "other"
    if strategy.lower().startswith(("ddp", "deepspeed", "fsdp")):
        return "other"
    return "auto"
