"""Third-party browser code of the gateway's pages (`/docs`, `/map`), vendored at install time.

`make install` runs `python -m gateway.vendor`: each pinned npm package's tarball is fetched
from the npm registry with the standard library (no node or npm needed), checked against its
pinned `sha512` integrity (the registry's `dist.integrity`), and only the files the pages use
are unpacked into `gateway/static/vendor/<package>/` (git-ignored: downloaded code is never
committed). The pages load them from the gateway itself, never from a CDN.

The registry is the machine's own npm configuration, never a host named here: `NPM_REGISTRY`
if set, else npm's `npm_config_registry`, else what `npm config get registry` answers (npm on the
PATH), else the `registry=` line of `./.npmrc`, `~/.npmrc` or `/etc/npmrc`. The usual
`https_proxy` variables apply. Re-running does nothing once the pinned versions are in place.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from common.vocabulary import LANGUAGES

STATIC_DIR = Path(__file__).with_name("static")
VENDOR_DIR = STATIC_DIR / "vendor"
NPMRC_FILES = (Path(".npmrc"), Path.home() / ".npmrc", Path("/etc/npmrc"))
DOWNLOAD_TIMEOUT_SECONDS = 60
# Written last, after every file of the package: a half-finished unpack is never taken as done.
STAMP = ".integrity"


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # "sha512-<base64>", as the registry's `dist.integrity`
    # Paths inside the tarball (under `package/`) -> where they go under <root>/<name>/; a path
    # ending in "/" is a folder: every regular file under it, under the target folder.
    files: dict[str, str]
    # Where it goes: the pages' code under the served static folder; test tools elsewhere.
    root: Path = VENDOR_DIR

    @property
    def directory(self) -> Path:
        return self.root / self.basename

    @property
    def basename(self) -> str:
        """The name without its scope ("@openstreetmap/id-tagging-schema" -> "id-tagging-schema")."""
        return self.name.rsplit("/", 1)[-1]

    def tarball_url(self, registry: str) -> str:
        return f"{registry.rstrip('/')}/{self.name}/-/{self.basename}-{self.version}.tgz"

    def installed(self) -> bool:
        stamp = self.directory / STAMP
        return stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == self.integrity


SWAGGER_UI = NpmPackage(
    name="swagger-ui-dist",
    version="5.35.0",
    integrity="sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==",
    files={
        "swagger-ui-bundle.js": "swagger-ui-bundle.js",
        "swagger-ui.css": "swagger-ui.css",
        "LICENSE": "LICENSE",
    },
)
LEAFLET = NpmPackage(
    name="leaflet",
    version="1.9.4",
    integrity="sha512-nxS1ynzJOmOlHp+iL3FyWqK89GtNL8U8rvlMOsQdTTssxZwCXh8N2NB3GDQOL+YR3XnWyZAxwQixURb+FA74PA==",
    files={
        "dist/leaflet.js": "leaflet.js",
        "dist/leaflet.css": "leaflet.css",
        "dist/images/layers.png": "images/layers.png",
        "dist/images/layers-2x.png": "images/layers-2x.png",
        "dist/images/marker-icon.png": "images/marker-icon.png",
        "dist/images/marker-icon-2x.png": "images/marker-icon-2x.png",
        "dist/images/marker-shadow.png": "images/marker-shadow.png",
        "LICENSE": "LICENSE",
    },
)
# The accessibility checks of the browser tests (tests/integration/test_accessibility.py): never
# served, so vendored beside the tests (git-ignored).
AXE_CORE = NpmPackage(
    name="axe-core",
    version="4.14.1",
    integrity="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
    files={"axe.min.js": "axe.min.js", "LICENSE": "LICENSE"},
    root=STATIC_DIR.parents[1] / "tests" / "vendor",
)
# The geocoder's words for kinds of places in many languages (issue 34, item 2): iD's preset
# names and search terms, the tagging schema the OSM editors share (geo_service/kinds.py).
KIND_LANGUAGES = LANGUAGES
ID_TAGGING_SCHEMA = NpmPackage(
    name="@openstreetmap/id-tagging-schema",
    version="7.2.0",
    integrity="sha512-7hjV8Xl3CoaO0u+M/Po0u33YIRahL8jEJtOzho189VOqqQQB3L9UGv2o93o/T4G3I0z5sFvQhn0apOz6+j253w==",
    files={
        "dist/presets.min.json": "presets.json",
        **{f"dist/translations/{lang}.min.json": f"translations/{lang}.json" for lang in KIND_LANGUAGES},
        "LICENSE.md": "LICENSE.md",
    },
    root=STATIC_DIR.parents[1] / "geo_service" / "vendor",
)
# Turn instructions in the driver's language (issue 35): the translation files OSRM's own
# text-instruction library renders from (route_service/instructions.py reads them), and its
# fixtures, the expected sentence of every maneuver in every language, for the tests.
OSRM_TEXT_INSTRUCTIONS_VERSION = "0.15.0"
OSRM_TEXT_INSTRUCTIONS_INTEGRITY = (
    "sha512-VxhAtFZ1H4mYJxbHI2nN94GCrWkbScSuD12slCxuAFkgAJdZPnAKjvymH2gTaRtcn7u0sJmn+BUpaME5ndW9hQ=="
)
OSRM_TEXT_INSTRUCTIONS = NpmPackage(
    name="osrm-text-instructions",
    version=OSRM_TEXT_INSTRUCTIONS_VERSION,
    integrity=OSRM_TEXT_INSTRUCTIONS_INTEGRITY,
    files={
        "languages/translations/": "translations/",
        "languages/grammar/": "grammar/",
        "LICENSE.txt": "LICENSE.txt",
    },
    root=STATIC_DIR.parents[1] / "route_service" / "vendor",
)
OSRM_TEXT_FIXTURES = NpmPackage(
    name="osrm-text-instructions",
    version=OSRM_TEXT_INSTRUCTIONS_VERSION,
    integrity=OSRM_TEXT_INSTRUCTIONS_INTEGRITY,
    files={"test/fixtures/v5/": "fixtures/", "LICENSE.txt": "LICENSE.txt"},
    root=STATIC_DIR.parents[1] / "tests" / "vendor",
)
# what the image needs (`--pages-only`, the Dockerfile)
PAGE_PACKAGES = (SWAGGER_UI, LEAFLET, ID_TAGGING_SCHEMA, OSRM_TEXT_INSTRUCTIONS)
PACKAGES = (*PAGE_PACKAGES, AXE_CORE, OSRM_TEXT_FIXTURES)


class VendorError(RuntimeError):
    pass


def check_integrity(data: bytes, integrity: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512":
        raise VendorError(f"unsupported integrity {integrity!r}")
    actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != expected:
        raise VendorError(f"integrity mismatch: expected sha512-{expected}, got sha512-{actual}")


def download(url: str) -> bytes:
    if not url.startswith(("https://", "http://")):
        raise VendorError(f"not an HTTP(S) URL: {url}")
    request = urllib.request.Request(url, headers={"User-Agent": "routing-api-vendor/1"})  # noqa: S310 - checked above
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_SECONDS) as answer:  # noqa: S310
        data: bytes = answer.read()
        return data


def unpack(package: NpmPackage, tarball: bytes) -> None:
    """Only the listed files, as regular files: nothing else of the tarball reaches the disk."""
    staging = package.directory.with_name(f".{package.basename}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    wanted = {f"package/{source}": target for source, target in package.files.items() if not source.endswith("/")}
    folders = {f"package/{source}": target for source, target in package.files.items() if source.endswith("/")}
    found_in = set()
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member in archive.getmembers():
            target = wanted.pop(member.name, None)
            folder = next((f for f in folders if member.name.startswith(f) and member.isfile()), None)
            if target is None and folder is not None and ".." not in member.name.split("/"):
                target = folders[folder] + member.name[len(folder) :]
                found_in.add(folder)
            if target is None:
                continue
            if not member.isfile():
                raise VendorError(f"{package.name}: {member.name} is not a regular file")
            content = archive.extractfile(member)
            if content is None:
                raise VendorError(f"{package.name}: cannot read {member.name}")
            path = staging / target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.read())
    wanted |= {folder: target for folder, target in folders.items() if folder not in found_in}
    if wanted:
        shutil.rmtree(staging, ignore_errors=True)
        raise VendorError(f"{package.name} {package.version} lacks {', '.join(sorted(wanted))}")
    (staging / STAMP).write_text(package.integrity + "\n", encoding="utf-8")
    shutil.rmtree(package.directory, ignore_errors=True)
    staging.rename(package.directory)


def vendor(package: NpmPackage, registry: str) -> bool:
    """Fetch and unpack one package unless its pinned version is in place; True if it was fetched."""
    if package.installed():
        return False
    url = package.tarball_url(registry)
    try:
        tarball = download(url)
    except OSError as exc:
        raise VendorError(f"cannot download {url}: {exc}") from exc
    check_integrity(tarball, package.integrity)
    package.directory.parent.mkdir(parents=True, exist_ok=True)
    unpack(package, tarball)
    return True


def registry_in_npmrc(files: tuple[Path, ...] = NPMRC_FILES) -> str:
    """The first `registry=` setting of the npmrc files, in npm's order of precedence."""
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition("=")
            if key.strip() == "registry" and value.strip():
                return value.strip()
    return ""


def registry_from_npm() -> str:
    """What npm itself would use, when npm is installed."""
    npm = shutil.which("npm")
    if npm is None:
        return ""
    try:
        answer = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    value = answer.stdout.strip()
    return value if answer.returncode == 0 and value.startswith(("http://", "https://")) else ""


def machine_registry(environ: dict[str, str] | None = None, files: tuple[Path, ...] = NPMRC_FILES) -> str:
    """The npm registry this machine is configured for ("" when none is)."""
    env = os.environ if environ is None else environ
    return (
        env.get("NPM_REGISTRY", "").strip()
        or env.get("npm_config_registry", "").strip()
        or env.get("NPM_CONFIG_REGISTRY", "").strip()
        or (registry_from_npm() if environ is None else "")
        or registry_in_npmrc(files)
    )


def main(argv: list[str] | None = None) -> int:
    wanted = PAGE_PACKAGES if "--pages-only" in (sys.argv[1:] if argv is None else argv) else PACKAGES
    registry = machine_registry()
    if not registry and not all(package.installed() for package in wanted):
        print(
            "gateway.vendor: no npm registry is configured on this machine: set NPM_REGISTRY, "
            "npm_config_registry or a `registry=` line in ~/.npmrc, then run `make install` again",
            file=sys.stderr,
        )
        return 1
    for package in wanted:
        try:
            if vendor(package, registry):
                print(
                    f"vendored {package.name} {package.version} into {package.directory.relative_to(STATIC_DIR.parent.parent)}"
                )
        except VendorError as exc:
            print(f"gateway.vendor: {package.name} {package.version}: {exc}", file=sys.stderr)
            print(
                "  set NPM_REGISTRY to a reachable npm registry (or mirror) and run `make install` again",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
