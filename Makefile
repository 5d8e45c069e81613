# Two entry points (see README): `make demo` and `make test`. Both build the pinned virtualenv
# first (requirements/constraints.txt: DESIGN section 8's tested stack).
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
GM     := $(abspath $(VENV))/bin/gm-audit
STAMP  := $(VENV)/.installed
DEMO   := build/demo

.PHONY: venv demo test browser bench ecosystem validate validate-floor clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements/constraints.txt requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip<25"
	$(PY) -m pip install --quiet -c requirements/constraints.txt -r requirements/dev.txt -e .
	touch $(STAMP)

# The bundled fixture with one injected bug (a .detach() in a helper module), next to the clean
# reference: the static check, the probe on the real training command, the diff.
demo: venv
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(PY) fixtures/build.py gm101-bug $(DEMO)/pipeline >/dev/null
	$(PY) fixtures/build.py clean $(DEMO)/reference >/dev/null
	cd $(DEMO)/pipeline && $(GM) check . --exit-zero
	cd $(DEMO)/pipeline && PATH=$(abspath $(VENV))/bin:$$PATH $(GM) probe --exit-zero -- python train.py
	cd $(DEMO)/pipeline && PATH=$(abspath $(VENV))/bin:$$PATH $(GM) diff --exit-zero \
	    "python ../reference/minimal.py" "python train.py"

# The HTML report is tested in a real headless browser: Debian's chromium, installed if missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

test: venv browser
	GM_AUDIT_REQUIRE_BROWSER=1 $(PY) -m pytest

# The validation set (../shared/validation): realistic pipelines written independently of
# gm-audit, one measured change each. `validate` prints the static, probe and diff figures (about
# 50 minutes on 2 cores); `validate-floor` is CI's static part, failing below the last figures
# measured (benchmarks/validation_floor.json).
validate: venv
	$(PY) -m benchmarks.validation

validate-floor: venv
	$(PY) -m benchmarks.validation --mode static --floor
	$(PY) -m benchmarks.validation --mode static --floor --heldout engine
	$(PY) -m benchmarks.validation --mode static --floor --heldout functional
	$(PY) -m benchmarks.validation --mode static --floor --heldout lightning
	$(PY) -m benchmarks.validation --mode static --floor --heldout sampled
	$(PY) -m benchmarks.validation --mode static --floor --heldout inherit
	$(PY) -m benchmarks.validation --mode static --floor --heldout stream
	$(PY) -m benchmarks.validation --mode static --floor --heldout events
	$(PY) -m benchmarks.validation --mode static --floor --heldout notebook
	$(PY) -m benchmarks.validation --mode static --floor --heldout hetero
	$(PY) -m benchmarks.validation --mode static --floor --heldout mixin

bench: venv
	$(PY) benchmarks/static_bench.py
	$(PY) benchmarks/probe_bench.py

# The ecosystem check (issue 11) on the real-code corpus (../shared/corpus): the triage report of
# the unmodified corpus, the static mutation score, and the probe on real pipelines run offline
# (the slow part: one probe run per mutant, minutes per pipeline on CPU).
# `static_score --coverage` fails when a rule has no operator applying to 3 corpus repositories.
ECO := build/ecosystem
ecosystem: venv
	mkdir -p $(ECO)
	$(PY) -m benchmarks.ecosystem.report --json $(ECO)/precision.json
	$(PY) -m benchmarks.ecosystem.static_score --coverage
	$(PY) -m benchmarks.ecosystem.static_score --json $(ECO)/static.json
	$(PY) -m benchmarks.ecosystem.runtime_score --output $(ECO)/runtime_score.json
	$(PY) -m benchmarks.ecosystem.summary --static $(ECO)/static.json \
	    --runtime $(ECO)/runtime_score.json --precision $(ECO)/precision.json

clean:
	rm -rf $(VENV) $(DEMO) .gm_audit_cache .pytest_cache
