"""What differs between two XLA graphs, op by op, with the Python line of each op.

The child keeps the HLO of every compiled graph (child/hlo_dump.py: XLA's own
`before_optimizations` dump, each instruction tagged by torch_xla with the innermost Python
line that built it). When a step compiles a new graph after warm-up, comparing it with the
nearest earlier graph says why:

* same ops, other values: an op's constant, attribute (a slice offset, a padding) or shape
  differs: a Python value baked into the graph, at that op's line;
* same ops, other input shapes: the step's inputs (the batch) changed shape;
* other ops: code that ran in one step and not in the other (a branch on the epoch or step,
  a frozen layer, a new loss term): a phase switch, with its line.

Graphs are matched to the rows that compiled them through torch_xla's UncachedCompile
counter (one dump per compile, in order), or the files' times when the counts disagree.
Parent process only; standard library only.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DUMP_DIR = "hlo"  # child/hlo_dump.py
SUFFIX = ".before_optimizations.txt"
_NUMBERED = re.compile(r"%([\w\-]+?)\.\d+\b")
_MODULE_NUMBER = re.compile(r"module_(\d+)\.")
_META_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
_MAX_DIFFED = 40_000  # instructions: bigger graphs are compared op for op only when aligned


@dataclass(frozen=True)
class Instruction:
    opcode: str
    op_type: str  # torch_xla's op, e.g. aten__mul, xla__unselect
    path: str | None
    line: int | None
    shape: str
    attributes: str  # normalized: no instruction numbers, no metadata
    literal: str  # a constant's value, a parameter's number

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.opcode, self.op_type, self.path, self.line)


@dataclass
class HloModule:
    path: str
    number: int
    mtime: float
    parameters: list[str]  # the entry computation's parameter shapes
    instructions: list[Instruction]
    _keys: tuple[Any, ...] | None = None

    @property
    def keys(self) -> tuple[Any, ...]:
        if self._keys is None:
            self._keys = tuple(i.key for i in self.instructions)
        return self._keys


@dataclass(frozen=True)
class Change:
    path: str | None
    line: int | None
    what: str  # constant | attribute | shape | added | removed
    op: str  # how the op reads: `xla::unselect (pad)`
    before: str = ""
    after: str = ""


@dataclass
class GraphDiff:
    """A graph compiled after warm-up against the nearest earlier graph."""

    kind: str  # values | structure | duplicate | new
    module: HloModule
    against: HloModule | None
    changes: list[Change] = field(default_factory=list)
    inputs: list[tuple[int, str, str]] = field(default_factory=list)  # (index, before, after)
    # Lines of added ops that no earlier graph of the loop ran (set by the caller).
    new_lines: set[tuple[str | None, int | None]] = field(default_factory=set)


# --- parsing --------------------------------------------------------------------------------


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at `start`."""
    depth = 0
    quoted = False
    for index in range(start, len(text)):
        char = text[index]
        if char == '"' and text[index - 1] != "\\":
            quoted = not quoted
        if quoted:
            continue
        if char == open_:
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def _instruction(line: str) -> Instruction | None:
    text = line.strip()
    if text.startswith("ROOT "):
        text = text[5:]
    if not text.startswith("%") or " = " not in text:
        return None
    rest = text.split(" = ", 1)[1]
    if rest.startswith("("):
        end = _balanced(rest, 0, "(", ")")
    else:
        end = rest.find(" ")
        if end < 0:
            return None
    shape, rest = rest[:end], rest[end:].lstrip()
    paren = rest.find("(")
    if paren < 0:
        return None
    opcode = rest[:paren]
    end = _balanced(rest, paren, "(", ")")
    operands, rest = rest[paren + 1 : end - 1], rest[end:]
    meta = ""
    at = rest.find("metadata={")
    if at >= 0:
        close = _balanced(rest, at + len("metadata="), "{", "}")
        meta, rest = rest[at + len("metadata={") : close - 1], rest[:at] + rest[close:]
    fields = {k: v.strip('"') for k, v in _META_FIELD.findall(meta)}
    line_text = fields.get("source_line")
    return Instruction(
        opcode=opcode,
        op_type=fields.get("op_type", ""),
        path=fields.get("source_file") or None,
        line=int(line_text) if line_text and line_text.isdigit() else None,
        shape=_shape(shape),
        attributes=_NUMBERED.sub(r"%\1", rest.strip(", ")),
        literal=operands if opcode in ("constant", "parameter", "iota") else "",
    )


def _shape(shape: str) -> str:
    """`f32[4096,16]{1,0}` -> `f32[4096,16]`: layouts say nothing the user wrote."""
    return re.sub(r"\{[\d,]*\}", "", shape)


def parse_module(path: str | Path) -> HloModule | None:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    match = _MODULE_NUMBER.search(os.path.basename(str(path)))
    instructions = []
    parameters: dict[int, str] = {}
    in_entry = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("ENTRY "):
            in_entry = True
            continue
        if stripped == "}":
            in_entry = False
            continue
        found = _instruction(line)
        if found is None:
            continue
        instructions.append(found)
        if in_entry and found.opcode == "parameter" and found.literal.isdigit():
            parameters[int(found.literal)] = found.shape
    return HloModule(
        str(path),
        int(match.group(1)) if match else len(instructions),
        mtime,
        [parameters[i] for i in sorted(parameters)],
        instructions,
    )


def load_modules(run_dir: str | Path) -> list[HloModule]:
    """Every dumped module of the run, in compile order (per process: the dump folder of a
    forked process is its own)."""
    root = Path(run_dir) / DUMP_DIR
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*" + SUFFIX)):
        module = parse_module(path)
        if module is not None:
            found.append(module)
    found.sort(key=lambda m: (m.mtime, m.number))
    return found


# --- which row compiled which module ----------------------------------------------------------

_ROW_KINDS = ("step", "eval_step", "train_end")


def modules_by_event(
    modules: list[HloModule], events: list[dict[str, Any]]
) -> dict[int, list[HloModule]]:
    """id(row event) -> the modules compiled in that row. The counts of uncached compiles say
    exactly how many modules each row compiled (one dump per compile); when they do not add up
    (a compile that dumps nothing, a foreign dump), the files' times decide."""
    start = next((e for e in events if e["kind"] == "train_start"), None)
    rows = [e for e in events if e["kind"] in _ROW_KINDS]
    if not rows or not modules:
        return {}
    setup = int((start or {}).get("counters", {}).get("UncachedCompile", 0)) if start else 0
    counts = [int(e.get("counters", {}).get("UncachedCompile", 0)) for e in rows]
    found: dict[int, list[HloModule]] = {}
    if start is not None and setup + sum(counts) == len(modules):
        ordered = sorted(modules, key=lambda m: m.number)
        index = setup
        for event, count in zip(rows, counts, strict=True):
            found[id(event)] = ordered[index : index + count]
            index += count
        return found
    bounds = [e["time"] for e in rows]
    for module in modules:
        at = bisect.bisect_left(bounds, module.mtime)
        if at < len(rows) and (start is None or module.mtime > start["time"]):
            found.setdefault(id(rows[at]), []).append(module)
    return found


# --- comparing ------------------------------------------------------------------------------


def _op(instruction: Instruction) -> str:
    name = instruction.op_type.replace("__", "::") if instruction.op_type else ""
    if name and name.split("::")[-1] != instruction.opcode:
        return f"{name} ({instruction.opcode})"
    return name or instruction.opcode


def _value_changes(new: HloModule, old: HloModule) -> list[Change]:
    changes = []
    for a, b in zip(old.instructions, new.instructions, strict=True):
        if a.opcode == "parameter":
            continue  # inputs are compared apart
        if a.literal != b.literal and a.opcode == "constant":
            changes.append(Change(b.path, b.line, "constant", _op(b), a.literal, b.literal))
        elif a.attributes != b.attributes:
            before, after = _differing_attribute(a.attributes, b.attributes)
            changes.append(Change(b.path, b.line, "attribute", _op(b), before, after))
        elif a.shape != b.shape:
            changes.append(Change(b.path, b.line, "shape", _op(b), a.shape, b.shape))
    return changes


def _attributes(text: str) -> dict[str, str]:
    """`slice={[0:7], [0:16]}, padding=8_0` -> {"slice": "{[0:7], [0:16]}", "padding": ...}:
    split at the commas outside brackets."""
    found: dict[str, str] = {}
    depth, start = 0, 0
    for index, char in enumerate(text + ","):
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif char == "," and depth == 0:
            part = text[start:index].strip()
            if "=" in part:
                key, value = part.split("=", 1)
                found[key.strip()] = value.strip()
            start = index + 1
    return found


def _differing_attribute(before: str, after: str) -> tuple[str, str]:
    """The attributes that differ (`padding=152_3936x0_0` against `padding=160_3928x0_0`)."""
    old = _attributes(before)
    new = _attributes(after)
    names = [k for k in new if old.get(k) != new.get(k)] + [k for k in old if k not in new]
    if not names:
        return before, after
    return (
        ", ".join(f"{k}={old[k]}" for k in names if k in old),
        ", ".join(f"{k}={new[k]}" for k in names if k in new),
    )


def _structure_changes(new: HloModule, old: HloModule) -> list[Change]:
    matcher = difflib.SequenceMatcher(None, old.keys, new.keys, autojunk=False)
    changes = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            for a in old.instructions[i1:i2]:
                changes.append(Change(a.path, a.line, "removed", _op(a)))
        if tag in ("insert", "replace"):
            for b in new.instructions[j1:j2]:
                changes.append(Change(b.path, b.line, "added", _op(b)))
    return changes


def diff(new: HloModule, earlier: list[HloModule]) -> GraphDiff:
    """`new` against the most recent earlier module with the same ops and other values, else
    the most similar earlier module."""
    same = [m for m in earlier if m.keys == new.keys]
    for old in reversed(same):
        inputs = [
            (i, a, b)
            for i, (a, b) in enumerate(zip(old.parameters, new.parameters, strict=False))
            if a != b
        ]
        changes = _value_changes(new, old)
        if changes or inputs:
            return GraphDiff("values", new, old, changes, inputs)
    if same:
        return GraphDiff("duplicate", new, same[-1])
    size = len(new.instructions)
    candidates = [
        m for m in earlier if size // 2 <= len(m.instructions) <= size * 2 and m.instructions
    ]
    if not candidates or size > _MAX_DIFFED:
        return GraphDiff("new", new, None)
    scored = sorted(
        candidates,
        key=lambda m: difflib.SequenceMatcher(None, m.keys, new.keys).quick_ratio(),
    )
    best = scored[-1]
    if difflib.SequenceMatcher(None, best.keys, new.keys).quick_ratio() < 0.6:
        return GraphDiff("new", new, None)
    return GraphDiff("structure", new, best, _structure_changes(new, best))
