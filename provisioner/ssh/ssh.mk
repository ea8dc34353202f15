# SSH engine (non-blocking libssh2, one event loop driving many sessions) and
# its tests against the simulated fleet. Included from the top-level Makefile
# (after its `all` target, so that the default goal stays `all`). Uses the
# Makefile's BUILD, CC, CFLAGS, LDFLAGS, LDLIBS (libssh2, libcrypto, jansson
# via pkg-config) and its `$(BUILD)/%.o: %.c` pattern rule.
#
#   make ssh-tests      build $(BUILD)/ssh-tests and run tests/ssh/run
#                       (root: starts its own simfleet on 127.0.230.x)

SSH_SRC       := provisioner/ssh/state.c provisioner/ssh/connect.c provisioner/ssh/exec.c \
                 provisioner/ssh/loop.c
SSH_TEST_SRC  := tests/ssh/test_ssh.c tests/ssh/test_ssh_sessions.c tests/ssh/test_ssh_load.c \
                 tests/ssh/test_ssh_kex.c

SSH_OBJ       := $(SSH_SRC:%.c=$(BUILD)/%.o) $(BUILD)/common/netpolicy.o $(BUILD)/common/dheap.o \
                 $(BUILD)/common/ptrset.o
SSH_TEST_OBJ  := $(SSH_TEST_SRC:%.c=$(BUILD)/%.o)
SSH_TEST_BIN  := $(BUILD)/ssh-tests

$(SSH_TEST_BIN): $(SSH_TEST_OBJ) $(SSH_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: ssh-tests
ssh-tests: $(SSH_TEST_BIN)
	tests/ssh/run $(SSH_TEST_BIN)

-include $(SSH_OBJ:.o=.d) $(SSH_TEST_OBJ:.o=.d)
