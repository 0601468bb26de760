# skill-mcp - the only entry points: build, run, test, bench, install.
#
#   make            build build/skill-mcp (in parallel on every core unless -j is given)
#   make man        build/skill-mcp.1, the man page, from the binary's own flag table
#   make deb        build/skill-mcp_VERSION_ARCH.deb (dpkg-deb; packaging/build-deb.sh)
#   make run        install missing packages, build, serve ./skills on 127.0.0.1:8000 (PORT=N)
#   make check      the inner loop: unit, end-to-end, lint and the tooling self-test (a few minutes)
#   make test       everything: unit, end-to-end, conformance, then all again under ASan+UBSan
#   make asan       ASan+UBSan build into build-asan/ and run unit + e2e against it
#   make install    PREFIX=/usr/local DESTDIR= (binary, man page, unit, /etc/skill-mcp/config.yaml
#                   unless one exists, /srv/skill-mcp/skills)
#   make clean

# Every core by default; a -j on the command line wins over this one.
ifeq ($(filter -j% j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

PREFIX  ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
MANDIR  ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
# The skills root the binary uses when no --skills is given and ./skills
# does not exist (CFG_INSTALLED_ROOT in server/config.h).
SKILLSROOT := /srv/skill-mcp/skills
PORT    ?= 8000
CC      ?= cc
PKGS    := libmicrohttpd jansson yaml-0.1 libuv libpcre2-8 libcrypto libarchive hiredis libcurl jose
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla \
           -Wpointer-arith -Wcast-qual -Wmissing-prototypes -Wundef -Wno-unused-parameter
# Messages are cut to fixed buffers on purpose; gcc's truncation warning
# flags every such snprintf. Paths whose truncation matters are checked.
ifeq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),)
WARN    += -Wno-format-truncation
endif
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -DSKILL_VERSION='"$(VERSION)"' $(WARN) -g -MMD -MP
OPT     ?= -O2
# pkg-config's message names a package it cannot find; the build stops on it
# (when a compile or link needs the flags, so `make deps` still runs).
pkg_flags = $(if $(findstring PKG-CONFIG-FAILED,$1),$(error pkg-config failed: $(filter-out PKG-CONFIG-FAILED,$1) (make deps installs the missing packages)),$1)
PKG_CFLAGS = $(call pkg_flags,$(shell pkg-config --cflags $(PKGS) 2>&1 || echo PKG-CONFIG-FAILED))
# libcurl, libarchive and libjose are loaded when a feature first needs one
# (server/dynlib.h): compiled against, not linked; their sonames are the
# ones built against.
DLPKGS  := libcurl libarchive jose
PKG_LIBS   = $(call pkg_flags,$(shell pkg-config --libs $(filter-out $(DLPKGS),$(PKGS)) 2>&1 || echo PKG-CONFIG-FAILED)) -lpthread -lm
# Tests read archives with libarchive itself, apart from the server's loading.
TEST_DLLIBS = $(shell pkg-config --libs $(DLPKGS) 2>/dev/null)
soname_of = $(shell objdump -p "$$(pkg-config --variable=libdir $1 2>/dev/null)/$2.so" 2>/dev/null | awk '/SONAME/{print $$2}')
# and the package holding each (what a message that it is missing names)
package_of = $(shell dpkg -S "$$(readlink -f "$$(pkg-config --variable=libdir $1 2>/dev/null)/$2.so")" 2>/dev/null | awk -F: 'NR == 1 {print $$1}')
DL_SONAMES = $(foreach l,CURL:libcurl:libcurl ARCHIVE:libarchive:libarchive JOSE:jose:libjose,$(call dl_soname_flag,$(subst :, ,$l)))
dl_soname_flag = $(if $(call soname_of,$(word 2,$1),$(word 3,$1)),-DDL_SONAME_$(word 1,$1)='"$(call soname_of,$(word 2,$1),$(word 3,$1))"') \
    $(if $(call package_of,$(word 2,$1),$(word 3,$1)),-DDL_PACKAGE_$(word 1,$1)='"$(call package_of,$(word 2,$1),$(word 3,$1))"')

BUILD   ?= build
SAN     ?=
SRCS    := $(wildcard server/*.c)
LIBSRCS := $(filter-out server/main.c,$(SRCS))
OBJS    := $(SRCS:server/%.c=$(BUILD)/obj/%.o)
LIBOBJS := $(LIBSRCS:server/%.c=$(BUILD)/obj/%.o)
UNITSRC := $(wildcard tests/unit/test_*.c)
UNITBIN := $(UNITSRC:tests/unit/%.c=$(BUILD)/tests/%)

CFLAGS_ALL = $(BASE_CFLAGS) $(OPT) $(SAN) $(PKG_CFLAGS) $(CFLAGS)
LDFLAGS_ALL = $(SAN) $(LDFLAGS)

.PHONY: all run check test unit unit-build e2e conformance docs-commands asan asan-build tsan install clean deps \
        test-deps fuzz lint selftest bench bench-smoke man deb

all: $(BUILD)/skill-mcp

# V=1 shows the full commands.
Q := $(if $(V),,@)

$(BUILD)/skill-mcp: $(OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

$(BUILD)/obj/%.o: server/%.c | $(BUILD)/obj
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(BUILD)/obj/dynlib.o: server/dynlib.c | $(BUILD)/obj
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) $(DL_SONAMES) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIBOBJS) | $(BUILD)/tests
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_ALL) -Iserver -o $@ $< $(LIBOBJS) $(LDFLAGS_ALL) $(UNIT_LDFLAGS) $(PKG_LIBS) $(TEST_DLLIBS)

# test_hotpath counts the lock and parser calls of the server's objects: the
# functions its WRAPPED list names.
LPAREN := (
HOTPATH_WRAP = $(shell sed -n 's/^ *X$(LPAREN)[^,]*, *\([a-z_0-9]*\),.*/\1/p' tests/unit/test_hotpath.c)
$(BUILD)/tests/test_hotpath: UNIT_LDFLAGS = $(foreach f,$(HOTPATH_WRAP),-Wl,--wrap=$(f))

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

-include $(OBJS:.o=.d) $(UNITBIN:=.d)

# ---- set-up ---------------------------------------------------------------

# Installs the Debian packages the build needs (as root), or prints the
# exact command and stops.
deps:
	@tests/deps.sh build

test-deps:
	@tests/deps.sh test

# Packages first, then the build: in order even under -j.
run: deps
	@$(MAKE) -s all
	$(BUILD)/skill-mcp --skills skills --host 127.0.0.1 --port $(PORT)

# ---- tests ----------------------------------------------------------------

unit-build: $(UNITBIN)

# test_sdnotify runs the server binary.
unit: $(BUILD)/skill-mcp $(UNITBIN)
	@tests/run-unit.sh $(BUILD)

e2e: all
	@tests/run-e2e.sh $(BUILD)/skill-mcp

conformance: all
	@tests/run-conformance.sh $(BUILD)/skill-mcp

# Every command shown in the docs is run here or mapped to the test that
# exercises it (tests/docs-commands.txt).
docs-commands: all
	@node tests/docs-commands.mjs $(BUILD)/skill-mcp

# The inner loop: what a change most often breaks, in a few minutes.
# `make test` stays the full run.
check: test-deps
	@$(MAKE) -s all unit-build
	@tests/run-unit.sh $(BUILD)
	@tests/run-e2e.sh $(BUILD)/skill-mcp
	@tests/lint.sh $(BUILD)
	@tests/selftest.sh

test: test-deps
	@tests/run-all.sh

asan-build:
	$(MAKE) BUILD=build-asan OPT=-O1 CC=clang \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    build-asan/skill-mcp unit-build

# ThreadSanitizer over the snapshot swap test (readers racing rescans),
# the rule file swap (readers racing reloads), the page table (readers racing
# replacements) and the in-flight count.
tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 CC=clang SAN="-fsanitize=thread" build-tsan/tests/test_skills build-tsan/tests/test_auth \
	    build-tsan/tests/test_rcache build-tsan/tests/test_pcount \
	    build-tsan/tests/test_reloadable build-tsan/tests/test_dynlib
	@TSAN_OPTIONS=halt_on_error=1 tests/run-unit.sh build-tsan

asan: asan-build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    tests/run-unit.sh build-asan
	@ASAN_OPTIONS=detect_leaks=1 tests/run-e2e.sh build-asan/skill-mcp

fuzz:
	@tests/fuzz/build.sh

bench:
	@bench/run.sh
	@bench/scripts.sh
	@bench/scale.sh
	@bench/redact.sh

bench-smoke:
	@bench/run.sh --smoke
	@bench/scripts.sh --smoke
	@bench/scale.sh --smoke
	@bench/redact.sh --smoke

lint:
	@tests/lint.sh $(BUILD)

# The test tooling's own guarantees (skips, early exits, pkg-config errors).
selftest:
	@tests/selftest.sh

# The man page comes from the binary (--help-man): the same table as --help.
man: $(BUILD)/skill-mcp.1

$(BUILD)/skill-mcp.1: $(BUILD)/skill-mcp
	$(Q)$(BUILD)/skill-mcp --help-man >$@.tmp && mv $@.tmp $@

# An existing config is the operator's: never overwritten.
install: all man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/skill-mcp $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/skill-mcp $(DESTDIR)$(SKILLSROOT)
	install -m 0755 $(BUILD)/skill-mcp $(DESTDIR)$(PREFIX)/bin/skill-mcp
	install -m 0644 $(BUILD)/skill-mcp.1 $(DESTDIR)$(MANDIR)/man1/skill-mcp.1
	sed -e 's#/usr/local/bin/skill-mcp#$(PREFIX)/bin/skill-mcp#' \
	    -e 's#/etc/skill-mcp/#$(SYSCONFDIR)/skill-mcp/#' \
	    deploy/systemd/skill-mcp.service >$(DESTDIR)$(UNITDIR)/skill-mcp.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/skill-mcp.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/skill-mcp/config.yaml ] || \
	    install -m 0644 deploy/systemd/config.yaml $(DESTDIR)$(SYSCONFDIR)/skill-mcp/config.yaml
	cp -R skills $(DESTDIR)$(PREFIX)/share/skill-mcp/
	cp -R hooks $(DESTDIR)$(PREFIX)/share/skill-mcp/

deb: all man
	@packaging/build-deb.sh $(BUILD)/skill-mcp $(BUILD)

clean:
	rm -rf build build-asan build-tsan build-fuzz
