"""The final steady window: the part of a run in which no new XLA graph may appear.

One rule, used on both sides: the child trains longer while the window is too short or still
compiles new graphs (child/recorder.py), and the judge fails compile stability when it does
(judge/check_compiles.py). Standard library only.

    The final steady window is the shortest run of whole epochs at the end of the training,
    not counting the warm-up steps, that holds at least MIN_STEADY_STEPS training steps,
    together with the validation runs that end those epochs.

Whole epochs, so that everything that recurs once per epoch (the epoch boundary's
bookkeeping, a validation run, a ragged last batch) has happened at least once before the
window and once inside it: a graph it needs that is compiled before the window and executed
inside it has been reused. Passing needs a window with no new graph in it.
"""

from __future__ import annotations

from collections.abc import Mapping

MIN_STEADY_STEPS = 3
# Epochs verify may add, when the window is too short or still compiles, before it judges.
MAX_EXTRA_EPOCHS = 3


def steady_window(
    steps_after_warmup: Mapping[int, int], min_steps: int = MIN_STEADY_STEPS
) -> list[int] | None:
    """The window's epochs, given each trained epoch's number of training steps after
    warm-up; None when all of them together hold fewer than `min_steps`."""
    window: list[int] = []
    total = 0
    for epoch in sorted(steps_after_warmup, reverse=True):
        window.insert(0, epoch)
        total += steps_after_warmup[epoch]
        if total >= min_steps:
            return window
    return None


def window_is_steady(
    steps_after_warmup: Mapping[int, int],
    new_graphs: Mapping[int, int],
    min_steps: int = MIN_STEADY_STEPS,
) -> bool:
    """Whether the run has a window and no new graph appeared in it (`new_graphs`: epoch ->
    graphs first compiled in that epoch's training steps or its validation run)."""
    window = steady_window(steps_after_warmup, min_steps)
    return window is not None and not any(new_graphs.get(epoch, 0) for epoch in window)
