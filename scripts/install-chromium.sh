#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian, for the browser tests
# (tests/integration/test_web_pages.py). Where they cannot be installed it says why; under
# CI=true that fails the build (tests/ci_skips.py fails a skipped browser test there too),
# elsewhere the browser tests skip and say why.
set -u
cannot() {
  echo "browser tests cannot run: $1" >&2
  case "${CI:-}" in
    1|true|TRUE|True|yes) exit 1 ;;
  esac
  exit 0
}
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  cannot "chromium and chromedriver are missing and there is no apt-get to install them"
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  cannot "installing chromium and chromium-driver needs root (sudo apt-get install chromium chromium-driver)"
fi
echo "installing chromium and chromium-driver from Debian for the browser tests"
if ! { "${sudo[@]}" apt-get update -qq &&
       DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; }; then
  cannot "apt-get could not install chromium and chromium-driver"
fi
