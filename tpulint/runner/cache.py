"""The content-keyed result cache in `.tpulint_cache/`.

One file per (tpulint's code, configuration, project class table) holds, for every checked
file, its diagnostics keyed by a hash of its path and content (not its mtime: a touched but
unchanged file stays cached, a changed file is re-checked whatever its timestamp). It also
holds each file's project-model summary (tpulint.analysis.summary), so a warm run parses
nothing.

"tpulint's code" is the version and a content hash of the modules that decide what is
reported (tpulint's own and its rules; `code_fingerprint`): editing a rule in an editable
install, or patching an installed one, starts a fresh cache. Hashing them costs about 3 ms.

Every entry read is validated: one of the wrong shape (a hand edit, another version's
layout, a damaged file that is still valid JSON) is a miss, and is rewritten.

Written atomically (temporary file + rename), with a CACHEDIR.TAG and a `.gitignore`, like
Ruff's. Entries unused for 30 days are dropped when the cache is written.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tpulint import __version__
from tpulint.datatypes.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    FileEdits,
    Fix,
    Location,
    RelatedLocation,
    Severity,
)

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tpulint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)
EXPIRY_SECONDS = 30 * 24 * 3600
KEEP_FILES = 8  # result files kept per tpulint code version (other configurations)
KEEP_FACTS = 16  # project facts kept (other sets of files)
KEEP_CODE_VERSIONS = 3  # folders kept for other versions of tpulint's code (other venvs)


@functools.cache
def code_fingerprint() -> str:
    """The tpulint version and a fingerprint of the modules that decide what a check reports:
    the `tpulint` package (without the verifier, `tpulint.runtime`) and the rules
    (`tpulint.rules`, which an editable install maps to another folder). Each module counts
    by its path, size and modification time, as Ruff keys its cache, so editing a rule in an
    editable install invalidates cached results; nothing is read or imported (this runs on
    every call, before the cache answers)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(__version__.encode())
    roots: list[str] = []
    for package in ("tpulint", "tpulint.rules"):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            if os.path.realpath(location) not in roots:
                roots.append(os.path.realpath(location))
    seen: set[str] = set()
    for root in roots:
        for directory, dirs, files in os.walk(root):
            relative_dir = os.path.relpath(directory, root)
            dirs[:] = sorted(
                d
                for d in dirs
                if d != "__pycache__" and not (relative_dir == "." and d == "runtime")
            )
            for name in sorted(files):
                path = os.path.join(directory, name)
                if not name.endswith(".py") or path in seen:
                    continue
                seen.add(path)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                relative = os.path.relpath(path, root)
                digest.update(f"{relative}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return f"{__version__}-{digest.hexdigest()}"


def text_digest(text: str) -> bytes:
    """A file's content hash, computed once per file and run. SHA-256 through OpenSSL, which
    uses the CPU's SHA instructions: 1.7x faster than blake2b here (11 MB of nemo-toolkit:
    8.7 ms against 14.6 ms), and a warm run hashes every file."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def derived_key(label: str, digest: bytes) -> str:
    """The cache key of content `digest` seen as `label` (a display path, a module name)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(label.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(digest)
    return h.hexdigest()


def content_key(label: str, text: str) -> str:
    return derived_key(label, text_digest(text))


class JsonStore:
    """A dict persisted as one JSON file: load once, get/put during a run, save at the end."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.code = code_fingerprint()
        self.file = directory / self.code / f"{name}.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.dirty = False
        self.hits = 0
        self._now = int(time.time())
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("version") == self.code:
            entries = data.get("entries")
            if isinstance(entries, dict):
                self.entries = entries

    def get_raw(self, key: str) -> Any | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        seen = entry.get("t") if isinstance(entry, dict) else None
        if not isinstance(seen, int) or isinstance(seen, bool) or "v" not in entry:
            self.discard(key)
            return None
        if self._now - seen > 86400:
            entry["t"] = self._now  # refresh last-seen at most daily
            self.dirty = True
        self.hits += 1
        return entry["v"]

    def discard(self, key: str) -> None:
        """Forget a bad entry: a miss now, rewritten by the caller's `put`."""
        self.entries.pop(key, None)
        self.dirty = True

    def put_raw(self, key: str, value: Any) -> None:
        self.entries[key] = {"t": self._now, "v": value}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        cutoff = self._now - EXPIRY_SECONDS
        self.entries = {
            k: v
            for k, v in self.entries.items()
            if isinstance(v, dict) and isinstance(v.get("t"), int) and v["t"] >= cutoff
        }
        try:
            self._prepare()
            payload = json.dumps(
                {"version": self.code, "entries": self.entries}, separators=(",", ":")
            )
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.file.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, self.file)
            except BaseException:
                os.unlink(tmp)
                raise
            self._prune()
        except OSError:
            # A read-only checkout or a full disk must not fail the lint run.
            return
        self.dirty = False

    def _prepare(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(CACHEDIR_TAG, encoding="utf-8")
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by tpulint.\n*\n", encoding="utf-8")

    def _prune(self) -> None:
        files = sorted(
            (
                p
                for p in self.file.parent.glob("*.json")
                if p != self.file and p.name != "scans.json"
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in files[KEEP_FILES - 1 :]:
            with contextlib.suppress(OSError):
                old.unlink()
        # Folders of other versions of tpulint's code: a few are kept (several venvs may
        # share a project), the ones used least recently are removed.
        others = sorted(
            (
                p
                for p in self.directory.iterdir()
                if p.is_dir() and p != self.file.parent and p.name[:1].isdigit()
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in others[KEEP_CODE_VERSIONS - 1 :]:
            shutil.rmtree(old, ignore_errors=True)


class ResultCache(JsonStore):
    """Diagnostics per file, for one configuration and project class table."""

    def get(self, key: str, project: str = "") -> list[Diagnostic] | None:
        """The diagnostics stored for `key`. Those of a file whose findings were read from
        other files of the project (Diagnostic.project_dependent: a fix spanning files) are
        stored with the project's key and found only for the same project."""
        raw = self.get_raw(key)
        if raw is None:
            return None
        try:
            if isinstance(raw, dict):
                if raw.get("project") != project or not project:
                    return None
                raw = raw.get("diagnostics")
            if not isinstance(raw, list):
                raise ValueError("not a list")
            return [_diagnostic(d) for d in raw]
        except (ValueError, KeyError, TypeError):
            self.discard(key)
            return None

    def put(self, key: str, diagnostics: list[Diagnostic], project: str = "") -> None:
        found = [d.to_json() for d in diagnostics]
        if any(d.project_dependent for d in diagnostics):
            if not project:
                self.discard(key)
                return
            self.put_raw(key, {"project": project, "diagnostics": found})
            return
        self.put_raw(key, found)


# The fields every summary has (tpulint.analysis.summary.ModuleSummary.to_json).
_SUMMARY_KEYS = frozenset({"m", "pk", "i", "c", "f", "ok"})


class ScanCache(JsonStore):
    """Each file's project-model summary (`ModuleSummary.to_json`), by content (independent
    of configuration)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "scans")

    def get_raw(self, key: str) -> Any | None:
        raw = super().get_raw(key)
        if raw is None:
            return None
        if isinstance(raw, dict) and raw.keys() >= _SUMMARY_KEYS:
            return raw  # its parts are checked as it is read (ModuleSummary.from_json)
        self.discard(key)
        return None


def _str_map(value: Any, value_type: type) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, value_type) for k, v in value.items()
    )


# --- reading diagnostics back, strictly ---------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _number(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"expected a number, got {value!r}")
    return value


def _location(value: Any) -> Location:
    if not isinstance(value, dict) or set(value) != {"line", "column"}:
        raise ValueError(f"expected a location, got {value!r}")
    return Location(_number(value["line"]), _number(value["column"]))


def _fix(value: Any) -> Fix | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("edits"), list):
        raise ValueError(f"expected a fix, got {value!r}")
    related = value.get("related", [])
    if not isinstance(related, list):
        raise ValueError(f"expected related edits, got {related!r}")
    return Fix(
        Applicability(value["applicability"]),
        _text(value["message"]),
        _edits(value["edits"]),
        tuple(FileEdits(_text(r["path"]), _edits(r["edits"]), _text(r["digest"])) for r in related),
        _text(value.get("group", "")),
    )


def _edits(value: Any) -> tuple[Edit, ...]:
    if not isinstance(value, list):
        raise ValueError(f"expected edits, got {value!r}")
    edits = []
    for edit in value:
        if not isinstance(edit, dict):
            raise ValueError(f"expected an edit, got {edit!r}")
        edits.append(Edit(_location(edit["start"]), _location(edit["end"]), _text(edit["content"])))
    return tuple(edits)


def _diagnostic(value: Any) -> Diagnostic:
    """A diagnostic from its cached JSON; ValueError/KeyError/TypeError if malformed."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a diagnostic, got {value!r}")
    noqa = value.get("noqa_lines", [])
    if not isinstance(noqa, list):
        raise ValueError("noqa_lines")
    return Diagnostic(
        code=_text(value["code"]),
        name=_text(value["name"]),
        message=_text(value["message"]),
        path=_text(value["path"]),
        start=_location(value["start"]),
        end=_location(value["end"]),
        severity=Severity(value["severity"]),
        fix=_fix(value.get("fix")),
        noqa_lines=tuple(_number(n) for n in noqa),
        project_dependent=value.get("project_dependent", False) is True,
        scope=_text(value["scope"]) if value.get("scope") is not None else None,
        related=tuple(_related(r) for r in value.get("related", ())),
    )


def _related(value: Any) -> RelatedLocation:
    if not isinstance(value, dict):
        raise ValueError(f"expected a related location, got {value!r}")
    return RelatedLocation(
        _text(value["path"]),
        _location(value["start"]),
        _location(value["end"]),
        _text(value["message"]),
    )


def cache_name(config_fingerprint: str, table_digest: str) -> str:
    return hashlib.sha1(f"{config_fingerprint}:{table_digest}".encode()).hexdigest()[:20]


class FactsCache:
    """What the project model tells the result cache about a set of files, one small file per
    set (keyed by the files' summary keys and the hot-methods setting): the class table and
    each checked file's facts digest (`ProjectModel.file_digest`). A run over files seen
    before neither loads the summaries nor builds the model unless some file must be checked
    again. The newest KEEP_FACTS are kept."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.folder = directory / code_fingerprint() / "facts"

    @staticmethod
    def key(parts: list[str]) -> str:
        h = hashlib.blake2b(digest_size=16)
        for part in sorted(parts):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def get(self, key: str) -> tuple[dict[str, int], dict[str, str], dict[str, str]] | None:
        """(class table, path -> facts digest, text file -> signature), or None. The text
        files are those the analysis read besides the sources (READMEs, shell scripts):
        the entry holds only while each still has its signature."""
        try:
            data = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        table, digests, texts = data.get("table"), data.get("digests"), data.get("texts", {})
        if not (_str_map(table, int) and _str_map(digests, str) and _str_map(texts, str)):
            return None
        return table, digests, texts

    def put(
        self,
        key: str,
        table: dict[str, int],
        digests: dict[str, str],
        texts: dict[str, str] | None = None,
    ) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            JsonStore(self.directory, "facts")._prepare()  # CACHEDIR.TAG and .gitignore
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    data = {"table": table, "digests": digests, "texts": texts or {}}
                    handle.write(json.dumps(data, separators=(",", ":")))
                os.replace(tmp, self.folder / f"{key}.json")
            except BaseException:
                os.unlink(tmp)
                raise
            old = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
            for stale in old[:-KEEP_FACTS]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        except OSError:
            return  # a read-only checkout must not fail the run


class ListingCache:
    """The Python files of a package folder as the last walk found them, with the modification
    time of every folder walked. Adding, removing or renaming an entry changes its folder's
    modification time, so when every folder's time is unchanged the listing is too: a run
    that checks one file of a large package stats its folders instead of walking them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.folder = directory / code_fingerprint() / "listings"

    @staticmethod
    def _key(package: str, excluded: list[str]) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update("\0".join([package, *sorted(excluded)]).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def get(self, package: str, excluded: list[str]) -> list[str] | None:
        """The package's files, or None when a folder changed (or nothing is cached)."""
        try:
            raw = (self.folder / f"{self._key(package, excluded)}.json").read_text("utf-8")
            data = json.loads(raw)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        folders, files = data.get("folders"), data.get("files")
        if not (_str_map(folders, int) and isinstance(files, list)):
            return None
        if not all(isinstance(f, str) for f in files):
            return None
        for folder, mtime in folders.items():
            try:
                if os.stat(folder).st_mtime_ns != mtime:
                    return None
            except OSError:
                return None
        return files

    def put(
        self, package: str, excluded: list[str], folders: dict[str, int], files: list[str]
    ) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            JsonStore(self.directory, "listings")._prepare()  # CACHEDIR.TAG and .gitignore
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    data = {"folders": folders, "files": files}
                    handle.write(json.dumps(data, separators=(",", ":")))
                os.replace(tmp, self.folder / f"{self._key(package, excluded)}.json")
            except BaseException:
                os.unlink(tmp)
                raise
            old = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
            for stale in old[:-KEEP_FACTS]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        except OSError:
            return  # a read-only checkout must not fail the run
