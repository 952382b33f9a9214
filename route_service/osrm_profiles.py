"""Our OSRM profiles: names, Lua files, and the environment osrm-extract needs to run them.

The Lua files in `route_service/profiles/` are thin wrappers that `require` the stock
profiles shipped inside the osrm-bindings wheel; `lua_env()` points LUA_PATH there, so
nothing of the wheel is copied into the repository.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from common.vocabulary import ROUTE_TYPES, VEHICLES

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
# Every (vehicle, type) pair has its own dataset, named `<vehicle>-<type>`.
PROFILE_NAMES: tuple[str, ...] = tuple(f"{vehicle}-{kind}" for vehicle in VEHICLES for kind in ROUTE_TYPES)


def profile_name(vehicle: str, route_type: str) -> str:
    return f"{vehicle}-{route_type}"


def profile_file(name: str) -> Path:
    if name not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(PROFILE_NAMES)}")
    return PROFILES_DIR / f"{name}.lua"


def lua_files() -> list[Path]:
    """Every Lua file of ours (the wrappers and their shared helper), sorted for hashing."""
    return sorted(PROFILES_DIR.glob("*.lua"))


def wheel_profiles_dir() -> Path:
    import osrm  # deferred: importing the extension is only needed here and by the provider

    return Path(osrm.__file__).resolve().parent / "share" / "profiles"


def osrm_version() -> str:
    try:
        return metadata.version("osrm-bindings")
    except metadata.PackageNotFoundError:
        return "unknown"


def lua_env() -> dict[str, str]:
    """The process environment for osrm-extract: LUA_PATH finds the stock profiles and lib/.

    The trailing `;;` keeps Lua's default search path after ours.
    """
    env = dict(os.environ)
    env["LUA_PATH"] = f"{wheel_profiles_dir()}/?.lua;;"
    env.pop("LUA_PATH_5_5", None)  # would take precedence over LUA_PATH in Lua 5.5
    return env
