/* steps.c — see steps.h. */
#include "provisioner/steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "planner/stack.h"
#include "provisioner/parse.h"
#include "provisioner/shell.h"

#define CONFIG_DIR "/.gpufleet"
#define CONFIG_FILE "/.gpufleet/stack.json"

static const char *const gpu_fields[] = {"index", "name", "uuid", "memory.total",
                                         "driver_version", "pci.bus_id"};
#define NGPU_FIELDS (sizeof gpu_fields / sizeof gpu_fields[0])

static void say(char *msg, size_t n, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, n, fmt, a ? a : "", b ? b : "");
}

static const char *first_line(const char *s, char *buf, size_t n)
{
    size_t len = strcspn(s ? s : "", "\n");
    if (len >= n)
        len = n - 1;
    memcpy(buf, s ? s : "", len);
    buf[len] = '\0';
    return buf;
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
            json_object_set_new(o, key, json_string(v));
        }
    }
    free(copy);
    return o;
}

static json_t *trimmed(const char *text)
{
    if (text == NULL)
        return json_null();
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    return json_stringn(text, n);
}

static enum prov_verdict facts_eval(struct prov_provision *p, const struct prov_cmd_result *r,
                                    char *msg, size_t n)
{
    if (!r->ran || r->out == NULL || strstr(r->out, "@@end") == NULL) {
        char line[128];
        say(msg, n, "could not gather facts: %s%s", first_line(r->err, line, sizeof line), NULL);
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
                gpu_list, json_pack("{s:I, s:s, s:s, s:I, s:s}", "index",
                                    (json_int_t)row->index.v, "name", row->name, "uuid",
                                    row->uuid, "memory_mib", (json_int_t)row->mem_total_mib.v,
                                    "pci_bus_id", row->bus_id));
        }
        if (q.nrows > 0)
            json_object_set_new(p->facts, "driver_version", json_string(q.rows[0].driver_version));
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
        const char *text = r->err && *r->err ? r->err : r->out ? r->out : "";
        prov_nvsmi_error_classify(text, strlen(text), r->ran ? r->exit_status : -1, &e);
        snprintf(msg, n, "nvidia-smi failed (%s): %s", prov_nvsmi_reason_name(e.reason),
                 first_line(text, line, sizeof line));
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
            snprintf(msg, n, "driver %.40s on the host, the stack pins %s (installing drivers is "
                     "out of scope)", l, p->driver_version);
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
        const char *text = r->err && *r->err ? r->err : r->out ? r->out : "";
        prov_ctr_classify(text, strlen(text), r->ran ? r->exit_status : -1, &d);
        snprintf(msg, n, "no usable container runtime (%s): %s", prov_ctr_reason_name(d.reason),
                 first_line(text, line, sizeof line));
        return PROV_FAIL;
    }
    snprintf(msg, n, "docker %s", first_line(r->out, line, sizeof line));
    return PROV_OK;
}

/* ---- image ---- */

static char *image_check_cmd(const struct prov_provision *p)
{
    const char *args[1] = {p->image_ref};
    return prov_sh_template("docker image inspect --format '{{index .RepoDigests 0}}' %s", 1, args);
}

static char *image_apply_cmd(const struct prov_provision *p)
{
    const char *args[2] = {p->image_ref, p->image_ref};
    return prov_sh_template(
        "docker pull %s && docker image inspect --format '{{index .RepoDigests 0}}' %s", 2, args);
}

static enum prov_verdict image_verify(struct prov_provision *p, const struct prov_cmd_result *r,
                                      char *msg, size_t n, enum prov_verdict missing)
{
    char line[160];
    if (r->ran && r->exit_status == 0 && r->out && strstr(r->out, p->image_digest) != NULL) {
        snprintf(msg, n, "%s present with digest %s", p->image_ref, p->image_digest);
        return PROV_OK;
    }
    if (missing == PROV_APPLY) {
        snprintf(msg, n, "%s is not present; pulling it", p->image_ref);
        return PROV_APPLY;
    }
    snprintf(msg, n, "pulling %s failed or the local digest differs: %s", p->image_ref,
             first_line(r->err && *r->err ? r->err : r->out, line, sizeof line));
    return PROV_FAIL;
}

static enum prov_verdict image_check_eval(struct prov_provision *p,
                                          const struct prov_cmd_result *r, char *msg, size_t n)
{
    return image_verify(p, r, msg, n, PROV_APPLY);
}

static enum prov_verdict image_apply_eval(struct prov_provision *p,
                                          const struct prov_cmd_result *r, char *msg, size_t n)
{
    return image_verify(p, r, msg, n, PROV_FAIL);
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

static enum prov_verdict paths_check_eval(struct prov_provision *p,
                                          const struct prov_cmd_result *r, char *msg, size_t n)
{
    if (r->ran && r->exit_status == 0) {
        say(msg, n, "%s and %s exist and are writable", p->durable_path, p->scratch_path);
        return PROV_OK;
    }
    say(msg, n, "creating %s and %s", p->durable_path, p->scratch_path);
    return PROV_APPLY;
}

static enum prov_verdict paths_apply_eval(struct prov_provision *p,
                                          const struct prov_cmd_result *r, char *msg, size_t n)
{
    char line[200];
    if (r->ran && r->exit_status == 0) {
        say(msg, n, "created %s and %s", p->durable_path, p->scratch_path);
        return PROV_OK;
    }
    snprintf(msg, n, "cannot create or write the durable and scratch paths: %s",
             first_line(r->err && *r->err ? r->err : r->out, line, sizeof line));
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
             first_line(r->err && *r->err ? r->err : r->out, line, sizeof line));
    return PROV_FAIL;
}

const struct prov_step_def prov_provision_steps[] = {
    {"facts", facts_cmd, facts_eval, NULL, NULL},
    {"driver", driver_cmd, driver_eval, NULL, NULL},
    {"container_runtime", runtime_cmd, runtime_eval, NULL, NULL},
    {"image", image_check_cmd, image_check_eval, image_apply_cmd, image_apply_eval},
    {"paths", paths_check_cmd, paths_check_eval, paths_apply_cmd, paths_apply_eval},
    {"config", config_check_cmd, config_check_eval, config_apply_cmd, config_apply_eval},
};
const int prov_provision_nsteps = sizeof prov_provision_steps / sizeof prov_provision_steps[0];

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
