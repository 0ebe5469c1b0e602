"""Failures the fuzz suite found (tests/fuzzing.py), each kept as a plain test."""

from __future__ import annotations

from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source

ALL = Config.from_mapping({"select": ["ALL"]})


def _fix_twice(source: str) -> tuple[str, str]:
    first = fix_source(source, "f.py", ALL)
    second = fix_source(first.source, "f.py", ALL)
    return first.source, second.source


def test_several_stale_directives_in_one_comment_are_removed_in_one_fix() -> None:
    # Their edits overlap (each rewrites the whole comment): one per round, until none.
    source = "import torch  # noqa: TPU101  # noqa: TPU101  # noqa: TPU101\nimport torch_xla\n"
    first, second = _fix_twice(source)
    assert first == "import torch\nimport torch_xla\n"
    assert second == first
    mixed = (
        "import lightning as L\n  # noqa: TPU102, E501  # noqa: TPU102, E501\n"
        "trainer = L.Trainer(use_distributed_sampler=False)\n"
    )
    first, second = _fix_twice(mixed)
    assert "  # noqa: E501  # noqa: E501\n" in first and second == first


def test_positions_in_a_module_without_a_final_newline() -> None:
    # libcst drops the last newline token after the last statement was generated, so the
    # token index recorded for its end was past the end of the token list (IndexError).
    source = (
        "import lightning as L\nimport torch_xla.core.xla_model as xm\n"
        "from torch.utils.data import DataLoader\n"
        "from torch.utils.data.distributed import DistributedSampler\n\n\n"
        "class DM(L.LightningDataModule):\n    def train_dataloader(self):\n"
        "        return DataLoader(self.ds, sampler=DistributedSampler(self.ds, shuffle=False))\n"
        "out = x[x > 0].sum()"
    )
    found = check_source(source, "f.py", Config.from_mapping({"select": ["TPU301"]}))
    assert [(d.code, d.start.line) for d in found] == [("TPU301", 9)]
    first, second = _fix_twice(source)
    assert second == first and not first.endswith("\n")


def test_a_fix_made_possible_by_removing_a_stale_suppression_is_applied_at_once() -> None:
    # TPU301 keeps no comments inside the sampler call it removes, so it waits for the stale
    # suppression comment there to be removed (TPL001); the same run then applies it.
    source = (
        "import lightning as L\nimport torch.distributed as dist\n"
        "from torch.utils.data import DataLoader\n"
        "from torch.utils.data.distributed import DistributedSampler\n\n\n"
        "class Model(L.LightningModule):\n    def train_dataloader(self):\n"
        "        sampler = DistributedSampler(\n"
        "            self.train_set, num_replicas=dist.get_world_size(), rank=dist.get_rank()"
        "  # no"
        "qa: TPU101\n"
        "        )\n"
        "        return DataLoader(self.train_set, batch_size=32, sampler=sampler)\n"
    )
    result = fix_source(source, "f.py", ALL)
    assert sorted({d.code for d in result.fixed}) == ["TPL001", "TPU301"]
    assert "DistributedSampler(" not in result.source
    assert fix_source(result.source, "f.py", ALL).source == result.source
