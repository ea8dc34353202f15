# gpufleet — build, run, test.  See README.md.
#
#   make              build bin/gpufleetd
#   make run          bootstrap, local PostgreSQL, secrets, migrate, serve
#   make test         bootstrap, local PostgreSQL, build (plain + sanitized), run every test
#   make lint         OpenAPI lint (pinned @redocly/cli)
#   make fmt          format C (clang-format) and JavaScript (prettier)
#   make fmt-check    fail on unformatted C or JavaScript, or on eslint findings
#   make SANITIZE=address,undefined   build with sanitizers (into build/san, bin/gpufleetd-san)

CC        ?= cc
PKGS      := libmicrohttpd libpq jansson libjwt libssh2 libcrypto libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wno-format-nonliteral -Wvla
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -Ibuild/gen $(PKG_CFLAGS)
LDLIBS    += $(PKG_LIBS) -lpthread -lm

VERSION   := 0.1.0
GIT_REV   := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
CFLAGS    += -DGPUFLEET_VERSION='"$(VERSION)"' -DGPUFLEET_COMMIT='"$(GIT_REV)"'

ifdef SANITIZE
BUILD     := build/san
BIN       := bin/gpufleetd-san
CFLAGS    += -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
LDFLAGS   += -fsanitize=$(SANITIZE)
else
BUILD     := build/rel
BIN       := bin/gpufleetd
endif

.DEFAULT_GOAL := all

# Explicit source lists.
COMMON_SRC := common/log.c common/util.c common/secret.c common/sbuf.c common/jw.c \
              common/crypt.c common/utf8.c common/sshkey.c common/netpolicy.c common/jwk.c \
              common/dheap.c
DB_SRC     := db/db.c db/result.c db/migrate.c db/audit.c db/gpu_models.c db/idempotency.c db/briefs.c \
              db/stacks.c db/credentials.c db/pools.c db/hosts.c db/jobs.c db/gates.c \
              db/work_reports.c db/usage.c db/costs.c db/recommend.c db/events.c db/monitor_lease.c \
              db/monitor.c db/gpu_metrics.c
API_SRC    := api/config.c api/reply.c api/http.c api/routes.c api/auth.c api/rolemap.c \
              api/jsonspec.c api/cors.c \
              api/list.c api/metrics.c api/service.c api/audit.c api/gpu_models.c api/briefs.c \
              api/stacks.c api/sizing.c api/credentials.c api/pools.c \
              api/hosts.c api/gates.c api/resource.c api/work_reports.c api/costs.c \
              api/stop.c api/recommend.c api/ui.c api/events.c api/health.c
# Background services: used by the API and by the workers; they know no HTTP.
SVC_SRC    := service/catalog.c service/recommend.c service/stop.c service/idle_policy.c \
              service/events_hub.c service/events_sub.c service/jwks.c service/periodic.c
PLAN_SRC   := planner/sizing.c planner/brief.c planner/stack.c planner/cuda_compat.c \
              planner/host_state.c \
              planner/gate.c planner/readiness.c planner/costs.c planner/recommend.c \
              planner/xid_policy.c
GEN_SRC    := build/gen/migrations_blob.c build/gen/openapi_blob.c build/gen/ui_blob.c \
              build/gen/xid_catalog.c
# The status page (served under /ui/), in the order embedded.
UI_FILES   := ui/index.html ui/style.css ui/icon.svg ui/app.js ui/api.js ui/live.js \
              ui/render.js ui/dom.js ui/health.js ui/rollouts.js
MAIN_SRC   := api/main.c
include provisioner/parsers.mk
include provisioner/ssh.mk
PROV_SRC   := $(PARSER_SRC) $(SSH_SRC) provisioner/shell.c provisioner/steps.c \
              provisioner/gate_checks.c provisioner/gate_inventory.c provisioner/gate_judges.c \
              provisioner/worker.c provisioner/job_writer.c \
              provisioner/job_core.c provisioner/job_provision.c provisioner/job_gate.c \
              provisioner/job_stop.c provisioner/monitor.c provisioner/monitor_sample.c
LIB_SRC    := $(COMMON_SRC) $(PLAN_SRC) $(PROV_SRC) $(DB_SRC) $(SVC_SRC) $(API_SRC)

UNIT_SRC   := tests/unit/main.c tests/unit/test_util.c tests/unit/test_jsonspec.c \
              tests/unit/test_auth.c tests/unit/test_oidc.c tests/unit/test_jwk.c \
              tests/unit/test_list.c \
              tests/unit/test_routes.c \
              tests/unit/test_config.c tests/unit/test_planner.c \
              tests/unit/test_crypt.c tests/unit/test_sshkey.c \
              tests/unit/test_provision.c tests/unit/test_gate.c tests/unit/test_costs.c \
              tests/unit/test_recommend.c tests/unit/test_gate_property.c \
              tests/unit/test_host_state.c tests/unit/test_db.c \
              tests/unit/test_xid.c tests/unit/test_monitor_sample.c tests/unit/test_utf8.c \
              tests/unit/test_netpolicy.c tests/unit/test_dheap.c

# Signed webhooks: the pure part, the table (sealed secrets: db/sealed.c, shared with
# credentials), the dispatcher (its loop, its horizon, its HTTP side), the routes.
LIB_SRC    += common/webhook.c db/sealed.c db/webhooks.c service/webhooks.c \
              service/webhook_horizon.c service/webhook_send.c api/webhooks.c
UNIT_SRC   += tests/unit/test_webhook.c
UNIT_SRC   += tests/unit/test_health.c
UNIT_SRC   += tests/unit/test_metrics.c

# Automatic recovery of hosts the monitor isolated: the planner, the table, the driver
# (in the worker process), the route.
LIB_SRC    += planner/recovery.c db/recovery.c service/recovery.c api/recovery.c
UNIT_SRC   += tests/unit/test_recovery.c
UNIT_SRC   += tests/unit/test_recommend_idle.c
UNIT_SRC   += tests/unit/test_periodic.c

# Throughput baselines with their conditions (docs/rollouts.md §1): the matching, the table
# and the comparison, the routes.
LIB_SRC    += planner/baseline.c db/baselines.c api/baselines.c
UNIT_SRC   += tests/unit/test_baseline.c

# Stack rollouts (docs/rollouts.md): the read side (document, list, cost view) and the
# routes.
LIB_SRC    += db/rollouts_read.c api/rollouts.c
UNIT_SRC   += tests/unit/test_rollouts_api.c
# The rollout engine: the planner, the table's writes (create, control, the driver's), the
# driver (in the worker process).
LIB_SRC    += planner/rollout.c db/rollouts.c service/rollout.c
UNIT_SRC   += tests/unit/test_rollout.c

LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o) $(GEN_SRC:build/gen/%.c=$(BUILD)/gen/%.o)
MAIN_OBJ   := $(MAIN_SRC:%.c=$(BUILD)/%.o)
UNIT_OBJ   := $(UNIT_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN   := $(BUILD)/unit-tests

MIGRATIONS := $(sort $(wildcard migrations/*.sql))

.PHONY: all gen run test unit lint clean bootstrap fmt fmt-c fmt-js fmt-check fmt-check-c fmt-check-js \
        lint-js js-tools routes
all: $(BIN)

$(BIN): $(MAIN_OBJ) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(UNIT_BIN): $(UNIT_OBJ) $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/gen/%.o: build/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

# Embedded assets: migrations, the OpenAPI document and the status page travel inside
# the binary.
build/gen/migrations_blob.c: scripts/embed $(MIGRATIONS) migrations
	@mkdir -p $(dir $@)
	scripts/embed migrations $(MIGRATIONS) > $@.tmp && mv $@.tmp $@

build/gen/openapi_blob.c: scripts/embed openapi/openapi.yaml
	@mkdir -p $(dir $@)
	scripts/embed openapi openapi/openapi.yaml > $@.tmp && mv $@.tmp $@

build/gen/ui_blob.c: scripts/embed $(UI_FILES)
	@mkdir -p $(dir $@)
	scripts/embed ui $(UI_FILES) > $@.tmp && mv $@.tmp $@

# The generated sources alone (scripts/test makes them before it runs the plain and the
# sanitized builds side by side: both read them).
gen: $(GEN_SRC)

# NVIDIA's Xid catalog as a C table (planner/xid_policy.c); the script checks the CSV.
build/gen/xid_catalog.c: scripts/gen-xid-catalog data/xid_catalog.csv
	@mkdir -p $(dir $@)
	scripts/gen-xid-catalog data/xid_catalog.csv > $@.tmp && mv $@.tmp $@

bootstrap:
	@scripts/bootstrap

unit: $(UNIT_BIN)
	$(UNIT_BIN)

run: bootstrap
	@scripts/run

test: bootstrap
	@scripts/test

lint: bootstrap
	@scripts/lint-openapi

# Every C file the project owns (generated code and fixtures aside).
FMT_FILES   = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v '^tests/fixtures/')
# Every JavaScript file (tests, the status page, bench helpers): prettier (.prettierrc.json)
# and eslint (eslint.config.js), both pinned in package.json and run from node_modules.
JS_FILES    = $(shell git ls-files '*.js' '*.mjs' '*.cjs' 2>/dev/null | grep -v '^tests/fixtures/')
NODE_BIN    := node_modules/.bin

fmt: fmt-c fmt-js

fmt-c:
	clang-format -i $(FMT_FILES)

fmt-js: js-tools
	$(NODE_BIN)/prettier --log-level warn --write $(JS_FILES)

# Fails (and names the files) when any C or JavaScript file is not formatted, or eslint
# finds anything; make test runs each of the three.
fmt-check: fmt-check-c fmt-check-js lint-js

fmt-check-c:
	@bad=$$(for f in $(FMT_FILES); do clang-format --dry-run -Werror "$$f" >/dev/null 2>&1 || echo "$$f"; done); \
	if [ -n "$$bad" ]; then echo "not formatted (run make fmt):"; echo "$$bad"; exit 1; fi

fmt-check-js: js-tools
	@bad=$$($(NODE_BIN)/prettier --list-different $(JS_FILES)); rc=$$?; \
	if [ -n "$$bad" ]; then echo "not formatted (run make fmt):"; echo "$$bad"; exit 1; fi; \
	if [ $$rc -ne 0 ]; then echo "prettier failed (status $$rc)"; exit 1; fi

lint-js: js-tools
	@$(NODE_BIN)/eslint --max-warnings 0 $(JS_FILES)

js-tools:
	@test -x $(NODE_BIN)/prettier -a -x $(NODE_BIN)/eslint || \
	{ echo "prettier/eslint missing from node_modules: run npm ci (or make bootstrap)"; exit 1; }

clean:
	rm -rf build bin

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_OBJ:.o=.d)
