"""What a condition says about how often the code under it runs.

Shared by the project model (Python's `ast`: the guards of call sites, which a helper
inherits from every call that makes it hot) and the per-file context (libcst: the guards of
a reported node), so both read conditions the same way.

Guard kinds:
- "rare": only some batches or epochs (`if batch_idx == 0:`, logging and plotting flags,
  `if self.current_epoch % 10 == 0:`), or once (a lazy initialisation block);
- "rare-train": a test on the optimizer step count (`self.global_step % 100 == 0`), which
  is rare in training code but not in validation, test or predict code, where
  `global_step` does not advance: there the guarded code runs on every batch (or never);
- "device-check": a test of the device (`torch.cuda.is_available()`, `x.device.type`).
"""

from __future__ import annotations

import re

# Names in a condition that make the guarded code run only for some batches or epochs
# (logging, visualisation, debugging), so a host sync there is not paid every step.
RARE_NAMES = re.compile(
    r"(batch_?(idx|nb|num|index|id|i)\b|current_epoch|\bepoch\b|log_every|"
    r"every_n|log_images?|_images\b|plot|visuali[sz]|debug|verbose|is_last_batch|"
    r"print_every|logging_interval|first_batch|sample_every|val_check|figure|\bimage)",
    re.IGNORECASE,
)
STEP_COUNTER = re.compile(r"global_step", re.IGNORECASE)
DEVICE_CHECK = re.compile(r"cuda|\bgpu\b|on_gpu|is_available|device\.type|device_type|mps")

RARE = "rare"
RARE_TRAIN = "rare-train"
DEVICE = "device-check"

# Hooks of the evaluation loops, where `global_step` stands still.
EVAL_HOOKS = frozenset(
    {
        "validation_step",
        "test_step",
        "predict_step",
        "validation_step_end",
        "test_step_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_validation_model_eval",
    }
)


def condition_kinds(text: str) -> frozenset[str]:
    """The guard kinds the source text of a condition stands for."""
    kinds = set()
    if DEVICE_CHECK.search(text):
        kinds.add(DEVICE)
    if RARE_NAMES.search(text):
        kinds.add(RARE)
    if STEP_COUNTER.search(text):
        kinds.add(RARE_TRAIN)
    return frozenset(kinds)


def effective(kinds: frozenset[str] | set[str], root_hook: str | None) -> frozenset[str]:
    """Guard kinds as seen from code reached from `root_hook`: a step-count guard is rare in
    training code and means nothing in evaluation code."""
    if RARE_TRAIN not in kinds:
        return frozenset(kinds)
    out = set(kinds)
    out.discard(RARE_TRAIN)
    if root_hook not in EVAL_HOOKS:
        out.add(RARE)
    return frozenset(out)


# A lazy initialisation: `if not self.built:` / `if self.cache is None:` /
# `if not hasattr(self, "x"):` whose body sets the attribute: the body runs once.
LAZY_TEST = re.compile(
    r"^\s*(?:not\s+self\.(?P<a>\w+)|self\.(?P<b>\w+)\s+is\s+None|"
    r"not\s+hasattr\(\s*self\s*,\s*['\"](?P<c>\w+)['\"]\s*\)|"
    r"self\.(?P<d>\w+)\s*==\s*False)"
    # `if self.cache is None or self.cache.size(0) < n:` (allocated once, grown rarely)
    r"(?:\s+or\s+.*)?\s*$",
    re.DOTALL,
)


def lazy_attribute(test_text: str) -> str | None:
    """The attribute a lazy-initialisation test checks (`built` in `not self.built`)."""
    match = LAZY_TEST.match(test_text)
    if match is None:
        return None
    return match.group("a") or match.group("b") or match.group("c") or match.group("d")
