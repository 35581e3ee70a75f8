# tkbench: the two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# postgresql: the server the history tests start in a temporary directory (tests/_postgres.py);
# chromium: the headless browser the dashboard tests load its pages in (tests/_chromium.py);
# systemd: systemd-analyze, which checks the example units (tests/test_examples.py);
# xfsprogs: an XFS with reflinks, on which the copy test's copies must share no extents
# (tests/test_copy.py); strace: which system calls the copy test makes (tests/test_copy.py);
# qemu-system-x86, linux-image-amd64 (the kernel virtme-ng boots), busybox-static (its
# initramfs) and squashfs-tools (the guest's Python image): the QEMU guest of the vm tests,
# whose NVMe, SATA and SAS drives nvme-cli, hdparm, sdparm, sg3-utils and smartmontools
# drive from inside it (tests/_vm.py, docs/testing.md); blktrace: `tkbench capture`
# (docs/replay.md), whose guest tests trace the guest's disks
DEBS := fio nbdkit nbdkit-plugin-python poppler-utils fonts-dejavu-core libpango-1.0-0 libharfbuzz-subset0 \
        libpangoft2-1.0-0 util-linux e2fsprogs fdisk postgresql chromium systemd xfsprogs strace \
        qemu-system-x86 linux-image-amd64 busybox-static squashfs-tools \
        nvme-cli hdparm sdparm sg3-utils smartmontools blktrace
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_DIR ?= demo-run

PREFIX ?= /usr/local
GEN := XDG_CONFIG_HOME=/nonexistent $(BIN)/python -m tkbench.cli.docgen

.PHONY: deps debs venv dev demo test lint typecheck pytest bench clean man install uninstall

deps: debs venv dev

# Debian packages: installed only when missing, so repeated runs need no network.
debs:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing Debian packages: $$missing"; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

venv: $(BIN)/tkbench

# tkbench and what it runs with: all the demo needs
$(BIN)/tkbench: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	@touch $@

# the tests' and linters' extras (pyproject.toml: dev)
dev: $(VENV)/.dev

$(VENV)/.dev: $(BIN)/tkbench
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# The demo: the quick profile on the bundled SSD emulator; ends with the PDF's path.
demo: debs venv
	$(BIN)/tkbench demo --out $(DEMO_DIR)

lint: dev
	$(BIN)/ruff check tkbench tests benchmarks
	$(BIN)/ruff format --check tkbench tests benchmarks

typecheck: dev
	$(BIN)/mypy

# Workers: more than the cores, since most tests wait on fio, the emulator or a disk;
# tests/conftest.py groups what must share one worker (the QEMU guest, a module's run).
# The slowest tests are listed at the end of every run (where the suite's time goes).
TEST_WORKERS ?= 4

pytest: deps
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --durations=40

test: deps lint typecheck pytest

bench: deps
	$(BIN)/python benchmarks/round_overhead.py
	$(BIN)/python benchmarks/report_render.py

# The man page and shell completions, generated from the argparse parser (tkbench/cli/docgen.py).
man: venv
	mkdir -p build
	$(GEN) man >build/tkbench.1
	$(GEN) bash >build/tkbench.bash
	$(GEN) zsh >build/_tkbench

# tkbench on PATH (a link to this checkout's virtualenv), its man page and completions.
install: man
	install -Dm644 build/tkbench.1 $(DESTDIR)$(PREFIX)/share/man/man1/tkbench.1
	install -Dm644 build/tkbench.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tkbench
	install -Dm644 build/_tkbench $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tkbench
	install -d $(DESTDIR)$(PREFIX)/bin
	ln -sfn $(CURDIR)/$(BIN)/tkbench $(DESTDIR)$(PREFIX)/bin/tkbench

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tkbench $(DESTDIR)$(PREFIX)/share/man/man1/tkbench.1 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tkbench \
	    $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tkbench

clean:
	rm -rf $(VENV) $(DEMO_DIR) build .pytest_cache .mypy_cache .ruff_cache
