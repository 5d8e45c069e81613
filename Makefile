# Two entry points (see README): `make demo` and `make test`. Both build the pinned virtualenv
# first (requirements/constraints.txt: DESIGN section 8's tested stack).
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv demo test bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements/constraints.txt requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip<25"
	$(PY) -m pip install --quiet -c requirements/constraints.txt -r requirements/dev.txt -e .
	touch $(STAMP)

# gm-audit on the bundled fixture pipeline: the static pass, then the probe on a bug variant.
demo: venv
	$(VENV)/bin/gm-audit check fixtures/pipeline --exit-zero

test: venv
	$(PY) -m pytest

bench: venv
	$(PY) benchmarks/static_bench.py

clean:
	rm -rf $(VENV) .gm_audit_cache .pytest_cache
