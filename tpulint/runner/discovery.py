"""Which files a run checks, and reading them safely.

Directories are walked with `.gitignore` respected and the default excludes (`.venv`, `build`,
`.git`, ...) plus `exclude`/`extend-exclude` applied. Files named on the command line are
checked even when excluded (unless `--force-exclude`, which pre-commit hooks use), and YAML
files are only checked when named explicitly (LightningCLI configs; the runner adds the walked
ones that ask for a TPU Trainer). Symlinked folders are
followed once: a symlink loop is reported, not walked forever.
"""

from __future__ import annotations

import codecs
import errno
import functools
import io
import os
import stat
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tpulint.config.globs import Globs
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Diagnostic, Location, Severity

PYTHON_SUFFIXES = (".py", ".pyi")


BOM_UTF8 = codecs.BOM_UTF8
_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class PathError(Exception):
    """A path given on the command line cannot be used: missing, a broken or looping symlink,
    a folder that cannot be read (a usage error)."""


def file_kind(mode: int) -> str:
    """What a non-regular, non-directory file is, for messages."""
    for test, name in _FILE_KINDS:
        if test(mode):
            return name
    return "not a regular file"


@dataclass(frozen=True)
class SourcePath:
    display: str  # how the path is shown (relative to the working directory when inside it)
    path: Path  # absolute


def unreadable(display: str, reason: str) -> Diagnostic:
    return Diagnostic(
        code="TPL003",
        name="unreadable-file",
        message=f"Not checked: {reason}",
        path=display,
        start=Location(1, 1),
        end=Location(1, 1),
        severity=Severity.ERROR,
    )


class _IgnoreFile:
    """One ignore file's patterns, compiled by pathspec's GitIgnoreSpec, matched as git
    matches them during a walk: a pattern matches a path itself (a file, or a folder the walk
    meets), never through one of its parent folders, which the walk has already decided on.

    GitIgnoreSpec answers "is this file ignored?" for a whole path and approximates what git
    does with the folders above it; a walk must also decide folders, as git does: `tmp/**`
    ignores what is inside `tmp` but not `tmp` itself, whose own .gitignore may re-include
    files. So each pattern's match is taken only when it is not a match of a parent folder
    (pathspec's folder mark), and folder-only patterns (`build/`, `lib/**/`) are matched
    against folders without their trailing slash."""

    def __init__(self, text: str) -> None:
        from pathspec import GitIgnoreSpec

        patterns = [p for p in GitIgnoreSpec.from_lines(text.splitlines()).patterns]
        patterns = [p for p in patterns if p.include is not None]
        folder_only = [_folder_only(str(p.pattern)) for p in patterns]
        as_folders = iter(
            GitIgnoreSpec.from_lines([f for f in folder_only if f is not None]).patterns
        )
        # (pattern, whether it applies to folders only)
        self.rules = [
            (next(as_folders), True) if folder is not None else (pattern, False)
            for pattern, folder in zip(patterns, folder_only, strict=True)
        ]

    def decision(self, relative: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by a negation) or None (no pattern matches)."""
        decision = None
        for pattern, folders_only in self.rules:
            if folders_only and not is_dir:
                continue
            result = pattern.match_file(relative)
            if result is not None and not result.match.groupdict().get(_FOLDER_MARK):
                decision = pattern.include
        return decision


# The regex group with which pathspec's gitignore patterns mark a match of a parent folder.
_FOLDER_MARK = "ps_d"


def _folder_only(pattern: str) -> str | None:
    """`build/` -> `build` (a pattern for folders only), else None."""
    text = pattern.rstrip(" ")
    if text.endswith("/") and not text.endswith("\\/") and text.strip("!/"):
        return text.rstrip("/")
    return None


class GitIgnore:
    """The ignore files of one git repository: `.git/info/exclude` first, then the
    `.gitignore` files from the root down to a path's folder, each relative to its own
    folder; the last match decides (deeper files override shallower ones).

    Parent folders are the caller's business, as in git: a walk does not descend into an
    ignored folder, so nothing below it can be re-included."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # folder -> the (folder, ignore file) pairs that apply in it, outermost first
        self._chains: dict[Path, tuple[tuple[Path, _IgnoreFile], ...]] = {}

    @staticmethod
    def _read(file: Path) -> _IgnoreFile | None:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        ignore = _IgnoreFile(text)
        return ignore if ignore.rules else None

    def _chain(self, directory: Path) -> tuple[tuple[Path, _IgnoreFile], ...]:
        chain = self._chains.get(directory)
        if chain is not None:
            return chain
        if directory == self.root:
            chain = ()
            for name in (".git/info/exclude", ".gitignore"):
                ignore = self._read(directory / name)
                if ignore is not None:
                    chain += ((directory, ignore),)
        elif self.root not in directory.parents:
            chain = ()
        else:
            chain = self._chain(directory.parent)
            ignore = self._read(directory / ".gitignore")
            if ignore is not None:
                chain += ((directory, ignore),)
        self._chains[directory] = chain
        return chain

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` (absolute, under the root) is ignored."""
        decision = None
        for base, ignore in self._chain(path.parent):
            found = ignore.decision(path.relative_to(base).as_posix(), is_dir)
            if found is not None:
                decision = found
        return bool(decision)


def find_repo_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` with a `.git` (a folder, or a file in
    worktrees and submodules); computed once per folder."""
    found = _repo_root(os.fspath(start))
    return Path(found) if found is not None else None


@functools.lru_cache(maxsize=4096)
def _repo_root(directory: str) -> str | None:
    if os.path.exists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _repo_root(parent)


def display_path(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


class _Walker:
    def __init__(self, config: Config, cwd: Path) -> None:
        self.config = config
        self.cwd = cwd
        self.excludes = Globs((*config.exclude, *config.extend_exclude))
        self.root = str(config.root).rstrip(os.sep) + os.sep
        self.gitignores: dict[Path, GitIgnore] = {}
        self.repo_roots: dict[str, Path | None] = {}
        self.problems: list[Diagnostic] = []
        self.notices: list[str] = []
        self.seen_dirs: set[tuple[int, int]] = set()
        # YAML files met on the walk: not checked unless named, but their configs say which
        # classes and Trainers the project runs (tpulint.analysis.config_facts).
        self.configs: list[Path] = []
        # Shell scripts met on the walk: checked when they set a TPU launch's environment
        # (the runner picks them: paths.launcher_scripts).
        self.scripts: list[Path] = []

    def excluded(self, path: Path, is_dir: bool) -> bool:
        """Whether `exclude`/`extend-exclude` match the path itself (tpulint.config.globs),
        relative to the project root; outside it, only patterns that are plain names apply.
        Folders are checked as the walk meets them, so a folder named on the command line is
        never excluded by its own name."""
        excludes = self.excludes
        if not excludes.patterns:
            return path.name in excludes.names
        text = str(path)
        if not text.startswith(self.root):
            return path.name in excludes.names
        return excludes.match(text[len(self.root) :], is_dir, itself=True)

    def gitignored(self, path: Path, is_dir: bool) -> bool:
        if not self.config.respect_gitignore:
            return False
        # Strings, not Path objects: this runs for every entry of the walk.
        parent = os.path.dirname(path)
        if parent in self.repo_roots:
            root = self.repo_roots[parent]
        else:
            root = self.repo_roots[parent] = find_repo_root(Path(parent))
        if root is None:
            return False
        ignore = self.gitignores.get(root)
        if ignore is None:
            ignore = self.gitignores[root] = GitIgnore(root)
        return ignore.ignored(path, is_dir)

    def notice(self, path: Path, mode: int) -> None:
        self.notices.append(
            f"{display_path(path, self.cwd)}: skipped: {file_kind(mode)}, not a regular file"
        )

    def walk(self, top: Path) -> Iterable[Path]:
        stack = [top]
        while stack:
            directory = stack.pop()
            try:
                stat = directory.stat()
            except OSError as exc:
                self.problems.append(unreadable(display_path(directory, self.cwd), _reason(exc)))
                continue
            key = (stat.st_dev, stat.st_ino)
            if key in self.seen_dirs:
                if directory.is_symlink():
                    self.problems.append(
                        unreadable(
                            display_path(directory, self.cwd),
                            f"symlink loop (points back to {os.path.realpath(directory)}); "
                            "not followed",
                        )
                    )
                continue
            self.seen_dirs.add(key)
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                self.problems.append(unreadable(display_path(directory, self.cwd), _reason(exc)))
                continue
            subdirs = []
            for entry in entries:
                path = Path(entry.path)
                try:
                    is_dir = entry.is_dir()
                except OSError as exc:  # e.g. a symlink loop (ELOOP)
                    self.problems.append(unreadable(display_path(path, self.cwd), _reason(exc)))
                    continue
                if is_dir:
                    if self.excluded(path, True) or self.gitignored(path, True):
                        continue
                    subdirs.append(path)
                elif entry.name.endswith((".yaml", ".yml")):
                    if not (self.excluded(path, False) or self.gitignored(path, False)):
                        self.configs.append(path)
                elif entry.name.endswith((".sh", ".bash")):
                    if not (self.excluded(path, False) or self.gitignored(path, False)):
                        self.scripts.append(path)
                elif entry.name.endswith(PYTHON_SUFFIXES):
                    if entry.is_symlink() and not path.exists():
                        self.problems.append(
                            unreadable(display_path(path, self.cwd), "broken symlink")
                        )
                        continue
                    if self.excluded(path, False) or self.gitignored(path, False):
                        continue
                    try:
                        regular = entry.is_file()  # follows symlinks; never opens the file
                        mode = entry.stat().st_mode if not regular else 0
                    except OSError as exc:
                        self.problems.append(unreadable(display_path(path, self.cwd), _reason(exc)))
                        continue
                    if not regular:
                        self.notice(path, mode)
                        continue
                    yield path
            stack.extend(reversed(subdirs))


def discover(
    paths: Sequence[str],
    config: Config,
    cwd: Path | None = None,
    notices: list[str] | None = None,
    configs: list[Path] | None = None,
    scripts: list[Path] | None = None,
) -> tuple[list[SourcePath], list[Diagnostic]]:
    """Files to check for `paths` (files or folders), and problems met while walking (TPL003
    diagnostics). Non-regular files (FIFOs, sockets, devices) are skipped without being
    opened; a line saying so is appended to `notices` when it is given. The YAML files of the
    folders walked are appended to `configs` when it is given (YAML files named on the command
    line are among the files to check).

    Raises PathError for a command-line path that does not exist, is a broken or looping
    symlink, or is a folder that cannot be read."""
    cwd = (cwd or Path.cwd()).resolve()
    walker = _Walker(config, cwd)
    found: dict[Path, SourcePath] = {}
    for given in paths:
        raw = Path(given)
        path = raw if raw.is_absolute() else cwd / raw
        path = Path(os.path.normpath(path))
        mode = _named_path_mode(given, path)
        if stat.S_ISDIR(mode):
            try:
                os.scandir(path).close()
            except OSError as exc:
                raise PathError(f"cannot read folder {given}: {_reason(exc)}") from None
            for file in walker.walk(path):
                found.setdefault(file, SourcePath(display_path(file, cwd), file))
            continue
        if config.force_exclude and _excluded_explicit(walker, path):
            continue
        if not stat.S_ISREG(mode):
            walker.notice(path, mode)
            continue
        # A file named explicitly is checked whatever its suffix (YAML configs included).
        found.setdefault(path, SourcePath(display_path(path, cwd), path))
    if notices is not None:
        notices.extend(walker.notices)
    if configs is not None:
        configs.extend(walker.configs)
    if scripts is not None:
        scripts.extend(walker.scripts)
    return list(found.values()), walker.problems


def _named_path_mode(given: str, path: Path) -> int:
    """The mode of a path named on the command line (symlinks followed), or PathError."""
    try:
        return os.stat(path).st_mode
    except OSError as exc:
        is_link = os.path.islink(path)
        if exc.errno == errno.ELOOP or (is_link and _loops(path)):
            raise PathError(f"symlink loop: {given}") from None
        if is_link and isinstance(exc, FileNotFoundError):
            raise PathError(f"broken symlink: {given} -> {os.readlink(path)}") from None
        if isinstance(exc, FileNotFoundError):
            raise PathError(f"path not found: {given}") from None
        raise PathError(f"cannot read {given}: {_reason(exc)}") from None


def _loops(path: Path) -> bool:
    try:
        os.path.realpath(path, strict=True)
    except OSError as exc:
        return exc.errno == errno.ELOOP or "loop" in str(exc).lower()
    return False


def _excluded_explicit(walker: _Walker, path: Path) -> bool:
    """For --force-exclude: a named file is excluded if it, or a folder between the project
    root and it, is excluded or gitignored."""
    if walker.excluded(path, False) or walker.gitignored(path, False):
        return True
    try:
        relative = path.relative_to(walker.config.root)
    except ValueError:
        return False
    current = walker.config.root
    for part in relative.parts[:-1]:
        current = current / part
        if walker.excluded(current, True) or walker.gitignored(current, True):
            return True
    return False


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def source_encoding(data: bytes) -> str:
    """The encoding Python reads this source with: `utf-8-sig` after a UTF-8 BOM, the PEP 263
    coding declaration of its first two lines, else `utf-8`.

    Raises SyntaxError for an unknown or malformed declaration."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return encoding


def decode_source(data: bytes) -> str:
    """Decode like Python does: by the BOM or PEP 263 declaration, else as UTF-8. A file that
    declares latin-1 is read as latin-1 even when its bytes are also valid UTF-8.

    Raises UnicodeDecodeError/SyntaxError/LookupError for undecodable input."""
    # Most files have neither a BOM nor a declaration in their first two lines: decode them
    # as UTF-8 at once (the declaration search costs more than the decoding).
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first != -1 else -1
    head = data if second == -1 else data[:second]
    if b"coding" not in head and not data.startswith(BOM_UTF8):
        return data.decode("utf-8")
    return data.decode(source_encoding(data))


def _read_regular(path: Path, max_size: int) -> bytes | int:
    """The bytes of a regular file, or its size when that is over `max_size` (0: no limit).

    Opened without blocking (a FIFO swapped in after discovery must not hang the run) and
    checked to be a regular file on the open descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise _NotRegular(file_kind(info.st_mode))
        if max_size and info.st_size > max_size:
            return info.st_size
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks = []
        while True:
            wanted = max(info.st_size + 1, 65536)
            chunk = os.read(fd, wanted)
            chunks.append(chunk)
            if len(chunk) < wanted:  # a short read of a regular file: its end
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


class _NotRegular(Exception):
    pass


def too_large(display: str, size: int, limit: int) -> Diagnostic:
    return Diagnostic(
        code="TPL005",
        name="file-too-large",
        message=(
            f"Not checked: {format_size(size)} is over `max-file-size` ({format_size(limit)}); "
            "exclude the file or raise the limit"
        ),
        path=display,
        start=Location(1, 1),
        end=Location(1, 1),
        severity=Severity.WARNING,
    )


def format_size(size: int) -> str:
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def read_source(source: SourcePath, max_size: int = 0) -> tuple[str | None, Diagnostic | None]:
    """(text, None) or (None, a diagnostic explaining why the file was not read: TPL003, or
    TPL005 for a file over `max_size` bytes)."""
    try:
        data = _read_regular(source.path, max_size)
    except FileNotFoundError:
        return None, unreadable(source.display, "the file vanished while tpulint was running")
    except IsADirectoryError:
        return None, unreadable(source.display, "is a directory")
    except _NotRegular as exc:
        return None, unreadable(source.display, f"{exc}, not a regular file")
    except OSError as exc:
        return None, unreadable(source.display, _reason(exc))
    if isinstance(data, int):
        return None, too_large(source.display, data, max_size)
    try:
        return decode_source(data), None
    except UnicodeDecodeError as exc:
        return None, unreadable(source.display, _undecodable(data, exc))
    except (SyntaxError, LookupError) as exc:
        message = getattr(exc, "msg", None) or str(exc)
        if "encoding declaration" in message:  # the first lines are not UTF-8, no cookie
            return None, unreadable(source.display, "not valid UTF-8 and no coding declaration")
        return None, unreadable(source.display, f"bad coding declaration ({message})")


def _undecodable(data: bytes, exc: UnicodeDecodeError) -> str:
    line = data.count(b"\n", 0, exc.start) + 1
    if exc.encoding in ("utf-8", "utf-8-sig"):
        return f"not valid UTF-8 (line {line}) and no coding declaration"
    return f"not valid {exc.encoding} as its coding declaration says (line {line})"
