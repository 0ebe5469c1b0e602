"""LightningCLI YAML configs: reading them with positions, for `tpulint check config.yaml`.

LightningCLI (`python main.py fit --config config.yaml`) reads the Trainer's arguments from
`trainer:`, the model's and the datamodule's from `model:` / `data:` (with `class_path` and
`init_args` when they are chosen by class), so `tpu_cores: 8` or `batch_size: 10` in a YAML
file is as real as in Python.

The file is read with PyYAML's composer (`yaml.compose`), which keeps every node's start and
end marks, with the resolver LightningCLI's loader (jsonargparse) uses: YAML 1.1 booleans,
`1e-3` as a float, no timestamps. Block and flow style, anchors and aliases, merge keys
(`<<: *defaults`), multi-line scalars and several documents are all read as YAML reads them.
The result is a tree of `YamlEntry` objects (one per key, with the positions of its key and
value) that rules walk in `check_yaml`; fixes are text edits at those positions, so comments
and layout are kept.

The engine calls this one module for YAML: `read_yaml` for the documents and their comments
(the YAML scanner's own idea of a comment: never inside a quoted or block scalar), and
`check_yaml_file` to run the rules it passes in (those that define `check_yaml`) over each
config. The engine applies suppressions; this module imports neither the registry nor the
suppression parser, and the rule API does not import it.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from tpulint.datatypes.diagnostics import Applicability, Diagnostic, Fix, Location, Severity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpulint.config.settings import Config
    from tpulint.rule_api.rule import Rule

YAML_SUFFIXES = (".yaml", ".yml")
# LightningCLI subcommands: a config given before the subcommand nests its keys under them.
SUBCOMMANDS = ("fit", "validate", "test", "predict")
LIGHTNING_CLI_KEYS = frozenset({"trainer", "model", "data"})
# Hydra config-group files that are a Trainer (`configs/trainer/tpu.yaml` with `_target_:
# lightning.pytorch.Trainer`): `hydra.utils.instantiate(cfg.trainer)` passes the file's other
# keys to the Trainer. Hydra's own keys are not its arguments.
HYDRA_TRAINER_TARGET = re.compile(
    r"^(pytorch_lightning|lightning|lightning\.pytorch)(\.trainer(\.trainer)?)?\.Trainer$"
)
HYDRA_KEYS = frozenset({"_target_", "_partial_", "_recursive_", "_convert_", "_args_", "defaults"})
# How many `defaults:` parents (`- default`) are followed from a Trainer group file.
MAX_HYDRA_BASES = 4
# Keys of a `class_path` mapping that are not constructor arguments.
CLASS_SPEC_KEYS = frozenset({"class_path", "init_args", "dict_kwargs", "__path__"})
# Alias expansion is bounded: a "billion laughs" file must not exhaust memory.
MAX_ENTRIES = 50_000

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_BREAKS = "\r\n\x85\u2028\u2029"


def is_yaml_path(path: str) -> bool:
    return path.lower().endswith(YAML_SUFFIXES)


class YamlSyntaxError(ValueError):
    """The file is not valid YAML; `location` is where the problem was found."""

    def __init__(self, message: str, location: Location) -> None:
        super().__init__(message)
        self.message = message
        self.location = location


@dataclass(eq=False)
class YamlEntry:
    """A `key: value` pair (or an item `[i]` of a sequence), with the positions of its key
    and value.

    `raw` and `value_start`/`value_end` describe scalar values and flow collections
    (`{max_epochs: 3}`, `[0, 1]`); a block mapping or sequence has `raw = None` and its
    content in `children`. Entries that come from an alias or a merge key (`<<: *defaults`)
    carry the positions of the text they were read from (the anchored node) and its name in
    `anchor`: an edit there changes every place that reuses it."""

    key: str
    path: tuple[str, ...]
    line: int  # 1-based line of the key
    indent: int  # 0-based column of the key
    key_start: Location
    key_end: Location
    # The scalar as written (one line: a scalar written over several lines is given in its
    # one-line YAML form), a flow collection's text, or None for a block collection.
    raw: str | None
    value_start: Location | None
    value_end: Location | None
    children: list[YamlEntry] = field(default_factory=list)
    last_line: int = 0  # the last line that belongs to this entry (its block included)
    # Added with the PyYAML reader: the span of the value node whatever its kind, whether the
    # entry sits in a flow mapping, the value's tag and style, and the anchor it was read from.
    node_start: Location | None = None
    node_end: Location | None = None
    flow: bool = False
    tag: str | None = None
    style: str | None = None  # None (plain), "'", '"', "|", ">"
    anchor: str | None = None
    parsed: Any = None
    newline: str = "\n"  # the file's line break

    @property
    def value(self) -> Any:
        """The value as LightningCLI's loader reads it: str, int, float, bool or None for a
        scalar, a list for a sequence of scalars, None for a mapping."""
        return self.parsed

    @property
    def is_mapping(self) -> bool:
        return self.tag == "tag:yaml.org,2002:map"

    @property
    def is_sequence(self) -> bool:
        return self.tag == "tag:yaml.org,2002:seq"

    def child(self, key: str) -> YamlEntry | None:
        """The entry for `key` (the last one if a key is repeated, as YAML loaders keep)."""
        found = None
        for entry in self.children:
            if entry.key == key:
                found = entry
        return found

    @property
    def items(self) -> list[YamlEntry]:
        """The items of a sequence value (`[0]`, `[1]`, ...)."""
        return [c for c in self.children if c.key.startswith("[")]

    @property
    def pair_separator(self) -> str:
        """What separates this entry from a sibling written after it: `, ` in a flow
        mapping, a line break and the key's indentation in a block mapping."""
        return ", " if self.flow else self.newline + " " * self.indent

    # --- LightningCLI components: `class_path` / `init_args` -------------------------

    @property
    def class_path(self) -> str | None:
        """The class of a component chosen by class (`model: {class_path: pkg.Model}`, or the
        shorthand `model: pkg.Model`)."""
        spec = self.child("class_path")
        if spec is not None:
            return spec.value if isinstance(spec.value, str) else None
        if isinstance(self.parsed, str) and "." in self.parsed and not self.children:
            return self.parsed
        return None

    @property
    def arguments(self) -> list[YamlEntry]:
        """The constructor arguments of a component: `init_args:` entries and, as
        jsonargparse also accepts, keys given next to `class_path`; for a mapping without
        `class_path`, all of its entries."""
        init_args = self.child("init_args")
        out = list(init_args.children) if init_args is not None else []
        out += [c for c in self.children if c.key not in CLASS_SPEC_KEYS]
        return out

    def argument(self, key: str) -> YamlEntry | None:
        found = None
        for entry in self.arguments:
            if entry.key == key:
                found = entry
        return found


@dataclass
class YamlDocument:
    """One YAML document (or a LightningCLI subcommand's section of one)."""

    path: str
    text: str
    roots: list[YamlEntry]
    lines: list[str]
    index: int = 0  # which document of the file (0-based)
    section: str | None = None  # the subcommand (`fit`) whose keys these are, if nested
    # A Hydra Trainer group file (`_target_: lightning.pytorch.Trainer`): its keys are under a
    # `trainer` entry made for the rules, with those it inherits through `defaults:`.
    hydra_trainer: bool = False
    # A section the code spreads into a Trainer (`pl.Trainer(**cfg.trainer)`, that code):
    # its keys are under a `trainer` entry made for the rules (trainer_splats).
    splat_code: str | None = None

    @property
    def trainer_label(self) -> str:
        """How a finding names a Trainer key: `trainer: precision` in a LightningCLI config,
        `precision` in a Hydra Trainer file or a spread section (whose keys are the
        Trainer's)."""
        return "" if self.hydra_trainer or self.splat_code else "trainer: "

    @property
    def rejects_key(self) -> str:
        """What happens to a key the Trainer no longer accepts."""
        if self.splat_code:
            return f"`{self.splat_code}` passes it on and the Trainer raises TypeError"
        if self.hydra_trainer:
            return "the Trainer `hydra.utils.instantiate` builds from this file raises TypeError"
        return "LightningCLI rejects the key"

    def entries(self) -> Iterator[YamlEntry]:
        stack = list(reversed(self.roots))
        while stack:
            entry = stack.pop()
            yield entry
            stack.extend(reversed(entry.children))

    def find(self, *path: str) -> YamlEntry | None:
        """The entry at `path`, e.g. find("trainer", "tpu_cores")."""
        level = self.roots
        found = None
        for key in path:
            found = None
            for entry in level:
                if entry.key == key:
                    found = entry
            if found is None:
                return None
            level = found.children
        return found

    @property
    def is_lightning_cli(self) -> bool:
        return bool({e.key for e in self.roots} & LIGHTNING_CLI_KEYS)

    def component(self, name: str) -> YamlEntry | None:
        """`model`, `data` or `trainer`: use `.arguments` / `.argument(key)` for what its
        constructor receives, whether given directly or under `init_args`."""
        return self.find(name)

    def callbacks(self) -> list[YamlEntry]:
        """The Trainer's callbacks: the items of `trainer: callbacks:`, or the one callback
        given as a mapping."""
        trainer = self.find("trainer")
        callbacks = trainer.argument("callbacks") if trainer is not None else None
        if callbacks is None:
            return []
        if callbacks.is_sequence:
            return callbacks.items
        return [callbacks] if callbacks.is_mapping else []

    def line_indent(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip(" "))]


@dataclass
class YamlFile:
    """A whole YAML file: its documents, the LightningCLI configs among them, and what the
    engine needs for suppressions and `--add-noqa`."""

    path: str
    text: str
    documents: list[YamlDocument]
    comments: list[tuple[int, int, str]]  # (1-based line, 0-based column, text)
    # Lines a trailing comment cannot be added to (inside multi-line scalars).
    comment_blocked_lines: frozenset[int]
    # Spans of anchored nodes that aliases reuse, with the anchor's name.
    shared_spans: list[tuple[Location, Location, str]]
    error: YamlSyntaxError | None = None
    # The Hydra configs this file inherits through `defaults: [default]` (read_hydra_bases),
    # nearest first, read at lines after this file's own (so that no finding lands on them).
    bases: list[YamlDocument] = field(default_factory=list)
    # The section of the file some code spreads into a Trainer (trainer_splats.splat_section:
    # the keys leading to it, () for the whole file, and the code), set by the engine.
    splat: tuple[tuple[str, ...], str] | None = None

    @property
    def configs(self) -> list[YamlDocument]:
        """The LightningCLI configs of the file: each document that has `trainer`, `model` or
        `data` keys, and each subcommand section (`fit: trainer: ...`) that has them; a
        Hydra Trainer group file, as a `trainer:` section; and the section the code spreads
        into a Trainer (`pl.Trainer(**cfg.trainer)`), as a `trainer:` section."""
        out = []
        for document in self.documents:
            trainer = self.hydra_trainer(document)
            if trainer is None and document.index == 0:
                trainer = self.spread_trainer(document)
            if trainer is not None:
                out.append(trainer)
                continue
            if document.is_lightning_cli:
                out.append(document)
            for entry in document.roots:
                if entry.key in SUBCOMMANDS and entry.is_mapping:
                    section = YamlDocument(
                        document.path,
                        document.text,
                        entry.children,
                        document.lines,
                        document.index,
                        entry.key,
                    )
                    if section.is_lightning_cli:
                        out.append(section)
        return out

    def hydra_trainer(self, document: YamlDocument) -> YamlDocument | None:
        """`document` as a LightningCLI config whose `trainer:` holds its keys, when it is a
        Hydra Trainer group file: its `_target_` (or that of a config it inherits through
        `defaults:`) is Lightning's Trainer. Inherited keys come after its own (Hydra merges
        the file over its defaults): they are context (`accelerator: tpu`), never reported."""
        if document.section is not None or document.index > 0 or _global_package(self.text):
            return None
        chain = [document, *self.bases]
        target = next((d.find("_target_") for d in chain if d.find("_target_")), None)
        if target is None or not HYDRA_TRAINER_TARGET.match(str(target.value)):
            return None
        children: list[YamlEntry] = []
        present: set[str] = set()
        for level in chain:
            for entry in level.roots:
                if entry.key not in HYDRA_KEYS and entry.key not in present:
                    children.append(entry)
            present |= {e.key for e in level.roots}
        first = document.roots[0] if document.roots else None
        start = first.key_start if first is not None else Location(1, 1)
        trainer = _trainer_section(children, start, len(document.lines))
        return YamlDocument(
            document.path, document.text, [trainer], document.lines, 0, hydra_trainer=True
        )

    def spread_trainer(self, document: YamlDocument) -> YamlDocument | None:
        """`document` as a config whose `trainer:` holds the keys of the section the code
        spreads into a Trainer (`splat`), Hydra's own keys left out."""
        if self.splat is None:
            return None
        keys, code = self.splat
        if keys:
            section = document.find(*keys)
            if section is None or not section.is_mapping:
                return None
            entries = section.children
        else:
            entries = document.roots
        children = [e for e in entries if e.key not in HYDRA_KEYS]
        if not children:
            return None
        trainer = _trainer_section(children, children[0].key_start, len(document.lines))
        return YamlDocument(
            document.path, document.text, [trainer], document.lines, 0, splat_code=code
        )

    def line_end(self, location: Location) -> Location:
        """The end of the content of `location`'s line (before a trailing comment)."""
        lines = self.text.splitlines()
        text = lines[location.line - 1] if 0 < location.line <= len(lines) else ""
        for line, column, _ in self.comments:
            if line == location.line and column >= location.column - 1:
                text = text[:column]
                break
        return Location(location.line, max(len(text.rstrip()) + 1, location.column))

    def anchor_at(self, start: Location, end: Location) -> str | None:
        """The anchor whose reused text contains the span start..end, if any."""
        for span_start, span_end, name in self.shared_spans:
            if span_start <= start and end <= span_end:
                return name
        return None


# --- reading -------------------------------------------------------------------------------


@cache
def _loader_class() -> type:
    """A SafeLoader with jsonargparse's resolvers that records comments, anchors and aliases.

    Built on first use so that `import tpulint.analysis.yaml_config` does not import PyYAML."""
    import yaml
    from yaml.events import AliasEvent

    class Loader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.comments: list[tuple[int, int, str]] = []
            self.aliased: dict[int, tuple[str, Any]] = {}  # id(node) -> (anchor, node)

        # The scanner skips comments in these two places; record them as it does.
        def scan_to_next_token(self) -> None:
            if self.index == 0 and self.peek() == "\ufeff":
                self.forward()
            found = False
            while not found:
                while self.peek() == " ":
                    self.forward()
                self._skip_comment()
                if self.scan_line_break():
                    if not self.flow_level:
                        self.allow_simple_key = True
                else:
                    found = True

        def scan_block_scalar_ignored_line(self, start_mark: Any) -> None:
            while self.peek() == " ":
                self.forward()
            self._skip_comment()
            super().scan_block_scalar_ignored_line(start_mark)

        def _skip_comment(self) -> None:
            if self.peek() != "#":
                return
            mark = self.get_mark()
            length = 0
            while self.peek(length) not in "\0" + _BREAKS:
                length += 1
            self.comments.append((mark.line + 1, mark.column, self.prefix(length)))
            self.forward(length)

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(AliasEvent):
                anchor = self.peek_event().anchor
                node = super().compose_node(parent, index)
                self.aliased[id(node)] = (anchor, node)
                return node
            return super().compose_node(parent, index)

    # jsonargparse's DefaultLoader: no timestamps, and floats as YAML 1.2 writes them
    # (`1e-3` is a float, not a string as in YAML 1.1).
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":timestamp")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith(":float")]
        for first, resolvers in Loader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
            |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
            |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
            |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
            |[-+]?\.(?:inf|Inf|INF)
            |\.(?:nan|NaN|NAN))$""",
            re.X,
        ),
        list("-+0123456789."),
    )
    return Loader


class _Positions:
    """Character offsets <-> 1-based locations, with YAML's line breaks."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        index = 0
        length = len(text)
        while index < length:
            ch = text[index]
            if ch in _BREAKS:
                if ch == "\r" and index + 1 < length and text[index + 1] == "\n":
                    index += 1
                starts.append(index + 1)
            index += 1
        self.starts = starts

    def location(self, offset: int) -> Location:
        line = bisect.bisect_right(self.starts, offset) - 1
        return Location(line + 1, offset - self.starts[line] + 1)


class _Builder:
    """Composed nodes -> YamlEntry trees, following aliases and merge keys."""

    def __init__(self, text: str, positions: _Positions, loader: Any) -> None:
        self.text = text
        self.positions = positions
        self.loader = loader
        self.aliased: dict[int, tuple[str, Any]] = {}
        self.count = 0
        self.blocked: set[int] = set()
        match = re.search(r"\r\n|\r|\n", text)
        self.newline = match.group(0) if match else "\n"

    def content_index(self, node: Any) -> int:
        """Where a node's content starts: after its anchor (`&name`) and tag (`!!str`), which
        the composer counts into the node, so that an edit of the value keeps them."""
        text = self.text
        index = node.start_mark.index
        end = node.end_mark.index
        while index < end and text[index] in "&!":
            while index < end and text[index] not in " \t" + _BREAKS:
                index += 1
            while index < end and text[index] in " \t" + _BREAKS:
                index += 1
            if index < end and text[index] == "#":  # a comment between properties and value
                while index < end and text[index] not in _BREAKS:
                    index += 1
                while index < end and text[index] in " \t" + _BREAKS:
                    index += 1
        return index

    def start(self, node: Any) -> Location:
        return self.positions.location(self.content_index(node))

    def end(self, node: Any) -> Location:
        """The end of a node's text: trailing line breaks and spaces that the scanner
        counted into a block scalar or collection are not part of it."""
        begin, finish = self.content_index(node), node.end_mark.index
        while finish > begin and self.text[finish - 1] in " \t" + _BREAKS:
            finish -= 1
        return self.positions.location(finish)

    def scalar_value(self, node: Any) -> Any:
        from yaml import YAMLError

        try:
            return self.loader.construct_object(node, deep=True)
        except (YAMLError, ValueError, TypeError, OverflowError):
            return node.value

    def mapping_entries(
        self, node: Any, base: tuple[str, ...], anchor: str | None, active: set[int]
    ) -> list[YamlEntry]:
        from yaml.nodes import MappingNode, ScalarNode, SequenceNode

        explicit: list[YamlEntry] = []
        merges: list[Any] = []
        flow = bool(node.flow_style)
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merges.append(value_node)
                continue
            if not isinstance(key_node, ScalarNode):
                continue  # complex keys (`? [a, b]`) are not LightningCLI arguments
            entry = self.entry(
                str(key_node.value), key_node, value_node, base, anchor, active, flow
            )
            if entry is not None:
                explicit.append(entry)
        if not merges:
            return explicit
        # Merge keys: explicit keys win, then the merged mappings in order (`<<: [*a, *b]`:
        # a's keys win over b's), as YAML's merge key type defines.
        present = {e.key for e in explicit}
        merged: list[YamlEntry] = []
        for value_node in merges:
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, MappingNode) or id(source) in active:
                    continue
                shared = self.aliased.get(id(source), (anchor,))[0]
                active.add(id(source))
                for entry in self.mapping_entries(source, base, shared, active):
                    if entry.key not in present:
                        present.add(entry.key)
                        merged.append(entry)
                active.discard(id(source))
        return explicit + merged

    def entry(
        self,
        key: str,
        key_node: Any,
        value_node: Any,
        base: tuple[str, ...],
        anchor: str | None,
        active: set[int],
        flow: bool,
    ) -> YamlEntry | None:
        from yaml.nodes import MappingNode, ScalarNode, SequenceNode

        self.count += 1
        if self.count > MAX_ENTRIES:
            raise _TooLarge
        if id(value_node) in self.aliased:
            anchor = self.aliased[id(value_node)][0]
        key_start = self.start(key_node)
        key_end = self.end(key_node)
        node_start = self.start(value_node)
        node_end = self.end(value_node)
        path = (*base, key)
        entry = YamlEntry(
            key=key,
            path=path,
            line=key_start.line,
            indent=key_start.column - 1,
            key_start=key_start,
            key_end=key_end,
            raw=None,
            value_start=None,
            value_end=None,
            # A value read through an alias is written before its key: the entry ends on the
            # key's line.
            last_line=node_end.line if node_start >= key_end else key_end.line,
            node_start=node_start,
            node_end=node_end,
            flow=flow,
            tag=value_node.tag,
            anchor=anchor,
            newline=self.newline,
        )
        if isinstance(value_node, ScalarNode):
            entry.style = value_node.style
            entry.parsed = self.scalar_value(value_node)
            entry.value_start, entry.value_end = node_start, node_end
            entry.raw = self.scalar_text(value_node, entry.parsed, node_start, node_end)
            return entry
        if id(value_node) in active:
            return entry  # a recursive alias: its content is already being read above
        active.add(id(value_node))
        if isinstance(value_node, MappingNode):
            entry.tag = "tag:yaml.org,2002:map"
            entry.children = self.mapping_entries(value_node, path, anchor, active)
        elif isinstance(value_node, SequenceNode):
            entry.tag = "tag:yaml.org,2002:seq"
            for number, item in enumerate(value_node.value):
                child = self.entry(
                    f"[{number}]", item, item, path, anchor, active, bool(value_node.flow_style)
                )
                if child is not None:
                    entry.children.append(child)
            if all(c.children == [] and c.raw is not None for c in entry.children):
                entry.parsed = [c.parsed for c in entry.children]
        active.discard(id(value_node))
        if value_node.flow_style:
            entry.value_start, entry.value_end = node_start, node_end
            entry.raw = self.source(value_node)
        return entry

    def source(self, node: Any) -> str:
        begin = self.content_index(node)
        length = len(self.text[begin : node.end_mark.index].rstrip(" \t" + _BREAKS))
        return self.text[begin : begin + length]

    def scalar_text(self, node: Any, value: Any, start: Location, end: Location) -> str:
        """The scalar as written, or its one-line form if it spans several lines."""
        if start.line == end.line and node.style not in ("|", ">"):
            return self.source(node)
        # Lines inside a multi-line scalar cannot take a trailing comment.
        first = start.line + 1 if node.style in ("|", ">") else start.line
        last = end.line if node.style in ("|", ">") else end.line - 1
        self.blocked.update(range(first, last + 1))
        return _one_line(value)


class _TooLarge(Exception):
    pass


def _one_line(value: Any) -> str:
    if isinstance(value, str):
        plain = value.strip() == value and value and not re.search(r"[:#\[\]{},&*!|>'\"%@`]", value)
        return value if plain and "\n" not in value else json.dumps(value)
    return json.dumps(value) if value is not None else "null"


def read_yaml(text: str, path: str = "<config>") -> YamlFile:
    """Read every document of a YAML file. A file that is not valid YAML gives a YamlFile
    with `error` set and the documents read before the error."""
    import yaml

    positions = _Positions(text)
    lines = text.splitlines()
    documents: list[YamlDocument] = []
    error: YamlSyntaxError | None = None
    builder = None
    loader = None
    shared: list[tuple[Location, Location, str]] = []
    try:
        loader = _loader_class()(text)
        builder = _Builder(text, positions, loader)
        while loader.check_node():
            root = loader.get_node()
            builder.aliased = loader.aliased
            for anchor, node in loader.aliased.values():
                shared.append((builder.start(node), builder.end(node), anchor))
            roots: list[YamlEntry] = []
            if isinstance(root, yaml.MappingNode):
                roots = builder.mapping_entries(root, (), None, {id(root)})
            documents.append(YamlDocument(path, text, roots, lines, len(documents)))
            loader.aliased = {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        location = positions.location(mark.index) if mark is not None else Location(1, 1)
        error = YamlSyntaxError(exc.problem or exc.context or "invalid YAML", location)
    except yaml.reader.ReaderError as exc:
        error = YamlSyntaxError(
            f"character {exc.character!r} is not allowed in YAML",
            positions.location(exc.position),
        )
    except yaml.YAMLError as exc:
        error = YamlSyntaxError(str(exc).splitlines()[0], Location(1, 1))
    except _TooLarge:
        error = YamlSyntaxError(
            f"aliases expand to more than {MAX_ENTRIES} entries; not read", Location(1, 1)
        )
    except RecursionError:
        error = YamlSyntaxError("nested too deeply to read", Location(1, 1))
    comments = loader.comments if loader is not None else []
    blocked = frozenset(builder.blocked) if builder is not None else frozenset()
    return YamlFile(path, text, documents, comments, blocked, shared, error)


def _global_package(text: str) -> bool:
    """A `# @package _global_` header: the file's keys go to the root of the composed config,
    not to its group."""
    return re.search(r"(?m)^#\s*@package\s+_global_\b", text) is not None


def hydra_base_files(path: str, text: str) -> list[tuple[str, str]]:
    """The Hydra configs a config-group file inherits from its own group (`defaults: [default]`,
    `- default.yaml`, `- base/gpu`), nearest first, each followed in turn: (path, text) read
    from disk. Entries naming another group (`- /trainer: gpu`, `- override ...`, mappings)
    and `_self_` are not followed."""
    import os

    out: list[tuple[str, str]] = []
    seen = {os.path.abspath(path)}
    todo = [(path, text)]
    while todo and len(out) < MAX_HYDRA_BASES:
        current, current_text = todo.pop(0)
        if "defaults" not in current_text:
            continue
        document = parse_yaml(current_text, current)
        defaults = document.find("defaults")
        if defaults is None or not defaults.is_sequence:
            continue
        folder = os.path.dirname(os.path.abspath(current))
        for item in defaults.items:
            name = item.value
            if not isinstance(name, str) or item.children or name == "_self_":
                continue
            if name.startswith(("/", ".")) or ":" in name or " " in name.strip():
                continue
            base = os.path.join(folder, *name.split("/"))
            if not base.endswith((".yaml", ".yml")):
                base += ".yaml"
            if base in seen or not os.path.isfile(base):
                continue
            seen.add(base)
            try:
                with open(base, encoding="utf-8") as handle:
                    base_text = handle.read(MAX_BASE_BYTES + 1)
            except (OSError, UnicodeDecodeError):
                continue
            if len(base_text) > MAX_BASE_BYTES:
                continue
            out.append((base, base_text))
            todo.append((base, base_text))
    return out[:MAX_HYDRA_BASES]


MAX_BASE_BYTES = 256 * 1024


def read_hydra_bases(file: YamlFile, bases: Sequence[tuple[str, str]]) -> YamlFile:
    """`file` with the configs it inherits (`hydra_base_files`), each read at lines after the
    file's own text, so that a report on an inherited key falls outside the file."""
    offset = len(file.text.splitlines()) + 1
    for base, text in bases:
        documents = read_yaml("\n" * offset + text, base).documents
        if documents:
            file.bases.append(documents[0])
        offset += len(text.splitlines()) + 1
    return file


def parse_yaml(text: str, path: str = "<config>") -> YamlDocument:
    """The first document of a YAML file (an empty one if there is none or it does not
    parse). `read_yaml` gives every document, the comments and the parse error."""
    documents = read_yaml(text, path).documents
    return documents[0] if documents else YamlDocument(path, text, [], text.splitlines())


# --- running the rules on a file -----------------------------------------------------------


def check_yaml_file(
    file: YamlFile, config: Config, rules: Sequence[type[Rule]]
) -> list[Diagnostic]:
    """Run `rules` (their `check_yaml`) over each LightningCLI config of `file`: diagnostics
    with positions and fixes, before suppressions. A file that is not valid YAML gives one
    TPL002 at the problem. Exceptions of a rule propagate (the engine reports them)."""
    if file.error is not None:
        return [
            Diagnostic(
                code="TPL002",
                name="syntax-error",
                message=f"Not valid YAML, not checked: {file.error.message}",
                path=file.path,
                start=file.error.location,
                end=file.error.location,
                severity=Severity.ERROR,
            )
        ]
    diagnostics: list[Diagnostic] = []
    seen: set[tuple[str, Location, Location]] = set()
    own_lines = len(file.text.splitlines()) + 1  # (a last line without a line break)
    for document in file.configs:
        for rule_class in rules:
            rule = rule_class(None)  # type: ignore[arg-type]  # YAML checks need no FileContext
            rule.yaml_config = config
            rule.check_yaml(document)
            for report in rule.yaml_reports:
                start, end = report.start, report.end
                if start.line > own_lines:
                    continue  # a key inherited through Hydra's `defaults:`, reported there
                if end < start:
                    # From a key to its value read through an alias (written above the key):
                    # the finding is on the key's line; its fix edits the anchor.
                    end = file.line_end(start)
                # A node reached twice (through an alias) is reported once where it is written.
                key = (rule_class.code, start, end)
                if key in seen:
                    continue
                seen.add(key)
                diagnostics.append(
                    Diagnostic(
                        code=rule_class.code,
                        name=rule_class.name,
                        message=report.message,
                        path=file.path,
                        start=start,
                        end=end,
                        severity=rule_class.severity,
                        fix=_shared_fix(file, report.fix),
                        noqa_lines=tuple(range(start.line, end.line + 1)),
                    )
                )
    return diagnostics


def _shared_fix(file: YamlFile, fix: Fix | None) -> Fix | None:
    """A fix that edits an anchored node changes every alias of it too: say so, and apply it
    only with --unsafe-fixes."""
    if fix is None:
        return None
    anchors = sorted({a for e in fix.edits if (a := file.anchor_at(e.start, e.end))})
    if not anchors:
        return fix
    listed = ", ".join(f"`&{a}`" for a in anchors)
    applicability = fix.applicability
    if applicability is Applicability.SAFE:
        applicability = Applicability.UNSAFE
    return Fix(applicability, f"{fix.message} (edits {listed}, which aliases reuse)", fix.edits)


def _trainer_section(children: list[YamlEntry], start: Location, last_line: int) -> YamlEntry:
    """A synthetic `trainer:` mapping holding `children`: how a Hydra Trainer group file or a
    section the code spreads into a Trainer is read as a LightningCLI config's Trainer."""
    return YamlEntry(
        key="trainer",
        path=("trainer",),
        line=start.line,
        indent=0,
        key_start=start,
        key_end=start,
        raw=None,
        value_start=None,
        value_end=None,
        children=children,
        last_line=last_line,
        node_start=start,
        node_end=start,
        tag="tag:yaml.org,2002:map",
    )
