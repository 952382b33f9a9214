"""The pages' npm packages come from the registry this machine is configured for, never a host
the repository names."""

from __future__ import annotations

from pathlib import Path

from gateway import vendor


def test_an_explicit_setting_wins_then_npms_own_variable(tmp_path: Path) -> None:
    npmrc = tmp_path / ".npmrc"
    npmrc.write_text("registry=https://mirror.invalid/npm/\n", encoding="utf-8")
    both = {"NPM_REGISTRY": "https://a.invalid/", "npm_config_registry": "https://b.invalid/"}
    assert vendor.machine_registry(both, (npmrc,)) == "https://a.invalid/"
    assert vendor.machine_registry({"npm_config_registry": "https://b.invalid/"}, (npmrc,)) == "https://b.invalid/"


def test_the_first_npmrc_with_a_registry_line_is_taken(tmp_path: Path) -> None:
    project, user = tmp_path / "project.npmrc", tmp_path / "user.npmrc"
    project.write_text("save-exact=true\n", encoding="utf-8")
    user.write_text("; comment\nregistry = https://mirror.invalid/npm/\n", encoding="utf-8")
    assert vendor.machine_registry({}, (project, user, tmp_path / "missing")) == "https://mirror.invalid/npm/"


def test_no_configured_registry_is_an_empty_answer_not_a_host_of_ours(tmp_path: Path) -> None:
    assert vendor.machine_registry({}, (tmp_path / "missing",)) == ""
    assert not hasattr(vendor, "DEFAULT_REGISTRY")
