"""The gateway's web pages besides the API: the `/map` demo page, the `/console` account
console and the static files of the pages (`/static/…`: our own scripts and styles, and the
vendored renderer and map library of gateway.vendor). The pages call the public API from the
browser like any client, with a token kept in the page's memory only.

Every page carries a Content-Security-Policy: scripts only from the gateway, requests only to
it, images from it and, for the map, from the configured tile server. Nothing is loaded from a
CDN.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from gateway.config import GatewayConfig
from gateway.vendor import LEAFLET, STATIC_DIR

STATIC_ROOT = STATIC_DIR.resolve()
MAP_TEMPLATE = STATIC_DIR / "map.html"
CONSOLE_PAGE = STATIC_DIR / "console.html"
# Served as pages, with their policy, never as static files.
PAGE_FILES = frozenset(path.resolve() for path in (MAP_TEMPLATE, CONSOLE_PAGE))
# Pages and their files change with a release only; versioned names are not worth a build step.
STATIC_CACHE_CONTROL = "public, max-age=300"
TILE_URL_KEY: web.AppKey[str] = web.AppKey("map_tile_url", str)
MAP_HTML_KEY: web.AppKey[str] = web.AppKey("map_html", str)


def content_security_policy(*, img_src: tuple[str, ...] = ()) -> str:
    """Scripts and connections only to the gateway; inline styles are allowed (the renderer
    and the map library position their elements with them), inline scripts are not."""
    images = " ".join(("'self'", "data:", *img_src))
    return (
        "default-src 'self'; script-src 'self'; connect-src 'self'; "
        f"img-src {images}; style-src 'self' 'unsafe-inline'; font-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def page_headers(*, img_src: tuple[str, ...] = (), referrer: str = "strict-origin-when-cross-origin") -> dict[str, str]:
    return {
        "Cache-Control": STATIC_CACHE_CONTROL,
        "Content-Security-Policy": content_security_policy(img_src=img_src),
        "Referrer-Policy": referrer,
    }


def tile_source(url_template: str) -> str | None:
    """The CSP source the tiles of an XYZ URL template come from; None: not a usable template
    (only http(s) URLs, or paths on the gateway itself)."""
    if not url_template:
        return None
    parts = urlsplit(url_template.replace("{s}", "SUBDOMAIN"))
    if not parts.scheme and not parts.netloc:
        return "'self'" if url_template.startswith("/") else None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    host = parts.netloc.replace("SUBDOMAIN", "*")
    if "*" in host and not host.startswith("*."):
        return f"{parts.scheme}:"  # a subdomain inside a name: CSP cannot say it, the scheme can
    return f"{parts.scheme}://{host}"


def map_html(tile_url: str, tile_attribution: str) -> str:
    """The page with its settings written into data attributes (no inline script)."""
    template = MAP_TEMPLATE.read_text(encoding="utf-8")
    return (
        template.replace("{{tile_url}}", html.escape(tile_url))
        .replace("{{tile_attribution}}", html.escape(tile_attribution))
        .replace("{{leaflet}}", "/static/vendor/leaflet")
    )


@cache
def missing_assets_html(what: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Not installed</title>"
        "<link rel='icon' href='data:,'></head><body>"
        f"<h1>{html.escape(what)} is not installed</h1>"
        "<p>The page's library is vendored at install time: run <code>make install</code> "
        "(or <code>python -m gateway.vendor</code>) and reload.</p></body></html>"
    )


async def map_page(request: web.Request) -> web.Response:
    tile_url = request.app[TILE_URL_KEY]
    if not LEAFLET.installed():
        return web.Response(status=503, text=missing_assets_html("Leaflet"), content_type="text/html")
    source = tile_source(tile_url)
    return web.Response(
        text=request.app[MAP_HTML_KEY],
        content_type="text/html",
        headers=page_headers(img_src=(source,) if source else ()),
    )


@cache
def console_html() -> str:
    return CONSOLE_PAGE.read_text(encoding="utf-8")


async def console_page(request: web.Request) -> web.Response:
    """The account console: our own script only, no images from elsewhere, no referrer."""
    return web.Response(text=console_html(), content_type="text/html", headers=page_headers(referrer="no-referrer"))


def static_path(relative: str) -> Path | None:
    """A file under the static directory; None for anything else (hidden files, directories,
    paths leaving the directory, the page template)."""
    if not relative or any(part.startswith(".") for part in relative.split("/")):
        return None
    path = (STATIC_ROOT / relative).resolve()
    if not path.is_relative_to(STATIC_ROOT) or not path.is_file() or path in PAGE_FILES:
        return None
    return path


async def static_file(request: web.Request) -> web.FileResponse:
    path = static_path(request.match_info["path"])
    if path is None:
        raise web.HTTPNotFound(text="no such file")
    return web.FileResponse(path, headers={"Cache-Control": STATIC_CACHE_CONTROL})


def add_routes(app: web.Application, config: GatewayConfig) -> None:
    """`/map`, `/console` and `/static/…`; before the gateway's catch-all forwarding route."""
    tile_url = config.map_tile_url if tile_source(config.map_tile_url) else ""
    app[TILE_URL_KEY] = tile_url
    app[MAP_HTML_KEY] = map_html(tile_url, config.map_tile_attribution)
    app.router.add_get("/map", map_page)
    app.router.add_get("/console", console_page)
    app.router.add_get("/static/{path:.+}", static_file)
