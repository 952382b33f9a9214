"""The gateway's pages in a real browser: `/docs` (Swagger UI draws every operation of the spec,
"Try it out" answers with a token) and `/map` on the full platform (sign in, geocode with
autocomplete, route, optimize, matrix, isochrone; the loaded map's outline drawn although no
background tile loads). Debian's headless Chromium, driven through its chromedriver by Selenium;
without them the tests skip and say how to install them (`make browser`).

Screenshots of each step go to `var/test-artifacts/web/` (git-ignored), kept after the run.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from common.config import REPO_ROOT
from common.languages import match_language
from common.vocabulary import INSTRUCTION_LANGUAGES
from gateway.docs import openapi_spec
from gateway.vendor import LEAFLET, SWAGGER_UI
from launcher.stack import Stack
from tests.integration.conftest import TEST_ENV, console_ok
from tests.optimize_service.test_app import MONACO

ARTIFACTS = REPO_ROOT / "var" / "test-artifacts" / "web"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WAIT_SECONDS = 20
# The background tiles of the test platform come from a port nothing listens on.
TILE_PREFIX = TEST_ENV["MAP_TILE_URL"].split("{", 1)[0]


def start_browser() -> Chrome:
    """Headless Chromium through its chromedriver; the test skips, saying how to install them,
    when they are missing."""
    binary = next(filter(None, map(shutil.which, BROWSERS)), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip(
            "headless Chromium is not installed: `make browser` installs Debian's chromium and "
            "chromium-driver (it needs root: sudo apt-get install chromium chromium-driver)"
        )
    options = Options()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    driver = start_browser()
    try:
        if not (SWAGGER_UI.installed() and LEAFLET.installed()):
            pytest.fail("the pages' browser code is not vendored: run `make install` (python -m gateway.vendor)")
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def wait_for(driver: Chrome, condition: Callable[[Chrome], Any], what: str) -> Any:
    try:
        return WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.1).until(condition)
    except TimeoutException:
        shot = ARTIFACTS / f"timeout-{uuid.uuid4().hex[:6]}.png"
        driver.save_screenshot(str(shot))
        status = driver.execute_script("const s = document.getElementById('status'); return s && s.textContent;")
        raise AssertionError(f"waited {WAIT_SECONDS} s for {what}; page status {status!r}; screenshot {shot}") from None


def count(driver: Chrome, selector: str) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, selector))


def console_errors(driver: Chrome) -> list[str]:
    """The console's errors since the last call, but the failed background tiles: the test
    platform's tile server does not exist, on purpose."""
    entries = driver.get_log("browser")
    return [e["message"] for e in entries if e["level"] == "SEVERE" and TILE_PREFIX not in e["message"]]


def click(driver: Chrome, selector: str) -> None:
    driver.find_element(By.CSS_SELECTOR, selector).click()


def click_map_at(driver: Chrome, lat: float, lon: float) -> None:
    """A real mouse click on the map where (lat, lon) is drawn."""
    x, y = driver.execute_script(
        "const p = window.demoMap.latLngToContainerPoint([arguments[0], arguments[1]]); return [p.x, p.y];", lat, lon
    )
    element = driver.find_element(By.ID, "map")
    size = element.size
    offset_x, offset_y = round(x - size["width"] / 2), round(y - size["height"] / 2)
    ActionChains(driver).move_to_element_with_offset(element, offset_x, offset_y).click().perform()


def test_docs_draw_every_operation_and_try_one_with_a_token(
    browser: Chrome, full_platform: Stack, api_token: str, artifacts: Path
) -> None:
    spec = openapi_spec()
    operations = sum(len(item) for item in spec["paths"].values())
    browser.get(f"{full_platform.base_url}/docs")
    wait_for(browser, lambda d: count(d, ".opblock") == operations, f"{operations} operations drawn")
    assert count(browser, "#errors tbody tr") == len(spec["x-errors"])
    assert browser.find_element(By.ID, "error-OPTIMIZE_ERROR_DIAMETER_TOO_LARGE").is_displayed()

    # A parameter's type, allowed values, default and limits are on the page.
    click(browser, "#operations-routing-route .opblock-summary-control")
    wait_for(browser, lambda d: count(d, "#operations-routing-route tr[data-param-name]") > 0, "the route's parameters")
    route_text = browser.find_element(By.ID, "operations-routing-route").text
    for fact in ("alternatives", "integer", "Default value : 0", "Available values : car", "maximum", "5000"):
        assert fact in route_text, fact
    # Operations in groups; "Try it out" fills in the required points, never the optional avoid
    # area (its example stands in the words).
    assert count(browser, ".opblock-tag-section") == len(spec["tags"])
    assert "Example: " in browser.find_element(By.CSS_SELECTOR, '#operations-routing-route tr[data-param-name="avoid"]').text
    click(browser, "#operations-routing-route .try-out__btn")
    wait_for(browser, lambda d: count(d, '#operations-routing-route tr[data-param-name="avoid"] input') == 1, "the inputs")
    def value(name: str) -> str:
        selector = f'#operations-routing-route tr[data-param-name="{name}"] input'
        return browser.find_element(By.CSS_SELECTOR, selector).get_attribute("value") or ""

    assert value("avoid") == "" and value("from") != ""

    # Token entry, then "Try it out" on one operation.
    click(browser, ".auth-wrapper .authorize")
    wait_for(browser, lambda d: count(d, ".modal-ux input") > 0, "the token dialog")
    browser.find_element(By.CSS_SELECTOR, ".modal-ux input").send_keys(api_token)
    click(browser, ".modal-ux .auth-btn-wrapper .authorize")
    click(browser, ".modal-ux .btn-done")
    click(browser, "#operations-routing-providers .opblock-summary-control")
    wait_for(browser, lambda d: count(d, "#operations-routing-providers .try-out__btn") > 0, "Try it out")
    click(browser, "#operations-routing-providers .try-out__btn")
    click(browser, "#operations-routing-providers .execute")
    status = wait_for(
        browser,
        lambda d: d.find_elements(
            By.CSS_SELECTOR, "#operations-routing-providers .live-responses-table tbody .response-col_status"
        ),
        "the answer",
    )[0].text
    answer = browser.find_element(By.CSS_SELECTOR, "#operations-routing-providers .live-responses-table").text
    browser.save_screenshot(str(artifacts / "docs.png"))
    assert status.startswith("200"), answer
    assert "coverage" in answer and "Bearer" in browser.find_element(By.ID, "operations-routing-providers").text
    assert console_errors(browser) == []


def open_map_signed_in(browser: Chrome, platform: Stack, prefix: str) -> None:
    """/map, signed in as a new standard account (its email starts with `prefix`)."""
    email, password = f"{prefix}-{uuid.uuid4().hex[:10]}@example.com", uuid.uuid4().hex
    console_ok(platform, "add-user", email, "--password", password, "--tier", "standard")
    browser.get(f"{platform.base_url}/map")
    wait_for(browser, lambda d: d.execute_script("return Boolean(window.demoMap)"), "the map")
    browser.find_element(By.ID, "login-user").send_keys(email)
    browser.find_element(By.ID, "login-password").send_keys(password)
    click(browser, "#login-button")


def test_map_signs_in_geocodes_routes_and_optimizes(browser: Chrome, full_platform: Stack, artifacts: Path) -> None:
    open_map_signed_in(browser, full_platform, "map")

    # Signed in: the loaded map's outline is drawn and the view fitted to it, without tiles.
    wait_for(browser, lambda d: count(d, "path.coverage-outline") > 0, "the coverage outline")
    wait_for(browser, lambda d: d.find_element(By.ID, "tiles-note").is_displayed(), "the note on missing tiles")
    # The coverage is told by area, not by file: Monaco's one area, which the test platform's
    # geocoder (Munich) cannot name, keeps its number.
    wait_for(browser, lambda d: "1 area(s): area 1" in d.find_element(By.ID, "coverage-text").text, "the areas")
    assert ".osm.pbf" not in browser.find_element(By.ID, "coverage-text").text
    casino = MONACO[0]
    assert browser.execute_script(
        "return window.demoMap.getBounds().contains([arguments[0], arguments[1]])", *casino[1:]
    )
    browser.save_screenshot(str(artifacts / "map-signed-in.png"))

    # Geocoding with autocomplete (the test platform geocodes Munich).
    browser.find_element(By.ID, "search-input").send_keys("Marienpl")
    wait_for(browser, lambda d: count(d, "#suggestions li button") > 0, "autocomplete suggestions")
    click(browser, "#suggestions li button")
    wait_for(browser, lambda d: count(d, "#search-results li") > 0, "geocoding results")
    assert count(browser, "path.geocode-result") == count(browser, "#search-results li")
    assert "Marienplatz" in browser.find_element(By.ID, "search-results").text
    browser.save_screenshot(str(artifacts / "map-geocode.png"))

    # A route between two clicked points, with alternatives and turn-by-turn steps.
    click(browser, "#fit-coverage")
    (_, lat_a, lon_a), (_, lat_b, lon_b) = MONACO[4], MONACO[2]  # Larvotto → Palais: three ways (Fontvieille has one)
    click_map_at(browser, lat_a, lon_a)
    click_map_at(browser, lat_b, lon_b)
    wait_for(browser, lambda d: count(d, "path.route-selected") == 1, "the route")
    # the page asks for alternatives: a second route is listed and drawn (one from Valhalla on CH)
    assert count(browser, "#routes li") == count(browser, "path.route-line") >= 2
    assert count(browser, "#steps li") >= 3
    assert count(browser, "path.route-end") == 2
    browser.save_screenshot(str(artifacts / "map-route.png"))
    # The same route leaving at a time (issue 33): Monaco has no rule by time, the status says so.
    browser.execute_script("document.getElementById('departure').value = '2026-12-01T08:00'")
    click(browser, "#route-button")
    wait_for(browser, lambda d: "Leaving 08:00" in d.find_element(By.ID, "status").text, "the route at a time")
    assert "no rule by time on the way" in browser.find_element(By.ID, "status").text
    browser.execute_script("document.getElementById('departure').value = ''")

    # Stops clicked on the map, their order optimized: the tour drawn and listed in order.
    click(browser, "input[name=mode][value=stops]")
    stops = MONACO[:5]
    for _, lat, lon in stops:
        click_map_at(browser, lat, lon)
    wait_for(browser, lambda d: count(d, "#stop-list li") == len(stops), "the stops listed")
    click(browser, "#optimize-button")
    wait_for(browser, lambda d: count(d, "path.tour-line") == 1, "the tour")
    assert count(browser, "#tour li") == len(stops)
    labels = sorted(e.text for e in browser.find_elements(By.CSS_SELECTOR, ".stop-marker"))
    assert labels == [str(n) for n in range(1, len(stops) + 1)]
    assert browser.find_element(By.CSS_SELECTOR, "#tour li").text.startswith("Stop 1")
    browser.save_screenshot(str(artifacts / "map-optimize.png"))

    # The matrix and isochrones, offered because /v1/providers says this platform answers them.
    assert browser.find_element(By.ID, "matrix-button").is_displayed()
    click(browser, "#matrix-button")
    wait_for(browser, lambda d: count(d, "#matrix tr") == len(stops) + 1, "the matrix")
    assert browser.find_element(By.ID, "mode-isochrone").is_displayed()
    click(browser, "input[name=mode][value=isochrone]")
    # Minutes are checked as minutes (the API's 3600 s is 60 min), before any request.
    minutes = browser.find_element(By.ID, "isochrone-minutes")
    minutes.clear()
    minutes.send_keys("5,90")
    click_map_at(browser, *MONACO[6][1:])
    wait_for(browser, lambda d: "at most 60" in d.find_element(By.ID, "status").text, "the minutes refused")
    assert count(browser, "path.isochrone") == 0
    # An hour covers every road of Monaco: the page says the map ends there.
    minutes.clear()
    minutes.send_keys("2,60")
    click_map_at(browser, *MONACO[6][1:])
    wait_for(browser, lambda d: count(d, "path.isochrone") > 0, "the isochrones")
    assert "roads end within 60 min" in browser.find_element(By.ID, "isochrone-text").text
    browser.save_screenshot(str(artifacts / "map-final.png"))
    assert "error" not in (browser.find_element(By.ID, "status").get_attribute("class") or "")
    assert console_errors(browser) == []


def test_map_writes_the_route_in_the_language_and_units_chosen(
    browser: Chrome, full_platform: Stack, artifacts: Path
) -> None:
    """Issue 35: "Instructions in" lists the route's languages (the browser's own chosen at first)
    and "Units" its units; both go with the route, and its steps come back in them."""
    email, password = f"words-{uuid.uuid4().hex[:10]}@example.com", uuid.uuid4().hex
    console_ok(full_platform, "add-user", email, "--password", password, "--tier", "standard")
    browser.get(f"{full_platform.base_url}/map")
    wait_for(browser, lambda d: d.execute_script("return Boolean(window.demoMap)"), "the map")
    # map.js holds its own list of the languages: the same as the API's.
    language = Select(browser.find_element(By.ID, "language"))
    assert [option.get_attribute("value") for option in language.options] == list(INSTRUCTION_LANGUAGES)
    browser_language = browser.execute_script("return navigator.language")
    expected = match_language(browser_language, INSTRUCTION_LANGUAGES) or "en"
    assert language.first_selected_option.get_attribute("value") == expected, browser_language
    assert Select(browser.find_element(By.ID, "units")).first_selected_option.get_attribute("value") == "metric"

    browser.find_element(By.ID, "login-user").send_keys(email)
    browser.find_element(By.ID, "login-password").send_keys(password)
    click(browser, "#login-button")
    wait_for(browser, lambda d: "Ready" in d.find_element(By.ID, "status").text, "signed in")
    language.select_by_value("de")
    Select(browser.find_element(By.ID, "units")).select_by_value("imperial")
    click(browser, "#fit-coverage")
    (_, lat_a, lon_a), (_, lat_b, lon_b) = MONACO[4], MONACO[2]
    click_map_at(browser, lat_a, lon_a)
    click_map_at(browser, lat_b, lon_b)
    wait_for(browser, lambda d: count(d, "path.route-selected") == 1 and count(d, "#steps li") > 0, "the route")
    steps = browser.find_element(By.ID, "steps")
    first = steps.find_element(By.CSS_SELECTOR, "li").text
    assert first.startswith("Fahren Sie "), first
    assert steps.get_attribute("lang") == "de"
    # The page's own distances in the answer's units: miles, or feet below a tenth of a mile.
    best = browser.find_element(By.CSS_SELECTOR, "#routes li").text
    assert re.search(r"\d (mi|ft),", best), best
    assert all(re.fullmatch(r"\d+(\.\d)? (mi|ft)", e.text) for e in steps.find_elements(By.CSS_SELECTOR, ".distance"))
    browser.save_screenshot(str(artifacts / "map-route-german.png"))
    assert "error" not in (browser.find_element(By.ID, "status").get_attribute("class") or "")
    assert console_errors(browser) == []


def search(driver: Chrome, text: str) -> None:
    """The search box filled and sent; the autocomplete's list is closed by the sending."""
    field = driver.find_element(By.ID, "search-input")
    field.clear()
    field.send_keys(text, Keys.ENTER)


def test_map_shows_every_place_of_a_kind_and_picks_one_with_the_keyboard(
    browser: Chrome, full_platform: Stack, artifacts: Path
) -> None:
    """Issue 34, item 6: a search for a kind of place ("Apotheke München": Munich's extract, the
    test platform's geocoder, has 31 pharmacies) draws up to 10 of them at once, each with its
    name and address, fits the map to them and lists them; the name's button picks one with the
    keyboard and "from" uses it. A search of another sort still shows its 5 best results."""
    open_map_signed_in(browser, full_platform, "kinds")
    wait_for(browser, lambda d: "Ready" in d.find_element(By.ID, "status").text, "signed in")

    search(browser, "Apotheke München")
    wait_for(browser, lambda d: count(d, "#search-results li .place-name") >= 2, "the pharmacies listed")
    entries = browser.find_elements(By.CSS_SELECTOR, "#search-results li")
    assert 2 <= len(entries) <= 10
    assert count(browser, "path.geocode-place") == len(entries)  # every one on the map at once
    status = browser.find_element(By.ID, "status").text
    assert f"{len(entries)} places found (pharmacy)" in status, status
    names = [e.find_element(By.CSS_SELECTOR, ".place-name").text for e in entries]
    assert len(set(names)) == len(names) and all(names), names
    # The map is fitted to them all.
    points = browser.execute_script(
        "const out = []; window.demoMap.eachLayer((l) => { if (l.options && /geocode-place/.test(l.options.className || ''))"
        " out.push([l.getLatLng().lat, l.getLatLng().lng]); }); return out;"
    )
    assert len(points) == len(entries)
    assert all(browser.execute_script("return window.demoMap.getBounds().contains(arguments[0])", p) for p in points)
    # Each marker says its name and address on hover.
    tooltips = browser.execute_script(
        "const out = []; window.demoMap.eachLayer((l) => { if (l.options && /geocode-place/.test(l.options.className || ''))"
        " out.push(l.getTooltip().getContent().textContent); }); return out;"
    )
    wheres = [e.find_element(By.CSS_SELECTOR, ".place-where").text for e in entries]
    # the city in the browser's language (its Accept-Language goes to the geocoder)
    assert all("Munich" in w or "München" in w for w in wheres), wheres
    assert sorted(tooltips) == sorted(n + w for n, w in zip(names, wheres, strict=True)), tooltips
    browser.save_screenshot(str(artifacts / "map-kind.png"))

    # A click on a marker picks its place (its popup opened, its entry marked), not a route point.
    click_map_at(browser, *points[0])
    wait_for(browser, lambda d: count(d, ".leaflet-popup .place-popup") == 1, "the clicked place's popup")
    assert count(browser, "#search-results li.selected") == 1
    assert browser.find_element(By.ID, "route-from").text == "\u2013"  # no start set

    # The keyboard picks the second: its entry is the current one, the map shows it with its popup.
    second = entries[1].find_element(By.CSS_SELECTOR, ".place-name")
    browser.execute_script("arguments[0].focus()", second)
    second.send_keys(Keys.ENTER)
    wait_for(browser, lambda d: count(d, ".leaflet-popup .place-popup") == 1, "the picked place's popup")
    assert "selected" in (entries[1].get_attribute("class") or "")
    assert second.get_attribute("aria-current") == "true"
    assert count(browser, "#search-results li.selected") == 1
    assert names[1] in browser.find_element(By.CSS_SELECTOR, ".leaflet-popup .place-popup").text
    assert browser.execute_script("return window.demoMap.getZoom()") == 16
    browser.save_screenshot(str(artifacts / "map-kind-picked.png"))
    # … and "from" uses it as any result: the route's start, named by its label.
    entries[1].find_element(By.XPATH, ".//button[text()='from']").send_keys(Keys.ENTER)
    wait_for(browser, lambda d: d.find_element(By.ID, "route-from").text.startswith(names[1]), "the route's start")

    # No serious accessibility violation with the list and a popup open (axe-core, as test_accessibility).
    from tests.integration.test_accessibility import serious_violations

    found = serious_violations(browser)
    assert found == [], "\n".join(map(str, found))

    # A search of another sort keeps its 5 best, drawn as before: "Marienplatz" is a street first.
    search(browser, "Marienplatz")
    wait_for(browser, lambda d: count(d, "#search-results li") > 0, "the results")
    assert count(browser, "#search-results li") == count(browser, "path.geocode-result") == 5
    assert count(browser, "path.geocode-place") == 0 and count(browser, "#search-results .place-name") == 0
    assert browser.find_element(By.ID, "status").text == "5 found."
    assert console_errors(browser) == []


def in_view(driver: Chrome, element_id: str) -> bool:
    """Whether the element is displayed wholly inside the window."""
    return bool(driver.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;",
        element_id,
    ))  # fmt: skip


def test_map_on_a_phone_exchanges_an_api_key_and_keeps_the_status_in_view(
    browser: Chrome, full_platform: Stack, artifacts: Path
) -> None:
    """At 390 x 844: the map takes most of the screen, a tap sets a point, the status line is
    in view after every step, a pasted API key is exchanged for a token, a moved point is drawn
    and said, and an error rings the point it names."""
    email = f"phone-{uuid.uuid4().hex[:10]}@example.com"
    console_ok(full_platform, "add-user", email, "--password", uuid.uuid4().hex, "--tier", "standard")
    api_key = console_ok(full_platform, "add-apikey", email)
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{full_platform.base_url}/map")
        wait_for(browser, lambda d: d.execute_script("return Boolean(window.demoMap)"), "the map")
        assert browser.find_element(By.ID, "map").size["height"] >= browser.execute_script("return innerHeight") / 2
        browser.find_element(By.ID, "token-input").send_keys(api_key)
        click(browser, "#token-button")
        wait_for(browser, lambda d: "Ready" in d.find_element(By.ID, "status").text, "the API key exchanged")
        assert in_view(browser, "status")

        # A tap 300 m out at sea off Larvotto: the route starts on the nearest road, drawn and said.
        (_, lat_a, lon_a), (_, lat_b, lon_b) = MONACO[4], MONACO[2]
        click(browser, "#fit-coverage")
        click_map_at(browser, lat_a - 0.0005, lon_a + 0.004)
        wait_for(browser, lambda d: "end" in d.find_element(By.ID, "status").text, "the first point set")
        assert in_view(browser, "status")
        click_map_at(browser, lat_b, lon_b)
        wait_for(browser, lambda d: count(d, "path.route-selected") == 1, "the route")
        assert count(browser, "path.snap-line") >= 1
        assert "the start was moved" in browser.find_element(By.ID, "status").text and in_view(browser, "status")
        browser.save_screenshot(str(artifacts / "map-phone-route.png"))

        assert console_errors(browser) == []
        # A point far out at sea: the error names `to`, the status says it in view, the point is ringed.
        click_map_at(browser, lat_a, lon_a)
        click_map_at(browser, lat_a - 0.03, lon_a + 0.03)
        wait_for(browser, lambda d: "error" in (d.find_element(By.ID, "status").get_attribute("class") or ""), "the error")
        assert browser.find_element(By.ID, "status").text.startswith("to: ") and in_view(browser, "status")
        assert count(browser, "path.failed-point") == 1
        browser.save_screenshot(str(artifacts / "map-phone-error.png"))
        errors = console_errors(browser)  # the browser logs the refused request itself, and nothing else
        assert len(errors) == 1 and "/v1/route?" in errors[0] and "400" in errors[0], errors
    finally:
        browser.set_window_size(1400, 1000)


def test_docs_errors_table_fits_a_phone(browser: Chrome, full_platform: Stack) -> None:
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{full_platform.base_url}/docs")
        wait_for(browser, lambda d: count(d, "#errors tbody tr") > 10, "the errors table")
        overflow = browser.execute_script(
            "const t = document.querySelector('#errors table'); return t.scrollWidth - document.documentElement.clientWidth;"
        )
        assert overflow <= 0, f"the errors table is {overflow} px wider than the screen"
    finally:
        browser.set_window_size(1400, 1000)
