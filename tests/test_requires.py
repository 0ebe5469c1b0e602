"""Every rule's text screen (`requires`) lets through every call the rule reports.

The engine runs a rule on a file only when the file's text contains one of the rule's
`requires` tokens. Where those tokens are spelled from the callees the rule reports (its
`screen_calls`), each reported callee's name must contain one of them, or a file whose only
such call is that callee is never checked (TPU108 once skipped files whose only collective
was `dist.gather`). Rules whose text screen is something else the finding needs (a keyword,
an import) are listed with the reason, so that a rule moving between the two is seen here.
"""

from __future__ import annotations

from tpulint.config.registry import all_rules
from tpulint.rule_api.rule import Rule

# Rules whose `requires` is not a callee's name, and what it is instead.
NOT_CALL_SCREENS = {
    "TPU106": "the `sync_dist` keyword every reported `self.log` call carries",
    "TPU306": "the iterable dataset class a reported DataLoader is built on",
    "TPU504": "the torch_xla import every reported runtime query comes from",
}


def _core(token: str) -> str:
    """A text token as a name: `.item()` -> `item`, `arange(` -> `arange`."""
    return token.lstrip(".").removesuffix("()").removesuffix("(")


def _screens_by_callee(rule: type[Rule]) -> bool:
    """Whether every text token is part of some reported callee's name."""
    return all(any(_core(t) in name for name in rule.screen_calls) for t in rule.requires)


def _call_screened_rules() -> list[type[Rule]]:
    return [r for r in all_rules() if r.requires and r.screen_calls]


def test_text_screens_let_every_reported_callee_through() -> None:
    missed = {}
    for rule in _call_screened_rules():
        if rule.code in NOT_CALL_SCREENS:
            continue
        names = [
            n for n in sorted(rule.screen_calls) if not any(_core(t) in n for t in rule.requires)
        ]
        if names:
            missed[rule.code] = names
    assert not missed, f"`requires` lets no file through whose only reported call is {missed}"


def test_the_rules_without_callee_screens_are_the_listed_ones() -> None:
    others = {r.code for r in _call_screened_rules() if not _screens_by_callee(r)}
    assert others == set(NOT_CALL_SCREENS)


def test_a_file_whose_only_collective_is_gather_is_checked() -> None:
    from tpulint.config.settings import Config
    from tpulint.engine.source import check_source

    source = (
        "import torch.distributed as dist\n\n\n"
        "def collect(t, parts):\n"
        "    if dist.get_rank() == 0:\n"
        "        dist.gather(t, parts, dst=0)\n"
    )
    config = Config.from_mapping({"select": ["TPU108"]})
    assert [d.code for d in check_source(source, "collect.py", config)] == ["TPU108"]


def test_collectives_imported_by_name_pass_the_screens() -> None:
    """A bare call of a collective imported by name (or under an alias) is reported with the
    screens on, as with every rule run on every file."""
    from tpulint.config.settings import Config
    from tpulint.engine.source import check_source, unscreened

    source = (
        "from torch.distributed import all_reduce, get_rank\n"
        "from torch.distributed import scatter as spread\n\n\n"
        "def share(t, parts):\n"
        "    if get_rank() == 0:\n"
        "        spread(t, parts, src=0)\n"
        "        all_reduce(t)\n"
    )
    config = Config.from_mapping({"select": ["TPU108"]})
    screened = [(d.code, d.start.line) for d in check_source(source, "share.py", config)]
    with unscreened():
        everything = [(d.code, d.start.line) for d in check_source(source, "share.py", config)]
    assert screened == everything == [("TPU108", 7), ("TPU108", 8)]
