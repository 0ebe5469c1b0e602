"""LightningCLI YAML configs: read with PyYAML's composer (positions from its marks), checked
by the rules' `check_yaml`, fixed with text edits that keep comments and layout.

The fixtures in tests/fixtures/lightning_cli/ are realistic configs in the styles the
hand-written reader missed: flow mappings, anchors and merge keys, several documents,
multi-line scalars, subcommand sections and callbacks given by `class_path`/`init_args`.
Each `NAME.in.yaml` has its findings listed below and its `fix --unsafe-fixes` result in
`NAME.out.yaml`.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import make_project, run_cli
from tpulint.analysis.yaml_config import (
    MAX_ENTRIES,
    YamlEntry,
    _loader_class,
    parse_yaml,
    read_yaml,
)
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Location
from tpulint.engine.source import add_noqa_comments, check_source, fix_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lightning_cli"
INPUTS = sorted(FIXTURES.glob("*.in.yaml"))
ALL_RULES = Config.from_mapping({"select": ["TPU", "TPL"], "extend-select": ["TPU9"]})

# (line, column, code) of every finding in each fixture, checked by hand. The batch sizes in
# them are not graded (TPU302 judges a batch only where the model's inputs are visible).
EXPECTED = {
    "anchors": [
        (9, 25, "TPU007"),  # trainer.devices: *cores, read from the anchored `&cores 8`
        (18, 41, "TPU003"),  # strategy: tpu_spawn inside the merged `&tpu` flow mapping
        (18, 63, "TPU004"),  # precision: 16-mixed, same mapping
        (21, 3, "TPU002"),  # replace_sampler_ddp
    ],
    "block_scalars": [
        (3, 13, "TPU003"),  # strategy: >- tpu_spawn (a folded scalar over two lines)
        (5, 14, "TPU004"),  # precision: "16-mixed"
    ],
    "flow_style": [
        (4, 11, "TPU001"),
        (4, 51, "TPU004"),
    ],
    "multi_document": [
        (3, 3, "TPU001"),
        (12, 12, "TPU007"),  # second document
        (13, 14, "TPU004"),
    ],
    "subcommand_callbacks": [
        (5, 5, "TPU901"),  # fit: trainer: log_every_n_steps: 1
        (9, 11, "TPU901"),  # the TQDMProgressBar callback's init_args: refresh_rate: 1
    ],
}


def _name(path: Path) -> str:
    return path.name.split(".", 1)[0]


def test_every_fixture_has_expectations() -> None:
    assert sorted(_name(p) for p in INPUTS) == sorted(EXPECTED)


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_fixture_findings(path: Path) -> None:
    found = check_source(path.read_text(encoding="utf-8"), str(path), ALL_RULES)
    assert [(d.start.line, d.start.column, d.code) for d in found] == EXPECTED[_name(path)]


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_fixture_fix_keeps_comments_and_layout(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    expected = path.with_name(path.name.replace(".in.", ".out.")).read_text(encoding="utf-8")
    result = fix_source(source, str(path), ALL_RULES, unsafe=True)
    assert result.error is None
    assert result.source == expected
    before, after = read_yaml(source), read_yaml(result.source)
    assert after.error is None
    # Every comment is still there, with its text, in the same order.
    assert [text for _, _, text in after.comments] == [text for _, _, text in before.comments]


def test_safe_fixes_leave_shared_anchors_alone() -> None:
    """A fix that edits an anchored value changes every alias too: unsafe, and it says so."""
    path = FIXTURES / "anchors.in.yaml"
    found = check_source(path.read_text(encoding="utf-8"), str(path), ALL_RULES)
    shared = [d for d in found if d.code == "TPU007"]
    assert shared and all(d.fix is not None for d in shared)
    assert {d.fix.applicability.value for d in shared if d.fix} == {"unsafe"}
    assert all("`&cores`" in d.fix.message for d in shared if d.fix)
    safe = fix_source(path.read_text(encoding="utf-8"), str(path), ALL_RULES)
    assert "&cores 8" in safe.source
    assert "strategy: xla" in safe.source  # `&tpu` is never aliased: its fix stays safe
    assert "use_distributed_sampler: false   # we shard ourselves" in safe.source


# --- the reader agrees with PyYAML's loader -------------------------------------------------


def _python(entries: list[YamlEntry]) -> Any:
    if entries and all(e.key.startswith("[") for e in entries):
        return [_entry_value(e) for e in entries]
    return {e.key: _entry_value(e) for e in entries}


def _entry_value(entry: YamlEntry) -> Any:
    if entry.is_mapping:
        return _python(entry.children)
    if entry.is_sequence:
        return [_entry_value(e) for e in entry.children]
    return entry.value


EXTRA_SOURCES = [
    "a: &x {p: 1, q: [1, 2]}\nb:\n  <<: *x\n  q: 3\nc: [*x, *x]\n",
    "base: &b {x: 1, y: 2}\nmore: &m {y: 3, z: 4}\nboth:\n  <<: [*m, *b]\n  x: 0\n",
    "lr: 1e-3\nflag: on\nday: 2024-01-01\nhex: 0x10\nquoted: '8'\nnothing: ~\nempty:\n",
    "k: v\nk: w\n",  # a repeated key: the last one counts
    "- 1\n- [2, 3]\n- {a: b}\n",
]


@pytest.mark.parametrize(
    "source",
    [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.yaml"))] + EXTRA_SOURCES,
    ids=[p.name for p in sorted(FIXTURES.glob("*.yaml"))] + [f"extra{i}" for i in range(5)],
)
def test_reader_agrees_with_the_loader(source: str) -> None:
    loaded = list(yaml.load_all(source, Loader=_loader_class()))
    documents = read_yaml(source).documents
    assert len(documents) == len(loaded)
    for document, data in zip(documents, loaded, strict=True):
        if isinstance(data, dict):
            assert _python(document.roots) == data
        else:
            assert document.roots == []


def test_scalars_are_read_as_lightning_cli_reads_them() -> None:
    document = parse_yaml(EXTRA_SOURCES[2])
    values = {e.key: e.value for e in document.roots}
    # jsonargparse's loader: `1e-3` is a float, YAML 1.1 booleans, no timestamps.
    assert values == {
        "lr": 0.001,
        "flag": True,
        "day": "2024-01-01",
        "hex": 16,
        "quoted": "8",
        "nothing": None,
        "empty": None,
    }
    assert [e.raw for e in document.roots][:5] == ["1e-3", "on", "2024-01-01", "0x10", "'8'"]


def test_positions_are_characters_after_anchors_and_tags() -> None:
    source = "trainer: {précision: 16, tpu_cores: &n 8}\nmodel:\n  x: !!str 12  # c\n"
    document = parse_yaml(source)
    trainer = document.find("trainer")
    assert trainer is not None and not trainer.flow and trainer.raw is not None
    cores = trainer.child("tpu_cores")
    assert cores is not None and cores.flow and cores.pair_separator == ", "
    # Columns count characters (é is one), and the value starts after `&n `.
    assert (cores.key_start.line, cores.key_start.column) == (1, 26)
    assert (cores.value_start, cores.value_end) == (Location(1, 40), Location(1, 41))
    assert cores.value == 8 and cores.raw == "8"
    x = document.find("model", "x")
    assert x is not None and x.raw == "12" and x.value == "12" and x.pair_separator == "\n  "


def test_comments_are_the_scanners() -> None:
    source = (
        "# top\n"
        "a: 'quoted # not a comment'  # real\n"
        "b: plain#not-a-comment\n"
        "c: |  # header comment\n"
        "  # content, not a comment\n"
        "d: {x: 1,  # inside a flow mapping\n"
        "    y: 2}\n"
    )
    file = read_yaml(source)
    assert file.error is None
    assert [(line, text) for line, _, text in file.comments] == [
        (1, "# top"),
        (2, "# real"),
        (4, "# header comment"),
        (6, "# inside a flow mapping"),
    ]
    assert file.comment_blocked_lines == frozenset({5})


def test_merge_keys_follow_yaml_precedence() -> None:
    document = parse_yaml(EXTRA_SOURCES[1])
    both = document.find("both")
    assert both is not None
    assert {e.key: e.value for e in both.children} == {"x": 0, "y": 3, "z": 4}
    y = both.child("y")
    assert y is not None and y.anchor == "m" and y.line == 2  # read from `&m`, where it is


def test_components_follow_class_path_and_init_args() -> None:
    source = (
        "model: models.Net\n"
        "data:\n  class_path: data.DM\n  init_args: {batch_size: 4}\n  num_workers: 2\n"
        "trainer:\n  callbacks:\n    class_path: lightning.pytorch.callbacks.RichProgressBar\n"
    )
    document = parse_yaml(source)
    model, data = document.component("model"), document.component("data")
    assert model is not None and model.class_path == "models.Net" and model.arguments == []
    assert data is not None and data.class_path == "data.DM"
    assert [e.key for e in data.arguments] == ["batch_size", "num_workers"]
    assert data.argument("batch_size") is not None
    assert [c.class_path for c in document.callbacks()] == [
        "lightning.pytorch.callbacks.RichProgressBar"
    ]


def test_recursive_and_exploding_aliases_are_bounded() -> None:
    recursive = read_yaml("trainer: &t\n  self: *t\n  tpu_cores: 8\n")
    assert recursive.error is None
    trainer = recursive.documents[0].find("trainer")
    assert trainer is not None and trainer.child("tpu_cores") is not None
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    exploding = read_yaml("\n".join(lines) + "\n")
    assert exploding.error is not None and str(MAX_ENTRIES) in exploding.error.message


@pytest.mark.parametrize(
    ("source", "line", "column", "problem"),
    [
        ("trainer:\n  max_epochs: 3\n   accelerator: tpu\n", 3, 15, "mapping values"),
        ("trainer:\n\tmax_epochs: 3\n", 2, 1, "found character '\\t'"),
        ("a: *missing\n", 1, 4, "undefined alias"),
        ("a: [1, 2\n", 2, 1, "expected ',' or ']'"),
    ],
)
def test_invalid_yaml_is_reported_where_it_breaks(
    source: str, line: int, column: int, problem: str
) -> None:
    found = check_source(source, "config.yaml", ALL_RULES)
    assert [(d.code, d.start.line, d.start.column) for d in found] == [("TPL002", line, column)]
    assert found[0].message.startswith("Not valid YAML, not checked: ")
    assert problem in found[0].message
    assert fix_source(source, "config.yaml", ALL_RULES).source == source


def test_add_noqa_on_a_config_then_nothing_is_reported() -> None:
    path = FIXTURES / "block_scalars.in.yaml"
    source = path.read_text(encoding="utf-8")
    found = check_source(source, "config.yaml", ALL_RULES)
    new, added = add_noqa_comments(source, "config.yaml", found)
    assert added == len(found) == 2
    assert read_yaml(new).error is None
    # The folded scalar's finding gets its comment on the header line, not inside the scalar.
    assert "  strategy: >-  # noqa: TPU003\n" in new
    assert check_source(new, "config.yaml", ALL_RULES) == []
    assert list(yaml.load_all(new, Loader=_loader_class())) == list(
        yaml.load_all(source, Loader=_loader_class())
    )


# Every value kind under every key a YAML rule reads: no rule may crash on any of them.
# `{i}` is the indentation of a block value's lines.
_KINDS = [
    "{{a: 1}}",
    "[1, 2]",
    "\n{i}- 1\n{i}- 2",
    "\n{i}a: 1",
    "~",
    "true",
    "'8'",
    ">-\n{i}8",
    "*anchor",
    "!!python/name:os.system ''",
]
_TRAINER_KEYS = [
    "tpu_cores",
    "num_tpu_cores",
    "accelerator",
    "strategy",
    "precision",
    "devices",
    "replace_sampler_ddp",
    "log_every_n_steps",
    "callbacks",
]


@pytest.mark.parametrize(("key", "kind"), list(itertools.product(_TRAINER_KEYS, _KINDS)))
def test_rules_take_any_value_kind(key: str, kind: str) -> None:
    source = (
        "other: &anchor 3\n"
        f"trainer:\n  accelerator: tpu\n  {key}: {kind.format(i=' ' * 4)}\n"
        f"data:\n  init_args:\n    batch_size: {kind.format(i=' ' * 6)}\n"
        f"model:\n  class_path: {kind.format(i=' ' * 4)}\n"
    )
    found = check_source(source, "config.yaml", ALL_RULES)
    assert all(d.code != "TPL002" for d in found), found
    fixed = fix_source(source, "config.yaml", ALL_RULES, unsafe=True)
    assert fixed.error is None


def test_cli_checks_and_fixes_a_flow_style_config(tmp_path: Path) -> None:
    source = (FIXTURES / "flow_style.in.yaml").read_text(encoding="utf-8")
    root = make_project(tmp_path / "p", {"config.yaml": source}, pyproject='select = ["TPU"]\n')
    checked = run_cli(["check", "config.yaml", "--no-cache"], root)
    assert checked.exit_code == 1
    assert "config.yaml:4:11: TPU001 [*]" in checked.stdout
    fixed = run_cli(["fix", "config.yaml", "--apply", "--unsafe-fixes", "--no-cache"], root)
    assert fixed.exit_code == 0, fixed.stdout + fixed.stderr
    assert (root / "config.yaml").read_text(encoding="utf-8") == (
        FIXTURES / "flow_style.out.yaml"
    ).read_text(encoding="utf-8")


def test_fixes_keep_crlf_line_endings() -> None:
    source = "trainer:\r\n  tpu_cores: 8  # legacy\r\n  max_epochs: 3\r\n"
    fixed = fix_source(source, "config.yaml", Config.from_mapping({"select": ["TPU001"]}))
    assert fixed.source == (
        "trainer:\r\n  accelerator: tpu\r\n  devices: 8  # legacy\r\n  max_epochs: 3\r\n"
    )
