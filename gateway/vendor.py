"""Third-party browser code of the gateway's pages (`/docs`, `/map`), vendored at install time.

`make install` runs `python -m gateway.vendor`: each pinned npm package's tarball is fetched
from the npm registry with the standard library (no node or npm needed), checked against its
pinned `sha512` integrity (the registry's `dist.integrity`), and only the files the pages use
are unpacked into `gateway/static/vendor/<package>/` (git-ignored: downloaded code is never
committed). The pages load them from the gateway itself, never from a CDN.

`NPM_REGISTRY` [https://registry.npmjs.org] names another registry or a mirror; the usual
`https_proxy` variables apply. Re-running does nothing once the pinned versions are in place.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).with_name("static")
VENDOR_DIR = STATIC_DIR / "vendor"
DEFAULT_REGISTRY = "https://registry.npmjs.org"
DOWNLOAD_TIMEOUT_SECONDS = 60
# Written last, after every file of the package: a half-finished unpack is never taken as done.
STAMP = ".integrity"


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # "sha512-<base64>", as the registry's `dist.integrity`
    # Paths inside the tarball (under `package/`) -> where they go under VENDOR_DIR/<name>/.
    files: dict[str, str]

    @property
    def directory(self) -> Path:
        return VENDOR_DIR / self.name

    def tarball_url(self, registry: str) -> str:
        return f"{registry.rstrip('/')}/{self.name}/-/{self.name}-{self.version}.tgz"

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
PACKAGES = (SWAGGER_UI, LEAFLET)


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
    staging = package.directory.with_name(f".{package.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    wanted = {f"package/{source}": target for source, target in package.files.items()}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member in archive.getmembers():
            target = wanted.pop(member.name, None)
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


def main() -> int:
    registry = os.environ.get("NPM_REGISTRY", "").strip() or DEFAULT_REGISTRY
    for package in PACKAGES:
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
