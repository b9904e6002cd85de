# devtools_tools - build, test, demo, bench, install.
# Variables use the names LuaRocks passes; override any of them on the command line.

# interpreter: lua5.4, or luajit / lua5.1 for the 5.1 ABI
LUA        ?= lua5.4
# finds the flags of the C libraries below
PKG_CONFIG ?= pkg-config
# headers to build against (5.1 headers serve LuaJIT too)
LUA_PC     ?= $(if $(filter luajit lua5.1,$(notdir $(LUA))),lua5.1,lua5.4)
# lua.h lives here
LUA_INCDIR ?= $(shell $(PKG_CONFIG) --variable=includedir $(LUA_PC) 2>/dev/null)/$(LUA_PC)
# C99 compiler
CC         ?= cc
# optimisation and debug flags
CFLAGS     ?= -O2 -g
WARN       ?= -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith -Wcast-qual
# flag that builds a loadable module
LIBFLAG    ?= -shared
LWS_LIBS   ?= $(shell $(PKG_CONFIG) --libs libwebsockets 2>/dev/null || echo -lwebsockets)
# OpenSSL: https for /json/version and WebDriver (src/tls.c, src/http.c)
SSL_LIBS   ?= $(shell $(PKG_CONFIG) --libs openssl 2>/dev/null || echo -lssl -lcrypto)
PCRE_LIBS  ?= $(shell $(PKG_CONFIG) --libs libpcre2-8 2>/dev/null || echo -lpcre2-8)
# libraries of the sample app's server (examples/app)
APP_LIBS   ?= $(shell $(PKG_CONFIG) --libs libwebsockets sqlite3 jansson 2>/dev/null || echo -lwebsockets -lsqlite3 -ljansson)
# where build outputs go
BUILD      ?= build/$(LUA)
# install prefix
PREFIX     ?= /usr/local
# staging root for packagers
DESTDIR    ?=
LUA_VER    ?= $(if $(filter luajit lua5.1,$(notdir $(LUA))),5.1,5.4)
# where core.so is installed (LuaRocks: LIBDIR)
LUA_LIBDIR ?= $(PREFIX)/lib/lua/$(LUA_VER)
# where the .lua files are installed (LuaRocks: LUADIR)
LUA_SHAREDIR ?= $(PREFIX)/share/lua/$(LUA_VER)
# where the command line devtools-tools is installed
BINDIR     ?= $(PREFIX)/bin
# where its man page goes (man1/ below it)
MANDIR     ?= $(PREFIX)/share/man
# busted's runner script, run with $(LUA)
BUSTED     ?= /usr/bin/busted


MODULE  := $(BUILD)/devtools_tools/core.so
SRCS    := $(wildcard src/*.c)
OBJS    := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
# the library: its facade and one folder per layer (base/, rt/, wire/,
# schema/, tools/ with the page-side js/, page/, browser/), what every front
# end shows (present/), the command line (cli/, run by bin/devtools-tools) and
# the MCP server (mcp/, `devtools-tools mcp`).
# The Neovim plugin's (nvim/, health.lua) are used from the runtimepath
# only, so `make install` leaves them out.
LIBDIRS := base rt wire schema tools tools/js page browser trace present cli mcp
LIBFILES := lua/devtools_tools/init.lua \
	$(foreach d,$(LIBDIRS),$(wildcard lua/devtools_tools/$(d)/*.lua lua/devtools_tools/$(d)/*.js))
SUPPORT_SRCS := $(wildcard spec/support/*.c)
SUPPORT := $(patsubst spec/support/%.c,$(BUILD)/support/%,$(SUPPORT_SRCS))
ALL_CFLAGS = -std=c99 -fPIC -fvisibility=hidden $(WARN) $(CFLAGS) -I$(LUA_INCDIR)

.PHONY: all deps deps-demo test test-gc check-c demo bench bench-doc docs bench-jansson conformance conformance-ajv lint differential fixtures install rock-install uninstall clean asan asan-build fuzz valgrind nvim

all: $(MODULE)

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Never link liblua: the interpreter that loads us provides it.
# Built to a temporary name and renamed, so a running test never loads half a file.
$(MODULE): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBFLAG) $(CFLAGS) $(LDFLAGS) -o $@.tmp $(OBJS) $(LWS_LIBS) $(SSL_LIBS) $(PCRE_LIBS) -lm
	mv -f $@.tmp $@

$(BUILD)/support/%: spec/support/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -o $@ $< $(LWS_LIBS) $(SSL_LIBS)

# Speed and memory against floors measured in the same run; prints a table
# and writes bench/results.json (needs chromium; about 2 minutes).
bench: all $(SUPPORT)
	DEVTOOLS_TOOLS_BUILD=$(BUILD) $(LUA) bench/bench.lua

# The performance page: BENCH_RUNS runs of the bench, one after the other,
# recorded in doc/performance.json (the machine, its load, every row), then
# doc/performance.md written from them (median and range of the runs). A
# section that fails in a run (a child past its time on a loaded machine)
# is named on the page; a run that writes no results stops it.
BENCH_RUNS ?= 3
bench-doc: all $(SUPPORT)
	@rm -rf $(BUILD)/bench-doc && mkdir -p $(BUILD)/bench-doc
	@i=1; while [ $$i -le $(BENCH_RUNS) ]; do \
		echo "== bench run $$i of $(BENCH_RUNS)"; \
		BENCH_RESULTS=$(BUILD)/bench-doc/run-$$i.json DEVTOOLS_TOOLS_BUILD=$(BUILD) $(LUA) bench/bench.lua; \
		test -s $(BUILD)/bench-doc/run-$$i.json || exit 1; \
		i=$$((i + 1)); \
	done
	lua5.4 tools/bench_doc.lua collect $(BUILD)/bench-doc/run-*.json
	$(MAKE) -s docs

# The parts of README.md and doc/*.md that have their source elsewhere (the
# API reference from types/, the layers, the performance tables, the command
# line's reference) and the man page doc/devtools-tools.1 (from the command
# line's definition, lua/devtools_tools/cli/definition.lua): see
# tools/docs.lua; spec/unit/docs_spec.lua checks they are current.
docs:
	@$(MAKE) -s LUA=lua5.4 all
	lua5.4 tools/docs.lua

# Seeded generated pages, chrome-devtools-mcp 1.11 (from npm, cached outside the tree) beside our API:
# the same groups, schemas, verdicts and results, or a divergence (tools/differential; DIFF_SEED, DIFF_PAGES).
differential: all $(BUILD)/support/static_server
	@sh tools/differential/run.sh $(LUA) $(BUILD)

# Why json.c is not built on libjansson: checks and timings (needs libjansson-dev).
bench-jansson: all
	@mkdir -p $(BUILD)/bench
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I$(LUA_INCDIR) -o $(BUILD)/bench/jansson_compare \
		bench/jansson_compare.c $$($(PKG_CONFIG) --libs $(LUA_PC)) -ljansson -lm
	$(BUILD)/bench/jansson_compare $(BUILD)

# The sample app's backend (examples/app): one C file on libwebsockets, SQLite and jansson.
.PHONY: app
app: build/app/server

build/app/server: examples/app/server.c
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(WARN) $(CFLAGS) $(LDFLAGS) -o $@.tmp $< $(APP_LIBS)
	mv -f $@.tmp $@

# Neovim: the core built for Neovim's LuaJIT (5.1 ABI, so one build also
# loads in lua5.1 and luajit) and copied to lua/devtools_tools/core.so, where
# Neovim's own loader finds it on the runtimepath. Git ignores it; the
# Lua 5.4 build and `make install` do not use it. Renamed into place, so a
# running Neovim that loaded the old file is not disturbed.
NVIM_CORE = lua/devtools_tools/core.so
nvim:
	$(MAKE) -s LUA=luajit all
	cp build/luajit/devtools_tools/core.so $(NVIM_CORE).tmp
	mv -f $(NVIM_CORE).tmp $(NVIM_CORE)
	@# :help devtools_tools without a plugin manager (which would run it too)
	@if command -v nvim >/dev/null 2>&1; then \
		nvim --headless -u NONE -i NONE -n -c 'helptags doc' -c 'qa!' </dev/null >/dev/null 2>&1 || true; fi

# Installs missing Debian packages when run as root; otherwise names the
# command. tools/deps.sh splits them: running, the demo, the tests.
deps:
	@sh tools/deps.sh test
deps-demo:
	@sh tools/deps.sh demo

# The specs, after checking that the C core builds warning-free for both
# ABIs; with the library's own specs again under LuaJIT (what Neovim runs),
# in the same run: tools/run-specs.sh runs the files of both side by side
# (SPEC_JOBS at a time), then shows the ten slowest.
# The last line counts each spec once, "N passed, N failed[, N skipped]":
# the Lua 5.4 run's counts, with a spec that fails only under LuaJIT moved
# from passed to failed (a LuaJIT build that fails counts as a failure).
LUAJIT_SPECS = spec/unit/nojit_spec.lua spec/unit/json_spec.lua spec/unit/schema_spec.lua \
	spec/unit/regex_spec.lua spec/unit/cdp_spec.lua spec/unit/page_spec.lua spec/integration/task_spec.lua \
	spec/unit/observe_spec.lua spec/unit/present_spec.lua spec/unit/wait_spec.lua \
	spec/unit/marshal_spec.lua spec/unit/endpoint_spec.lua spec/unit/mcp_spec.lua spec/unit/signal_spec.lua \
	spec/integration/pipe_transport_spec.lua spec/integration/discovery_spec.lua \
	spec/integration/lifetime_spec.lua spec/integration/hostile_spec.lua spec/integration/observe_spec.lua \
	spec/integration/webmcp_spec.lua spec/integration/tls_transport_spec.lua spec/integration/remote_spec.lua \
	spec/integration/page_shapes_spec.lua spec/integration/apps_spec.lua spec/integration/frontend_api_spec.lua \
	spec/integration/live_spec.lua spec/integration/unix_socket_spec.lua spec/integration/holder_spec.lua \
	spec/unit/trace_spec.lua spec/integration/trace_spec.lua spec/unit/repl_spec.lua
# On the LuaJIT x64 builds whose JIT miscompiles pairs() (Debian 12's: see
# lua/devtools_tools/base/nojit.lua) the library keeps the JIT out of its own
# functions, but busted, luassert and penlight have no such guard and their
# traces crashed runs too: there the LuaJIT run is interpreted throughout
# (spec/unit/nojit_spec.lua checks the guard in a LuaJIT of its own, JIT on).
LUAJIT_FLAGS = $(shell luajit -e 'io.write(jit.arch == "x64" and jit.version == "LuaJIT 2.1.0-beta3" and "-joff" or "")' 2>/dev/null)
# (what they need is built first, BUILD_JOBS compilers at a time)
BUILD_JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
test: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) check-c all $(SUPPORT) app
	@rm -f build/spec-totals; \
	if [ "$(LUA)" = luajit ] || ! command -v luajit >/dev/null; then \
		SPEC_TOTALS=build/spec-totals sh tools/run-specs.sh $(LUA) $(BUSTED) $(BUILD); \
	elif $(MAKE) -s -j$(BUILD_JOBS) LUA=luajit all build/luajit/support/static_server build/luajit/support/pipe_echo \
			build/luajit/support/ws_server build/luajit/support/tls_proxy; then \
		SPEC_TOTALS=build/spec-totals sh tools/run-specs.sh $(LUA) $(BUSTED) $(BUILD) \
			--also "luajit $(LUAJIT_FLAGS)" build/luajit $(LUAJIT_SPECS); \
	else \
		echo "the LuaJIT build failed"; \
		SPEC_TOTALS=build/spec-totals sh tools/run-specs.sh $(LUA) $(BUSTED) $(BUILD); \
		printf 'C\t0 1 0\n' >> build/spec-totals; \
	fi; \
	sh tools/run-specs.sh --totals build/spec-totals

# The whole suite once more with the garbage collector collecting far more
# often and a full collection after each spec (spec/gc_helper.lua).
test-gc: deps all $(SUPPORT) app
	@SPEC_HELPER=spec/gc_helper.lua sh tools/run-specs.sh $(LUA) $(BUSTED) $(BUILD)

# The official JSON-Schema-Test-Suite (draft-07, vendored in
# spec/json-schema-test-suite at a pinned commit) against
# devtools_tools.schema, under $(LUA) and then LuaJIT. Fails on any failure
# spec/conformance-tolerated.txt does not list with its reason, and on a
# listed case that passes. JSON_SCHEMA_TEST_SUITE=/path runs another copy.
JSON_SCHEMA_TEST_SUITE ?= spec/json-schema-test-suite
conformance: all
	@$(LUA) tools/conformance.lua $(BUILD) --suite "$(JSON_SCHEMA_TEST_SUITE)"
	@if [ "$(LUA)" != luajit ] && command -v luajit >/dev/null; then \
		echo "== the same under LuaJIT"; \
		$(MAKE) -s LUA=luajit all && \
		luajit $(LUAJIT_FLAGS) tools/conformance.lua build/luajit --suite "$(JSON_SCHEMA_TEST_SUITE)"; \
	fi

# The reasons in spec/conformance-tolerated.txt, checked case by case
# against the ajv 6 chrome-devtools-mcp bundles (needs node and npm once:
# the differential run's cache).
conformance-ajv:
	@DIFF_CACHE=$$(sh tools/differential/setup.sh) && export DIFF_CACHE && \
	node tools/differential/suite.js "$(JSON_SCHEMA_TEST_SUITE)" spec/conformance-tolerated.txt

# luacheck (Debian's lua-check) over the project's Lua, as .luacheckrc
# says: the library and the command line, the specs, the examples and the
# Neovim plugin.
LUACHECK ?= luacheck
lint: deps
	$(LUACHECK) --no-color -q lua spec bin/devtools-tools examples plugin

# Rebuilds the committed fixture apps (spec/fixtures/apps/) from the npm packages tools/fixtures/ locks (needs node and npm).
fixtures:
	node tools/fixtures/build.mjs

# The C core must build warning-free for both ABIs.
check-c:
	$(MAKE) -s BUILD=build/check54 CFLAGS="-O2 -g -Werror" all
	$(MAKE) -s BUILD=build/check51 LUA=luajit CFLAGS="-O2 -g -Werror" all

# Unit specs of the C core with AddressSanitizer and UBSan. lua5.4 itself is
# not instrumented, so the runtime is preloaded; leaks are valgrind's job.
SANITIZE = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)"
C_SPECS = spec/unit/json_spec.lua spec/integration/pipe_transport_spec.lua spec/unit/cdp_spec.lua spec/unit/regex_spec.lua \
	spec/unit/schema_spec.lua spec/integration/ws_transport_spec.lua spec/integration/tls_transport_spec.lua \
	spec/unit/mcp_spec.lua spec/unit/signal_spec.lua spec/integration/unix_socket_spec.lua spec/unit/trace_spec.lua
asan-build:
	$(MAKE) -s BUILD=build/asan CFLAGS="-O1 -g $(SANITIZE)" LIBFLAG="-shared $(SANITIZE)" all $(patsubst spec/support/%.c,build/asan/support/%,$(SUPPORT_SRCS))
asan: asan-build
	$(SANITIZE_ENV) sh tools/run-specs.sh $(LUA) $(BUSTED) build/asan $(wildcard $(C_SPECS))

# Fuzzing on the ASan/UBSan build (tools/fuzz.lua): the JSON codec, the
# framing of both transports and core.http.get against fake peers, the
# validator, base64, and the front ends' walks of a schema (present: each
# within a time limit per schema). Seeded and bounded: FUZZ_SEED,
# FUZZ_ITERATIONS (cases per target) or FUZZ_SECONDS (all targets, default
# 60); FUZZ_TARGETS picks from json,pipe,ws,http,schema,base64,present. A reported case runs again with the
# FUZZ_CASE line it prints. Ends with "N inputs tried, N crashes, N hangs,
# N failed checks".
fuzz: deps asan-build
	@$(SANITIZE_ENV) DEVTOOLS_TOOLS_BUILD=build/asan $(LUA) tools/fuzz.lua

# The same specs under valgrind: no invalid access, no definite leak.
valgrind: all $(SUPPORT)
	VALGRIND="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite" \
	sh tools/run-specs.sh $(LUA) $(BUSTED) $(BUILD) $(wildcard $(C_SPECS))

# The main job: the sample app, headless Chromium and the multi-step workflow.
demo: deps-demo all app
	DEVTOOLS_TOOLS_BUILD=$(BUILD) $(LUA) examples/demo.lua build/app/server

# The command runs under $(LUA) and is told where the library went (it also
# finds it relative to itself, so a DESTDIR staging tree works as it is).
install: all
	install -d $(DESTDIR)$(LUA_LIBDIR)/devtools_tools \
		$(foreach d,$(LIBDIRS),$(DESTDIR)$(LUA_SHAREDIR)/devtools_tools/$(d))
	install -m 755 $(MODULE) $(DESTDIR)$(LUA_LIBDIR)/devtools_tools/core.so
	@# (each file to the same place beneath share/lua/V as beneath lua/)
	for f in $(LIBFILES); do \
		install -m 644 "$$f" "$(DESTDIR)$(LUA_SHAREDIR)/$${f#lua/}" || exit 1; \
	done
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	sed -e '1s|.*|#!/usr/bin/env $(LUA)|' \
		-e 's|^local INSTALLED_LUA, INSTALLED_LIB = nil, nil$$|local INSTALLED_LUA, INSTALLED_LIB = "$(LUA_SHAREDIR)", "$(LUA_LIBDIR)"|' \
		bin/devtools-tools > $(DESTDIR)$(BINDIR)/devtools-tools.tmp
	chmod 755 $(DESTDIR)$(BINDIR)/devtools-tools.tmp
	mv -f $(DESTDIR)$(BINDIR)/devtools-tools.tmp $(DESTDIR)$(BINDIR)/devtools-tools
	install -m 644 doc/devtools-tools.1 $(DESTDIR)$(MANDIR)/man1/devtools-tools.1
	@# the LUA_PATH, LUA_CPATH, PATH and MANPATH lines to use, when the
	@# interpreter, the shell or man does not look where it installed
	@[ "$(INSTALL_HINT)" = no ] || env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 \
		$(LUA) tools/install_hint.lua "$(LUA_SHAREDIR)" "$(LUA_LIBDIR)" "$(BINDIR)" "$(MANDIR)"

# What `luarocks make` runs (rockspec/): builds in a temporary directory and
# installs into the rock from there, so no build output is left in the source
# tree. LuaRocks passes LUA, LUA_INCDIR, CFLAGS, LIBFLAG and INST_*.
rock-install:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(MAKE) BUILD="$$tmp" LWS_LIBS="-L$(LWS_LIBDIR) $(LWS_LIBS)" PCRE_LIBS="-L$(PCRE_LIBDIR) $(PCRE_LIBS)" \
		SSL_LIBS="-L$(SSL_LIBDIR) $(SSL_LIBS)" \
		LUA_INCDIR="$(LUA_INCDIR)" CFLAGS="$(CFLAGS) -I$(LWS_INCDIR) -I$(SSL_INCDIR)" all && \
	$(MAKE) BUILD="$$tmp" LUA_LIBDIR="$(INST_LIBDIR)" LUA_SHAREDIR="$(INST_LUADIR)" \
		BINDIR="$(INST_BINDIR)" MANDIR="$(INST_PREFIX)/man" INSTALL_HINT=no install

uninstall:
	rm -f $(DESTDIR)$(LUA_LIBDIR)/devtools_tools/core.so
	rm -rf $(DESTDIR)$(LUA_SHAREDIR)/devtools_tools
	rm -f $(DESTDIR)$(BINDIR)/devtools-tools $(DESTDIR)$(MANDIR)/man1/devtools-tools.1

clean:
	rm -rf build $(NVIM_CORE)
