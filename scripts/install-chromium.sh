#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian, for the browser tests
# (tests/integration/test_web_pages.py). Never fails the build: without them, or without the
# rights to install them, the browser tests skip and say why.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser tests will skip: chromium and chromedriver are missing and there is no apt-get to install them"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "browser tests will skip: installing chromium and chromium-driver needs root (sudo apt-get install chromium chromium-driver)"
  exit 0
fi
echo "installing chromium and chromium-driver from Debian for the browser tests"
if ! { "${sudo[@]}" apt-get update -qq &&
       DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; }; then
  echo "browser tests will skip: apt-get could not install chromium and chromium-driver"
fi
exit 0
