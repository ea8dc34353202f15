/* bench/fleet.d/replay-sh - the login shell of bench/fleet's light simulated hosts.
 *
 * Why: on this 2-core machine a process start costs about 5 to 10 ms of CPU, and a
 * provisioning or gate command on a full simulated host (tests/fleet/tools: bash, awk,
 * cat, sleep per tool call) costs tens of ms more; one provisioning burned 740 to 900 ms
 * of the hosts' CPU, so the hosts, not the controller, set bench/fleet's wall time.
 *
 * What it does: sshd runs it as `replay-sh -c COMMAND` for every exec channel of a
 * simulated host (the fleet user's login shell, set by bench/fleet with usermod -s).
 * COMMAND is looked up, by its exact bytes, in a table of recorded answers
 * ($GPUFLEET_SIM_DIR/replay/table/<FNV-1a 64 of COMMAND, hex>: a header line, then the
 * command, its stdout and its stderr). A hit is answered by this process alone: it
 * sleeps the recorded wall time of the command (nanosleep, no CPU), writes the recorded
 * stdout and stderr, and exits with the recorded status. No bash, no tool, no fork.
 * Host-specific bytes: the template host's id (the 8 hex digits of its GPU UUIDs and
 * serials, simfleet's @H@) is replaced by the answering host's own, read from the first
 * "GPU-" of DIR/<host>/L.txt, so every host reports its own GPUs.
 *
 * Recording: the host named in $GPUFLEET_SIM_DIR/replay/record-host (the template) runs
 * every command for real with /bin/bash -c (the full simulated tools), relays its output
 * and keeps it, its exit status and its wall time in the table (written to a temporary
 * file and renamed). bench/fleet records the provisioning and gate commands of every
 * contender on one host, then removes record-host: from then on every host replays.
 *
 * A command that is not in the table (a miss) is appended to replay/misses as
 * "HOST HASH" and run for real by /bin/bash -c; bench/fleet reports the misses. An
 * invocation that is not `-c COMMAND` (an interactive login, say) execs /bin/bash.
 *
 * What it does not simulate: state. Each command answers what it answered on the
 * template host when it was recorded (after its provisioning), whatever ran before; the
 * storage check writes nothing. SSH itself (sshd, key exchange, host key, auth,
 * channels) is the real thing.
 *
 *   replay-sh --sum-wall TABLEDIR   reads NUL-separated commands on stdin; prints
 *                                   "FOUND MISSING SUM_WALL_US" of their entries
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BASH  "/bin/bash"
#define MAGIC "gfreplay1"

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void exec_bash(char **argv)
{
    argv[0] = (char *)"bash";
    execv(BASH, argv);
    _exit(127);
}

/* read_all FD: the whole content, NUL-terminated; *len its length; NULL on error */
static char *read_all(int fd, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap + 1);
    if (!b)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *b = read_all(fd, len);
    close(fd);
    return b;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* write P[0..N) to FD with every FROM (8 bytes) replaced by TO (8 bytes) */
static void write_subst(int fd, const char *p, size_t n, const char *from, const char *to)
{
    if (!from || !to || memcmp(from, to, 8) == 0) {
        write_all(fd, p, n);
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i + 8 <= n;) {
        if (p[i] == from[0] && memcmp(p + i, from, 8) == 0) {
            write_all(fd, p + start, i - start);
            write_all(fd, to, 8);
            i += 8;
            start = i;
        } else {
            i++;
        }
    }
    write_all(fd, p + start, n - start);
}

/* host_hid DIR HOST OUT: the host's 8-hex id from the first "GPU-" of DIR/HOST/L.txt */
static int host_hid(const char *dir, const char *host, char out[9])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/L.txt", dir, host);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    char *g = strstr(buf, "GPU-");
    if (!g || strlen(g) < 12)
        return -1;
    memcpy(out, g + 4, 8);
    out[8] = '\0';
    return strspn(out, "0123456789abcdef") == 8 ? 0 : -1;
}

struct entry {
    const char *cmd, *out, *err;
    size_t cmdlen, outlen, errlen;
    int status;
    long wall_us;
};

/* parse_entry B LEN E: 0 when B is a whole entry */
static int parse_entry(const char *b, size_t len, struct entry *e)
{
    const char *nl = memchr(b, '\n', len);
    if (!nl)
        return -1;
    char magic[16];
    if (sscanf(b, "%15s %zu %zu %zu %d %ld", magic, &e->cmdlen, &e->outlen, &e->errlen, &e->status,
               &e->wall_us) != 6 ||
        strcmp(magic, MAGIC) != 0)
        return -1;
    size_t hdr = (size_t)(nl - b) + 1;
    if (hdr + e->cmdlen + e->outlen + e->errlen != len)
        return -1;
    e->cmd = b + hdr;
    e->out = e->cmd + e->cmdlen;
    e->err = e->out + e->outlen;
    return 0;
}

static void entry_path(char *path, size_t n, const char *table, const char *cmd, size_t len)
{
    snprintf(path, n, "%s/%016llx", table, (unsigned long long)fnv1a(cmd, len));
}

static int sum_wall(const char *table)
{
    size_t len;
    char *in = read_all(0, &len);
    if (!in)
        return 2;
    long found = 0, missing = 0, sum = 0;
    for (size_t i = 0; i < len;) {
        const char *c = in + i;
        size_t cl = strnlen(c, len - i);
        i += cl + 1;
        if (cl == 0)
            continue;
        char path[4096];
        entry_path(path, sizeof path, table, c, cl);
        size_t el;
        char *b = read_file(path, &el);
        struct entry e;
        if (b && parse_entry(b, el, &e) == 0 && e.cmdlen == cl && memcmp(e.cmd, c, cl) == 0) {
            found++;
            sum += e.wall_us;
        } else {
            missing++;
        }
        free(b);
    }
    printf("%ld %ld %ld\n", found, missing, sum);
    return 0;
}

static long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

/* record: run CMD with bash, relay and keep its output, store the entry */
static int record(const char *table, const char *path, const char *cmd, size_t cmdlen)
{
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
        return 127;
    long t0 = now_us();
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        execl(BASH, "bash", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    char *buf[2] = {NULL, NULL};
    size_t len[2] = {0, 0}, cap[2] = {0, 0};
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_n = 2;
    while (open_n > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[65536];
            ssize_t r = read(pf[k].fd, tmp, sizeof tmp);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                close(pf[k].fd);
                pf[k].fd = -1;
                open_n--;
                continue;
            }
            write_all(k + 1, tmp, (size_t)r);
            if (len[k] + (size_t)r > cap[k]) {
                cap[k] = (len[k] + (size_t)r) * 2;
                buf[k] = realloc(buf[k], cap[k]);
                if (!buf[k])
                    _exit(127);
            }
            memcpy(buf[k] + len[k], tmp, (size_t)r);
            len[k] += (size_t)r;
        }
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    long wall = now_us() - t0;
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    char tmpp[4300];
    snprintf(tmpp, sizeof tmpp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmpp, "w");
    if (f) {
        fprintf(f, "%s %zu %zu %zu %d %ld\n", MAGIC, cmdlen, len[0], len[1], status, wall);
        fwrite(cmd, 1, cmdlen, f);
        if (len[0])
            fwrite(buf[0], 1, len[0], f);
        if (len[1])
            fwrite(buf[1], 1, len[1], f);
        if (fclose(f) == 0)
            rename(tmpp, path);
        else
            unlink(tmpp);
    }
    (void)table;
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--sum-wall") == 0)
        return sum_wall(argv[2]);
    const char *dir = getenv("GPUFLEET_SIM_DIR"), *host = getenv("GPUFLEET_SIM_HOST");
    if (argc != 3 || strcmp(argv[1], "-c") != 0 || !dir || !*dir || !host || !*host ||
        strchr(host, '/'))
        exec_bash(argv);
    const char *cmd = argv[2];
    size_t cmdlen = strlen(cmd);
    char table[4096], path[4200], rp[4200];
    snprintf(table, sizeof table, "%s/replay/table", dir);
    entry_path(path, sizeof path, table, cmd, cmdlen);

    /* the template host records */
    snprintf(rp, sizeof rp, "%s/replay/record-host", dir);
    size_t rl;
    char *rh = read_file(rp, &rl);
    if (rh) {
        rh[strcspn(rh, "\n")] = '\0';
        if (strcmp(rh, host) == 0) {
            char hid[9];
            if (host_hid(dir, host, hid) == 0) {
                char hp[4200];
                snprintf(hp, sizeof hp, "%s/replay/hid", dir);
                FILE *f = fopen(hp, "w");
                if (f) {
                    fprintf(f, "%s\n", hid);
                    fclose(f);
                }
            }
            return record(table, path, cmd, cmdlen);
        }
        free(rh);
    }

    size_t el;
    char *b = read_file(path, &el);
    struct entry e;
    if (!b || parse_entry(b, el, &e) != 0 || e.cmdlen != cmdlen ||
        memcmp(e.cmd, cmd, cmdlen) != 0) {
        char mp[4200], line[512];
        snprintf(mp, sizeof mp, "%s/replay/misses", dir);
        int fd = open(mp, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
        if (fd >= 0) {
            int n = snprintf(line, sizeof line, "%s %016llx\n", host,
                             (unsigned long long)fnv1a(cmd, cmdlen));
            write_all(fd, line, (size_t)n);
            close(fd);
        }
        /* the missed command itself, for the report (once per command) */
        snprintf(mp, sizeof mp, "%s/replay/missed-%016llx", dir,
                 (unsigned long long)fnv1a(cmd, cmdlen));
        fd = open(mp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            write_all(fd, cmd, cmdlen);
            close(fd);
        }
        exec_bash(argv);
    }
    char from[16] = "", to[9] = "";
    char hp[4200];
    snprintf(hp, sizeof hp, "%s/replay/hid", dir);
    size_t hl;
    char *hf = read_file(hp, &hl);
    int subst = hf && hl >= 8 && host_hid(dir, host, to) == 0;
    if (subst)
        memcpy(from, hf, 8);
    if (e.wall_us > 0) {
        struct timespec ts = {e.wall_us / 1000000, (e.wall_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    }
    write_subst(1, e.out, e.outlen, subst ? from : NULL, subst ? to : NULL);
    write_subst(2, e.err, e.errlen, subst ? from : NULL, subst ? to : NULL);
    return e.status & 255;
}
