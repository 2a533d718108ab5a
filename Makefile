# Two commands do everything on a fresh machine (see README.md):
#   make app    install and start the app on the bundled sample
#   make test   install what tests need (Chromium included) and run lint and the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: app test install install-test lint sample bench

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .

install-test: $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	bash scripts/install_chromium.sh

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
