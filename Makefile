# gpufleet — build, run, test.  See README.md.
#
#   make              build bin/gpufleetd
#   make run          bootstrap, local PostgreSQL, secrets, migrate, serve
#   make test         bootstrap, local PostgreSQL, build (plain + sanitized), run every test
#   make lint         OpenAPI lint (pinned @redocly/cli)
#   make fmt          format C (clang-format) and JavaScript (prettier)
#   make fmt-check    fail on unformatted C or JavaScript, or on eslint findings
#   make layers       check the layers' direction, planner I/O, dead includes, circles, sizes
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

# Explicit source lists, one per layer. The direction is cmd → api → service →
# {provisioner, db, planner} → common (`make layers` checks it); each layer is an archive,
# linked in that order.
COMMON_SRC := common/log.c common/util.c common/secret.c common/sbuf.c common/jw.c \
              common/crypt.c common/utf8.c common/sshkey.c common/netpolicy.c common/jwk.c \
              common/dheap.c common/idmap.c common/ptrset.c common/actor.c common/gpu.c common/usage.c common/baseline.c
# Rate limits (issue 25): the token-bucket arithmetic (common/), the table, the wiring.
COMMON_SRC += common/tbucket.c
DB_SRC     := db/db.c db/listener.c db/result.c db/migrate.c db/audit.c db/gpu_models.c db/idempotency.c db/briefs.c \
              db/stacks.c db/credentials.c db/pools.c db/hosts.c db/jobs.c db/gates.c \
              db/work_reports.c db/usage.c db/costs.c db/recommend.c db/recommend_briefs.c db/events.c db/monitor_lease.c \
              db/monitor.c db/gpu_metrics.c
API_SRC    := api/config.c api/reply.c api/http.c api/routes.c api/auth.c api/rolemap.c \
              api/role.c api/jsonspec.c api/cors.c api/sse.c \
              api/list.c api/metrics.c api/service.c api/audit.c api/gpu_models.c api/briefs.c \
              api/stacks.c api/sizing.c api/credentials.c api/pools.c \
              api/hosts.c api/gates.c api/resource.c api/work_reports.c api/costs.c \
              api/stop.c api/host_command.c api/actor.c api/recommend.c api/ui.c api/events.c api/health.c
# Background services: used by the API and by the workers; they know no HTTP.
SVC_SRC    := service/catalog.c service/recommend.c service/idle_policy.c \
              service/audit.c service/host_commands.c service/host_register.c \
              service/events_hub.c service/events_ring.c service/events_sub.c service/jwks.c \
              service/periodic.c
PLAN_SRC   := planner/sizing.c planner/brief.c planner/stack.c planner/cuda_compat.c \
              planner/host_state.c \
              planner/gate.c planner/readiness.c planner/costs.c planner/recommend.c \
              planner/xid_policy.c planner/host_command.c planner/monitor_policy.c
# Projects: teams sharing the fleet (docs/projects.md): who may do what where (the scope,
# the grants resolved per request), the projects and their members, quotas and budgets.
PLAN_SRC   += planner/scope.c
DB_SRC     += db/projects.c
SVC_SRC    += service/grants.c
API_SRC    += api/scope.c api/projects.c api/auth_mint.c
# Budgets: the decisions (month, burn rate, forecast, thresholds), the spend and the
# alerts, the pass (every replica; the alerts' inserts decide who emits).
PLAN_SRC   += planner/budget.c
DB_SRC     += db/budget.c
SVC_SRC    += service/budget.c
# The work reports' rollups: the settle readers run first and the pass (migrations/0045).
SVC_SRC    += service/rollups.c
# Generated C, each in the layer that reads it.
GEN_DB     := build/gen/migrations_blob.c
GEN_API    := build/gen/openapi_blob.c build/gen/ui_blob.c
GEN_PLAN   := build/gen/xid_catalog.c
# The status page (served under /ui/), in the order embedded.
UI_FILES   := ui/index.html ui/style.css ui/icon.svg ui/app.js ui/api.js ui/live.js \
              ui/render.js ui/dom.js ui/health.js ui/rollouts.js ui/projects.js \
              ui/placement.js ui/drills.js
# The composition root: gpufleetd's entry point, its subcommands, the components.
CMD_SRC    := cmd/main.c cmd/cmd.c cmd/serve.c cmd/token.c cmd/components.c
include provisioner/parse/parsers.mk
include provisioner/ssh/ssh.mk
# provisioner/: the SSH engine (ssh/), the parsers (parse/), the jobs and the gate (jobs/),
# the health monitor (monitor/); shell.c (remote command templates, POSIX quoting) serves
# all of them and service/ too.
PROV_SRC   := $(PARSER_SRC) $(SSH_SRC) provisioner/shell.c \
              provisioner/jobs/steps.c provisioner/jobs/gate_checks.c provisioner/jobs/gate_eval.c \
              provisioner/jobs/gate_inventory.c provisioner/jobs/gate_judges.c \
              provisioner/jobs/worker.c provisioner/jobs/job_writer.c \
              provisioner/jobs/job_core.c provisioner/jobs/job_provision.c \
              provisioner/jobs/job_gate.c provisioner/jobs/job_stop.c \
              provisioner/monitor/monitor.c provisioner/monitor/monitor_hosts.c provisioner/monitor/monitor_sample.c \
              provisioner/monitor/monitor_state.c provisioner/monitor/monitor_group.c \
              provisioner/host_port.c

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
              tests/unit/test_netpolicy.c tests/unit/test_dheap.c tests/unit/test_idmap.c \
              tests/unit/test_ptrset.c tests/unit/test_events_sub.c \
              tests/unit/test_host_command.c tests/unit/test_rolemap.c tests/unit/test_readiness.c

# Signed webhooks: the pure part, the table (sealed secrets: db/sealed.c, shared with
# credentials), the dispatcher (its loop, its horizon, its HTTP side), the routes.
COMMON_SRC += common/webhook.c
DB_SRC     += db/sealed.c db/webhooks.c
SVC_SRC    += service/webhooks.c service/webhook_horizon.c service/webhook_send.c
API_SRC    += api/webhooks.c
UNIT_SRC   += tests/unit/test_webhook.c
UNIT_SRC   += tests/unit/test_health.c
UNIT_SRC   += tests/unit/test_metrics.c

# Automatic recovery of hosts the monitor isolated: the planner, the table, the driver
# (in the worker processes), the route.
PLAN_SRC   += planner/recovery.c
DB_SRC     += db/recovery.c
SVC_SRC    += service/recovery.c
API_SRC    += api/recovery.c
UNIT_SRC   += tests/unit/test_recovery.c
UNIT_SRC   += tests/unit/test_recommend_idle.c
UNIT_SRC   += tests/unit/test_periodic.c

# Throughput baselines with their conditions (docs/rollouts.md §1): the matching, the table,
# the comparison, the routes.
PLAN_SRC   += planner/baseline.c
DB_SRC     += db/baselines.c
SVC_SRC    += service/baseline.c
API_SRC    += api/baselines.c
UNIT_SRC   += tests/unit/test_baseline.c

# Bandwidth reference in the gate (issue 26): the catalog's references (data/, generated),
# the check (the parsers are in provisioner/parse/parsers.mk), their tests.
GEN_PLAN   += build/gen/bw_reference.c
PLAN_SRC   += planner/bw_reference.c
PROV_SRC   += provisioner/jobs/gate_bandwidth.c
UNIT_SRC   += tests/unit/test_bandwidth.c

# Stack rollouts (docs/rollouts.md): the read side (document, list; the cost view's
# windows read, then priced in service/) and the routes.
DB_SRC     += db/rollouts_read.c
SVC_SRC    += service/rollout_cost.c
API_SRC    += api/rollouts.c
UNIT_SRC   += tests/unit/test_rollouts_api.c
# The rollout engine: the planner, the table's writes (create, control, the driver's), the
# driver (in the worker processes).
PLAN_SRC   += planner/rollout.c
DB_SRC     += db/rollouts.c
SVC_SRC    += service/rollout.c
UNIT_SRC   += tests/unit/test_rollout.c
# Creating a rollout and pausing, resuming, aborting one: the decisions (pure), the path
# that loads, decides and writes.
PLAN_SRC   += planner/rollout_create.c
SVC_SRC    += service/rollout_create.c
UNIT_SRC   += tests/unit/test_rollout_create.c
UNIT_SRC   += tests/unit/test_components.c
# Projects on the hosts' side (docs/projects.md): what a project's quota, budget and a
# credential's binding allow a host.
PLAN_SRC   += planner/project_limits.c
SVC_SRC    += service/host_limits.c
UNIT_SRC   += tests/unit/test_project_limits.c
# Budgets' decisions (planner/budget.c).
UNIT_SRC   += tests/unit/test_budget.c
# Rate limits and the /metrics token and cache (issue 25).
UNIT_SRC   += tests/unit/test_tbucket.c
API_SRC    += api/ratelimit.c api/rl_table.c api/config_limits.c api/metrics_serve.c
UNIT_SRC   += tests/unit/test_rl_table.c
# Tokens (docs/security.md): the minted tokens' jti and the revocation list (the table, the
# in-memory list every request checks, the route).
DB_SRC     += db/tokens.c
SVC_SRC    += service/tokens.c
API_SRC    += api/tokens.c
# Bottlenecks (issue 26, docs/bottlenecks.md): where the time goes and the next test (the
# rules, the rollup reads, the route).
PLAN_SRC   += planner/bottleneck.c planner/bottleneck_json.c planner/recommend_bn.c
DB_SRC     += db/bottlenecks.c
SVC_SRC    += service/bottleneck.c service/recommend_bn.c
API_SRC    += api/bottlenecks.c
UNIT_SRC   += tests/unit/test_bottleneck.c
# Retry budgets and repeated loads (issue 27, items 2 and 3): the rules, the budgets' read,
# the glue into the recommendations.
PLAN_SRC   += planner/recommend_retry.c planner/recommend_loads.c
DB_SRC     += db/retry_budget.c
SVC_SRC    += service/recommend_retry.c service/recommend_loads.c
UNIT_SRC   += tests/unit/test_recommend_retry.c

# Placement (issue 27, docs/placement.md): the cheapest place to run a brief (the
# arithmetic, the rightsize rule, the reads, the route).
PLAN_SRC   += planner/placement.c planner/recommend_place.c
DB_SRC     += db/placement.c
SVC_SRC    += service/placement.c service/recommend_place.c
API_SRC    += api/placement.c
UNIT_SRC   += tests/unit/test_placement.c

# Restore drills (issue 27 item 1, docs/hosts-and-gates.md "Restore drills"): the table,
# the job, the scheduling pass, the routes.
DB_SRC     += db/drills.c
PROV_SRC   += provisioner/jobs/job_drill.c
SVC_SRC    += service/drills.c
API_SRC    += api/drills.c

# The storage reference in the gate (issue 26): dd and fio parsers, the check.
PROV_SRC   += provisioner/parse/parse_dd.c provisioner/parse/parse_fio.c \
              provisioner/jobs/gate_storage.c provisioner/jobs/gate_targeted.c
UNIT_SRC   += tests/unit/test_gate_storage.c

# One archive per layer, $(BUILD)/lib<layer>.a, linked from the top down: a layer's
# archive resolves only what the ones before it need.
LAYERS     := cmd api service provisioner db planner common
cmd_SRC         := $(CMD_SRC)
api_SRC         := $(API_SRC) $(GEN_API)
service_SRC     := $(SVC_SRC)
provisioner_SRC := $(PROV_SRC)
db_SRC          := $(DB_SRC) $(GEN_DB)
planner_SRC     := $(PLAN_SRC) $(GEN_PLAN)
common_SRC      := $(COMMON_SRC)
obj_of      = $(patsubst %.c,$(BUILD)/%.o,$(patsubst build/gen/%,gen/%,$(1)))
LAYER_LIBS := $(foreach l,$(filter-out cmd,$(LAYERS)),$(BUILD)/lib$(l).a)
LIB_OBJ    := $(foreach l,$(filter-out cmd,$(LAYERS)),$(call obj_of,$($(l)_SRC)))
CMD_OBJ    := $(call obj_of,$(CMD_SRC))
UNIT_OBJ   := $(UNIT_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN   := $(BUILD)/unit-tests

MIGRATIONS := $(sort $(wildcard migrations/*.sql))

.PHONY: all gen run test unit lint clean bootstrap fmt fmt-c fmt-js fmt-check fmt-check-c fmt-check-js \
        lint-js js-tools routes layers
all: $(BIN)

# Each archive is written afresh (ar P: members by path, so two layers' or two folders'
# files of one name stay apart).
define layer_archive
$(BUILD)/lib$(1).a: $(call obj_of,$($(1)_SRC))
	@rm -f $$@
	ar rcsP $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_archive,$(l))))

$(BIN): $(CMD_OBJ) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LAYER_LIBS) $(LDLIBS)

# The unit tests link the layers' archives (the runner of cmd/components.c too).
$(UNIT_BIN): $(UNIT_OBJ) $(BUILD)/libcmd.a $(LAYER_LIBS)
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJ) $(BUILD)/libcmd.a $(LAYER_LIBS) $(LDLIBS)

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
gen: $(GEN_DB) $(GEN_API) $(GEN_PLAN)

# NVIDIA's Xid catalog as a C table (planner/xid_policy.c); the script checks the CSV.
build/gen/xid_catalog.c: scripts/gen-xid-catalog data/xid_catalog.csv
	@mkdir -p $(dir $@)
	scripts/gen-xid-catalog data/xid_catalog.csv > $@.tmp && mv $@.tmp $@

build/gen/bw_reference.c: scripts/gen-bw-reference data/bandwidth_reference.csv
	@mkdir -p $(dir $@)
	scripts/gen-bw-reference data/bandwidth_reference.csv > $@.tmp && mv $@.tmp $@

# The test harness's psql (psql() in tests/api/lib/server.js): one process per test process
# that keeps its connections. Built by scripts/test before the suites and by tests/*/run; one
# binary for both builds, written whole (two runners may build it at once).
build/pgpipe: tests/lib/pgpipe.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE $(WARN) $(shell pkg-config --cflags libpq) \
	    -o $@.tmp.$$$$ $< $(shell pkg-config --libs libpq) && mv -f $@.tmp.$$$$ $@

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
JS_FILES    = $(shell git ls-files '*.js' '*.mjs' '*.cjs' 2>/dev/null | grep -v '^tests/fixtures/') \
              $(shell git grep -l '^\#!/usr/bin/env node' -- ':!*.js' 2>/dev/null)
NODE_BIN    := node_modules/.bin

fmt: fmt-c fmt-js

fmt-c:
	clang-format -i $(FMT_FILES)

fmt-js: js-tools
	$(NODE_BIN)/prettier --log-level warn --write $(JS_FILES)

# Fails (and names the files) when any C or JavaScript file is not formatted, or eslint
# finds anything; make test runs each of the three.
fmt-check: fmt-check-c fmt-check-js lint-js

# One clang-format for every file (one per file cost 50 s of CPU in make test, mostly its
# start): the files it names in its errors are the ones to format; any other failure is
# printed whole.
fmt-check-c:
	@out=$$(clang-format --dry-run -Werror $(FMT_FILES) 2>&1); rc=$$?; \
	bad=$$(printf '%s\n' "$$out" | sed -n 's/^\(.*\):[0-9][0-9]*:[0-9][0-9]*: error: .*/\1/p' | sort -u); \
	if [ -n "$$bad" ]; then echo "not formatted (run make fmt):"; echo "$$bad"; exit 1; fi; \
	if [ $$rc -ne 0 ]; then echo "clang-format failed (status $$rc):"; echo "$$out"; exit 1; fi

fmt-check-js: js-tools
	@bad=$$($(NODE_BIN)/prettier --list-different $(JS_FILES)); rc=$$?; \
	if [ -n "$$bad" ]; then echo "not formatted (run make fmt):"; echo "$$bad"; exit 1; fi; \
	if [ $$rc -ne 0 ]; then echo "prettier failed (status $$rc)"; exit 1; fi

lint-js: js-tools
	@$(NODE_BIN)/eslint --max-warnings 0 $(JS_FILES)

js-tools:
	@test -x $(NODE_BIN)/prettier -a -x $(NODE_BIN)/eslint || \
	{ echo "prettier/eslint missing from node_modules: run npm ci (or make bootstrap)"; exit 1; }

# The layers as a build fact (scripts/layers, which says what each check means): includes
# and calls against the direction, I/O in the planner, dead includes, circles of calls
# between files, file and function sizes. make test runs it.
layers: $(BUILD)/libcmd.a $(LAYER_LIBS)
	@scripts/layers $(BUILD)

clean:
	rm -rf build bin

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(UNIT_OBJ:.o=.d)
