"""The importers' shared skeleton: atomic publish, reuse, and the current.json pointer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.datasets import CURRENT, Progress, publish_current, read_current


def write_marker(work: Path) -> str:
    (work / "data.txt").write_text("built")
    return "built"


def stored_marker(path: Path) -> str | None:
    return "stored" if (path / "data.txt").is_file() else None


def test_built_once_then_reused(tmp_path: Path) -> None:
    first = publish_current(tmp_path, "abc123", stored=stored_marker, build=write_marker)
    assert not first.reused and first.result == "built" and first.path == tmp_path / "abc123"
    again = publish_current(tmp_path, "abc123", stored=stored_marker, build=write_marker)
    assert again.reused and again.result == "stored"
    assert json.loads((tmp_path / CURRENT).read_text()) == {"hash": "abc123"}
    assert read_current(tmp_path) == "abc123"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_build_leaves_nothing_and_keeps_the_current_dataset(tmp_path: Path) -> None:
    publish_current(tmp_path, "old", stored=stored_marker, build=write_marker)

    def broken(work: Path) -> str:
        (work / "half.txt").write_text("half")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        publish_current(tmp_path, "new", stored=stored_marker, build=broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == [CURRENT, "old"]
    assert read_current(tmp_path) == "old"


@pytest.mark.parametrize("content", ["", "[]", '{"hash": 5}', '{"hash": "../etc"}', "{"])
def test_an_unusable_pointer_names_no_dataset(tmp_path: Path, content: str) -> None:
    assert read_current(tmp_path) is None
    (tmp_path / CURRENT).write_text(content)
    assert read_current(tmp_path) is None


def test_progress_lines_carry_the_step_and_its_duration() -> None:
    lines: list[str] = []
    progress = Progress(emit=lines.append)
    assert progress.run("hash inputs", lambda: 42) == 42
    progress.line("done", "3 files")
    assert "hash inputs" in lines[0] and lines[0].endswith(" s") and "done" in lines[1] and lines[1].endswith("3 files")
