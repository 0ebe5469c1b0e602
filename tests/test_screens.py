"""The screens are sound: a file the engine does not parse is one no rule would report in.

The engine runs a rule on a file only when the rule's text prefilter (`requires`) matches and
its screens (`Rule.can_fire`: hot code, `screen_calls`, the rule's `applies`, all read from
the project model) let it through; a file no rule can fire in is never parsed with libcst.
Screens are declared per rule and change with the rules and the model, so they are checked
here against the truth: the same files checked with every enabled rule run on every file
(`unscreened`). Every rule example, whole-file fixture and project fixture must give the
same findings both ways (fast); `pytest --corpus PATH` does the same on the public corpus.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tpulint.config.registry import all_rules
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Diagnostic
from tpulint.engine.source import check_source, libcst_parses, unscreened
from tpulint.rule_api.rule import Rule
from tpulint.runner.paths import check_paths

from .helpers import LEGACY_TRAINER, make_project, run_subprocess

TESTS = Path(__file__).parent
# Every rule, preview rules included (their screens must be sound too).
ALL = Config.from_mapping({"select": ["ALL"], "preview": True})


def _key(d: Diagnostic) -> tuple[object, ...]:
    return (d.path, d.start, d.end, d.code, d.message)


def _both_ways(source: str, path: str, config: Config = ALL) -> tuple[list, list]:
    screened = [_key(d) for d in check_source(source, path, config)]
    with unscreened():
        everything = [_key(d) for d in check_source(source, path, config)]
    return screened, everything


def _example_sources() -> list[tuple[str, str, str]]:
    out = []
    for rule in all_rules():
        for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID)):
            for index, example in enumerate(examples):
                if example.path.endswith(".py"):
                    name = f"{rule.code}-{kind}-{index}"
                    out.append((name, textwrap.dedent(example.code), example.path))
    return out


EXAMPLES = _example_sources()
FILES = sorted(
    [*(TESTS / "snapshots").glob("*.py"), *(TESTS / "fixtures").rglob("*.py")],
    key=lambda p: str(p),
)
PROJECTS = sorted(p for p in (TESTS / "projects").iterdir() if p.is_dir())


def test_every_rule_example_is_screened_soundly() -> None:
    """All rules on every rule's examples (not only the rule the example is for)."""
    wrong = []
    for name, source, path in EXAMPLES:
        screened, everything = _both_ways(source, path)
        if screened != everything:
            missing = sorted(set(everything) - set(screened), key=str)
            wrong.append(f"{name}: the screens skip {missing}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_whole_file_fixtures_are_screened_soundly(path: Path) -> None:
    screened, everything = _both_ways(path.read_text(encoding="utf-8"), path.name)
    assert screened == everything


@pytest.mark.parametrize("root", PROJECTS, ids=[p.name for p in PROJECTS])
def test_project_fixtures_are_screened_soundly(root: Path) -> None:
    config = Config.from_mapping({"select": ["ALL"], "preview": True}, root=root)
    screened = check_paths([str(root)], config, use_cache=False, jobs=1)
    with unscreened():
        everything = check_paths([str(root)], config, use_cache=False, jobs=1)
    assert [_key(d) for d in screened.diagnostics] == [_key(d) for d in everything.diagnostics]
    assert screened.libcst_parsed <= everything.libcst_parsed


def test_a_file_no_rule_can_fire_in_is_not_parsed() -> None:
    """A data tool: loaders, numbers, strings, no hot code, no Trainer, no collective."""
    source = (
        "import json\nimport torch\nfrom torch.utils.data import Dataset\n\n\n"
        "class Items(Dataset):\n"
        "    def __init__(self, path):\n"
        "        with open(path) as handle:\n"
        "            self.items = json.load(handle)\n\n"
        "    def __len__(self):\n"
        "        return len(self.items)\n\n"
        "    def __getitem__(self, index):\n"
        "        if index < 0:\n"
        "            index += len(self)\n"
        "        return torch.tensor(self.items[index]['x'])\n"
    )
    before = libcst_parses()
    assert check_source(source, "items.py", ALL) == []
    assert libcst_parses() == before
    with unscreened():
        assert check_source(source, "items.py", ALL) == []
    assert libcst_parses() == before + 1


_APACHE_HEADER = (
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS.\n'
)


@pytest.mark.parametrize(
    "source",
    [
        # Library model code under an Apache header: "distributed" is in the text, but no
        # torch.distributed call (TPU505), no hot code, no data or Trainer construct.
        _APACHE_HEADER + "import torch\nfrom torch import nn\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv1d(width, width, 3, padding=1)\n"
        "        self.pool = nn.MaxPool1d(2)\n\n"
        "    def forward(self, x):\n"
        "        return self.pool(torch.relu(self.conv(x)))\n",
        # CUDA AMP named next to "xla" in a comment, with neither torch_xla nor a Trainer.
        "import torch\n\n# also runs on xla devices\n"
        "def scaler():\n    return torch.cuda.amp.GradScaler()\n",
        # `padding=` of a convolution, `max(...)` of numbers: no tokenizer, no collate function.
        "from torch import nn\n\n\ndef layer(width, kernel):\n"
        "    return nn.Conv2d(width, width, kernel, padding=max(kernel // 2, 1))\n",
        # A collate function that pads to a fixed length from the longest length's value:
        # `max(...)` is called, but no `name = max(len(x) ...)` the hand-rolled padding
        # check reports (TPU304's screen reads the assignments with `ast`).
        "import torch\n\n\ndef speech_collate_fn(batch, pad_id, bucket):\n"
        "    signals, lengths = zip(*batch)\n"
        "    longest = max(lengths).item()\n"
        "    width = max(bucket, longest)\n"
        "    out = torch.full((len(batch), width), pad_id)\n"
        "    for row, signal in enumerate(signals):\n"
        "        out[row, : len(signal)] = signal\n"
        "    return out\n",
        # A DataModule whose loaders all say what to do with the last batch (TPU303's screen
        # reads the calls' arguments with `ast`).
        "import lightning as L\nfrom torch.utils.data import DataLoader\n\n\n"
        "class Images(L.LightningDataModule):\n"
        "    def __init__(self, batch_size, drop_last=True):\n"
        "        super().__init__()\n"
        "        self.batch_size, self.drop_last = batch_size, drop_last\n\n"
        "    def train_dataloader(self):\n"
        "        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True,\n"
        "                          drop_last=self.drop_last)\n\n"
        "    def val_dataloader(self):\n"
        "        return DataLoader(self.val, batch_size=1)\n",
        # A checkpoint helper: `torch.save` in one function, a rank test in another (TPU108
        # looks for the guard in the collective's own function).
        "import os\nimport torch\n\n\n"
        "def save(state, path):\n"
        "    torch.save(state, path)\n\n\n"
        "def is_main():\n"
        "    if int(os.environ.get('LOCAL_RANK', 0)) == 0:\n"
        "        return True\n"
        "    return False\n",
        # A data module whose `prepare_data` downloads and sets nothing (TPU310's screen
        # reads, with `ast`, the `self.<name>` the hook sets and the other methods mention).
        "import lightning as L\n\n\n"
        "class Audio(L.LightningDataModule):\n"
        "    def prepare_data(self):\n"
        "        download(self.root, cache=True)\n\n"
        "    def setup(self, stage):\n"
        "        self.train_set = load(self.root)\n\n"
        "    def train_dataloader(self):\n"
        "        return make_loader(self.train_set)\n",
        # `torch.save` under a rank test (not a collective: TPU108's screen qualifies the
        # callee through the imports) and a barrier every process reaches after the branch.
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def save(state, path, rank):\n"
        "    if rank == 0:\n"
        "        torch.save(state, path)\n"
        "    dist.barrier()\n",
        # `pad_sequence` in a model helper of a file that names `collate_fn` only in text:
        # no collate function is defined here (TPU304's `_collate_function` finds none).
        "from torch.nn.utils.rnn import pad_sequence\n\n\n"
        "def merge_features(features):\n"
        '    """Used by the dataset\'s collate_fn."""\n'
        "    return pad_sequence(features, batch_first=True)\n",
    ],
    ids=[
        "apache-header-model",
        "amp-without-tpu",
        "conv-padding",
        "collate-max-value",
        "datamodule-drop-last",
        "save-beside-rank-helper",
        "prepare-data-downloads-only",
        "torch-save-under-rank-test",
        "pad-sequence-outside-collate",
    ],
)
def test_library_files_are_not_parsed(source: str) -> None:
    """What the project model says rules these files out for the default rules: the screens
    of TPU505, TPU304 and TPU402 read the calls and keywords it found, not only the text, and
    those of TPU303, TPU304, TPU108 and TPU310 the shapes their handlers need, read with
    `ast`."""
    default = Config.from_mapping({})
    before = libcst_parses()
    assert check_source(source, "lib.py", default) == []
    assert libcst_parses() == before
    with unscreened():
        assert check_source(source, "lib.py", default) == []
    assert libcst_parses() == before + 1


def test_a_file_named_for_inference_is_not_parsed_for_padding() -> None:
    """TPU304 reports nothing but a collator's `padding` field in a file whose name says it
    does not train (`_not_training`: streaming, inference, export): its screen reads the
    same name."""
    source = (
        "from torch.nn.utils.rnn import pad_sequence\n\n\n"
        "def collate_fn(batch):\n"
        "    return pad_sequence(batch, batch_first=True)\n"
    )
    preview = Config.from_mapping({"preview": True})  # TPU304 is in preview
    assert [d.code for d in check_source(source, "collate.py", preview)] == ["TPU304"]
    before = libcst_parses()
    assert check_source(source, "streaming_utils.py", preview) == []
    assert libcst_parses() == before
    with unscreened():
        assert check_source(source, "streaming_utils.py", preview) == []
    assert libcst_parses() == before + 1


@pytest.mark.parametrize(
    "source",
    [
        # A model whose hot `forward` has calls, slices and subscripts, but no `if`, no
        # conversion or host transfer, no mask index, no size taken from a value and no
        # `range` loop; the helper with those is not hot (nothing hot calls it).
        "import torch\nfrom torch import nn\n\n\n"
        "class Head(nn.Module):\n"
        "    def __init__(self, width, classes):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(width, classes)\n\n"
        "    def forward(self, x):\n"
        "        h = torch.relu(self.proj(x[:, 0]))\n"
        "        return torch.flatten(h, 1)[:, :8]\n\n\n"
        "def describe(model, scores):\n"
        "    if (scores > 0).any():\n"
        "        print(float(scores.max()), scores[scores > 0].cpu())\n"
        "    for i in range(int(scores.sum())):\n"
        "        print(i)\n",
    ],
    ids=["hot-forward-without-triggers"],
)
def test_hot_files_without_a_rule_shape_are_not_parsed(source: str) -> None:
    """The hot-code rules (TPU103, TPU104, TPU202, TPU203, TPU205) need, in a function the
    project model calls hot, the shape their handlers report at (`Rule.hot_shapes`, read
    with `ast`), not only some hot function in the file."""
    default = Config.from_mapping({})
    before = libcst_parses()
    assert check_source(source, "head.py", default) == []
    assert libcst_parses() == before
    with unscreened():
        assert check_source(source, "head.py", default) == []
    assert libcst_parses() == before + 1


# libcst node names of handlers -> the `ast` node types they are read as in `hot_shapes`.
_AST_OF_HANDLER = {
    "If": (ast.If,),
    "While": (ast.While,),
    "Assert": (ast.Assert,),
    "IfExp": (ast.IfExp,),
    "CompIf": (ast.comprehension,),
    "UnaryOperation": (ast.UnaryOp,),
    "Subscript": (ast.Subscript,),
    "Call": (ast.Call,),
    "FormattedStringExpression": (ast.FormattedValue,),
    "For": (ast.For, ast.AsyncFor),
    "BinaryOperation": (ast.BinOp,),
    "Comparison": (ast.Compare,),
    "Assign": (ast.Assign,),
    # `leave_Module` reports only what the rule's other handlers recorded (TPU103's
    # `torch.tensor(self.accs)`, judged once the whole file is read): no shape of its own.
    "Module": (),
}


def test_every_handler_of_a_hot_rule_has_its_shape() -> None:
    """A hot-code rule's `hot_shapes` screen covers every node its own handlers visit, so a
    handler added to the rule cannot fall outside its screen (a new handler's node type
    must be added to `hot_shapes`, with a test its first checks imply, or None).
    `visit_FunctionDef` is the rules' bookkeeping of the function they are in."""
    wrong = []
    for rule in all_rules():
        if not rule.hot_shapes:
            continue
        assert rule.hot_only, f"{rule.code}: hot_shapes without hot_only"
        for klass in rule.__mro__:
            if klass is Rule or not klass.__module__.startswith(rule.__module__):
                continue
            for name in vars(klass):
                kind = name.partition("_")[2]
                if not name.startswith(("visit_", "leave_")) or kind == "FunctionDef":
                    continue
                types = _AST_OF_HANDLER.get(kind)
                if types is None or not all(t in rule.hot_shapes for t in types):
                    wrong.append(f"{rule.code}.{name}")
    assert not wrong, f"handlers outside their rule's hot_shapes: {wrong}"


def test_verbose_counts_the_files_parsed_with_libcst(tmp_path: Path) -> None:
    """`-v` says how many of the analysed files were parsed: here the Trainer script, not
    the data tool."""
    root = make_project(
        tmp_path / "p",
        {
            "train.py": LEGACY_TRAINER,
            "tools.py": "import json\n\n\ndef load(p):\n"
            "    with open(p) as f:\n        return json.load(f)\n",
        },
        pyproject='select = ["ALL"]\n',
    )
    done = run_subprocess(["check", ".", "-v", "--no-cache"], root)
    assert "(0 from cache, 2 analysed, 1 parsed with libcst)" in done.stderr, done.stderr
    fixed = run_subprocess(["fix", ".", "-v", "--no-cache"], root)
    assert "2 analysed, 1 parsed with libcst)" in fixed.stderr, fixed.stderr


def test_an_unsound_screen_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails when a screen rules out a file its rule fires in."""
    from tpulint.config.registry import rules_by_code

    rule: type[Rule] = rules_by_code()["TPU007"]
    example = next(e for e in rule.INVALID if e.path.endswith(".py"))
    source = textwrap.dedent(example.code)
    assert _both_ways(source, example.path)[0]  # reported, screened or not
    monkeypatch.setattr(rule, "screen_calls", frozenset({"not_a_trainer"}))
    screened, everything = _both_ways(source, example.path)
    assert screened != everything


@pytest.mark.corpus
def test_the_corpus_is_screened_soundly(corpus_dir: Path) -> None:
    """Default rules and every rule: the same findings, messages included, screened or not."""
    for selection in (None, ["ALL"]):
        data = {"select": selection, "preview": True} if selection else {}
        config = Config.from_mapping(data, root=corpus_dir)
        screened = check_paths([str(corpus_dir / "pkgs")], config, use_cache=False)
        with unscreened():
            everything = check_paths([str(corpus_dir / "pkgs")], config, use_cache=False)
        assert not screened.internal_errors and not everything.internal_errors
        mine = [_key(d) for d in screened.diagnostics]
        truth = [_key(d) for d in everything.diagnostics]
        missing = sorted(set(truth) - set(mine), key=str)
        assert mine == truth, f"{selection or 'default'}: the screens skip {missing[:20]}"
        assert screened.libcst_parsed < everything.libcst_parsed
