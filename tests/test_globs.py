"""The globs of `exclude` and `per-file-ignores` (tpulint.config.globs): .gitignore's rules,
matched by pathspec, against paths relative to the project root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LEGACY_TRAINER, make_project, run_cli
from tests.test_files import codes_by_path
from tpulint.config.globs import Globs, path_matches
from tpulint.config.settings import DEFAULT_EXCLUDES, Config

# (pattern, paths it matches, paths it does not): per-file-ignores' reading, where a file
# inside a matching folder matches.
CASES = [
    # No `/`: a file or folder name at any depth.
    ("conftest.py", ["conftest.py", "a/b/conftest.py"], ["conftest.pyc", "a/conftest.py.bak"]),
    ("*_pb2.py", ["x_pb2.py", "a/x_pb2.py"], ["x_pb2.pyi", "x_pb2.py.txt"]),
    ("build", ["build/x.py", "a/build/x.py", "build"], ["builds/x.py", "a/build.py"]),
    ("legacy/", ["legacy/old.py", "a/legacy/old.py"], ["legacy", "legacy.py"]),
    # A `/`: the path from the project root; `*` stays within one name.
    ("tests/*", ["tests/a.py", "tests/unit/test_model.py"], ["tests", "src/tests/a.py"]),
    ("src/*.py", ["src/a.py"], ["src/sub/a.py", "a/src/a.py"]),
    ("tests/fixtures", ["tests/fixtures/a.py", "tests/fixtures/x/y.py"], ["a/tests/fixtures/b.py"]),
    ("/setup.py", ["setup.py"], ["a/setup.py"]),
    # `**`: any number of folders, none included.
    ("**/conftest.py", ["conftest.py", "a/b/conftest.py"], ["conftest.pyc"]),
    ("tests/**/data", ["tests/data/x.csv", "tests/a/b/data/x.csv"], ["data/x.csv"]),
    ("tests/**/[!_]*.py", ["tests/a.py", "tests/u/v.py"], ["tests/u/_v.py", "src/v.py"]),
    ("a/**", ["a/x.py", "a/b/c.py"], ["b/a/x.py"]),
    # `?` and classes, within a name.
    ("test_?.py", ["test_1.py", "x/test_a.py"], ["test_10.py"]),
    ("[ab].py", ["a.py", "d/b.py"], ["c.py"]),
    # A glob is not a .gitignore line: `!` and `#` are plain characters.
    ("!x.py", ["!x.py", "a/!x.py"], ["x.py"]),
    ("#gen.py", ["#gen.py"], ["gen.py"]),
]


@pytest.mark.parametrize(("pattern", "matching", "other"), CASES, ids=[c[0] for c in CASES])
def test_globs_follow_gitignore_rules(pattern: str, matching: list[str], other: list[str]) -> None:
    for path in matching:
        assert path_matches(path, pattern), (pattern, path)
    for path in other:
        assert not path_matches(path, pattern), (pattern, path)


def test_a_walk_matches_the_path_itself() -> None:
    """The walk decides each folder as it meets it: a file matches only by itself (a folder
    named on the command line is walked even when its name is excluded), and folder-only
    patterns match folders only."""
    globs = Globs(["legacy", "tests/fixtures", "data/", "*_pb2.py"])
    assert globs.match("legacy", is_dir=True, itself=True)
    assert not globs.match("legacy/old.py", itself=True)
    assert globs.match("tests/fixtures", is_dir=True, itself=True)
    assert not globs.match("tests/fixtures/a.py", itself=True)
    assert globs.match("a/data", is_dir=True, itself=True)
    assert not globs.match("a/data", is_dir=False, itself=True)
    assert globs.match("src/x_pb2.py", itself=True)


def test_plain_names_do_not_import_pathspec() -> None:
    code = (
        "import sys\nfrom tpulint.config.globs import Globs\n"
        "from tpulint.config.settings import DEFAULT_EXCLUDES\n"
        "g = Globs(DEFAULT_EXCLUDES)\n"
        "print(g.match('a/.venv/x.py'), g.match('src/x.py'), 'pathspec' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["True", "False", "False"], done.stderr
    assert not Globs(DEFAULT_EXCLUDES).patterns


def test_per_file_ignores_and_excludes_on_a_project(tmp_path: Path) -> None:
    files = {
        "src/train.py": LEGACY_TRAINER,
        "src/deep/train.py": LEGACY_TRAINER,
        "tests/unit/test_train.py": LEGACY_TRAINER,
        "tests/unit/_helpers.py": LEGACY_TRAINER,
        "scripts/gen/train.py": LEGACY_TRAINER,
        "scripts/train.py": LEGACY_TRAINER,
    }
    pyproject = (
        'extend-exclude = ["scripts/*/"]\n'
        "[tool.tpulint.per-file-ignores]\n"
        '"tests/**/[!_]*.py" = ["TPU001"]\n'
        '"src/*.py" = ["TPU001"]\n'
    )
    root = make_project(tmp_path / "p", files, pyproject=pyproject)
    result = run_cli(["check", "."], root)
    assert sorted(codes_by_path(result.stdout)) == [
        ("scripts/train.py", "TPU001"),
        ("src/deep/train.py", "TPU001"),  # `*` does not cross a `/`
        ("tests/unit/_helpers.py", "TPU001"),
    ]
    config = Config.from_mapping({"per-file-ignores": {"tests/*": ["TPU1"]}}, root=root)
    assert "TPU101" not in config.enabled_for("tests/unit/test_train.py")
    assert "TPU101" in config.enabled_for("src/tests/test_train.py")


def test_macos_archive_metadata_is_excluded_by_default(tmp_path: Path) -> None:
    """A zip made on macOS keeps `__MACOSX/<path>/._<name>.py`: AppleDouble metadata, binary,
    not source. The default excludes skip the folder, so no TPL003 "not valid UTF-8"."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(LEGACY_TRAINER, encoding="utf-8")
    meta = tmp_path / "__MACOSX" / "pkg"
    meta.mkdir(parents=True)
    (meta / "._train.py").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        \xff\xfe")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tpulint",
            "check",
            str(tmp_path),
            "--no-cache",
            "--output-format",
            "json",
            "--exit-zero",
        ],
        capture_output=True,
        text=True,
    )
    found = json.loads(done.stdout)["diagnostics"]
    assert not [d for d in found if "__MACOSX" in d["path"]], found
    assert any(d["code"] == "TPU001" for d in found), found
