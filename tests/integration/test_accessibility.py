"""axe-core (vendored from npm by `make install`) on /map, /docs and /console in headless
Chromium, at desktop and phone sizes: no serious or critical violation (issue 32, item 7)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver import Chrome

from gateway.vendor import AXE_CORE
from launcher.stack import Stack
from tests.integration.test_web_pages import start_browser, wait_for

SERIOUS = ("serious", "critical")
SIZES = {"desktop": (1400, 1000), "phone": (390, 844)}
READY = {
    "/map": "return Boolean(window.demoMap)",
    "/docs": "return document.querySelectorAll('.opblock').length > 0",
    "/console": "return document.readyState === 'complete'",
}


@pytest.fixture(scope="module")
def axe_browser() -> Iterator[Chrome]:
    if not AXE_CORE.installed():
        pytest.fail("axe-core is not vendored: run `make install` (python -m gateway.vendor)")
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()


def serious_violations(driver: Chrome) -> list[dict[str, Any]]:
    driver.execute_script((AXE_CORE.directory / "axe.min.js").read_text(encoding="utf-8"))
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations)).catch(e => done([{id: 'axe', impact: 'critical', help: String(e), nodes: []}]));"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"][:3]]}
        for v in result
        if v["impact"] in SERIOUS
    ]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("page", READY)
def test_no_serious_accessibility_violation(axe_browser: Chrome, full_platform: Stack, page: str, size: str) -> None:
    axe_browser.set_window_size(*SIZES[size])
    axe_browser.get(f"{full_platform.base_url}{page}")
    wait_for(axe_browser, lambda d: d.execute_script(READY[page]), f"{page} drawn")
    found = serious_violations(axe_browser)
    assert found == [], "\n".join(map(str, found))
