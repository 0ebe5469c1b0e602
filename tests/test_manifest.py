"""The rule manifest (tpulint/data/rules.json) matches the rule classes, and the commands that
need no analysis start without importing libcst or any rule module."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import LEGACY_TRAINER, make_project
from tpulint.config import registry
from tpulint.manifest import info_of, render, rule_classes


def test_manifest_matches_the_rule_classes() -> None:
    assert registry.MANIFEST.read_text(encoding="utf-8") == render(), (
        "tpulint/data/rules.json is out of date: run `python -m tpulint.manifest`"
    )


def test_catalogue_is_the_classes_metadata() -> None:
    classes = rule_classes()
    assert [info.code for info in registry.catalogue()] == [r.code for r in classes]
    for info, rule in zip(registry.catalogue(), classes, strict=True):
        assert info == info_of(rule)
        assert info.fix_availability() == rule.fix_availability()
        assert info.family() == rule.family()
    assert registry.all_rules() == tuple(classes)


def test_an_out_of_date_manifest_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    data = json.loads(registry.MANIFEST.read_text(encoding="utf-8"))
    data["rules"][0]["class"] = "NoSuchRule"
    stale = tmp_path / "rules.json"
    stale.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(registry, "MANIFEST", stale)
    registry.clear_caches()
    try:
        try:
            registry.all_rules()
        except RuntimeError as exc:
            assert "python -m tpulint.manifest" in str(exc)
        else:
            raise AssertionError("a manifest naming a missing class was accepted")
    finally:
        monkeypatch.undo()
        registry.clear_caches()


_PROBE = textwrap.dedent(
    """\
    import sys
    from tpulint.cli import main

    sys.argv = ["tpulint", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    loaded = sorted(
        m for m in sys.modules
        if m == "libcst" or m.startswith(("libcst.", "tpulint.rules", "tpulint.engine",
                                          "tpulint.rule_api", "yaml", "pygls"))
    )
    print("LOADED", loaded, file=sys.stderr)
    """
)


def _loaded(args: list[str], cwd: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=cwd, capture_output=True, text=True
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return eval(line[len("LOADED ") :])  # a list literal printed by the probe


def test_cached_runs_and_listing_rules_load_no_analysis(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER, "clean.py": "x = 1\n"})
    # The first run analyses train.py: the engine and the rules are loaded.
    assert "libcst" in _loaded(["check", "."], root)
    # A warm run (everything cached), one cached file, the rule list, a config error: none.
    assert _loaded(["check", "."], root) == []
    assert _loaded(["check", "train.py"], root) == []
    assert _loaded(["rules"], root) == []
    assert _loaded(["check", ".", "--select", "TPX"], root) == []
    # A file no enabled rule can fire on is not parsed, and no rule module is imported.
    assert not [m for m in _loaded(["check", "clean.py", "--no-cache"], root) if "rules" in m]
