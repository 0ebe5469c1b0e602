"""Preview mode (Ruff's model): rules that have not earned the default set run only with
`--preview` / `preview = true`; selecting them without it has no effect and says so."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.helpers import make_project, run_cli
from tpulint.config import registry
from tpulint.config.registry import SelectionLayer, resolve_selection, selection_warnings
from tpulint.config.settings import Config, ConfigError

# A stable rule of the host-sync family made a preview rule for these tests, so the selection
# semantics are tested whatever the catalogue's real preview rules are at the time.
PREVIEW = "TPU106"


@pytest.fixture
def one_preview_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    original = registry.catalogue()
    patched = tuple(
        dataclasses.replace(r, preview=True) if r.code == PREVIEW else dataclasses.replace(r)
        for r in original
    )
    monkeypatch.setattr(registry, "catalogue", lambda: patched)


def _enabled(*layers: SelectionLayer, preview: bool = False, explicit: bool = False) -> set[str]:
    return set(resolve_selection(layers, preview=preview, explicit_preview=explicit))


@pytest.mark.usefixtures("one_preview_rule")
class TestSelection:
    def test_default_set_leaves_preview_rules_out_until_preview_is_on(self) -> None:
        assert PREVIEW not in _enabled()
        assert "TPU101" in _enabled()
        assert PREVIEW in _enabled(preview=True)

    def test_selecting_a_preview_rule_needs_preview(self) -> None:
        for selector in (PREVIEW, "per-step-sync-dist", "TPU1", "TPU10", "ALL"):
            layer = SelectionLayer(select=(selector,))
            assert PREVIEW not in _enabled(layer), selector
            assert PREVIEW in _enabled(layer, preview=True), selector
        extend = SelectionLayer(extend_select=(PREVIEW,))
        assert PREVIEW not in _enabled(extend)
        assert PREVIEW in _enabled(extend, preview=True)

    def test_explicit_preview_rules_need_their_exact_code_or_name(self) -> None:
        for selector in ("TPU1", "TPU10", "ALL"):
            layer = SelectionLayer(select=(selector,))
            assert PREVIEW not in _enabled(layer, preview=True, explicit=True), selector
        assert PREVIEW not in _enabled(preview=True, explicit=True)  # not in the default set
        for selector in (PREVIEW, "per-step-sync-dist"):
            layer = SelectionLayer(select=("TPU1", selector))
            assert PREVIEW in _enabled(layer, preview=True, explicit=True), selector
        # Stable rules are selected by prefix as always.
        assert "TPU101" in _enabled(SelectionLayer(select=("TPU1",)), preview=True, explicit=True)

    def test_ignore_still_wins_over_a_preview_rule(self) -> None:
        layer = SelectionLayer(ignore=("TPU1",))
        assert PREVIEW not in _enabled(layer, preview=True)
        assert PREVIEW not in _enabled(layer, preview=True, explicit=True)

    def test_a_selection_that_only_names_preview_rules_warns_without_preview(self) -> None:
        layers = (SelectionLayer(select=(PREVIEW, "TPU1")), SelectionLayer(extend_select=("ALL",)))
        assert selection_warnings(layers, preview=False) == [
            f"Selection `{PREVIEW}` has no effect because preview is not enabled"
        ]
        assert selection_warnings(layers, preview=True) == []

    def test_config_keys_and_the_cli_flag(self) -> None:
        config = Config.from_mapping({"select": [PREVIEW]})
        assert PREVIEW not in config.enabled
        assert config.selection_warnings()
        on = Config.from_mapping({"select": [PREVIEW], "preview": True})
        assert PREVIEW in on.enabled and not on.selection_warnings()
        explicit = Config.from_mapping(
            {"select": ["TPU1"], "preview": True, "explicit-preview-rules": True}
        )
        assert PREVIEW not in explicit.enabled and "TPU101" in explicit.enabled
        assert PREVIEW in config.with_cli(preview=True).enabled
        assert config.fingerprint() != config.with_cli(preview=True).fingerprint()


def test_preview_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="`preview` must be true or false"):
        Config.from_mapping({"preview": "yes"})


def test_the_manifest_and_rules_listing_record_each_rules_status(tmp_path: Path) -> None:
    data = json.loads(registry.MANIFEST.read_text(encoding="utf-8"))
    assert {r["status"] for r in data["rules"]} <= {"stable", "preview"}
    root = make_project(tmp_path / "p", {"m.py": "x = 1\n"})
    listing = json.loads(run_cli(["rules", "--output-format", "json"], root).stdout)
    by_code = {r["code"]: r for r in listing}
    for info in registry.catalogue():
        if info.code.startswith("TPU"):
            assert by_code[info.code]["status"] == info.status
            assert by_code[info.code]["preview"] is info.preview
    text = run_cli(["rules"], root).stdout
    assert "status: stable = in the default set; preview = runs only with --preview" in text


MLP_DATAMODULE = """\
import lightning as L
from torch import nn


class Tabular(L.LightningDataModule):
    def __init__(self, batch_size: int = 10):
        super().__init__()


head = nn.Sequential(nn.Linear(16, 64), nn.Linear(64, 1))
"""


def test_a_real_preview_rule_through_the_cli(tmp_path: Path) -> None:
    """TPU302 is in preview: selected without preview it warns and reports nothing; with
    --preview (or `preview = true`) it reports; SARIF marks it not enabled by default."""
    assert registry.infos_by_code()["TPU302"].preview
    root = make_project(tmp_path / "p", {"dm.py": MLP_DATAMODULE}, pyproject='select = ["TPU3"]\n')
    quiet = run_cli(["check", ".", "--select", "TPU302", "--no-cache"], root)
    assert quiet.exit_code == 0
    assert "Selection `TPU302` has no effect because preview is not enabled" in quiet.stderr
    loud = run_cli(["check", ".", "--select", "TPU302", "--preview", "--no-cache"], root)
    assert loud.exit_code == 1 and "TPU302" in loud.stdout and not loud.stderr.strip()
    # The project's own default set (TPU3) with preview on includes it; without, it does not.
    assert "TPU302" not in run_cli(["check", ".", "--no-cache"], root).stdout
    configured = make_project(
        tmp_path / "q", {"dm.py": MLP_DATAMODULE}, pyproject='select = ["TPU3"]\npreview = true\n'
    )
    assert "TPU302" in run_cli(["check", ".", "--no-cache"], configured).stdout
    sarif = json.loads(run_cli(["check", ".", "-o", "sarif", "--no-cache"], configured).stdout)
    rule = next(r for r in sarif["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "TPU302")
    assert rule["defaultConfiguration"]["enabled"] is False
    assert rule["properties"]["status"] == "preview"
    page = run_cli(["explain", "TPU302"], root).stdout
    assert "This rule is in preview" in page and "## Status" in page


OPTIMIZER = """\
import torch
from torch.optim import Optimizer


class Lars(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                trust = p.norm() / p.grad.norm()
                p.data.add_(p.grad, alpha=-group["lr"] * trust.item())
"""


def test_item_in_a_custom_optimizer_step_is_a_preview_shape(tmp_path: Path) -> None:
    """TPU101 in what a custom optimizer's `step()` reaches reports only in preview mode (the
    shape was wrong in 4 of 4 findings on code read after it was frozen)."""
    make_project(tmp_path, {"opt.py": OPTIMIZER})
    default = run_cli(["check", ".", "--no-cache", "--select", "TPU101"], tmp_path)
    assert default.exit_code == 0, default.stdout
    preview = run_cli(["check", ".", "--no-cache", "--select", "TPU101", "--preview"], tmp_path)
    assert preview.exit_code == 1, preview.stdout
    assert "trust.item()" in preview.stdout and "in optimizer step" in preview.stdout
