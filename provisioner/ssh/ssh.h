/* SSH engine: non-blocking libssh2, one event loop driving many sessions.
 *
 * Model: curl's lib/vssh/libssh2.c. Every session and every exec channel is
 * an explicit state machine with one small function per state returning
 * OK / AGAIN / ERR; libssh2_session_block_directions() gives the poll
 * interest; one epoll set covers every socket of a loop, a deadline heap its
 * timers, so that an iteration costs what is ready, not how many sessions
 * the loop holds; libssh2 and socket errors are mapped to enum prov_ssh_err
 * in exactly one function.
 *
 * Threading: a loop and everything created from it belong to ONE thread.
 * No global mutable state. The program calls libssh2_init() once at start-up
 * (and libssh2_exit() at the end); this module never does.
 *
 * Security:
 *   - the host key is checked (SHA256 fingerprint, constant-time compare)
 *     right after the key exchange and BEFORE authentication, on every
 *     connection; a mismatch disconnects without authenticating;
 *   - the private key is kept in memory only (never written to a file),
 *     wiped before it is freed, and never appears in a message;
 *   - algorithm preferences avoid Terrapin-prone combinations (libssh2 1.10
 *     has no strict kex): curve25519/ECDH kex, aes-ctr ciphers, non-ETM
 *     hmac-sha2 MACs, no chacha20, no CBC, no SHA-1;
 *   - prov_ssh_connect() itself refuses net_address_forbidden()
 *     addresses (the CIDR allow-list is the caller's configuration).
 */
#ifndef PROV_SSH_H
#define PROV_SSH_H

#include <stddef.h>
#include <stdint.h>

enum prov_ssh_err {
    PROV_SSH_OK = 0,
    PROV_SSH_REFUSED,
    PROV_SSH_TIMEOUT,
    PROV_SSH_RESET,
    PROV_SSH_DISCONNECT,
    PROV_SSH_AUTH_FAILED,
    PROV_SSH_HOSTKEY_MISMATCH,
    PROV_SSH_ADDRESS_NOT_ALLOWED,
    PROV_SSH_PROTOCOL,
    PROV_SSH_NO_MEMORY
};

/* 1 for refused, timed_out, reset, disconnected (retry later); else 0. */
int prov_ssh_err_transient(enum prov_ssh_err e);
/* Static string: "ok", "refused", "timed_out", "reset", "disconnected",
 * "auth_failed", "host_key_mismatch", "address_not_allowed", "protocol",
 * "no_memory"; "unknown" for anything else. */
const char *prov_ssh_err_name(enum prov_ssh_err e);

struct prov_ssh_loop;
struct prov_ssh_conn;

struct prov_ssh_target {
    const char *address; /* literal IPv4/IPv6 (no host names, no scope ids) */
    int port;            /* 1..65535; 0 → 22 */
    const char *user;
    const char *private_key; /* OpenSSH/PEM private key text in memory, never written to disk */
    size_t private_key_len;
    const char *pinned_host_key_sha256; /* "SHA256:…" (padding optional) or NULL:
                                           accept and report (first contact) */
    int connect_timeout_ms, handshake_timeout_ms, auth_timeout_ms; /* 0 → 5000/10000/10000 */
};

struct prov_ssh_conn_status {
    enum prov_ssh_err err;
    char message[256];         /* never contains key material */
    char host_key_sha256[64];  /* what the server presented, "SHA256:…"; "" until known */
    const char *host_key_type; /* static string ("ssh-ed25519", …) or NULL until known */
    char algorithms[160];      /* negotiated, e.g. "kex=curve25519-sha256 hostkey=ssh-ed25519
                                  cipher=aes256-ctr mac=hmac-sha2-256"; "" until known */
};

struct prov_ssh_exec_result {
    enum prov_ssh_err err; /* OK when the command ran to an exit status (even non-zero) */
    int exit_status;       /* -1 when none (killed by a signal, timed out, failed) */
    char *exit_signal;     /* e.g. "KILL", or NULL; owned by the engine, valid during the cb */
    int timed_out;       /* command exceeded its timeout: channel closed, err = PROV_SSH_TIMEOUT */
    int exec_sent;       /* 1 once the server accepted the exec request for this command
                            (libssh2_channel_exec succeeded: the command was started), even
                            when the session failed or the command timed out afterwards;
                            0 when it never got that far (queued, channel open failed,
                            connection lost or closed before the request was answered) */
    char out_tail[8193]; /* last ≤ 8 KiB of stdout, NUL-terminated (may contain NULs) */
    size_t out_total;    /* total stdout bytes seen; tail length = min(total, 8192) */
    char err_tail[8193];
    size_t err_total;
    int64_t duration_us; /* from channel open to completion */
    char message[256];   /* failure detail, "" on success; never key material */
};

/* Callbacks run inside prov_ssh_loop_run_once() (or prov_ssh_close() /
 * prov_ssh_loop_free() for DISCONNECT). The status/result they get is
 * borrowed: valid only during the call. From inside a callback you may call
 * prov_ssh_exec(), prov_ssh_close() and prov_ssh_connect() on the same loop;
 * never prov_ssh_loop_free(). */
typedef void (*prov_ssh_conn_cb)(struct prov_ssh_conn *c, const struct prov_ssh_conn_status *st,
                                 void *ctx);
typedef void (*prov_ssh_exec_cb)(struct prov_ssh_conn *c, const struct prov_ssh_exec_result *r,
                                 void *ctx);

/* NULL on out of memory. Caller frees with prov_ssh_loop_free(). */
struct prov_ssh_loop *prov_ssh_loop_new(void);
/* Closes everything still open (pending callbacks fire with DISCONNECT, then
 * a bounded graceful disconnect of at most ~1 s), frees every session. */
void prov_ssh_loop_free(struct prov_ssh_loop *l);

/* Starts connect → handshake (kex) → host key check → auth. cb fires exactly
 * once (from the loop, never from inside this call): OK, or the failure. The
 * target's strings are copied (the key copy is wiped on free). Returns NULL
 * only on out of memory (cb then never fires).
 *
 * Ownership: the conn belongs to the loop. The handle stays valid until the
 * caller calls prov_ssh_close() — also after a failure: ALWAYS call
 * prov_ssh_close() exactly once (or leave it to prov_ssh_loop_free()). */
struct prov_ssh_conn *prov_ssh_connect(struct prov_ssh_loop *l, const struct prov_ssh_target *t,
                                       prov_ssh_conn_cb cb, void *ctx);

/* Queues a command (copied) on a session, one channel per command; up to
 * PROV_SSH_MAX_CHANNELS run at once, the rest wait in order. It may be
 * called before the connect cb has fired (it then starts after auth).
 * timeout_ms ≤ 0 → 60000; it counts from the channel open. cb fires exactly
 * once. Returns 0, or -1 if the session failed or is closing (cb never fires). */
#define PROV_SSH_MAX_CHANNELS 8
int prov_ssh_exec(struct prov_ssh_conn *c, const char *command, int timeout_ms, prov_ssh_exec_cb cb,
                  void *ctx);

/* Closes gracefully (non-blocking) and frees the session when done. Callbacks
 * not yet fired (connect, pending execs) fire NOW with PROV_SSH_DISCONNECT,
 * before this returns. Safe inside callbacks; the handle is invalid after it
 * returns (a second call on the same handle inside one of those callbacks
 * is a no-op). */
void prov_ssh_close(struct prov_ssh_conn *c);

/* One iteration: wait for socket events up to max_wait_ms (less when a
 * deadline is nearer; 0 = don't wait), advance the state machines that have
 * an event, a deadline reached or a call to act on, fire callbacks, enforce
 * timeouts. Returns the number of sessions not yet freed (including closing
 * ones); 0 means the loop is idle. */
int prov_ssh_loop_run_once(struct prov_ssh_loop *l, int max_wait_ms);

/* Makes prov_ssh_loop_run_once() return early while fd (the caller's: an
 * eventfd, a database socket) is readable; the caller consumes what woke it.
 * 0, or -1 (errno set). */
int prov_ssh_loop_wake_on(struct prov_ssh_loop *l, int fd);

/* What the loop has done since it was created (for tests and benchmarks). */
/* Bytes of command output one session reads per loop turn (issue 25): a session with more
 * waiting yields and is driven again on the next turn, after every other session due, so
 * that one host streaming fast cannot hold the loop (without it a turn read as long as
 * data kept coming: the channel's window, 2 MiB, and what arrived meanwhile). A turn may
 * overshoot by one read of stdout and one of stderr (16 KiB each). */
#ifndef PROV_SSH_TURN_BYTES
#define PROV_SSH_TURN_BYTES (256 * 1024)
#endif

struct prov_ssh_loop_stats {
    uint64_t wakeups;          /* prov_ssh_loop_run_once() calls */
    uint64_t drives;           /* sessions driven (a session per event, deadline or call) */
    uint64_t interest_changes; /* epoll registrations added or changed */
    uint64_t budget_yields;    /* turns a session ended with output still to read */
    uint64_t max_turn_bytes;   /* the most output one session read in one turn */
};
void prov_ssh_loop_stats(const struct prov_ssh_loop *l, struct prov_ssh_loop_stats *out);

#endif
