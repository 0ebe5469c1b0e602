"""What a condition says about how often the code under it runs (tpulint.analysis.guards)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import make_project, run_cli
from tpulint.analysis.guards import (
    RARE,
    always_sets_flag,
    change_targets,
    condition_kinds,
    counter_aliases,
    effective,
    first_n_counters,
    first_n_guards,
    first_n_targets,
    flush_targets,
    flushes,
    incremented_attributes,
    lazy_attribute,
    marker_targets,
    once_flags,
    rearmed_elsewhere,
    records,
    resets,
    settle_first_n,
    shape_kinds,
)


@pytest.mark.parametrize(
    "test",
    [
        "torch.isnan(x).any()",
        "torch.any(torch.isnan(vel))",
        "x.isinf().any() or torch.isnan(x).any()",
        "not torch.isfinite(loss).all()",
        "self.training and math.isnan(value)",
    ],
)
def test_numeric_anomaly_branches_are_rare(test: str) -> None:
    assert RARE in shape_kinds(test)


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        ("torch.isfinite(loss).all()", False),  # the common path
        ("not torch.isnan(loss)", False),
        ("torch.isnan(a).any() or b > 0", False),  # `b > 0` may hold on every step
        ("torch.isnan(loss).any()", True),  # after `if ...: return`: the common path
        ("not torch.isfinite(loss)", True),
    ],
)
def test_the_common_path_is_not_rare(test: str, negated: bool) -> None:
    assert RARE not in shape_kinds(test, negated)


def test_accumulate_then_flush_targets() -> None:
    assert flush_targets("self.embs.shape[0] > max_size") == ["self.embs"]
    assert flush_targets("len(self.buf) >= 64 and self.training") == ["self.buf"]
    assert flush_targets("100 < self.x.size(0)") == ["self.x"]
    # Non-empty, a local, a bound of 1: true on (nearly) every step.
    assert flush_targets("len(self.buf) > 0") == []
    assert flush_targets("x.shape[0] > n") == []
    assert flush_targets("len(self.buf) > 1") == []


def test_flushes() -> None:
    assert flushes("self.bank = None", "self.bank")
    assert flushes("self.rows.clear()", "self.rows")
    assert flushes("self.rows = []", "self.rows")
    assert not flushes("self.rows = self.rows[1:]", "self.rows")


def test_elapsed_since_marker_targets() -> None:
    assert marker_targets("epoch - self.last_mark >= self.every") == ["self.last_mark"]
    assert marker_targets("time.time() > self.logged_at + 60") == ["self.logged_at"]
    assert marker_targets("self.every <= step - self.state.mark and ok") == ["self.state.mark"]
    # A best value, a local marker, a marker added (not subtracted): no interval.
    assert marker_targets("score > self.best") == []
    assert marker_targets("epoch - last >= every") == []
    assert marker_targets("epoch + self.offset >= every") == []


def test_resets() -> None:
    assert resets("self.last_mark = epoch", "self.last_mark")
    assert resets("self.next_at += self.every", "self.next_at")
    assert not resets("if self.last_mark == epoch: pass", "self.last_mark")
    assert not resets("self.last_mark_value = epoch", "self.last_mark")


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        # A conjunct, or a parenthesised disjunct, that is periodic.
        ("self.track and self.global_step % self.every == 0", False),
        ("rank == 0 and (i % freq == 0 or seen == num_batches_per_epoch)", False),
        ("rank == 0 and (i % 100 == 0 or i + 1 == len(train_loader))", False),
        ("i % 100 == 0 or step % 50 == 0", False),
        # The last batch of the epoch, alone.
        ("(n + 1) == self.trainer.num_training_batches", False),
        ("seen == steps_per_epoch - 1", False),
        # After `if TEST: continue`: the code runs where every operand of `or` fails.
        ("rank != 0 or i % 100 != 0", True),
        ("not (rank == 0 and i % 100 == 0)", True),
    ],
)
def test_periodic_tests_in_boolean_combinations_are_rare(test: str, negated: bool) -> None:
    assert RARE in effective(shape_kinds(test, negated), "training_step")


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        # One operand of `or` holds on every step.
        ("rank == 0 and (i % 100 == 0 or loss_ok)", False),
        ("i % 100 == 0 or x > 0", False),
        # After `if rank != 0 or i % 100 == 0: return`: most steps.
        ("rank != 0 or i % 100 == 0", True),
        # The last iteration of a loop inside the step (denoising steps, micro-batches).
        ("i == n_steps - 1", False),
        ("i == len(micro_batches) - 1", False),
        ("i == num_batches - 1", False),
        # Not the last batch: every other one.
        ("i != len(loader) - 1", False),
    ],
)
def test_boolean_combinations_with_a_per_step_path_are_not_rare(test: str, negated: bool) -> None:
    assert RARE not in effective(shape_kinds(test, negated), "training_step")


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        # The side of a name's test where the code is rare: a value of a counter, a bound
        # below it, a truthy flag or level.
        ("batch_idx == 0", False),
        ("self.global_step % self.log_every == 0", False),
        ("self.debug", False),
        ("self.hparams.verbose > 1", False),
        ("self.should_plot()", False),
        ("batch_idx < 3", False),
        ("self.debug is not None", False),
        ("batch_idx >= len(self.trainer.train_dataloader) - 1", False),  # the last batch
        ("self.current_epoch < self.max_epochs - 1", True),
        # The other side: the else, or the rest after an early exit on the common side.
        ("batch_idx != 0", True),
        ("self.global_step % self.log_every != 0", True),
        ("self.global_step % self.log_every", True),
        ("not self.debug", True),
        ("batch_idx > 0", True),
        ("batch_idx", True),
        ("self.verbose == 0", True),
        ("self.debug is None", True),
        # Compositions: a conjunction with a rare conjunct; a disjunction of rare tests;
        # a negated disjunction read where it fails.
        ("self.training and batch_idx == 0", False),
        ("batch_idx == 0 or self.debug", False),
        ("not (batch_idx != 0 and not self.debug)", False),
        ("batch_idx != 0 and not self.debug", True),
        # The names of a comparison whose shape says nothing: either side, as before.
        ("batch_idx in (0, 1) if x else False", False),
        ("batch_idx in (0, 1) if x else False", True),
    ],
)
def test_rare_names_are_read_on_their_rare_side(test: str, negated: bool) -> None:
    assert RARE in effective(condition_kinds(test, negated), "training_step")


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        # The common side of each test above: the body, or the rest after an early exit on
        # the rare side (`if self.global_step % 200 == 0: return self._log_images(...)`).
        ("batch_idx == 0", True),
        ("self.global_step % self.log_every == 0", True),
        ("self.debug", True),
        ("self.hparams.verbose > 1", True),
        ("self.should_plot()", True),
        ("batch_idx < 3", True),
        ("batch_idx != 0", False),
        ("self.global_step % self.log_every != 0", False),
        ("self.global_step % self.log_every", False),
        ("not self.debug", False),
        ("batch_idx > 0", False),
        ("self.current_epoch >= 1", False),
        ("self.current_epoch < self.max_epochs - 1", False),
        ("batch_idx", False),
        ("self.verbose == 0", False),
        # A conjunction read where it fails, a disjunction with a common disjunct.
        ("self.training and batch_idx == 0", True),
        ("batch_idx == 0 or self.training", False),
        ("batch_idx != 0 or self.debug", False),
    ],
)
def test_rare_names_are_not_rare_on_their_common_side(test: str, negated: bool) -> None:
    assert RARE not in effective(condition_kinds(test, negated), "training_step")


def test_a_step_counter_disjunct_is_rare_in_training_only() -> None:
    """`i % 100 == 0 or self.global_step % 500 == 0` is only as rare as its least rare
    operand: the step counter stands still in validation."""
    kinds = shape_kinds("i % 100 == 0 or self.global_step % 500 == 0")
    assert RARE in effective(kinds, "training_step")
    assert RARE not in effective(kinds, "validation_step")


def test_change_targets_and_records() -> None:
    # `if self.shown_split != split:` whose body records `split`: once per change of split.
    assert change_targets("self.shown_split != split") == [("self.shown_split", "split")]
    assert change_targets("key != self.last_key and key > 0") == [("self.last_key", "key")]
    assert change_targets("self.shown_split == split") == []
    assert change_targets("self.a != 3") == []  # a literal is not a changing key
    assert records("x = 1\nself.shown_split = split\n", "self.shown_split", "split")
    assert records("self.shown_split = split  # remember", "self.shown_split", "split")
    assert not records("self.shown_split = other\n", "self.shown_split", "split")
    assert not records("self.shown_split = split_next\n", "self.shown_split", "split")
    assert not records("self.shown_split == split\n", "self.shown_split", "split")


def test_zero_sentinel_lazy_tests() -> None:
    assert lazy_attribute("self.size.item() == 0") == "size"
    assert lazy_attribute("self.count == 0 and self.limit > 0") == "count"
    assert lazy_attribute("self.count == 0.5") is None
    assert lazy_attribute("self.count.item() == 1") is None


def test_first_n_counters_of_early_exits_and_blocks() -> None:
    aliases = counter_aliases(
        ast.parse("n = self.seen[split]\nm = self.seen\nm = other()\nk = 0").body
    )
    assert aliases == {"n": "seen"}
    # after `if TEST: return`: the code runs where the test fails
    assert first_n_counters("n > self.limit", False, aliases) == ["seen"]
    assert first_n_counters("self.seen[k] >= 10 or not self.on", False, {}) == ["seen"]
    assert first_n_counters("10 <= self.shown.item()", False, {}) == ["shown"]
    assert first_n_counters("self.seen[k] >= 10 and self.on", False, {}) == []
    assert first_n_counters("n < 10", False, aliases) == []  # after the first N
    # a block that runs where the test holds
    assert first_n_counters("self.seen[k] < 10 and self.on", True, {}) == ["seen"]
    assert first_n_counters("n > 3", True, aliases) == []
    # a local counter, and counters of training progress, bound nothing here
    assert first_n_counters("k > 3", False, aliases) == []
    assert first_n_counters("self.global_step > 100", False, {}) == []
    assert first_n_counters("self.n_iter >= self.warmup", False, {}) == []


def test_first_n_guards_settle_on_the_project_increments() -> None:
    tree = ast.parse(
        "pl_module.seen['train'] += 1\n"
        "self.shown = self.shown + 1\n"
        "self.total += x\n"
        "self.gone -= 1\n"
        "self.kept[k] = self.kept[k] * 2\n"
    )
    grown = incremented_attributes(tree)
    assert grown == {"seen", "shown", "total"}
    kinds = frozenset({"device-check", *first_n_guards(["seen"])})
    assert settle_first_n(kinds, grown.__contains__) == {"device-check", RARE}
    assert settle_first_n(frozenset(first_n_guards(["gone"])), grown.__contains__) == set()


def test_first_n_targets_read_through_item() -> None:
    assert first_n_targets("n > self.size.item()") == ["self.size"]
    assert first_n_targets("self.size.item() < n") == ["self.size"]
    assert first_n_targets("n > size.item()") == []


@pytest.mark.parametrize(
    ("test", "negated", "rare"),
    [
        ("self.global_step < 3", False, True),  # the first steps only, in any hook
        ("8 >= self.trainer.global_step", False, True),
        ("self.global_step >= 10", True, True),  # the `else`: the first ten steps
        ("self.global_step > 10", False, False),  # every step after the tenth
        ("self.global_step < 3", True, False),
        ("self.global_step < self.warmup_steps", False, False),  # a setting: maybe the run
        ("self.global_step < 3 or verbose", False, False),
    ],
)
def test_a_test_for_the_first_steps_is_rare_in_every_hook(
    test: str, negated: bool, rare: bool
) -> None:
    kinds = shape_kinds(test, negated)
    assert (RARE in kinds) is rare
    assert (RARE in effective(kinds, "validation_step")) is rare


def test_a_trainer_controls_periodic_flags_are_rare() -> None:
    # A Hugging Face style loop logs, saves and evaluates when its callbacks set the control
    # flags (every `logging_steps`); `args.should_save` says which process saves, not when.
    assert RARE in condition_kinds("self.control.should_log")
    assert RARE in condition_kinds("control.should_save and not self.args.fast")
    assert RARE not in condition_kinds("self.args.should_save")


@pytest.mark.parametrize(
    ("test", "flags"),
    [
        ("not self.initialized", [("initialized", False)]),
        ("(self._initialized is False) & (self.training)", [("_initialized", False)]),
        ("self._first", [("_first", True)]),
        ("not getattr(self, '_init_done', False)", [("_init_done", False)]),
        ("self.training and not self.built", [("built", False)]),
        ("self.ready is True", [("ready", True)]),
        ("x > 3", []),
    ],
)
def test_run_once_flags(test: str, flags: list[tuple[str, bool]]) -> None:
    found = once_flags(test)
    assert all(flag in found for flag in flags)
    assert bool(found) is bool(flags)


def test_run_once_flag_must_be_ended_on_every_path() -> None:
    def sets(body: str, clears: bool = False) -> bool:
        return always_sets_flag(ast.parse(body).body, "ready", clears, {})

    assert sets("y = x.cpu()\nself.ready = True")
    assert sets("if a:\n    self.ready = 1\nelse:\n    self.ready = True")
    assert not sets("if a:\n    self.ready = True")  # one branch only
    assert not sets("self.ready = False")  # keeps the guard holding
    assert sets("self.ready = False", clears=True)
    assert not sets("self.ready = x", clears=True)


def test_run_once_flag_armed_again_elsewhere() -> None:
    tree = ast.parse(
        "class A:\n"
        "    def __init__(self):\n        self.ready = False\n"
        "    def on_train_epoch_start(self):\n        self.ready = False\n"
    )
    methods = {f.name: f for f in tree.body[0].body}  # type: ignore[attr-defined]
    assert rearmed_elsewhere(methods, "ready", False, set())
    del methods["on_train_epoch_start"]
    assert not rearmed_elsewhere(methods, "ready", False, set())


def test_a_first_n_counter_another_file_grows(tmp_path: Path) -> None:
    """`cnt = self.seen[split]; if cnt > N: return` in the module, `pl_module.seen[...] += 1`
    in a callback of another file: what follows (and the plotting helper of a third file it
    calls) runs for the first N batches of each epoch. Without the callback's increment, both
    are reported."""
    model = (
        "import lightning as L\n\n"
        "from pkg.viz import draw\n\n\n"
        "class M(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        out = self(batch)\n"
        "        self.show(batch, out, 'train')\n"
        "        return out.mean()\n\n"
        "    def show(self, images, out, split):\n"
        "        cnt = self.seen[split]\n"
        "        if cnt > self.hparams.n_shown:\n"
        "            return\n"
        "        draw(images, out)\n"
        "        return out.detach().cpu()\n"
    )
    callback = (
        "import lightning as L\n\n\n"
        "class Count(L.Callback):\n"
        "    def on_train_batch_end(self, trainer, pl_module, *args):\n"
        "        pl_module.seen['train'] += 1\n"
    )
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": model,
        "pkg/viz.py": "def draw(images, out):\n    return out[0].detach().cpu()\n",
        "pkg/callbacks.py": callback,
    }
    pyproject = 'select = ["TPU103"]\n'
    root = make_project(tmp_path / "grown", files, pyproject)
    assert "TPU103" not in run_cli(["check", "--no-cache", "."], root).stdout
    files["pkg/callbacks.py"] = callback.replace("+= 1", "= 0")
    root = make_project(tmp_path / "not_grown", files, pyproject)
    out = run_cli(["check", "--no-cache", "."], root).stdout
    assert "pkg/model.py:17:" in out and "pkg/viz.py:2:" in out, out
