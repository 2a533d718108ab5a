# Two commands do everything on a fresh machine (see README.md):
#   make app    install and start the app on the bundled sample
#   make test   install what tests need (Chromium included), run lint and the whole suite, and
#               build the documentation strictly (a broken link or reference fails)
#   make docs   serve the documentation at http://127.0.0.1:8000
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# Stamps in the venv: pip runs again only when pyproject.toml changed (the package itself is
# an editable install, so a code change needs none), and `make app` starts in seconds.
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test
DOCS_INSTALLED := $(VENV)/.installed-docs

.PHONY: app test install install-test lint sample bench docs screenshots

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): pyproject.toml | $(PY)
	$(PIP) -e .
	touch $@

# the test extras include the package: both stamps are fresh afterwards
$(TEST_INSTALLED): pyproject.toml scripts/install_chromium.sh | $(PY)
	$(PIP) -e '.[test]'
	bash scripts/install_chromium.sh
	touch $(INSTALLED) $@

# the docs extras alone: serving the documentation needs neither Chromium nor root
$(DOCS_INSTALLED): pyproject.toml | $(PY)
	$(PIP) -e '.[docs]'
	touch $(INSTALLED) $@

install: $(INSTALLED)

install-test: $(TEST_INSTALLED)

app: install
	$(PY) -m streamlit run app.py

lint: install-test
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest
	$(VENV)/bin/mkdocs build --strict --site-dir build/site

docs: $(DOCS_INSTALLED)
	$(VENV)/bin/mkdocs serve

# the documentation's screenshots, taken anew by the browser tests (commit what changed)
screenshots: install-test
	SYNTH_SCREENSHOTS=.screenshots $(PY) -m pytest -m browser -q
	cp .screenshots/data.png .screenshots/synthesize.png .screenshots/tradeoffs.png docs/img/
	cp .screenshots/live.png docs/img/synthesize-live.png
	cp .screenshots/release.png docs/img/synthesize-release.png
	cp .screenshots/compare-after-restart.png docs/img/compare.png

sample: install
	$(PY) scripts/make_sample_data.py

bench: install
	$(PY) benchmarks/independent.py
