"""The importers' template: OSM extracts → one content-addressed dataset, published atomically.

Each importer (the route service's maps, the geocoder's index) writes only what is its own:
its options, what else its datasets depend on (tool versions, its own sources), how to build
a dataset and read one already built, and its summary. The template does the rest the same way
for every importer:

- the inputs: `--osm` files, else OSM_FILE, else the default map (common.osm_inputs);
- the dataset's name: sha256 of the importer, its version, its options, what it depends on and
  every input's bytes, so the same inputs and options always give the same dataset;
- the atomic publish and `current.json` (common.datasets): a crash never leaves half a dataset
  in use, and a re-run on the same inputs only points `current.json` at it again;
- progress lines, and the command line (`python -m <service>.importing`): `--osm`, `--out`,
  `--stage`, the importer's own options; exit 0, or 1 with the reason on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from common.datasets import STAGE_HELP, Progress, dataset_name, file_sha256, publish_current
from common.osm_inputs import DefaultMapUnavailable, input_files


class ImportFailed(RuntimeError):
    """A step of the import failed; the message names it and carries the tool's output tail."""


@dataclass(frozen=True)
class Imported[R]:
    """What one import gave: the dataset's name and folder, whether it was there already, what
    the dataset records (its build's return, or what the stored one records), and the seconds
    it took."""

    hash: str
    path: Path
    reused: bool
    record: R
    seconds: float


class Importer[O, R](ABC):
    """One importer: `O` its options (a frozen dataclass, part of the dataset's name), `R` what
    a build returns and a stored dataset records (counts, a manifest)."""

    # The module run as `python -m …`, and the version: a new version yields new datasets.
    module: ClassVar[str]
    version: ClassVar[str]
    description: ClassVar[str]
    out_help: ClassVar[str]

    # ------------------------------------------------------------ what each importer says

    @abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The importer's own command-line options."""

    @abstractmethod
    def options_from(self, args: argparse.Namespace) -> O:
        """The options of a command line; ValueError refuses them before any work."""

    @abstractmethod
    def default_out(self) -> Path:
        """Where the service reads its datasets (its configuration)."""

    @abstractmethod
    def stored(self, dataset_dir: Path) -> R | None:
        """What a complete dataset already in `dataset_dir` records; None when there is none."""

    @abstractmethod
    def build(self, work: Path, inputs: Sequence[Path], name: str, options: O, progress: Progress) -> R:
        """The dataset, written into `work` (published by the template when this returns)."""

    @abstractmethod
    def summary(self, imported: Imported[R]) -> str:
        """What the command prints when the import is done."""

    def depends_on(self, options: O) -> Iterable[bytes]:
        """What else a dataset is built from (tool versions, sources), for its name."""
        return ()

    # ------------------------------------------------------------ the same for every importer

    def dataset_name(self, inputs: Sequence[Path], options: O, progress: Progress) -> str:
        digest = hashlib.sha256()
        parts = [f"{self.module}:{self.version}".encode(), describe(options).encode(), *self.depends_on(options)]
        parts += [digest_.encode() for digest_ in progress.run("hash inputs", lambda: [file_sha256(p) for p in inputs])]
        for part in parts:
            digest.update(part + b"\0")
        return dataset_name(digest)

    def run(
        self, inputs: Sequence[Path], out: Path, options: O, *, progress: Progress | None = None, stage: bool = False
    ) -> Imported[R]:
        """Imports `inputs` into `out/<name>/` (nothing to do when that dataset is complete) and
        makes it current (`stage`: staged, for `common.datasets.switch_staged`)."""
        progress = progress or Progress()
        inputs = [Path(path).resolve() for path in inputs]
        missing = [str(path) for path in inputs if not path.is_file()]
        if not inputs or missing:
            raise FileNotFoundError(f"no such OSM file: {', '.join(missing) or 'none given'}")
        name = self.dataset_name(inputs, options, progress)
        build = partial(self.build, inputs=inputs, name=name, options=options, progress=progress)
        published = publish_current(out, name, stored=self.stored, build=build, stage=stage)
        if published.reused:
            progress.line("up to date", f"{name} already imported; nothing to do")
            return Imported(name, published.path, True, published.result, 0.0)
        seconds = progress.elapsed()
        progress.line("done", f"{name} in {seconds:.1f} s; {'staged' if stage else 'current.json updated'}")
        return Imported(name, published.path, False, published.result, seconds)

    def main(self, argv: Sequence[str] | None = None) -> int:
        parser = argparse.ArgumentParser(prog=f"python -m {self.module}", description=self.description)
        parser.add_argument("--osm", action="append", help="an .osm.pbf file (repeat to merge several)")
        parser.add_argument("--out", type=Path, default=None, help=self.out_help)
        parser.add_argument("--stage", action="store_true", help=STAGE_HELP)
        self.add_arguments(parser)
        args = parser.parse_args(argv)
        try:
            options = self.options_from(args)  # refused before any work
            imported = self.run(input_files(args.osm), args.out or self.default_out(), options, stage=args.stage)
        except (ImportFailed, DefaultMapUnavailable, ValueError, OSError) as exc:
            print(f"import failed: {exc}", file=sys.stderr)
            return 1
        print(self.summary(imported))
        return 0


def describe(options: object) -> str:
    """The options as canonical JSON, for the dataset's name."""
    fields: Any = asdict(options) if is_dataclass(options) and not isinstance(options, type) else options
    return json.dumps(fields, sort_keys=True, default=str)
