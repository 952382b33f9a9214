"""`/console` in a real browser on the platform (Redis, auth service, gateway): a user signs in,
creates an API key (shown once), sees it listed, revokes it, changes the password and sees the
account's limits and usage; an administrator creates a user, sets its tier and disables it.
Each effect is checked from outside the page too (logins through the API, the command-line
console). Screenshots in `var/test-artifacts/web/`."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from launcher.stack import Stack
from tests.integration.conftest import console_ok
from tests.integration.test_web_pages import ARTIFACTS, click, console_errors, count, start_browser, wait_for

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def platform(accounts_platform: Stack) -> Stack:
    """On SQLite and on PostgreSQL (tests/integration/conftest.py)."""
    return accounts_platform


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def post_status(stack: Stack, path: str, body: dict[str, str]) -> int:
    request = urllib.request.Request(  # noqa: S310 - loopback
        stack.base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def new_user(stack: Stack, *extra: str) -> tuple[str, str]:
    email, password = f"console-{uuid.uuid4().hex[:10]}@example.com", uuid.uuid4().hex
    console_ok(stack, "add-user", email, "--password", password, *extra)
    return email, password


def sign_in(browser: Chrome, stack: Stack, email: str, password: str) -> None:
    browser.get(f"{stack.base_url}/console")
    browser.find_element(By.ID, "login-user").send_keys(email)
    browser.find_element(By.ID, "login-password").send_keys(password)
    click(browser, "#login-button")
    wait_for(browser, lambda d: d.find_element(By.ID, "console").is_displayed(), "the signed-in console")


def status_text(browser: Chrome) -> str:
    return str(browser.find_element(By.ID, "status").text)


def text_of(browser: Chrome, selector: str) -> str:
    """The element's text read in one step: the page redraws its tables after every change, so
    an element found first may be gone when its text is read."""
    script = "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';"
    return str(browser.execute_script(script, selector))


def nothing_stored(browser: Chrome) -> bool:
    stored = browser.execute_script("return [localStorage.length, sessionStorage.length, document.cookie]")
    return bool(stored == [0, 0, ""])


def test_a_user_creates_lists_and_revokes_a_key_and_changes_the_password(
    browser: Chrome, platform: Stack, artifacts: Path
) -> None:
    email, password = new_user(platform)
    sign_in(browser, platform, email, password)
    assert browser.find_element(By.ID, "session-user").text == email
    assert browser.find_element(By.ID, "account-tier").text == "standard"
    assert "requests per second" in browser.find_element(By.ID, "rate-limit").text
    assert "in the last 24 hours" in browser.find_element(By.ID, "usage-totals").text
    assert not browser.find_element(By.ID, "admin").is_displayed()

    # A key, shown once, listed by its first characters, working.
    click(browser, "#create-key-button")
    wait_for(browser, lambda d: d.find_element(By.ID, "new-key").is_displayed(), "the new key")
    key = browser.find_element(By.ID, "new-key-value").get_attribute("value") or ""
    assert UUID.match(key), key
    wait_for(browser, lambda d: count(d, "#key-list tbody tr.active") == 1, "the key listed")
    assert f"{key[:8]}…" in text_of(browser, "#key-list")
    browser.save_screenshot(str(artifacts / "console-key-created.png"))
    assert post_status(platform, "/v1/authenticate/apikey", {"apikey": key}) == 200
    click(browser, "#dismiss-key-button")
    assert not browser.find_element(By.ID, "new-key").is_displayed()
    assert key not in browser.page_source

    # Revoked with a confirming second click: listed as revoked, no more tokens for it.
    click(browser, "#key-list button[data-key-id]")
    assert "Really" in browser.find_element(By.CSS_SELECTOR, "#key-list button[data-key-id]").text
    click(browser, "#key-list button[data-key-id]")
    wait_for(browser, lambda d: count(d, "#key-list tbody tr.revoked") == 1, "the key revoked")
    assert post_status(platform, "/v1/authenticate/apikey", {"apikey": key}) == 401
    browser.save_screenshot(str(artifacts / "console-key-revoked.png"))

    # The password: the old one stops, the new one works, this session goes on.
    new_password = "a new passphrase " + uuid.uuid4().hex[:6]
    browser.find_element(By.ID, "current-password").send_keys(password)
    browser.find_element(By.ID, "new-password").send_keys(new_password)
    browser.find_element(By.ID, "repeat-password").send_keys(new_password)
    click(browser, "#password-button")
    wait_for(browser, lambda d: "Password changed" in status_text(d), "the password changed")
    assert post_status(platform, "/v1/authenticate", {"user": email, "password": password}) == 401
    assert post_status(platform, "/v1/authenticate", {"user": email, "password": new_password}) == 200
    time.sleep(1)  # past the gateway's revocation cache (0.5 s here)
    click(browser, "#refresh-button")
    wait_for(browser, lambda d: status_text(d) == "Up to date.", "the account with the new session")

    refreshed = [time.monotonic()]

    def usage_listed(driver: Chrome) -> bool:
        """This hour's requests, once the gateway has added its counts to Redis (every 5 s,
        gateway.usage.FLUSH_SECONDS): the page refreshed once a second until they are there."""
        if count(driver, "#usage tbody tr"):
            return True
        if time.monotonic() - refreshed[-1] >= 1.0:
            click(driver, "#refresh-button")
            refreshed.append(time.monotonic())
        return False

    wait_for(browser, usage_listed, "this hour's requests listed")
    browser.save_screenshot(str(artifacts / "console-user.png"))
    assert nothing_stored(browser)
    assert console_errors(browser) == []

    # A session whose account is disabled meanwhile ends at its next call.
    console_ok(platform, "disable-user", email)
    time.sleep(1)
    click(browser, "#refresh-button")
    wait_for(browser, lambda d: d.find_element(By.ID, "signin").is_displayed(), "the sign-in form again")
    assert "sign in again" in status_text(browser)
    assert browser.find_element(By.ID, "key-list").text.count("…") == 0
    # The browser logs the refused call itself, and nothing else.
    assert all("401" in error for error in console_errors(browser))


def test_an_admin_creates_a_user_sets_its_tier_and_disables_it(
    browser: Chrome, platform: Stack, artifacts: Path
) -> None:
    email, password = new_user(platform, "--admin", "--tier", "unlimited")
    sign_in(browser, platform, email, password)
    wait_for(browser, lambda d: d.find_element(By.ID, "admin").is_displayed(), "the users")
    assert browser.find_element(By.ID, "account-role").text == "admin"
    assert browser.find_element(By.ID, "rate-limit").text == "none (unlimited)"

    created, created_password = f"made-{uuid.uuid4().hex[:10]}@example.com", "a long passphrase"
    browser.find_element(By.ID, "new-user-email").send_keys(created)
    browser.find_element(By.ID, "new-user-password").send_keys(created_password)
    Select(browser.find_element(By.ID, "new-user-tier")).select_by_value("demo")
    click(browser, "#create-user-button")
    row = f"#user-list tr[data-email='{created}']"
    wait_for(browser, lambda d: count(d, row) == 1, "the new user listed")
    assert post_status(platform, "/v1/authenticate", {"user": created, "password": created_password}) == 200

    Select(browser.find_element(By.CSS_SELECTOR, f"{row} select.tier")).select_by_value("standard")
    wait_for(browser, lambda d: "now has the tier standard" in status_text(d), "the tier set")
    listing = console_ok(platform, "list-users")
    assert any(line.split()[1:3] == [created, "standard"] for line in listing.splitlines()), listing
    browser.save_screenshot(str(artifacts / "console-admin-tier.png"))

    click(browser, f"{row} button.disable")
    click(browser, f"{row} button.disable")
    wait_for(browser, lambda d: "disabled" in text_of(d, row), "the user disabled")
    assert post_status(platform, "/v1/authenticate", {"user": created, "password": created_password}) == 401
    # The administrator's own row offers no way to lock themself out.
    assert count(browser, f"#user-list tr[data-email='{email}'] button") == 0
    browser.save_screenshot(str(artifacts / "console-admin.png"))
    assert nothing_stored(browser)
    assert console_errors(browser) == []
