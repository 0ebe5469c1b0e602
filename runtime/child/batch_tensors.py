"""The tensors a step receives, wherever the batch keeps them, with a name for each.

A batch is a tuple or a dict of tensors, or an object: a dataclass, a named tuple, a graph
library's batch (torch_geometric's `Batch` keeps its node and edge tensors in a private
storage mapping), a model-specific container. torch_xla moves all of those to the device
(`xm.send_cpu_data_to_device` rewrites lists, tuples, dicts and objects' `__dict__`,
torch_xla/utils/utils.py:165), so all of them are what the model computes on, and their
shapes are the step's graph inputs. Names read like the code that reaches them: `[0]`,
`['input_ids']`, `x`, `[1].edge_index`. Child process only: imports torch.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

import torch

LIMIT = 12  # tensors per batch: enough for a model's inputs, bounded for huge dicts
_DEPTH = 4

_lock = threading.Lock()
_layouts: dict[str, list[str]] = {}  # stage -> the names last written


def tensors(batch: Any, limit: int = LIMIT) -> list[tuple[str, list[int]]]:
    """(name, shape) of the batch's tensors, in the order the batch holds them."""
    found: list[tuple[str, list[int]]] = []
    names: set[str] = set()
    seen: set[int] = set()

    def visit(item: Any, name: str, depth: int) -> None:
        if len(found) >= limit or depth > _DEPTH or id(item) in seen:
            return
        if isinstance(item, torch.Tensor):
            if name not in names:  # a private copy of a public tensor (a graph's slices)
                names.add(name)
                found.append((name or "batch", list(item.shape)))
            return
        if isinstance(item, (str, bytes, int, float, bool)) or item is None:
            return
        seen.add(id(item))
        if isinstance(item, Mapping):
            for key, value in list(item.items()):
                visit(
                    value,
                    f"{name}[{key!r}]" if name or not isinstance(key, str) else key,
                    depth + 1,
                )
        elif isinstance(item, tuple) and hasattr(item, "_fields"):  # a named tuple
            for field in item._fields:
                visit(getattr(item, field), _attribute(name, field), depth + 1)
        elif isinstance(item, (list, tuple)):
            for index, value in enumerate(item):
                visit(value, f"{name}[{index}]", depth + 1)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for field in dataclasses.fields(item):
                visit(getattr(item, field.name, None), _attribute(name, field.name), depth + 1)
        else:
            attributes = getattr(item, "__dict__", None)
            if not isinstance(attributes, dict):
                return
            public = {k: v for k, v in attributes.items() if not k.startswith("_")}
            before = len(found)
            for key, value in public.items():
                visit(value, _attribute(name, key), depth + 1)
            if len(found) == before:
                # Everything private (a storage object): its contents under the owner's name.
                for key, value in attributes.items():
                    if key.startswith("_"):
                        visit(value, name, depth + 1)

    visit(batch, "", 0)
    return found


def _attribute(owner: str, name: str) -> str:
    return f"{owner}.{name}" if owner else name


def record(batch: Any, log: Any, stage: str) -> list[list[int]]:
    """The shapes, for the step's row; the names go to the event log once per stage, and
    again when the batch's structure changes."""
    found = tensors(batch)
    names = [name for name, _ in found]
    with _lock:
        changed = _layouts.get(stage) != names
        if changed:
            _layouts[stage] = names
    if changed:
        log.write("batch_layout", stage=stage, names=names)
    return [shape for _, shape in found]
