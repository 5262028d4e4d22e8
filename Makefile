# SparkDash: `make run` serves the dashboard with a demo engine; `make test` runs the whole suite.
# With DATABASE_URL and REDIS_URL set, both use Postgres, Redis and real Celery workers;
# without them, an embedded default (SQLite, in-memory channel layer, in-process worker).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: messages run worker relay test suite test-backends test-llama test-engines faults audit aarch64-check lint install browser engine clean bench bench-peers screenshots

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

# make run: DEBUG off (DEBUG=True make run for Django's debug pages), plain HTTP on 127.0.0.1
# (HOST=0.0.0.0 for other machines; HTTPS=True behind a TLS proxy). Without SECRET_KEY, the settings
# use a random key generated once outside the repository (~/.config/sparkdash/secret_key, mode 600).
HOST ?= 127.0.0.1
HTTPS ?= False
run: install
	HTTPS=$(HTTPS) $(BIN)/python manage.py migrate --noinput -v 0
	HTTPS=$(HTTPS) $(BIN)/python manage.py demo
	HTTPS=$(HTTPS) $(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# On a team machine (e.g. your own Spark): its worker, against the team's Postgres and Redis.
#   make worker MACHINE=spark-1 DATABASE_URL=postgres://... REDIS_URL=redis://...
# MACHINE is the machine's name in the dashboard; the worker consumes its queue, concurrency 1.
# TEAM=<team> says whose machine it is, needed when more than one team has a machine of that name.
# The usage check comes before the (first-time, minutes-long) install.
worker:
	@test -n "$(MACHINE)" || { echo "usage: make worker MACHINE=<name> [TEAM=<team>] DATABASE_URL=postgres://... REDIS_URL=redis://..." >&2; exit 2; }
	@$(MAKE) -s install
	$(BIN)/python manage.py worker "$(MACHINE)" $(if $(TEAM),--team "$(TEAM)")

# On a team machine: the recording relay in front of its engine (the Traffic page's source).
#   make relay MACHINE=spark-1 DATABASE_URL=postgres://... REDIS_URL=redis://...
# Agents point at it instead of the engine: the Ollama API on port 11434, the OpenAI API on 8090
# (RELAY_ARGS="--ollama-port 11500 --openai-port 8091 --engine NAME" to change them). While it
# runs, runs on the machine are refused. TEAM=<team> as for `make worker`.
relay:
	@test -n "$(MACHINE)" || { echo "usage: make relay MACHINE=<name> [TEAM=<team>] [RELAY_ARGS='--ollama-port N --openai-port N --engine NAME']" >&2; exit 2; }
	@$(MAKE) -s install
	$(BIN)/python manage.py relay --machine "$(MACHINE)" $(if $(TEAM),--team "$(TEAM)") $(RELAY_ARGS)

# Debian packages the tests need (root, as on CI): headless Chromium for the browser tests, a Japanese
# font so its screenshots of the ja pages are legible, and GNU gettext for the catalogue check.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && fc-list | grep -qi ipagothic && \
	  command -v msgfmt >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-ipafont-gothic \
	      gettext >/dev/null; } || \
	  echo "chromium, the Japanese font or gettext not installed: browser tests may be skipped"

# llama.cpp's llama-server and the Gemma 3 270M GGUF, then vLLM's CPU build and that model converted
# for it, then SGLang on the CPU (serving the converted model), built once into a cache outside the
# repo (~/.cache/sparkdash/engine); the real-engine tests use them. Each part is skipped when the
# cache has it. The vLLM and SGLang installs (downloads) run beside the llama.cpp compile (CPU); the
# conversion waits for the GGUF, and SGLang's model check for the conversion.
engine:
	PYTHON=$(PYTHON) bin/build-vllm --install-only & vllm=$$!; \
	  PYTHON=$(PYTHON) bin/build-sglang --install-only & sglang=$$!; \
	  PYTHON=$(PYTHON) bin/build-engine; built=$$?; \
	  wait $$vllm || built=1; wait $$sglang || built=1; \
	  [ $$built = 0 ] && PYTHON=$(PYTHON) bin/build-vllm && PYTHON=$(PYTHON) bin/build-sglang

# Known vulnerabilities in the installed dependencies (pip-audit); CI runs it.
audit: install
	BIN=$(BIN) bin/audit

# Every pinned requirement resolves for a DGX Spark (linux-aarch64, CPython 3.12) as wheels or
# pure-Python sdists (uv, from PyPI; nothing installed); CI runs it.
aarch64-check: install
	BIN=$(BIN) bin/check-aarch64

# jscpd (pinned in package-lock.json) for the repeated-code check of static/ and templates/.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Repeated code: 8 or more lines alike in Python (pylint's duplicate-code) or in JS, CSS and
# templates (jscpd) fail the lint; vendored Chart.js/Pico and the job kinds' fixtures are left out. Also
# the layout's rules (import-linter's contracts in pyproject.toml) and mypy with django-stubs on the
# app code (tests and migrations excluded).
lint: install node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy claims engines measure runs sparkdash teams traffic
	$(BIN)/pylint --disable=all --enable=duplicate-code --min-similarity-lines=8 \
	  --ignore=fixtures,migrations --score=n claims engines measure runs teams traffic
	node_modules/.bin/jscpd --min-lines 8 --min-tokens 50 --format javascript,css,markup \
	  --ignore "static/vendor/**,runs/core/jobs/*/fixtures/**" --exit-code 1 --reporters console \
	  static templates runs/core/jobs
	bin/check-messages

# Updates the Japanese catalogues (locale/ja) from the code and compiles them (docs/i18n.md).
messages: install
	bin/check-messages --update

# The whole suite (but for the real-engine and fault tests) on whichever backends the environment
# selects: lint, the migration check, then pytest. PYTEST_ARGS adds to pytest's arguments.
test: install engine browser lint suite

suite: install engine browser
	$(BIN)/python manage.py makemigrations --check --dry-run -v 0
	$(BIN)/pytest $(CI_SPLIT_MARKS) $(PYTEST_ARGS)

# CI runs the tests that need the real llama-server (mark `llama_server`, about half the suite's
# time) once, in a pass of their own (`make test-llama`); CI_SPLIT=1 leaves them out of `make test`
# and `make test-backends`, which CI runs on the two backends beside it.
# CI_SPLIT=1 also moves the backend_free tests marked `backend_pass` (tests/engines, tests/traffic) from
# `make test` to `make test-backends`, so that the two passes take about as long as each other.
CI_SPLIT ?=
CI_SPLIT_MARKS = $(if $(CI_SPLIT),-m 'not faults and not engines and not llama_server and not backend_pass')
BACKENDS_MARKS = $(if $(CI_SPLIT),(not backend_free or backend_pass) and not llama_server,not backend_free)

# Only the tests that depend on the backends: all but those marked backend_free (tests/backends.py).
# CI runs `make test` on the embedded default and this on Postgres + Redis, beside it.
test-backends: install engine browser
	$(BIN)/pytest -m 'not faults and not engines and $(BACKENDS_MARKS)' $(PYTEST_ARGS)

# Only the tests that need the real llama-server (pytest mark `llama_server`, set by tests/backends.py
# from `requires_engine`), on whichever backends the environment selects: CI's third pass.
test-llama: install engine browser
	$(BIN)/pytest -m 'llama_server and not faults and not engines' $(PYTEST_ARGS)

# The real vLLM and SGLang tests (pytest marker `engines`): every start of these CPU engines takes a
# minute or more, too long for `make test`'s budget; CI runs them once, after `make test`.
test-engines: install engine browser
	$(BIN)/pytest -m engines $(PYTEST_ARGS)

# The newcomer's walk (a fresh demo install, the tour, a run, the lookahead sweep, compare) in
# headless Chromium, its pictures written to docs/img/ (the README shows them).
screenshots: install browser
	$(BIN)/python -m tests.screenshots docs/img

# Fault injection that takes more than a minute (killed workers, restarted Redis and Postgres);
# CI runs it after `make test`.
faults: install engine
	$(BIN)/pytest -m faults tests/faults

# Benchmarks of the harness itself (fidelity, agreement, overhead, live latency, scale): prints each
# figure against a reference measured in the same run, writes var/bench.json. CI runs `BENCH_ARGS="--short --skip vllm_agreement"`.
BENCH_ARGS ?=
bench: install engine
	$(BIN)/python -m tests.bench $(BENCH_ARGS)

# The same-run race against the peers (GuideLLM, llama-benchy, vllm bench serve) on the real
# llama-server: installs the peers' pinned venvs once under ~/.cache/sparkdash/peers, prints the table,
# writes var/bench-peers.json (docs/testing.md). PEERS_ARGS=--short runs fewer requests.
PEERS_ARGS ?=
bench-peers: install engine
	$(BIN)/python -m tests.bench.peers $(PEERS_ARGS)

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .mypy_cache
