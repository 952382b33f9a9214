# The two commands: `make up` starts the platform, `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Packages that exist so far: mypy checks each of them.
PACKAGES := $(wildcard common gateway auth_service geo_service route_service optimize_service job_service launcher bench tests)
STAMP := $(VENV)/.installed
# The browser code of /docs and /map (gateway/vendor.py), vendored at install time, git-ignored.
VENDOR_STAMP := gateway/static/vendor/.installed

.PHONY: up test install lint unit integration bench fuzz import clean help vendor browser

help:
	@echo "make up     - install, import the default map and start the platform on 127.0.0.1:8080"
	@echo "make test   - install, lint (ruff, mypy) and run the whole test suite"
	@echo "make bench  - run the benchmarks and write bench/RESULTS.md"
	@echo "make fuzz   - start the platform and fuzz its OpenAPI spec with schemathesis (bounded, ~2 min)"

install: $(STAMP) $(VENDOR_STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	@python_cmd="$$(scripts/find-python.sh)" || exit 1; \
	  if [ ! -x $(PY) ]; then echo "creating $(VENV) with $$python_cmd"; $$python_cmd -m venv $(VENV); fi
	@echo "installing the pinned packages into $(VENV) (a minute or two on a fresh machine; pip names each one)"
	$(PY) -m pip install --disable-pip-version-check --progress-bar off -r requirements-dev.txt
	@touch $(STAMP)

# Swagger UI (/docs) and Leaflet (/map): pinned npm tarballs fetched with Python's urllib from
# the machine's configured npm registry (gateway/vendor.py), checked against their pinned sha512; no node or npm needed.
$(VENDOR_STAMP): gateway/vendor.py | $(STAMP)
	$(PY) -m gateway.vendor
	@touch $(VENDOR_STAMP)

vendor: $(VENDOR_STAMP)

# Headless Chromium and chromedriver from Debian for the browser tests (where they cannot be
# installed: a failure under CI=true, else the browser tests skip saying why).
browser:
	@scripts/install-chromium.sh

up: install
	$(PY) -m launcher up

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy $(PACKAGES)

# The session's slow map imports start ahead, in the background, while the first tests run
# (tests/imports_ahead.py), once for the TEST_WORKERS processes that run the test files.
TEST_WORKERS ?= 2
test: install lint browser
	TEST_IMPORTS_AHEAD=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

unit: install
	TEST_IMPORTS_AHEAD=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --ignore=tests/integration

integration: install browser
	$(PY) -m pytest tests/integration

bench: install
	$(PY) -m bench

# Bounded: FUZZ_EXAMPLES per operation, FUZZ_MAX_SECONDS in all (bench/fuzz.py).
fuzz: install
	$(PY) -m bench.fuzz

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
