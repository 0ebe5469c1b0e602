"""Writing a fixed file back (`fix --apply`, `check --add-noqa`) without damaging anything
around it.

    write_if_unchanged(path, original, new) -> None, or why nothing was written

- A symlink is written through: its target gets the new content, the link stays a link.
- A file the user could not write is refused: read-only files (no write bit), and files the
  user lacks permission for. Running as root, which bypasses permissions, the file is judged
  as its owner would see it, or as the user who ran `sudo` (SUDO_UID) would.
- The file on disk must still hold the text tpulint read; otherwise nothing is written.
- The bytes are encoded in the file's own encoding (a BOM or a PEP 263 coding declaration),
  and every line the fix did not change keeps its exact bytes.
- Mode, owner, group, extended attributes (ACLs, SELinux labels) and hard links are kept. A
  file is normally replaced atomically: the new content goes to a temporary file in the same
  folder, which gets the original's mode, owner, group and extended attributes, and is then
  renamed over it, so a crash leaves the old file or the new one, never a mix. Where that
  cannot keep what the original had (a file with several hard links, whose other names would
  keep the old content; an owner or group or attribute the user may not set; a folder the user
  may not create files in), the file is rewritten in place instead: same inode, so every link,
  owner and attribute stays; that write is not atomic.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path

from tpulint.runner.discovery import BOM_UTF8, decode_source, source_encoding

# Encodings where each character is encoded on its own (no shift states): re-encoding the
# whole text gives back the same bytes for every line it did not change.
_STATELESS = frozenset({"utf-8", "utf-8-sig", "latin-1", "iso-8859-1", "ascii", "cp1252"})
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_BYTES_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class _Refused(Exception):
    """Why a file is not written (the message is shown after `not written: `)."""


def write_if_unchanged(path: Path, original: str, new: str) -> str | None:
    """Replace the content of `path` (through symlinks) with `new` if it still holds
    `original` and the user may write it; None when written, else why not."""
    try:
        target, info, data = _writable(path, original)
        new_bytes = encode_like(data, original, new)
        _write(target, info, new_bytes)
    except _Refused as refused:
        return f"not written: {refused}"
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    return None


def may_write(path: Path, original: str) -> str | None:
    """Why `write_if_unchanged(path, original, ...)` would refuse now, or None: checked for
    every file of a fix that spans several files before any of them is written."""
    try:
        _writable(path, original)
    except _Refused as refused:
        return f"not written: {refused}"
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    return None


def _writable(path: Path, original: str) -> tuple[Path, os.stat_result, bytes]:
    target = Path(os.path.realpath(path))
    info = os.stat(target)
    if not stat.S_ISREG(info.st_mode):
        raise _Refused("not a regular file")
    _check_may_write(target, info)
    data = target.read_bytes()
    if _decoded(data) != original:
        raise _Refused("the file changed on disk since tpulint read it")
    return target, info, data


def _decoded(data: bytes) -> str | None:
    try:
        return decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return None


# --- may the user write it? ---------------------------------------------------------------


def _check_may_write(target: Path, info: os.stat_result) -> None:
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222:
        raise _Refused(f"the file is read-only (mode {mode:04o})")
    if os.geteuid() != 0:
        effective = os.access in os.supports_effective_ids
        if not os.access(target, os.W_OK, effective_ids=effective):
            raise _Refused("permission denied: you cannot write this file")
        return
    # Root may write anything: judge the file as the user who ran sudo, else as its owner.
    user = _sudo_uid()
    uid = info.st_uid if user is None else user
    if uid == info.st_uid:
        allowed = bool(mode & stat.S_IWUSR)
    elif info.st_gid in _groups_of(uid):
        allowed = bool(mode & stat.S_IWGRP)
    else:
        allowed = bool(mode & stat.S_IWOTH)
    if not allowed:
        who = f"the user who ran sudo (uid {uid})" if user is not None else "its owner"
        raise _Refused(f"permission denied: {who} cannot write this file (mode {mode:04o})")


def _sudo_uid() -> int | None:
    value = os.environ.get("SUDO_UID", "")
    return int(value) if value.isdigit() and int(value) != 0 else None


def _groups_of(uid: int) -> set[int]:
    try:
        import pwd

        entry = pwd.getpwuid(uid)
        return set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (ImportError, KeyError, OSError):
        return set()


# --- encoding ------------------------------------------------------------------------------


def encode_like(data: bytes, original: str, new: str) -> bytes:
    """`new` encoded as `data` (whose text is `original`) was, every line that `new` shares
    with `original` keeping its bytes from `data`."""
    encoding = source_encoding(data)
    bom = data.startswith(BOM_UTF8)
    body = data[len(BOM_UTF8) :] if bom else data
    codec = "utf-8" if encoding in ("utf-8", "utf-8-sig") else encoding
    try:
        if codec in _STATELESS and original.encode(codec) == body:
            encoded = new.encode(codec)
        else:
            encoded = _merge_lines(body, original, new, codec)
    except UnicodeEncodeError as exc:
        raise _Refused(
            f"the fixed code has characters the file's encoding ({encoding}) cannot hold "
            f"({exc.object[exc.start : exc.end]!r})"
        ) from None
    result = (BOM_UTF8 if bom else b"") + encoded
    if _decoded(result) != new:
        raise _Refused(f"the fixed code cannot be encoded as {encoding} exactly")
    return result


def _merge_lines(body: bytes, original: str, new: str, codec: str) -> bytes:
    import difflib  # imported when needed: tpulint starts fast without it

    old_text_lines = _LINE.findall(original)
    old_byte_lines = _BYTES_LINE.findall(body)
    if len(old_text_lines) != len(old_byte_lines):
        return new.encode(codec)  # lines do not align: checked by the caller's round trip
    new_lines = _LINE.findall(new)
    matcher = difflib.SequenceMatcher(None, old_text_lines, new_lines, autojunk=False)
    out: list[bytes] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(old_byte_lines[i1:i2])
        elif j2 > j1:
            out.append("".join(new_lines[j1:j2]).encode(codec))
    return b"".join(out)


# --- writing -------------------------------------------------------------------------------


def _write(target: Path, info: os.stat_result, content: bytes) -> None:
    import tempfile  # imported when needed: tpulint starts fast without it

    if info.st_nlink > 1:
        _write_in_place(target, info, content)
        return
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tpulint", dir=target.parent
        )
    except PermissionError:
        _write_in_place(target, info, content)  # may write the file, not the folder
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
            kept = _copy_metadata(handle.fileno(), target, info)
        if not kept:
            os.unlink(temporary)
            _write_in_place(target, info, content)
            return
        now = os.stat(target)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
        ):
            raise _Refused("the file changed on disk since tpulint read it")
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _copy_metadata(fd: int, target: Path, info: os.stat_result) -> bool:
    """Give the temporary file the original's mode, owner, group and extended attributes;
    False if the user may not (the caller then writes in place)."""
    try:
        current = os.fstat(fd)
        if (current.st_uid, current.st_gid) != (info.st_uid, info.st_gid):
            os.fchown(fd, info.st_uid, info.st_gid)
        os.fchmod(fd, stat.S_IMODE(info.st_mode))
    except PermissionError:
        return False
    if hasattr(os, "listxattr"):
        try:
            names = os.listxattr(target)
        except OSError:
            names = []
        for name in names:
            try:
                os.setxattr(fd, name, os.getxattr(target, name))
            except OSError as exc:
                if exc.errno in (errno.EPERM, errno.EACCES, errno.ENOTSUP):
                    return False
                raise
    return True


def _write_in_place(target: Path, info: os.stat_result, content: bytes) -> None:
    """Rewrite the file's own inode, after checking once more, on the same descriptor, that
    it still holds what was read."""
    fd = os.open(target, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        now = os.fstat(fd)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
        ):
            raise _Refused("the file changed on disk since tpulint read it")
        view = memoryview(content)
        offset = 0
        while offset < len(content):
            offset += os.pwrite(fd, view[offset:], offset)
        os.ftruncate(fd, len(content))
        os.fsync(fd)
    finally:
        os.close(fd)
