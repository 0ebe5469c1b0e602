"""The content-keyed result cache in `.tpulint_cache/`.

One file per (tpulint version, configuration, project class table) holds, for every checked
file, its diagnostics keyed by a hash of its path and content (not its mtime: a touched but
unchanged file stays cached, a changed file is re-checked whatever its timestamp). It also
holds each file's project-model summary (tpulint.analysis.summary), so a warm run parses
nothing.

Written atomically (temporary file + rename), with a CACHEDIR.TAG and a `.gitignore`, like
Ruff's. Entries unused for 30 days are dropped when the cache is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tpulint import __version__
from tpulint.diagnostics import Diagnostic

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tpulint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)
EXPIRY_SECONDS = 30 * 24 * 3600
KEEP_FILES = 8  # result files kept per tpulint version (other configurations)


def content_key(display_path: str, text: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(display_path.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class JsonStore:
    """A dict persisted as one JSON file: load once, get/put during a run, save at the end."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.file = directory / __version__ / f"{name}.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.dirty = False
        self.hits = 0
        self._now = int(time.time())
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("version") == __version__:
            entries = data.get("entries")
            if isinstance(entries, dict):
                self.entries = entries

    def get_raw(self, key: str) -> Any | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        if self._now - entry.get("t", 0) > 86400:
            entry["t"] = self._now  # refresh last-seen at most daily
            self.dirty = True
        self.hits += 1
        return entry["v"]

    def put_raw(self, key: str, value: Any) -> None:
        self.entries[key] = {"t": self._now, "v": value}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        cutoff = self._now - EXPIRY_SECONDS
        self.entries = {k: v for k, v in self.entries.items() if v.get("t", 0) >= cutoff}
        try:
            self._prepare()
            payload = json.dumps(
                {"version": __version__, "entries": self.entries}, separators=(",", ":")
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


class ResultCache(JsonStore):
    """Diagnostics per file, for one configuration and project class table."""

    def get(self, key: str) -> list[Diagnostic] | None:
        raw = self.get_raw(key)
        return None if raw is None else [Diagnostic.from_json(d) for d in raw]

    def put(self, key: str, diagnostics: list[Diagnostic]) -> None:
        self.put_raw(key, [d.to_json() for d in diagnostics])


class ScanCache(JsonStore):
    """Each file's project-model summary, by content (independent of configuration)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "scans")


def cache_name(config_fingerprint: str, table_digest: str) -> str:
    return hashlib.sha1(f"{config_fingerprint}:{table_digest}".encode()).hexdigest()[:20]
