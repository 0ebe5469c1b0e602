"""Trainer arguments spread from a config section: `pl.Trainer(**cfg.trainer)`.

Hydra and OmegaConf projects keep the Trainer's arguments in YAML and spread one section of
the composed config into the Trainer: `pl.Trainer(logger=..., **cfg.trainer)`,
`Trainer(**config.trainer.trainer)`, `Trainer(**OmegaConf.to_container(cfg.train.pl_trainer))`.
The keys of that section are the Trainer's keyword arguments, as much as those of a
LightningCLI `trainer:` section: `tpu_cores: 8` there raises TypeError in Lightning 2.

`trainer_splats(text)` gives the config paths a Python file spreads into a Trainer
(`("train", "pl_trainer")`), with the code that does it; `engine.yaml_files.splat_section`
says where in a YAML file such a section is written:
- a config-group file (`configs/trainer/tpu.yaml`) holds the group's keys: for the path
  `trainer.trainer` its `trainer:` mapping, for the path `trainer` the whole file (Hydra
  composes a group file under its folder's name unless a `# @package` header says otherwise);
- any other file holds the section at the full path (`train: {pl_trainer: {...}}` in a primary
  config).
Read with `ast` on the files whose text spreads something into a `Trainer(` call.
"""

from __future__ import annotations

import ast
import re

from tpulint.analysis.python_ast import walk as ast_walk

# A file worth parsing: a `Trainer(` call and a `**` spread.
_PREFILTER = re.compile(r"\bTrainer\s*\(")
# Calls that turn a config section into a plain mapping without changing its keys.
_WRAPPERS = frozenset({"dict", "vars", "to_container", "to_object"})
# The names a config section is read from are not the Trainer's own objects.
_NOT_CONFIG_ROOTS = frozenset({"self", "cls", "kwargs", "locals", "globals"})


def trainer_splats(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(config path, code) for each `Trainer(**<name>.<a>.<b>)` of a Python file, directly
    or through a name bound to the section (`trainer_cfg = cfg.trainer`)."""
    if "**" not in text or not _PREFILTER.search(text):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    bound: dict[str, tuple[str, ...]] = {}
    calls: list[ast.Call] = []
    for node in ast_walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            path = _section(node.value)
            if isinstance(target, ast.Name) and path:
                bound.setdefault(target.id, path)
        elif isinstance(node, ast.Call) and _is_trainer(node.func):
            calls.append(node)
    out: list[tuple[tuple[str, ...], str]] = []
    for call in calls:
        for keyword in call.keywords:
            if keyword.arg is not None:
                continue
            value = _unwrap(keyword.value)
            path = _section(value)
            if not path and isinstance(value, ast.Name):
                path = bound.get(value.id, ())
            if path:
                code = f"{ast.unparse(call.func)}(**{ast.unparse(keyword.value)})"
                if (path, code) not in out:
                    out.append((path, code))
    return out


def _is_trainer(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "Trainer"
    return isinstance(func, ast.Attribute) and func.attr == "Trainer"


def _unwrap(node: ast.expr) -> ast.expr:
    """`dict(cfg.trainer)`, `OmegaConf.to_container(cfg.trainer, resolve=True)`: the section."""
    while isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in _WRAPPERS:
            break
        node = node.args[0]
    return node


def _section(node: ast.expr) -> tuple[str, ...]:
    """`cfg.train.pl_trainer` / `cfg["trainer"]`: the keys after the root name (at least one);
    () for anything else."""
    keys: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            keys.append(node.attr)
            node = node.value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.append(node.slice.value)
            node = node.value
        else:
            break
    if not isinstance(node, ast.Name) or node.id in _NOT_CONFIG_ROOTS or not keys:
        return ()
    return tuple(reversed(keys))
