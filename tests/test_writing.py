"""What `fix --apply` does to the files around the fix: symlinks, permissions, modes, owners,
hard links, encodings, and what it reports. Through the real CLI in a subprocess; as an
unprivileged user where root would bypass permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.helpers import LEGACY_TRAINER, make_project, run_cli, run_subprocess
from tests.unprivileged import run_unprivileged, shared_folder, unprivileged
from tpulint.runner.writing import encode_like, write_if_unchanged

FIXED_TRAINER = LEGACY_TRAINER.replace("tpu_cores=8", 'accelerator="tpu", devices=8')
NOT_ROOT = os.geteuid() != 0


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tpulint")]


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"real/train.py": LEGACY_TRAINER})
    (root / "link.py").symlink_to("real/train.py")
    result = run_subprocess(["fix", "--apply", "--no-cache", "link.py"], root)
    assert result.exit_code == 0, result.stderr
    assert (root / "link.py").is_symlink()
    assert os.readlink(root / "link.py") == "real/train.py"
    assert (root / "real/train.py").read_text() == FIXED_TRAINER
    assert "Fixed 1 finding in link.py" in result.stderr
    assert _leftovers(root) == [] and _leftovers(root / "real") == []


def test_a_file_reached_by_two_names_is_fixed_once(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"pkg/train.py": LEGACY_TRAINER})
    (root / "pkg/alias.py").symlink_to("train.py")
    os.link(root / "pkg/train.py", root / "pkg/hard.py")
    result = run_subprocess(["fix", "--apply", "--no-cache", "pkg"], root)
    assert result.exit_code == 0, result.stderr
    assert "changed on disk" not in result.stderr
    assert result.stderr.count("Fixed 1 finding in pkg/") == 1
    for name in ("train.py", "alias.py", "hard.py"):
        assert (root / "pkg" / name).read_text() == FIXED_TRAINER
    assert (root / "pkg/alias.py").is_symlink()
    assert os.stat(root / "pkg/hard.py").st_ino == os.stat(root / "pkg/train.py").st_ino


def test_hard_links_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    (tmp_path / "elsewhere").mkdir()
    os.link(root / "train.py", tmp_path / "elsewhere" / "copy.py")
    inode = os.stat(root / "train.py").st_ino
    result = run_subprocess(["fix", "--apply", "--no-cache", "train.py"], root)
    assert result.exit_code == 0, result.stderr
    assert os.stat(root / "train.py").st_ino == inode
    assert os.stat(root / "train.py").st_nlink == 2
    assert (tmp_path / "elsewhere" / "copy.py").read_text() == FIXED_TRAINER


def test_mode_owner_and_group_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    path = root / "train.py"
    path.chmod(0o754)
    owner = (65534, 65534) if not NOT_ROOT else (os.getuid(), os.getgid())
    os.chown(path, *owner)
    result = run_subprocess(["fix", "--apply", "--no-cache", "train.py"], root)
    assert result.exit_code == 0, result.stderr
    info = os.stat(path)
    assert stat.S_IMODE(info.st_mode) == 0o754
    assert (info.st_uid, info.st_gid) == owner
    assert path.read_text() == FIXED_TRAINER


def test_extended_attributes_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    path = root / "train.py"
    try:
        os.setxattr(path, "user.tpulint-test", b"kept")
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no user extended attributes here: {exc}")
    result = run_subprocess(["fix", "--apply", "--no-cache", "train.py"], root)
    assert result.exit_code == 0, result.stderr
    assert os.getxattr(path, "user.tpulint-test") == b"kept"
    assert path.read_text() == FIXED_TRAINER


def test_a_read_only_file_is_refused_and_reported_as_it_is(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"ro.py": LEGACY_TRAINER, "rw.py": LEGACY_TRAINER})
    (root / "ro.py").chmod(0o444)
    result = run_subprocess(["fix", "--apply", "--no-cache", "."], root)
    assert result.exit_code == 1
    assert "ro.py: not written: the file is read-only (mode 0444)" in result.stderr
    assert (root / "ro.py").read_text() == LEGACY_TRAINER
    assert (root / "rw.py").read_text() == FIXED_TRAINER
    # The report lists what is in the file on disk, not what the unwritten fix would leave.
    assert "ro.py:3:21: TPU001 [*]" in result.stdout
    assert "rw.py" not in result.stdout
    assert "Fixed 1 finding in rw.py" in result.stderr
    assert "Fixed 1 finding in 1 file; 1 remaining." in result.stderr


@pytest.mark.skipif(NOT_ROOT, reason="needs root to fake a sudo run")
def test_as_root_a_file_the_sudo_user_could_not_write_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    (root / "train.py").chmod(0o644)  # root's; the sudo user (nobody) may only read it
    result = run_subprocess(
        ["fix", "--apply", "--no-cache", "train.py"], root, env={"SUDO_UID": "65534"}
    )
    assert result.exit_code == 1
    assert (
        "train.py: not written: permission denied: the user who ran sudo (uid 65534) cannot "
        "write this file (mode 0644)"
    ) in result.stderr
    assert (root / "train.py").read_text() == LEGACY_TRAINER


def test_unprivileged_user_permissions() -> None:
    """As a user root's bypass does not apply to: a file they may not write is refused; a file
    they may write in a folder they may not create files in is rewritten in place, keeping
    its owner."""
    how = unprivileged()
    if isinstance(how, str):
        pytest.skip(how)
    uid, gid, _ = how
    with shared_folder() as root:
        make_project(
            root,
            {"theirs.py": LEGACY_TRAINER, "shared.py": LEGACY_TRAINER, "own/m.py": LEGACY_TRAINER},
        )
        (root / "theirs.py").chmod(0o644)
        (root / "shared.py").chmod(0o666)
        os.chown(root / "own", uid, gid)
        os.chown(root / "own/m.py", uid, gid)
        owner = os.stat(root / "shared.py").st_uid
        result = run_unprivileged(["fix", "--apply", "--no-cache", "."], root)
        assert result.exit_code == 1, result.stderr
        assert "theirs.py: not written: permission denied: you cannot write this file" in (
            result.stderr
        )
        assert (root / "theirs.py").read_text() == LEGACY_TRAINER
        assert (root / "shared.py").read_text() == FIXED_TRAINER
        assert os.stat(root / "shared.py").st_uid == owner
        assert (root / "own/m.py").read_text() == FIXED_TRAINER
        assert _leftovers(root) == [] and _leftovers(root / "own") == []


def test_a_latin1_file_keeps_its_bytes(tmp_path: Path) -> None:
    # The declared encoding is latin-1; these bytes are also valid UTF-8 ("é" in UTF-8 is
    # "Ã©" in latin-1). Python reads latin-1, and so must tpulint: re-encoding would change
    # the string on a line no fix touched.
    data = (
        b"# -*- coding: latin-1 -*-\nimport lightning as L\n"
        b'greeting = "caf\xc3\xa9"\ntrainer = L.Trainer(tpu_cores=8)\n'
        b'other = "na\xefve"\n'
    )
    root = make_project(tmp_path / "p", {})
    (root / "m.py").write_bytes(data)
    result = run_subprocess(["fix", "--apply", "--no-cache", "m.py"], root)
    assert result.exit_code == 0, result.stderr
    assert (root / "m.py").read_bytes() == data.replace(
        b"tpu_cores=8", b'accelerator="tpu", devices=8'
    )


def test_untouched_lines_keep_their_bytes_in_a_stateful_encoding() -> None:
    original_text = (
        "# -*- coding: iso-2022-jp -*-\nimport lightning as L\n"
        'name = "日本"\ntrainer = L.Trainer(tpu_cores=8)\nafter = "語"\n'
    )
    data = original_text.encode("iso-2022-jp")
    new_text = original_text.replace("tpu_cores=8", 'accelerator="tpu", devices=8')
    written = encode_like(data, original_text, new_text)
    old_lines, new_lines = data.splitlines(True), written.splitlines(True)
    assert [line for i, line in enumerate(new_lines) if i != 3] == [
        line for i, line in enumerate(old_lines) if i != 3
    ]
    assert written.decode("iso-2022-jp") == new_text


def test_a_bom_and_line_endings_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})
    data = b"\xef\xbb\xbf" + LEGACY_TRAINER.replace("\n", "\r\n").encode()
    (root / "m.py").write_bytes(data)
    result = run_subprocess(["fix", "--apply", "--no-cache", "m.py"], root)
    assert result.exit_code == 0, result.stderr
    assert (root / "m.py").read_bytes() == b"\xef\xbb\xbf" + FIXED_TRAINER.replace(
        "\n", "\r\n"
    ).encode()


def test_characters_the_encoding_cannot_hold_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"# coding: ascii\nx = 1\n")
    error = write_if_unchanged(path, "# coding: ascii\nx = 1\n", "# coding: ascii\nx = 'é'\n")
    assert error is not None and error.startswith(
        "not written: the fixed code has characters the file's encoding (ascii) cannot hold"
    )
    assert path.read_bytes() == b"# coding: ascii\nx = 1\n"


def test_a_fifo_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "pipe.py"
    os.mkfifo(path)
    assert write_if_unchanged(path, "", "x = 1\n") == "not written: not a regular file"


def test_written_files_are_reported_whatever_happens_to_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tpulint.engine.source as engine

    root = make_project(tmp_path / "p", {"a.py": LEGACY_TRAINER, "b.py": LEGACY_TRAINER})
    real = engine.fix_source

    def broken_for_b(text, path, config, **kwargs):
        if path.endswith("b.py"):
            raise ValueError("a bug")
        return real(text, path, config, **kwargs)

    monkeypatch.setattr(engine, "fix_source", broken_for_b)
    result = run_cli(["fix", "--apply", "--no-cache", "-j", "1", "."], root)
    assert result.exit_code == 2
    assert "Fixed 1 finding in a.py" in result.stderr
    assert "tpulint: error: internal error in b.py: ValueError: a bug" in result.stderr
    assert (root / "a.py").read_text() == FIXED_TRAINER
    assert (root / "b.py").read_text() == LEGACY_TRAINER
