# Two commands do everything on a fresh machine (see README.md):
#   make app    install and start the app on the bundled sample
#   make test   install what tests need (Chromium included) and run lint and the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# Stamps in the venv: pip runs again only when pyproject.toml changed (the package itself is
# an editable install, so a code change needs none), and `make app` starts in seconds.
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test

.PHONY: app test install install-test lint sample bench

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

install: $(INSTALLED)

install-test: $(TEST_INSTALLED)

app: install
	$(PY) -m streamlit run app.py

lint: install-test
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest

sample: install
	$(PY) scripts/make_sample_data.py

bench: install
	$(PY) benchmarks/independent.py
