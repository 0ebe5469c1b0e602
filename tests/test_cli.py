"""The command line: exit codes, selection, output formats, stdin, fix, config errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import (
    CLEAN_MODULE,
    LEGACY_TRAINER,
    UNREADY_MODULE,
    make_project,
    run_cli,
    run_subprocess,
)

DATA = Path(__file__).parent / "data"
REPORT_SCHEMA = Path(__file__).resolve().parent.parent / "tpulint" / "data" / "report.schema.json"
LINE = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<code>[A-Z]{3}\d{3}) (?P<fix>\[\*\] )?(?P<msg>.+)$"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    # The rule set is pinned so these tests do not change as the catalogue grows.
    return make_project(
        tmp_path / "proj",
        {"src/model.py": UNREADY_MODULE, "src/clean.py": CLEAN_MODULE, "train.py": LEGACY_TRAINER},
        pyproject='select = ["TPU001", "TPU101", "TPU102", "TPL"]\n',
    )


def findings(stdout: str) -> list[re.Match]:
    return [m for m in (LINE.match(line) for line in stdout.splitlines()) if m]


def test_check_reports_findings_and_exits_1(project: Path) -> None:
    result = run_cli(["check", "."], project)
    assert result.exit_code == 1
    found = findings(result.stdout)
    assert [(m["path"], m["line"], m["code"]) for m in found] == [
        ("src/model.py", "8", "TPU102"),
        ("src/model.py", "9", "TPU101"),
        ("train.py", "3", "TPU001"),
    ]
    assert found[0]["fix"] and not found[1]["fix"]
    assert "Found 3 findings in 2 files (3 checked)." in result.stdout
    assert "[*] 2 fixable with `tpulint fix --apply`." in result.stdout


def test_clean_project_exits_0(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": CLEAN_MODULE}, pyproject='select = ["TPU1"]\n')
    result = run_cli(["check"], root)
    assert result.exit_code == 0, result.stdout
    assert "All checks passed (1 files checked)." in result.stdout


def test_exit_zero(project: Path) -> None:
    assert run_cli(["check", ".", "--exit-zero"], project).exit_code == 0


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        (["--select", "TPU1"], {"TPU101", "TPU102"}),
        (["--select", "TPU101,TPU001"], {"TPU101", "TPU001"}),
        (["--ignore", "TPU1"], {"TPU001"}),
        (["--select", "TPU1", "--extend-select", "TPU001"], {"TPU101", "TPU102", "TPU001"}),
        (["--select", "ALL", "--ignore", "TPU102"], {"TPU101", "TPU001"}),
        (["--select", "item-in-hot-path"], {"TPU101"}),
        # A more specific select beats a less specific ignore (Ruff's rule).
        (["--ignore", "TPU1", "--extend-select", "TPU102"], {"TPU001", "TPU102"}),
    ],
)
def test_selection(project: Path, args: list[str], codes: set[str]) -> None:
    result = run_cli(["check", ".", *args], project)
    assert {m["code"] for m in findings(result.stdout)} == codes


def test_unknown_selector_is_a_usage_error(project: Path) -> None:
    result = run_cli(["check", ".", "--select", "TPX999"], project)
    assert result.exit_code == 2
    assert result.stderr == "tpulint: error: --select: unknown rule selector `TPX999`\n"
    typo = run_cli(["check", ".", "--ignore", "item-in-hot-pth"], project)
    assert typo.stderr == (
        "tpulint: error: --ignore: unknown rule selector `item-in-hot-pth` "
        "(did you mean `item-in-hot-path`?)\n"
    )


def test_missing_path_is_a_usage_error(project: Path) -> None:
    result = run_cli(["check", "nope.py"], project)
    assert result.exit_code == 2
    assert result.stderr == "tpulint: error: path not found: nope.py\n"


def test_json_output_matches_schema(project: Path) -> None:
    result = run_cli(["check", ".", "--output-format", "json"], project)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    jsonschema.validate(report, json.loads(REPORT_SCHEMA.read_text()))
    assert report["summary"] == {
        "files_checked": 3,
        "findings": 3,
        "fixable": 2,
        "by_code": {"TPU001": 1, "TPU101": 1, "TPU102": 1},
        "scope": "tpu",
        "outside_scope": 0,
    }
    first = report["diagnostics"][0]
    assert first["code"] == "TPU102" and first["path"] == "src/model.py"
    assert first["start"] == {"line": 8, "column": 32}
    assert first["fix"]["applicability"] == "safe"
    # The edits, applied to the file, give what `tpulint fix` writes.
    edit = first["fix"]["edits"][0]
    assert edit == {
        "content": "",
        "start": {"line": 8, "column": 36},
        "end": {"line": 8, "column": 43},
    }


def test_sarif_output_is_valid_sarif(project: Path) -> None:
    result = run_cli(["check", ".", "--output-format", "sarif"], project)
    sarif = json.loads(result.stdout)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {"TPU001", "TPU101", "TPU102"}
    assert all(r["help"]["text"] and r["help"]["markdown"] for r in rules)
    results = run["results"]
    assert len(results) == 3
    for item in results:
        assert rules[item["ruleIndex"]]["id"] == item["ruleId"]
        region = item["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert results[0]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_github_annotations(project: Path) -> None:
    result = run_cli(["check", ".", "--output-format", "github"], project)
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    pattern = re.compile(
        r"^::(error|warning|notice) title=tpulint \((TPU\d{3})\),file=([^,]+),line=(\d+),col=(\d+),"
        r"endLine=(\d+),endColumn=(\d+)::(TPU\d{3}) .+$"
    )
    parsed = [pattern.match(line) for line in lines]
    assert all(parsed), lines
    assert parsed[2].group(1) == "error" and parsed[2].group(2) == "TPU001"  # removed API: error
    assert parsed[0].group(3) == "src/model.py" and parsed[0].group(4) == "8"


def test_full_output_shows_source_and_fix(project: Path) -> None:
    result = run_cli(["check", "src/model.py", "--output-format", "full"], project)
    out = result.stdout
    assert '8 |         self.log("train_loss", loss.item())' in out
    assert "^^^^^^^^^^^ TPU102" in out
    assert "= help: Log the tensor: drop the conversion" in out
    assert "Safe fix:" in out
    assert '-        self.log("train_loss", loss.item())' in out
    assert '+        self.log("train_loss", loss)' in out
    # unsafe fixes are shown with how to apply them
    assert "Unsafe fix (applied with --unsafe-fixes):" in out
    assert "+        self.task.log('total', loss.detach())" in out


def test_full_output_shows_display_only_suggestions(project: Path) -> None:
    (project / "src/sizes.py").write_text(
        "import lightning as L\n\n\nclass Model(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        n = batch.sum().item()\n"
        "        return self(batch)[:n]\n"
    )
    result = run_cli(["check", "src/sizes.py", "--output-format", "full"], project)
    assert "Suggested fix (display-only" in result.stdout


def test_statistics(project: Path) -> None:
    result = run_cli(["check", ".", "--statistics"], project)
    rows = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    assert rows == [
        ["1", "TPU001", "[*] legacy-tpu-cores"],
        ["1", "TPU101", "[ ] item-in-hot-path"],
        ["1", "TPU102", "[*] log-item-unwrap"],
    ]


def test_stdin(project: Path) -> None:
    result = run_cli(
        ["check", "-", "--stdin-filename", "pkg/model.py"], project, stdin=UNREADY_MODULE
    )
    assert result.exit_code == 1
    assert [m["path"] for m in findings(result.stdout)] == ["pkg/model.py", "pkg/model.py"]


def test_fix_stdin_writes_fixed_source(project: Path) -> None:
    result = run_cli(["fix", "-", "--select", "TPU001"], project, stdin=LEGACY_TRAINER)
    assert (
        result.stdout == "import lightning as L\n\n"
        'trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=1)\n'
    )
    assert result.exit_code == 0


def test_fix_shows_diff_and_writes_nothing(project: Path) -> None:
    before = (project / "src/model.py").read_text()
    result = run_cli(["fix", "."], project)
    assert result.exit_code == 1
    assert "--- a/src/model.py\n+++ b/src/model.py\n" in result.stdout
    assert "+    trainer = " not in result.stdout
    assert '+trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=1)' in result.stdout
    assert (project / "src/model.py").read_text() == before
    assert (
        "Would fix 2 findings in 2 files; 1 would remain. Run with --apply to write."
        in result.stderr
    )


def test_fix_apply_is_idempotent(project: Path) -> None:
    result = run_cli(["fix", ".", "--apply"], project)
    assert result.exit_code == 1  # TPU101 has no automatic fix: one finding is left
    assert "Fixed 2 findings in 2 files; 1 remaining." in result.stderr
    assert 'self.log("train_loss", loss)' in (project / "src/model.py").read_text()
    snapshot = {p: p.read_text() for p in project.rglob("*.py")}
    again = run_cli(["fix", ".", "--apply"], project)
    assert "Fixed 0 findings in 0 files; 1 remaining." in again.stderr
    assert {p: p.read_text() for p in project.rglob("*.py")} == snapshot


def test_check_diff(project: Path) -> None:
    result = run_cli(["check", ".", "--diff"], project)
    assert result.exit_code == 1
    assert "+++ b/train.py" in result.stdout


def test_invalid_config_names_the_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": CLEAN_MODULE}, pyproject="batch-multiple = 10\n")
    result = run_cli(["check", "."], root)
    assert result.exit_code == 2
    assert result.stderr == (
        "tpulint: error: pyproject.toml: [tool.tpulint] `batch-multiple` must be 8 or 128, got 10\n"
    )


def test_unknown_config_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": CLEAN_MODULE}, pyproject='selekt = ["TPU1"]\n')
    result = run_cli(["check", "."], root)
    assert result.exit_code == 2
    assert "unknown key `selekt` (did you mean `select`?)" in result.stderr


def test_broken_toml(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": CLEAN_MODULE}, pyproject="select = [\n")
    result = run_cli(["check", "."], root)
    assert result.exit_code == 2
    assert result.stderr.startswith("tpulint: error: ") and "invalid TOML" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_config_selection_and_cli_override(tmp_path: Path) -> None:
    root = make_project(
        tmp_path / "p",
        {"m.py": UNREADY_MODULE, "tests/test_m.py": UNREADY_MODULE},
        pyproject=(
            'select = ["TPU1"]\nignore = ["TPU102"]\n'
            '[tool.tpulint.per-file-ignores]\n"tests/*" = ["TPU101"]\n'
        ),
    )
    result = run_cli(["check", "."], root)
    assert [(m["path"], m["code"]) for m in findings(result.stdout)] == [("m.py", "TPU101")]
    result = run_cli(["check", ".", "--select", "TPU102"], root)
    assert {m["code"] for m in findings(result.stdout)} == {"TPU102"}


def test_explicit_config_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": UNREADY_MODULE}, pyproject=None)
    (root / "lint.toml").write_text('select = ["TPU101"]\n')
    result = run_cli(["check", ".", "--config", "lint.toml"], root)
    assert {m["code"] for m in findings(result.stdout)} == {"TPU101"}
    missing = run_cli(["check", ".", "--config", "nope.toml"], root)
    assert missing.exit_code == 2 and "config file not found" in missing.stderr


def test_rules_and_explain(project: Path) -> None:
    listing = run_cli(["rules"], project)
    assert listing.exit_code == 0
    assert re.search(r"TPU102\s+log-item-unwrap\s+stable\s+safe\s+on", listing.stdout)
    as_json = json.loads(run_cli(["rules", "--output-format", "json", "--all"], project).stdout)
    assert {"code": "TPL001"}.items() <= as_json[0].items()
    page = run_cli(["explain", "TPU102"], project)
    assert page.stdout.startswith("# TPU102: log-item-unwrap\n")
    assert "## Why is this bad on TPU?" in page.stdout
    assert run_cli(["explain", "log-item-unwrap"], project).stdout == page.stdout
    unknown = run_cli(["explain", "TPU1020"], project)
    assert unknown.exit_code == 2 and unknown.stderr.startswith("tpulint: error: unknown rule")


def test_subprocess_round_trip(project: Path) -> None:
    """The real entry point, as users and pre-commit call it."""
    result = run_subprocess(["check", ".", "--output-format", "json"], project)
    assert result.exit_code == 1, result.stderr
    assert json.loads(result.stdout)["summary"]["findings"] == 3
    fixed = run_subprocess(["fix", ".", "--apply", "-q"], project)
    assert fixed.exit_code == 1
    assert "Fixed 2 findings" not in fixed.stdout
    clean = run_subprocess(["check", ".", "--ignore", "TPU101"], project)
    assert clean.exit_code == 0, clean.stdout
    usage = run_subprocess(["check", "--bogus"], project)
    assert usage.exit_code == 2
    assert run_subprocess(["--version"], project).stdout.startswith("tpulint, version ")


def test_verbose_shows_cache_use(project: Path) -> None:
    first = run_cli(["check", ".", "-v"], project)
    assert "(0 from cache, 3 analysed, " in first.stderr
    assert (project / ".tpulint_cache" / "CACHEDIR.TAG").is_file()
    assert (project / ".tpulint_cache" / ".gitignore").read_text().endswith("*\n")
    second = run_cli(["check", ".", "-v"], project)
    assert "(3 from cache, 0 analysed, " in second.stderr
    assert second.stdout == first.stdout
    (project / "train.py").write_text(LEGACY_TRAINER + "# changed\n")
    third = run_cli(["check", ".", "-v"], project)
    assert "(2 from cache, 1 analysed, " in third.stderr


def test_no_cache(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"m.py": UNREADY_MODULE})
    run_cli(["check", ".", "--no-cache"], root)
    assert not (root / ".tpulint_cache").exists()


def test_quiet_levels(project: Path) -> None:
    quiet = run_cli(["check", ".", "-q"], project)
    assert "Found" not in quiet.stdout and len(findings(quiet.stdout)) == 3
    silent = run_cli(["check", ".", "-qq"], project)
    assert silent.stdout == "" and silent.exit_code == 1
