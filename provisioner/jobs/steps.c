/* steps.c — see steps.h. */
#include "provisioner/jobs/steps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/util.h"
#include "planner/stack.h"
#include "provisioner/parse/parse.h"
#include "provisioner/shell.h"

#define CONFIG_DIR  "/.gpufleet"
#define CONFIG_FILE "/.gpufleet/stack.json"

static const char *const gpu_fields[] = {"index",        "name",           "uuid",
                                         "memory.total", "driver_version", "pci.bus_id"};
#define NGPU_FIELDS (sizeof gpu_fields / sizeof gpu_fields[0])

static void say(char *msg, size_t n, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, n, fmt, a ? a : "", b ? b : "");
}

/* What a failed command said: its stderr, or its stdout when stderr is empty. */
static const char *said(const struct prov_cmd_result *r)
{
    return r->err && *r->err ? r->err : r->out ? r->out : "";
}

/* ---- facts ---- */

static char *facts_cmd(const struct prov_provision *p)
{
    const char *args[2] = {p->durable_path, p->scratch_path};
    return prov_sh_template(
        "printf '@@os\\n'; cat /etc/os-release; printf '@@kernel\\n'; uname -r;"
        " printf '@@cpus\\n'; nproc; printf '@@mem\\n'; grep MemTotal /proc/meminfo;"
        " printf '@@numa\\n'; ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l;"
        " printf '@@fs\\n'; df -P %s %s 2>&1;"
        " printf '@@gpus\\n'; nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,"
        "pci.bus_id --format=csv,noheader,nounits 2>&1; printf '@@end\\n'",
        2, args);
}

/* The text of section name in out ("@@name" line up to the next "@@"). */
static char *section(const char *out, const char *name)
{
    char marker[32];
    snprintf(marker, sizeof marker, "@@%s\n", name);
    const char *s = strstr(out, marker);
    if (s == NULL)
        return NULL;
    s += strlen(marker);
    const char *e = strstr(s, "\n@@");
    size_t n = e ? (size_t)(e - s + 1) : strlen(s);
    return strndup(s, n);
}

static json_t *os_release(const char *text)
{
    json_t *o = json_object();
    if (text == NULL)
        return o;
    char *copy = strdup(text), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        char *v = eq + 1;
        size_t n = strlen(v);
        if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
            v[n - 1] = '\0';
            v++;
        }
        if (!strcmp(line, "ID") || !strcmp(line, "VERSION_ID") || !strcmp(line, "PRETTY_NAME")) {
            char key[32];
            snprintf(key, sizeof key, "%s", line);
            for (char *k = key; *k; k++)
                *k = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
            json_object_set_new(o, key, utf8_json(v, strlen(v)));
        }
    }
    free(copy);
    return o;
}

/* A whole number the host reported, or null (not read, or out of range). */
static json_t *whole_json(prov_num_t n)
{
    return n.st == PROV_V_OK && fabs(n.v) < 1e15 ? json_integer((json_int_t)n.v) : json_null();
}

/* Host text as a JSON string, whatever its bytes. */
static json_t *text_json(const char *s)
{
    return utf8_json(s, strlen(s));
}

static json_t *trimmed(const char *text)
{
    if (text == NULL)
        return json_null();
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    return utf8_json(text, n);
}

static enum prov_verdict facts_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                    char *msg, size_t n)
{
    if (!r->ran || r->out == NULL || strstr(r->out, "@@end") == NULL) {
        char line[128];
        say(msg, n, "could not gather facts: %s%s", utf8_first_line(r->err, line, sizeof line),
            NULL);
        return PROV_FAIL;
    }
    json_decref(p->facts);
    p->facts = json_object();
    char *os = section(r->out, "os"), *kernel = section(r->out, "kernel"),
         *cpus = section(r->out, "cpus"), *mem = section(r->out, "mem"),
         *numa = section(r->out, "numa"), *fs = section(r->out, "fs"),
         *gpus = section(r->out, "gpus");
    json_object_set_new(p->facts, "os", os_release(os));
    json_object_set_new(p->facts, "kernel", trimmed(kernel));
    json_object_set_new(p->facts, "cpus", json_integer(cpus ? atoi(cpus) : 0));
    long long kib = 0;
    if (mem != NULL)
        sscanf(mem, "MemTotal: %lld", &kib);
    json_object_set_new(p->facts, "memory_bytes", json_integer(kib * 1024));
    json_object_set_new(p->facts, "numa_nodes", json_integer(numa ? atoi(numa) : 0));
    json_object_set_new(p->facts, "filesystems", trimmed(fs));
    prov_qgpu_t q;
    prov_err_t perr;
    json_t *gpu_list = json_array();
    const char *driver = NULL;
    if (gpus != NULL &&
        prov_qgpu_parse(gpus, strlen(gpus), gpu_fields, NGPU_FIELDS, &q, &perr) == 0) {
        for (size_t i = 0; i < q.nrows; i++) {
            const prov_qgpu_row_t *row = &q.rows[i];
            json_array_append_new(
                gpu_list,
                json_pack("{s:o, s:o, s:o, s:o, s:o}", "index", whole_json(row->index), "name",
                          text_json(row->name), "uuid", text_json(row->uuid), "memory_mib",
                          whole_json(row->mem_total_mib), "pci_bus_id", text_json(row->bus_id)));
        }
        if (q.nrows > 0)
            json_object_set_new(p->facts, "driver_version", text_json(q.rows[0].driver_version));
        driver = q.nrows > 0 ? "" : NULL;
        prov_qgpu_free(&q);
    } else {
        json_object_set_new(p->facts, "gpu_error", trimmed(gpus));
    }
    json_object_set_new(p->facts, "gpus", gpu_list);
    json_object_set_new(p->facts, "gpu_count", json_integer((json_int_t)json_array_size(gpu_list)));
    free(os), free(kernel), free(cpus), free(mem), free(numa), free(fs), free(gpus);
    snprintf(msg, n, "%zu GPU(s)%s", json_array_size(gpu_list),
             driver ? "" : "; nvidia-smi gave no GPU inventory");
    return PROV_OK;
}

/* ---- driver ---- */

static char *driver_cmd(const struct prov_provision *p)
{
    (void)p;
    return prov_sh_template("nvidia-smi --query-gpu=driver_version --format=csv,noheader", 0, NULL);
}

static enum prov_verdict driver_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                     char *msg, size_t n)
{
    char line[128];
    if (!r->ran || r->exit_status != 0) {
        prov_nvsmi_error_t e;
        const char *text = said(r);
        prov_nvsmi_error_classify(text, strlen(text), r->ran ? r->exit_status : -1, &e);
        snprintf(msg, n, "nvidia-smi failed (%s): %s", prov_nvsmi_reason_name(e.reason),
                 utf8_first_line(text, line, sizeof line));
        return PROV_FAIL;
    }
    /* every GPU must report the pinned driver */
    char *copy = strdup(r->out ? r->out : ""), *save = NULL;
    int lines = 0;
    enum prov_verdict v = PROV_OK;
    for (char *l = strtok_r(copy, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save)) {
        while (*l == ' ')
            l++;
        if (*l == '\0')
            continue;
        lines++;
        if (strcmp(l, p->driver_version) != 0) {
            char found[41];
            utf8_clean(l, strlen(l), found, sizeof found);
            snprintf(msg, n,
                     "driver %s on the host, the stack pins %s (installing drivers is "
                     "out of scope)",
                     found, p->driver_version);
            v = PROV_FAIL;
            break;
        }
    }
    free(copy);
    if (v == PROV_OK && lines == 0) {
        snprintf(msg, n, "nvidia-smi reported no GPU");
        return PROV_FAIL;
    }
    if (v == PROV_OK)
        snprintf(msg, n, "driver %s on %d GPU(s), as pinned", p->driver_version, lines);
    return v;
}

/* ---- container runtime ---- */

static char *runtime_cmd(const struct prov_provision *p)
{
    (void)p;
    return prov_sh_template("docker version --format '{{.Server.Version}}'", 0, NULL);
}

static enum prov_verdict runtime_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                      char *msg, size_t n)
{
    (void)p;
    char line[160];
    if (!r->ran || r->exit_status != 0) {
        prov_ctr_error_t d;
        const char *text = said(r);
        prov_ctr_classify(text, strlen(text), r->ran ? r->exit_status : -1, &d);
        snprintf(msg, n, "no usable container runtime (%s): %s", prov_ctr_reason_name(d.reason),
                 utf8_first_line(text, line, sizeof line));
        return PROV_FAIL;
    }
    snprintf(msg, n, "docker %s", utf8_first_line(r->out, line, sizeof line));
    return PROV_OK;
}

/* ---- image ----
 * check:  docker image inspect --format '{{json .RepoDigests}}' -- REF — the pinned digest among
 *         the local image's RepoDigests → OK; absent, unreadable or other digests → APPLY
 * apply:  docker pull -- REF — exit 0 → OK (its own output proves nothing about the digest)
 * verify: the same inspect — the pinned digest among RepoDigests → OK, else FAIL */

static char *image_inspect_cmd(const struct prov_provision *p)
{
    const char *args[1] = {p->image_ref};
    return prov_sh_template("docker image inspect --format '{{json .RepoDigests}}' -- %s", 1, args);
}

static char *image_pull_cmd(const struct prov_provision *p)
{
    const char *args[1] = {p->image_ref};
    return prov_sh_template("docker pull -- %s", 1, args);
}

/* Length of the repository part of ref[0..n), after the prefixes docker may add or drop
 * for Docker Hub ("docker.io/", then "library/"); *start receives where it begins. */
static size_t repo_normalised(const char *ref, size_t n, const char **start)
{
    static const char *const prefixes[] = {"docker.io/", "library/"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t k = strlen(prefixes[i]);
        if (n > k && strncmp(ref, prefixes[i], k) == 0) {
            ref += k;
            n -= k;
        }
    }
    *start = ref;
    return n;
}

/* Whether a RepoDigests entry ("repository@sha256:…") names the pinned image. */
static int digest_is_pinned(const struct prov_provision *p, const char *entry)
{
    const char *at = strrchr(entry, '@'), *pin_at = strrchr(p->image_ref, '@');
    if (at == NULL || pin_at == NULL || strcmp(at + 1, p->image_digest) != 0)
        return 0;
    const char *a, *b;
    size_t na = repo_normalised(entry, (size_t)(at - entry), &a);
    size_t nb = repo_normalised(p->image_ref, (size_t)(pin_at - p->image_ref), &b);
    return na == nb && strncmp(a, b, na) == 0;
}

/* The digest of a RepoDigests entry ("repository@sha256:…"), cleaned, cut to fit buf. */
static void entry_digest(const char *entry, char *buf, size_t n)
{
    const char *at = strrchr(entry, '@');
    const char *d = at ? at + 1 : entry;
    utf8_clean(d, strlen(d), buf, n);
}

enum image_state { IMAGE_PINNED, IMAGE_OTHER, IMAGE_ABSENT, IMAGE_UNREADABLE };

/* Judges `docker image inspect --format '{{json .RepoDigests}}'`; found receives the
 * digests seen (cleaned, ", "-separated, "…" for those that did not fit; "no RepoDigests"
 * for an empty list) or what went wrong. */
static enum image_state image_inspect(const struct prov_provision *p,
                                      const struct prov_cmd_result *r, char *found, size_t n)
{
    char line[200];
    if (!r->ran || r->exit_status != 0) {
        snprintf(found, n, "%s", utf8_first_line(said(r), line, sizeof line));
        return IMAGE_ABSENT;
    }
    const char *out = r->out ? r->out : "";
    json_t *a = json_loads(out, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        snprintf(found, n, "no readable RepoDigests (%s)", utf8_first_line(out, line, 80));
        return IMAGE_UNREADABLE;
    }
    enum image_state st = IMAGE_OTHER;
    size_t i, used = 0;
    int more = 0;
    json_t *e;
    found[0] = '\0';
    json_array_foreach(a, i, e)
    {
        const char *s = json_string_value(e);
        if (s == NULL)
            continue;
        if (digest_is_pinned(p, s))
            st = IMAGE_PINNED;
        char d[80];
        entry_digest(s, d, sizeof d);
        if (used + strlen(d) + sizeof ", , …" <= n)
            used += (size_t)snprintf(found + used, n - used, "%s%s", used ? ", " : "", d);
        else if (!more++)
            used += (size_t)snprintf(found + used, n - used, ", …");
    }
    json_decref(a);
    if (found[0] == '\0')
        snprintf(found, n, "no RepoDigests");
    return st;
}

/* check (verify 0): OK with the pinned digest, else APPLY (pull it); verify (after the
 * pull): OK with the pinned digest, else FAIL naming the digests the image reports. */
static enum prov_verdict image_digest_eval(struct prov_provision *p,
                                           const struct prov_cmd_result *r, char *msg, size_t n,
                                           int verify)
{
    char found[300];
    const char *ref = p->image_ref; /* validated: repository@sha256:… */
    enum image_state st = image_inspect(p, r, found, sizeof found);
    const char *what =
        st == IMAGE_ABSENT ? "docker image inspect failed:" : "the local image reports";
    if (st == IMAGE_PINNED) {
        snprintf(msg, n, "%s present with the pinned digest", ref);
        return PROV_OK;
    }
    if (verify) {
        snprintf(msg, n, "pulled %s; %s %s", ref, what, found);
        return PROV_FAIL;
    }
    snprintf(msg, n, "%s: %s %s; pulling it", ref, what, found);
    return PROV_APPLY;
}

static enum prov_verdict image_check_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                          char *msg, size_t n)
{
    return image_digest_eval(p, r, msg, n, 0);
}

static enum prov_verdict image_verify_eval(struct prov_provision *p,
                                           const struct prov_cmd_result *r, char *msg, size_t n)
{
    return image_digest_eval(p, r, msg, n, 1);
}

static enum prov_verdict image_pull_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                         char *msg, size_t n)
{
    char line[200];
    const char *ref = p->image_ref;
    if (r->ran && r->exit_status == 0) {
        snprintf(msg, n, "pulled %s; verifying its digest", ref);
        return PROV_OK;
    }
    snprintf(msg, n, "docker pull %s failed: %s", ref, utf8_first_line(said(r), line, sizeof line));
    return PROV_FAIL;
}

/* ---- paths ---- */

static char *paths_check_cmd(const struct prov_provision *p)
{
    const char *args[4] = {p->durable_path, p->durable_path, p->scratch_path, p->scratch_path};
    return prov_sh_template("test -d %s && test -w %s && test -d %s && test -w %s", 4, args);
}

static char *paths_apply_cmd(const struct prov_provision *p)
{
    char dprobe[600], sprobe[600];
    snprintf(dprobe, sizeof dprobe, "%s/.gpufleet-write-test", p->durable_path);
    snprintf(sprobe, sizeof sprobe, "%s/.gpufleet-write-test", p->scratch_path);
    const char *args[6] = {p->durable_path, p->scratch_path, dprobe, sprobe, dprobe, sprobe};
    return prov_sh_template("mkdir -p -- %s %s && touch -- %s %s && rm -f -- %s %s", 6, args);
}

static enum prov_verdict paths_check_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                          char *msg, size_t n)
{
    if (r->ran && r->exit_status == 0) {
        say(msg, n, "%s and %s exist and are writable", p->durable_path, p->scratch_path);
        return PROV_OK;
    }
    say(msg, n, "creating %s and %s", p->durable_path, p->scratch_path);
    return PROV_APPLY;
}

static enum prov_verdict paths_apply_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                          char *msg, size_t n)
{
    char line[200];
    if (r->ran && r->exit_status == 0) {
        say(msg, n, "created %s and %s", p->durable_path, p->scratch_path);
        return PROV_OK;
    }
    snprintf(msg, n, "cannot create or write the durable and scratch paths: %s",
             utf8_first_line(said(r), line, sizeof line));
    return PROV_FAIL;
}

/* ---- config ---- */

static char *config_check_cmd(const struct prov_provision *p)
{
    char file[600];
    snprintf(file, sizeof file, "%s" CONFIG_FILE, p->durable_path);
    const char *args[1] = {file};
    return prov_sh_template("sha256sum < %s 2>/dev/null || true", 1, args);
}

static char *config_apply_cmd(const struct prov_provision *p)
{
    char dir[600], file[600], tmp[640];
    snprintf(dir, sizeof dir, "%s" CONFIG_DIR, p->durable_path);
    snprintf(file, sizeof file, "%s" CONFIG_FILE, p->durable_path);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    const char *args[6] = {dir, p->config_json, tmp, tmp, file, file};
    return prov_sh_template("mkdir -p -- %s && umask 077 && printf '%%s' %s > %s && mv -f -- %s %s"
                            " && sha256sum < %s",
                            6, args);
}

static enum prov_verdict config_check_eval(struct prov_provision *p,
                                           const struct prov_cmd_result *r, char *msg, size_t n)
{
    if (r->ran && r->out && strncmp(r->out, p->config_sha256, 64) == 0) {
        snprintf(msg, n, "start-up config for stack %s is in place", p->stack_id);
        return PROV_OK;
    }
    snprintf(msg, n, "writing the start-up config for stack %s", p->stack_id);
    return PROV_APPLY;
}

static enum prov_verdict config_apply_eval(struct prov_provision *p,
                                           const struct prov_cmd_result *r, char *msg, size_t n)
{
    char line[200];
    if (r->ran && r->exit_status == 0 && r->out && strncmp(r->out, p->config_sha256, 64) == 0) {
        snprintf(msg, n, "wrote %s" CONFIG_FILE " (sha256 %.12s…)", p->durable_path,
                 p->config_sha256);
        return PROV_OK;
    }
    snprintf(msg, n, "cannot write the start-up config: %s",
             utf8_first_line(said(r), line, sizeof line));
    return PROV_FAIL;
}

/* Every command here is a query except the pull (zero = PROV_CMD_QUERY). */
const struct prov_step_def prov_provision_steps[] = {
    {.name = "facts", .check_cmd = facts_cmd, .check_eval = facts_eval},
    {.name = "driver", .check_cmd = driver_cmd, .check_eval = driver_eval},
    {.name = "container_runtime", .check_cmd = runtime_cmd, .check_eval = runtime_eval},
    {.name = "image",
     .check_cmd = image_inspect_cmd,
     .check_eval = image_check_eval,
     .apply_cmd = image_pull_cmd,
     .apply_eval = image_pull_eval,
     .apply_class = PROV_CMD_PULL,
     .verify_cmd = image_inspect_cmd,
     .verify_eval = image_verify_eval},
    {.name = "paths",
     .check_cmd = paths_check_cmd,
     .check_eval = paths_check_eval,
     .apply_cmd = paths_apply_cmd,
     .apply_eval = paths_apply_eval},
    {.name = "config",
     .check_cmd = config_check_cmd,
     .check_eval = config_check_eval,
     .apply_cmd = config_apply_cmd,
     .apply_eval = config_apply_eval},
};
const int prov_provision_nsteps = sizeof prov_provision_steps / sizeof prov_provision_steps[0];

const char *prov_cmd_class_name(enum prov_cmd_class c)
{
    switch (c) {
    case PROV_CMD_QUERY: return "query";
    case PROV_CMD_PULL: return "pull";
    case PROV_CMD_WORKLOAD: return "workload";
    case PROV_CMD_DIAG: return "diag";
    case PROV_CMD_STOP: return "stop";
    }
    return "unknown";
}

char *prov_image_ref(const char *image, char *digest, size_t digestlen)
{
    char name[384], detail[320];
    if (image == NULL || plan_image_check(image, name, sizeof name, digest, digestlen, detail,
                                          sizeof detail) != PLAN_STACK_OK)
        return NULL;
    /* repository without tag, @digest: what docker pulls and reports in RepoDigests */
    char *slash = strrchr(name, '/');
    char *colon = strrchr(slash ? slash : name, ':');
    if (colon != NULL)
        *colon = '\0';
    char ref[480];
    snprintf(ref, sizeof ref, "%s@%s", name, digest);
    return strdup(ref);
}

int prov_provision_init(struct prov_provision *p, const json_t *stack, const char *durable,
                        const char *scratch, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    const char *image = json_string_value(json_object_get(stack, "image"));
    const char *driver = json_string_value(json_object_get(stack, "driver_version"));
    p->stack_id = json_string_value(json_object_get(stack, "id"));
    char digest[80];
    p->image_ref = prov_image_ref(image, digest, sizeof digest);
    if (p->image_ref == NULL) {
        snprintf(err, errlen, "the stack image does not pass validation");
        return -1;
    }
    if (driver == NULL || !prov_valid_version(driver) || p->stack_id == NULL) {
        snprintf(err, errlen, "the stack driver version does not pass validation");
        return -1;
    }
    if (durable == NULL || scratch == NULL || !prov_valid_abs_path(durable) ||
        !prov_valid_abs_path(scratch)) {
        snprintf(err, errlen, "the pool's durable/scratch paths do not pass validation");
        return -1;
    }
    p->image_digest = strdup(digest);
    p->driver_version = driver;
    p->durable_path = durable;
    p->scratch_path = scratch;
    json_t *cfg = json_pack("{s:s, s:s, s:O?}", "stack_id", p->stack_id, "image", image,
                            "startup_config", json_object_get(stack, "startup_config"));
    p->config_json = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(cfg);
    if (p->config_json == NULL || p->image_ref == NULL || p->image_digest == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    util_sha256_hex(p->config_json, strlen(p->config_json), p->config_sha256);
    return 0;
}

void prov_provision_free(struct prov_provision *p)
{
    free((char *)p->image_ref);
    free((char *)p->image_digest);
    free((char *)p->config_json);
    json_decref(p->facts);
    memset(p, 0, sizeof *p);
}
