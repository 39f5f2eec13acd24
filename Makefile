# Everything the project needs is installed here, into .venv, from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo docs test test-under-load test-deep lint types pytest conformance bench soak venv clean redis-server browsers tmux screenshot node-clients promtool alertmanager airflow-venv

venv: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The runtime extras the tests need; the development tools are pyproject.toml's `dev` group
# (`pip install --group` needs pip 25.1 or later, hence the upgrade first).
EXTRAS := server,asgi,redis,demo,testing,langgraph,celery,alerts,otel,otel-grpc,airflow

# Reinstall only when pyproject.toml changes: the second `make test` is fast.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]' --group dev
	touch $(STAMP)

LINTED := $(wildcard src tests benchmarks tools examples docs/conf.py docs/reference/*.py)

# The main job on its embedded default: a simulated scheduler, a live status view, hook events,
# and the hub served over HTTP (the dashboard's URL and the `workflow-hub watch URL` command are
# printed beside the view). `make demo DURATION=120` runs it longer (the story is scaled to fit).
DURATION ?= 20
demo: $(STAMP)
	$(BIN)/workflow-hub demo --serve 127.0.0.1:0 --duration $(DURATION)

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/python tools/contract_inits.py --check
	$(BIN)/python tools/written_out.py --check
	$(BIN)/python tools/api_documents.py --check

types: $(STAMP)
	$(BIN)/mypy --strict src

# The Redis tests start their own redis-server (Debian's package), installed here when missing.
redis-server:
	@command -v redis-server >/dev/null || (apt-get update && apt-get install -y redis-server) \
		|| echo "redis-server is missing and could not be installed: the Redis tests will skip (fail with CI=true)"

# The dashboard's tests run its JavaScript under node (so does the conformance kit's JavaScript
# numbers adapter, tests/js/reencode.mjs) and its page in Debian's chromium (driven by
# the Python playwright package; never `playwright install`, which downloads a browser).
# axe-core (the dashboard's accessibility check) comes from npm at the version pinned in
# tests/js/package.json, into tests/js/node_modules.
browsers:
	@command -v node >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y nodejs'
	@command -v npm >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y npm'
	@command -v chromium >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y chromium'
	@test -f tests/js/node_modules/axe-core/axe.min.js || npm ci --prefix tests/js --no-audit --no-fund

# `workflow-hub status` is tested in a real tmux status line, and `make screenshot` captures the
# terminal view with tmux.
tmux:
	@command -v tmux >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y tmux'

# The server's conformance tests drive real clients: node's `eventsource` package (installed from
# tests/server/js's lock file into its node_modules, never from a CDN) and Prometheus' promtool
# (Debian's prometheus package).
node-clients: browsers
	@command -v npm >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y npm'
	@test -d tests/server/js/node_modules/eventsource || (cd tests/server/js && npm ci --no-audit --no-fund)

promtool:
	@command -v promtool >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y prometheus'

# tests/alerts route alerts through a real Alertmanager (Debian's package) to a loopback receiver.
alertmanager:
	@command -v prometheus-alertmanager >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y prometheus-alertmanager'

# Airflow 3 for tests/airflow (issue 42), in a virtualenv of its own: Airflow pins hundreds of
# packages (SQLAlchemy, FastAPI, pydantic …) that must never meet the project's. The project's
# `airflow` extra is only what the bridge needs (httpx); Airflow itself is never a dependency.
# tests/airflow/constraints.txt pins the whole tree (Airflow's own constraints file is not on
# PyPI, so it is a freeze of the tested install). About 50 s on the 2-core machine.
AIRFLOW_VERSION := 3.3.2
AIRFLOW_VENV := .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed-$(AIRFLOW_VERSION)
$(AIRFLOW_STAMP): tests/airflow/constraints.txt
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet 'apache-airflow==$(AIRFLOW_VERSION)' \
		--constraint tests/airflow/constraints.txt
	touch $(AIRFLOW_STAMP)

airflow-venv: $(AIRFLOW_STAMP)

# Three workers on the two cores, a test file each at a time (its module-scoped servers stay in
# one worker), the longest files first (tests/conftest.py). Most real-part tests wait on
# processes, browsers and sockets, so a third worker fills that idle time. On 2026-12-02 (later),
# 3 787 tests, the Airflow, alerts and OpenTelemetry tests among them: 369 s on a quiet machine
# (the whole of `.ci/run` from a clean clone, 6 min 55 s, the two virtualenvs' installs included;
# `make test` with them installed, 5 min 50 s), with about 7 min 30 s of CPU.
#
# The suite writes Python's bytecode caches (__pycache__, ignored by git) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, set where these runs start): otherwise each of its
# hundreds of Python processes (three workers, the commands and adapters the tests run, inner
# pytest sessions) compiles every module of src/ and tests/ again, and pytest rewrites the test
# modules' asserts again in every worker. Measured on 2026-12-02: collecting the suite 6.9 s of
# CPU a worker without the caches, 2.8 s with them; the subprocess-heavy files (test_mistakes,
# test_lazy_root, test_docs_examples) about 10 % less CPU.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

pytest: $(STAMP) redis-server browsers tmux node-clients promtool alertmanager airflow-venv
	$(PYTEST) -n 3 --dist loadfile

# docs/dashboard*.png and docs/terminal-*.svg: the demo in full swing (`workflow-hub serve`,
# looping): the dashboard at 1280 and 375 px by Debian's chromium, `workflow-hub watch` in tmux at
# 80x24 and 200x50; and docs/dashboard-busy-*.png: a busy scheduler's page opened on a link to its
# roots that need attention; docs/fleet.png: the fleet's page (needs redis-server).
screenshot: $(STAMP) browsers tmux redis-server
	$(BIN)/python tools/dashboard_screenshot.py --chromium "$$(command -v chromium)"
	$(BIN)/python tools/dashboard_screenshot.py --chromium "$$(command -v chromium)" \
		--width 375 --output docs/dashboard-375.png
	$(BIN)/python tools/dashboard_screenshot.py --chromium "$$(command -v chromium)" --busy 400 \
		--view '#group=attention' --width 1280 --height 1000 --output docs/dashboard-busy-1280.png
	$(BIN)/python tools/dashboard_screenshot.py --chromium "$$(command -v chromium)" --busy 400 \
		--view '#group=attention' --width 375 --height 1100 --output docs/dashboard-busy-375.png
	$(BIN)/python tools/fleet_screenshot.py --chromium "$$(command -v chromium)"
	$(BIN)/python tools/fleet_screenshot.py --chromium "$$(command -v chromium)" \
		--width 375 --height 740 --output docs/fleet-375.png
	$(BIN)/python tools/terminal_screenshot.py

test: lint types pytest

# The suite on a busy machine (issue 36): Debian's stress-ng keeps both cores busy meanwhile.
# Tests wait for events, not for guessed times, so this stays green; it is also slower.
test-under-load: $(STAMP) redis-server browsers tmux node-clients promtool alertmanager airflow-venv
	@command -v stress-ng >/dev/null || flock /tmp/apt.lock sh -c 'apt-get update && apt-get install -y stress-ng'
	stress-ng --cpu 2 --quiet & load=$$!; \
		$(PYTEST) -n 3 --dist loadfile; status=$$?; \
		kill $$load; wait $$load; exit $$status

# The whole suite with ten times the property tests' examples (hypothesis' `deep` profile,
# tests/conftest.py): `make test` keeps to hypothesis' default of 100 so that it stays near six
# minutes on two cores; this is the run to leave going before a release.
test-deep: $(STAMP) redis-server browsers tmux node-clients promtool alertmanager airflow-venv
	HYPOTHESIS_PROFILE=deep WORKFLOW_HUB_CONFORMANCE_EXAMPLES=1000 $(PYTEST) -n 3 --dist loadfile

# The conformance suite with many more scenarios than `make test` runs (about two minutes).
conformance: $(STAMP)
	WORKFLOW_HUB_CONFORMANCE_EXAMPLES=2000 $(PYTEST) tests/testing

# The documentation site into build/docs (open build/docs/index.html): the guide (docs/*.md) and
# the API reference (docs/reference/, one page per public module, from the docstrings). Strict: a
# warning (a broken link, a docstring that is not valid reStructuredText) fails it. Sphinx comes
# with the `dev` group, which includes `docs` (tests/package/test_api_reference.py builds the
# reference too).
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -q -W --keep-going -E docs build/docs

# Benchmarks (about 9 minutes on 2 cores): one table, benchmarks/results.json; docs/performance.md
# explains. The Celery rows need redis-server (started by each benchmark on a free port).
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS),bench]' --group dev
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) redis-server airflow-venv
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/plot.py

# The soak (issue 37): a served hub with thousands of roots under stalled, churning and live
# clients, and a Redis mirror and fleet through Redis restarts, for SOAK_SECONDS (default 180);
# it prints RSS and sockets over time and fails on a broken promise. docs/performance.md explains.
SOAK_SECONDS ?= 180
soak: $(STAMP) redis-server
	$(BIN)/python benchmarks/soak.py --seconds $(SOAK_SECONDS)

clean:
	rm -rf $(VENV) $(AIRFLOW_VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
