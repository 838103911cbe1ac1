# dbperf: `make demo` sets everything up and runs the main job on a sandboxed MariaDB;
# `make test` runs the whole test suite (unit tests and integration tests against real
# sandboxed servers). Both install what they need (Debian packages) first.

CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEBIAN_PACKAGES := mariadb-server sysbench python3

.PHONY: deps build demo test lint bench clean

# Installs the Debian packages the demo and the tests use, only when something is missing.
deps:
	@missing=""; \
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing="$$missing mariadb-server"; \
	command -v sysbench >/dev/null 2>&1 || missing="$$missing sysbench"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }

build:
	$(CARGO) build --release --locked -p dbperf

demo: deps build
	./scripts/demo.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

test: deps lint
	$(CARGO) test --locked --workspace

bench: deps build
	./bench/vs-sysbench

clean:
	$(CARGO) clean
