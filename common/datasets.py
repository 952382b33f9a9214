"""Content-addressed datasets: what every importer shares, and what a service reads to find its data.

A dataset is a directory `<root>/<hash>/`, hash = a short sha256 of everything that makes it
(the inputs' bytes, the importer's version and options); `<root>/current.json` = {"hash": ...}
names the one the service serves, and services watch it: a new name goes into service without a
restart. An import may instead stage its dataset (`<root>/staged.json`), for `switch_staged` to
make the staged datasets of several services current at once (routing and geocoding on one map). An import builds into a hidden directory beside it that is
renamed into place, so a crashed or concurrent import never leaves a half-written `<hash>/`
behind, and a re-run on the same inputs finds `<hash>/` and only re-points current.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

CURRENT = "current.json"
STAGED = "staged.json"  # built, waiting for `switch_staged`
STAGE_HELP = (
    "build the dataset and stage it (staged.json) instead of making it current; "
    "`python -m launcher import` switches every service's staged dataset at once"
)
HASH_LENGTH = 16  # hex digits of the sha256 that name a dataset
_CHUNK = 1 << 20

# ---------------------------------------------------------------- progress


@dataclass
class Progress:
    """One line per step, with the time since the import started."""

    emit: Callable[[str], None] = print
    started: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def line(self, step: str, detail: str = "") -> None:
        self.emit(f"[{self.elapsed():7.1f} s] {step:<34} {detail}".rstrip())

    def run[T](self, step: str, action: Callable[[], T]) -> T:
        """Run one step and report its duration."""
        start = time.perf_counter()
        result = action()
        self.line(step, f"{time.perf_counter() - start:6.1f} s")
        return result


# ---------------------------------------------------------------- input hashing


class Digest(Protocol):
    """A running hash (`hashlib.sha256()`)."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def feed_file(digest: Digest, path: Path) -> None:
    """Add a file's bytes to a running hash, a megabyte at a time."""
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    feed_file(digest, path)
    return digest.hexdigest()


def dataset_name(digest: Digest) -> str:
    """The directory name of the dataset whose makings `digest` has seen."""
    return digest.hexdigest()[:HASH_LENGTH]


# ---------------------------------------------------------------- the current dataset


def read_current(root: Path, name: str = CURRENT) -> str | None:
    """The hash `root/current.json` (or `name`) names; None when it is missing, unreadable or not a plain name."""
    try:
        value = json.loads((root / name).read_text()).get("hash")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value.isalnum() else None


def write_current(root: Path, digest: str, name: str = CURRENT) -> None:
    write_json_atomic(root / name, {"hash": digest})


def switch_staged(roots: Iterable[Path]) -> dict[Path, str]:
    """Each root's staged dataset made current, by renames one right after the other; the hash
    each root now serves. The services watching them switch within one check of each other."""
    switched = {}
    for root in roots:
        digest = read_current(root, STAGED)
        if digest is not None:
            os.replace(root / STAGED, root / CURRENT)
            switched[root] = digest
    return switched


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------- atomic publish


@dataclass(frozen=True)
class Published[T]:
    path: Path
    hash: str
    reused: bool  # the dataset was complete already: nothing was built
    result: T  # what `build` returned, or what `stored` read from the existing dataset


def publish_current[T](root: Path, digest: str, *, stored: Callable[[Path], T | None],
                       build: Callable[[Path], T], stage: bool = False) -> Published[T]:  # fmt: skip
    """Make `root/<digest>` the current dataset (`stage`: the staged one), building it first
    unless `stored` finds it complete.

    `stored(path)` reads what a complete dataset records (None: missing or incomplete);
    `build(work)` writes the dataset into the empty directory `work`."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / digest
    result = stored(target)
    reused = result is not None
    if result is None:
        result = build_atomically(target, build)
    write_current(root, digest, STAGED if stage else CURRENT)
    return Published(target, digest, reused, result)


def build_atomically[T](target: Path, build: Callable[[Path], T]) -> T:
    """Build in a hidden sibling directory and rename it to `target` when done; on any failure
    the partial directory is removed."""
    work = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        result = build(work)
        if target.exists():  # an incomplete leftover of an older run
            shutil.rmtree(target)
        os.rename(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return result
