"""The index the service answers from: the one `current.json` names, swapped when it changes."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.datasets import CURRENT, read_current
from geo_service.autocomplete import Autocompleter
from geo_service.matcher import Matcher
from geo_service.store import INDEX_FILE, IndexReader

log = logging.getLogger("geo_service.index")


@dataclass(frozen=True)
class LoadedIndex:
    hash: str
    path: Path
    reader: IndexReader
    matcher: Matcher
    autocompleter: Autocompleter

    @property
    def counts(self) -> dict[str, Any]:
        return dict(self.reader.meta.get("counts", {}))

    @property
    def countries(self) -> list[str]:
        return list(self.reader.meta.get("countries", []))


def open_index(index_dir: Path, hash_: str) -> LoadedIndex:
    path = index_dir / hash_ / INDEX_FILE
    if not path.is_file():
        raise FileNotFoundError(f"current.json names {hash_}, but {path} does not exist")
    reader = IndexReader(path)
    matcher = Matcher(reader)
    # The geocoder's trigram query (common trigrams left out) is the autocompleter's typo fallback.
    return LoadedIndex(hash_, path, reader, matcher, Autocompleter(reader, matcher.lexicon.normalizer, matcher.lexicon.fts_query))


class IndexLoader:
    """Opens the current index, and looks at most every `check_seconds` whether it changed.

    A replaced index is not closed at once: queries in other threads may still read it.
    Retired readers are closed with the loader.
    """

    def __init__(self, index_dir: Path, check_seconds: float) -> None:
        self.index_dir = index_dir
        self.check_seconds = check_seconds
        self.loaded: LoadedIndex | None = None
        self.error: str | None = None
        self._checked_at = -float("inf")
        self._retired: list[IndexReader] = []
        self._lock = threading.Lock()

    def current(self) -> LoadedIndex | None:
        if time.monotonic() - self._checked_at >= self.check_seconds:
            self.refresh()
        return self.loaded

    def refresh(self) -> None:
        with self._lock:
            self._checked_at = time.monotonic()
            hash_ = read_current(self.index_dir)
            if hash_ is None:
                self.error = f"no index: {self.index_dir / CURRENT} is missing; run python -m geo_service.importing"
                return
            if self.loaded is not None and self.loaded.hash == hash_:
                return
            try:
                loaded = open_index(self.index_dir, hash_)
            except Exception as exc:  # a missing, truncated or foreign file: stay unready, keep serving health
                self.error = f"cannot open index {hash_}: {exc}"
                log.exception("cannot open geocoder index %s", hash_)
                return
            if self.loaded is not None:
                self._retired.append(self.loaded.reader)
            self.loaded, self.error = loaded, None
            log.info("geocoder index %s loaded: %s", hash_, loaded.counts)

    def close(self) -> None:
        with self._lock:
            for reader in self._retired:
                reader.close()
            if self.loaded is not None:
                self.loaded.reader.close()
            self.loaded = None
