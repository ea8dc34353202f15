# Parsers for NVIDIA / DCGM / container tool output, and their tests.
# Included from the top-level Makefile (after its `all` target, so that the
# default goal stays `all`).  Uses the Makefile's BUILD, CC, CFLAGS, LDFLAGS,
# LDLIBS and its `$(BUILD)/%.o: %.c` pattern rule.
#
#   make parser-tests     build and run $(BUILD)/parser-tests over tests/fixtures/nvidia
#   make fuzz             build and briefly run every libFuzzer target (clang)
#   make fuzz FUZZ_SECONDS=60

PARSER_SRC := provisioner/parse/parse_util.c provisioner/parse/parse_csv.c \
              provisioner/parse/parse_smi.c provisioner/parse/parse_list.c \
              provisioner/parse/parse_topo.c provisioner/parse/parse_nvlink.c \
              provisioner/parse/parse_dcgmi.c provisioner/parse/parse_container.c \
              provisioner/parse/parse_version.c provisioner/parse/parse_nvsmi_err.c \
              provisioner/parse/parse_xml.c provisioner/parse/parse_ktime.c \
              provisioner/parse/parse_kmsg.c provisioner/parse/parse_sample.c \
              provisioner/parse/parse_fabric.c
# bandwidth references (issue 26): nccl-tests, nvbandwidth, numactl -H / lscpu
PARSER_SRC += provisioner/parse/parse_nccl.c provisioner/parse/parse_nvbandwidth.c \
              provisioner/parse/parse_numa.c
PARSER_TEST_SRC := tests/parsers/main.c tests/parsers/test_helpers.c \
                   tests/parsers/test_fixtures_smi.c tests/parsers/test_fixtures_links.c \
                   tests/parsers/test_fixtures.c tests/parsers/test_monitor.c \
                   tests/parsers/test_monitor_unit.c

PARSER_OBJ      := $(PARSER_SRC:%.c=$(BUILD)/%.o)
PARSER_TEST_OBJ := $(PARSER_TEST_SRC:%.c=$(BUILD)/%.o)
PARSER_TEST_BIN := $(BUILD)/parser-tests
FUZZ_SECONDS    ?= 10

# parse_kmsg.c cleans text with common/utf8.c (part of COMMON_SRC in the daemon).
$(PARSER_TEST_BIN): $(PARSER_TEST_OBJ) $(PARSER_OBJ) $(BUILD)/common/utf8.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: parser-tests fuzz
parser-tests: $(PARSER_TEST_BIN)
	$(PARSER_TEST_BIN) tests/fixtures/nvidia

fuzz:
	tests/fuzz/run $(FUZZ_SECONDS)

-include $(PARSER_OBJ:.o=.d) $(PARSER_TEST_OBJ:.o=.d)
