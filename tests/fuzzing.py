"""The fuzz suite's sources and the properties every source must satisfy.

Sources come from three strategies:
- `generated`: Python programs from hypothesmith's grammar strategy (what libcst's own tests
  use), which rarely contain Lightning code, so rules seldom fire on them;
- `mutated`: real code, mutated: the rules' own examples (valid and invalid) and, when the
  public corpus is available, corpus files that some rule parses. Mutations splice in
  generated code and rule-triggering lines, move and delete lines, add suppressions, deep
  expressions, form feeds, carriage returns and U+2028, so the rules and fixes run on code
  nobody wrote for them;
- `combined`: a generated program followed by a mutated real one.

`examine(source)` checks the properties: `check` and `fix` never raise; every fix result
parses (and compiles when the source compiled); a second `fix` of the fixed text changes
nothing. It returns the problems found, so a long run can count them instead of stopping at
the first.
"""

from __future__ import annotations

import functools
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import hypothesmith
import libcst as cst
from hypothesis import strategies as st

from tpulint.analysis.suppression import NoqaError, add_noqa
from tpulint.config.registry import all_rules
from tpulint.config.settings import Config
from tpulint.datatypes import roundtrip
from tpulint.engine.source import check_source, fix_source, would_parse

CONFIG = Config.from_mapping({"select": ["ALL"]})
MAX_CORPUS_FILE = 40_000  # bytes: keeps one example fast

TRIGGERS = (
    "x = batch.cuda()",
    "loss = self.loss_fn(batch).item()",
    "self.log('train_loss', loss.item(), sync_dist=True)",
    "self.log_dict({'acc': float(acc)})",
    "trainer = L.Trainer(tpu_cores=8, precision=16)",
    "trainer = pl.Trainer(accelerator='tpu', devices=8, replace_sampler_ddp=False)",
    "xm.mark_step()",
    "device = xm.xla_device()",
    "n = xm.xrt_world_size()",
    "idx = torch.nonzero(mask)",
    "out = x[x > 0].sum()",
    "x[mask] = 0",
    "for i in range(x.size(0)):\n    pass",
    "if loss > 0:\n    pass",
    "print(loss)",
    "sampler = DistributedSampler(ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal())",
    "return DataLoader(ds, batch_size=10, shuffle=True)",
    "scaler = torch.cuda.amp.GradScaler()",
    "os.environ['XLA_USE_BF16'] = '1'",
    "v = t.cpu().numpy().tolist()",
)
HEADERS = (
    "import lightning as L\nimport pytorch_lightning as pl\nimport torch\nimport os\n"
    "import torch_xla.core.xla_model as xm\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
)
SUPPRESSIONS = (
    "  # noqa",
    "  # noqa: TPU101",
    "  # noqa: TPU102, E501",
    "  # tpulint: ignore[TPU006]",
    "  # tpulint: ignore[item-in-hot-path]",
    "  # noqa: TPU999",
)


@functools.cache
def rule_examples() -> tuple[str, ...]:
    out = []
    for rule in all_rules():
        for example in (*rule.VALID, *rule.INVALID):
            if example.path.endswith(".py"):
                out.append(example.code)
    return tuple(dict.fromkeys(out))


@functools.cache
def corpus_sources(corpus: str | None, limit: int = 400) -> tuple[str, ...]:
    """Corpus files some rule parses (sorted, every k-th one to spread across packages)."""
    if not corpus:
        return ()
    files = sorted((Path(corpus) / "pkgs").rglob("*.py"))
    out: list[str] = []
    for path in files:
        try:
            if path.stat().st_size > MAX_CORPUS_FILE:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if would_parse(text, str(path), CONFIG):
            out.append(text)
    step = max(1, len(out) // limit)
    return tuple(out[::step][:limit])


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _insert_at(draw, source: str, block: str) -> str:
    lines = source.split("\n")
    index = draw(st.integers(0, len(lines)))
    anchor = lines[index] if index < len(lines) else ""
    indent = _indentation(anchor) if anchor.strip() else ""
    inserted = [indent + line if line else line for line in block.split("\n")]
    return "\n".join([*lines[:index], *inserted, *lines[index:]])


def _splice_generated(draw, source: str) -> str:
    snippet = draw(generated()).rstrip("\n")
    return _insert_at(draw, source, snippet)


def _trigger(draw, source: str) -> str:
    return _insert_at(draw, source, draw(st.sampled_from(TRIGGERS)))


def _headers(draw, source: str) -> str:
    return HEADERS + source


def _delete_lines(draw, source: str) -> str:
    lines = source.split("\n")
    start = draw(st.integers(0, max(0, len(lines) - 1)))
    count = draw(st.integers(1, 3))
    return "\n".join(lines[:start] + lines[start + count :])


def _duplicate_lines(draw, source: str) -> str:
    lines = source.split("\n")
    start = draw(st.integers(0, max(0, len(lines) - 1)))
    count = draw(st.integers(1, 4))
    return "\n".join(lines[: start + count] + lines[start : start + count] + lines[start + count :])


def _suppress(draw, source: str) -> str:
    lines = source.split("\n")
    index = draw(st.integers(0, max(0, len(lines) - 1)))
    lines[index] += draw(st.sampled_from(SUPPRESSIONS))
    return "\n".join(lines)


def _deep(draw, source: str) -> str:
    size = draw(st.integers(50, 700))
    kind = draw(st.sampled_from(["plus", "strings", "and", "parens", "calls"]))
    if kind == "plus":
        expression = " + ".join(f"a{i}" for i in range(size))
    elif kind == "strings":
        expression = " ".join(f'"s{i}"' for i in range(size))
    elif kind == "and":
        expression = " and ".join(f"b{i}" for i in range(size))
    elif kind == "parens":
        depth = min(size, 150)
        expression = "(" * depth + "x.item()" + ")" * depth
    else:
        depth = min(size, 150)
        expression = "f(" * depth + "loss.cuda()" + ")" * depth
    return _insert_at(draw, source, f"value = {expression}")


def _form_feed(draw, source: str) -> str:
    lines = source.split("\n")
    index = draw(st.integers(0, max(0, len(lines) - 1)))
    lines[index] = "\x0c" + lines[index]
    return "\n".join(lines)


def _line_endings(draw, source: str) -> str:
    ending = draw(st.sampled_from(["\r\n", "\r"]))
    return source.replace("\n", ending)


def _separator_in_text(draw, source: str) -> str:
    separator = draw(st.sampled_from(["\u2028", "\u2029", "\x0c", "\x1c", "\x85"]))
    # Into a string literal or a comment: the only places Python allows them.
    spots = [m.end() - 1 for m in re.finditer(r"'[^'\n\\]*'|\"[^\"\n\\]*\"|#[^\n]*", source)]
    if not spots:
        return source + f"# {separator}\n"
    at = draw(st.sampled_from(spots))
    return source[:at] + separator + source[at:]


MUTATIONS = (
    _splice_generated,
    _trigger,
    _trigger,
    _headers,
    _delete_lines,
    _duplicate_lines,
    _suppress,
    _deep,
    _form_feed,
    _line_endings,
    _separator_in_text,
)


@st.composite
def mutated(draw, pool: tuple[str, ...]) -> str:
    source = draw(st.sampled_from(pool))
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=4)):
        source = mutation(draw, source)
    return source


@functools.cache
def generated() -> st.SearchStrategy[str]:
    # Built once: building hypothesmith's grammar strategy takes seconds, drawing is fast.
    return hypothesmith.from_grammar()


@st.composite
def combined(draw, pool: tuple[str, ...]) -> str:
    return draw(generated()) + "\n" + draw(mutated(pool))


# --- the properties ------------------------------------------------------------------------


@dataclass
class Tally:
    programs: int = 0
    fixed: int = 0  # programs where fix changed something
    findings: int = 0
    crashes: list[str] = field(default_factory=list)
    reparse_failures: list[str] = field(default_factory=list)
    idempotence_failures: list[str] = field(default_factory=list)
    failing_sources: list[str] = field(default_factory=list)  # in full, to reproduce

    def summary(self) -> str:
        return (
            f"programs tried {self.programs}, fixed {self.fixed}, findings {self.findings}; "
            f"crashes {len(self.crashes)}, re-parse failures {len(self.reparse_failures)}, "
            f"idempotence failures {len(self.idempotence_failures)}"
        )

    @property
    def problems(self) -> list[str]:
        return self.crashes + self.reparse_failures + self.idempotence_failures


def _compiles(source: str) -> bool:
    try:
        compile(source, "fuzz.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _parses(source: str) -> bool:
    shim = roundtrip.prepare(source)
    try:
        cst.parse_module(shim.text if shim else source)
    except Exception:
        return False
    return True


def examine(source: str, unsafe: bool, tally: Tally) -> None:
    """Check the properties for one source, recording what fails in `tally`."""
    before = len(tally.problems)
    _examine(source, unsafe, tally)
    if len(tally.problems) > before:
        tally.failing_sources.append(source)


def _examine(source: str, unsafe: bool, tally: Tally) -> None:
    tally.programs += 1
    where = f"source {source!r:.300}"
    try:
        found = check_source(source, "fuzz.py", CONFIG)
        result = fix_source(source, "fuzz.py", CONFIG, unsafe=unsafe)
    except Exception:
        tally.crashes.append(f"{where}\n{traceback.format_exc(limit=-3)}")
        return
    tally.findings += len(found)
    try:
        noqa_targets = [d for d in found if not d.code.startswith("TPL")]
        add_noqa(source, noqa_targets)
    except NoqaError:
        pass  # refused, nothing would be written: fine
    except Exception:
        tally.crashes.append(f"add_noqa {where}\n{traceback.format_exc(limit=-3)}")
    if not result.changed:
        return
    tally.fixed += 1
    if not _parses(result.source) or (_compiles(source) and not _compiles(result.source)):
        tally.reparse_failures.append(f"{where}\nfixed: {result.source!r:.300}")
        return
    try:
        again = fix_source(result.source, "fuzz.py", CONFIG, unsafe=unsafe)
    except Exception:
        tally.crashes.append(f"second fix of {where}\n{traceback.format_exc(limit=-3)}")
        return
    if again.changed or again.source != result.source:
        codes = sorted({d.code for d in again.fixed})
        tally.idempotence_failures.append(
            f"{where}\nfixed: {result.source!r:.300}\nthe second fix applied {codes}"
        )
