/* test_provision.c — command templates and quoting, and the provisioning steps' decisions
 * over recorded command results. */
#include <stdlib.h>

#include "provisioner/shell.h"
#include "provisioner/steps.h"
#include "tests/unit/unit.h"

static char *quoted(const char *s)
{
    struct sbuf b;
    sbuf_init(&b, 16);
    prov_sh_quote(&b, s);
    return sbuf_take(&b, NULL);
}

static void quoting(void)
{
    char *q = quoted("plain");
    CHECK_STR(q, "'plain'");
    free(q);
    q = quoted("it's");
    CHECK_STR(q, "'it'\\''s'");
    free(q);
    /* Every shell metacharacter stays inside the quotes. */
    q = quoted("; rm -rf / $(reboot) `id` \"x\"\nnext");
    CHECK_STR(q, "'; rm -rf / $(reboot) `id` \"x\"\nnext'");
    free(q);
    q = quoted("");
    CHECK_STR(q, "''");
    free(q);
}

static void templates(void)
{
    const char *args[2] = {"/data/a b", "x'y"};
    char *c = prov_sh_template("mkdir -p -- %s %s", 2, args);
    CHECK_STR(c, "mkdir -p -- '/data/a b' 'x'\\''y'");
    free(c);
    c = prov_sh_template("printf '%%s' %s", 1, args);
    CHECK_STR(c, "printf '%s' '/data/a b'");
    free(c);
    CHECK(prov_sh_template("echo %d", 0, NULL) == NULL); /* only %s and %% */
    CHECK(prov_sh_template("echo %s %s", 1, args) == NULL); /* too few */
    CHECK(prov_sh_template("echo", 1, args) == NULL);       /* too many */
    const char *nul[1] = {NULL};
    CHECK(prov_sh_template("echo %s", 1, nul) == NULL);
}

static void validators(void)
{
    CHECK(prov_valid_abs_path("/data/models"));
    CHECK(prov_valid_abs_path("/mnt/scratch-1/x.y"));
    CHECK(!prov_valid_abs_path("/"));
    CHECK(!prov_valid_abs_path("relative/path"));
    CHECK(!prov_valid_abs_path("/data/../etc"));
    CHECK(!prov_valid_abs_path("/data/.."));
    CHECK(!prov_valid_abs_path("/data//x"));
    CHECK(!prov_valid_abs_path("/data/$(reboot)"));
    CHECK(!prov_valid_abs_path("/data/a b"));
    CHECK(!prov_valid_abs_path("/data/'x"));
    CHECK(prov_valid_version("550.127.05"));
    CHECK(!prov_valid_version("550.1; reboot"));
    CHECK(!prov_valid_version(""));
    CHECK(prov_valid_stop_command("sudo /usr/sbin/poweroff"));
    CHECK(prov_valid_stop_command("poweroff --no-wall"));
    CHECK(prov_valid_stop_command("shutdown -h now"));
    CHECK(!prov_valid_stop_command(""));
    CHECK(!prov_valid_stop_command("-h now"));
    CHECK(!prov_valid_stop_command("poweroff; rm -rf /"));
    CHECK(!prov_valid_stop_command("poweroff $(id)"));
    CHECK(!prov_valid_stop_command("poweroff 'x'"));
    CHECK(!prov_valid_stop_command("poweroff\nid"));
    CHECK(!prov_valid_stop_command("poweroff | tee"));
}

static json_t *stack_doc(void)
{
    return json_loads("{\"id\":\"6b1152d0-1bca-481c-b901-a91b13b8a51d\","
                      "\"image\":\"vllm/vllm-openai:v0.6.3@sha256:"
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
                      "\"driver_version\":\"550.127.05\",\"startup_config\":{\"port\":8000}}",
                      0, NULL);
}

static const struct prov_step_def *step(const char *name)
{
    for (int i = 0; i < prov_provision_nsteps; i++)
        if (strcmp(prov_provision_steps[i].name, name) == 0)
            return &prov_provision_steps[i];
    return NULL;
}

static void init_and_image(void)
{
    json_t *s = stack_doc();
    struct prov_provision p;
    char err[256], msg[512];
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    CHECK_STR(p.image_ref, "vllm/vllm-openai@sha256:"
                           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    char *cmd = step("image")->check_cmd(&p);
    CHECK(cmd != NULL && strstr(cmd, "docker image inspect") != NULL &&
          strstr(cmd, "'vllm/vllm-openai@sha256:") != NULL);
    free(cmd);
    struct prov_cmd_result missing = {1, 1, "", "Error: No such image"};
    CHECK(step("image")->check_eval(&p, &missing, msg, sizeof msg) == PROV_APPLY);
    struct prov_cmd_result other = {1, 0, "vllm/vllm-openai@sha256:ffff", ""};
    CHECK(step("image")->apply_eval(&p, &other, msg, sizeof msg) == PROV_FAIL);
    struct prov_cmd_result good = {1, 0, p.image_ref, ""};
    CHECK(step("image")->apply_eval(&p, &good, msg, sizeof msg) == PROV_OK);
    prov_provision_free(&p);
    /* A pool path that fails validation stops provisioning before any command. */
    CHECK(prov_provision_init(&p, s, "/data/'x", "/scratch", err, sizeof err) != 0);
    prov_provision_free(&p);
    CHECK(prov_provision_init(&p, s, "/data", "/data/../etc", err, sizeof err) != 0);
    prov_provision_free(&p);
    json_decref(s);
}

static void driver_and_facts(void)
{
    json_t *s = stack_doc();
    struct prov_provision p;
    char err[256], msg[512];
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    struct prov_cmd_result ok = {1, 0, "550.127.05\n550.127.05\n", ""};
    CHECK(step("driver")->check_eval(&p, &ok, msg, sizeof msg) == PROV_OK);
    struct prov_cmd_result mismatch = {1, 0, "550.127.05\n535.309.01\n", ""};
    CHECK(step("driver")->check_eval(&p, &mismatch, msg, sizeof msg) == PROV_FAIL);
    CHECK(strstr(msg, "535.309.01") != NULL && strstr(msg, "550.127.05") != NULL);
    struct prov_cmd_result nodriver = {1, 9, "",
                                       "NVIDIA-SMI has failed because it couldn't communicate "
                                       "with the NVIDIA driver. Make sure that the latest NVIDIA "
                                       "driver is installed and running.\n"};
    CHECK(step("driver")->check_eval(&p, &nodriver, msg, sizeof msg) == PROV_FAIL);
    struct prov_cmd_result facts = {
        1, 0,
        "@@os\nID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
        "@@kernel\n6.1.0-18-amd64\n@@cpus\n96\n@@mem\nMemTotal:       2113396776 kB\n"
        "@@numa\n2\n@@fs\nFilesystem 1024-blocks Used Available Capacity Mounted on\n"
        "@@gpus\n0, NVIDIA H100 80GB HBM3, GPU-1, 81559, 550.127.05, 00000000:18:00.0\n"
        "1, NVIDIA H100 80GB HBM3, GPU-2, 81559, 550.127.05, 00000000:2A:00.0\n@@end\n",
        ""};
    CHECK(step("facts")->check_eval(&p, &facts, msg, sizeof msg) == PROV_OK);
    CHECK(json_integer_value(json_object_get(p.facts, "gpu_count")) == 2);
    CHECK(json_integer_value(json_object_get(p.facts, "cpus")) == 96);
    CHECK(json_integer_value(json_object_get(p.facts, "numa_nodes")) == 2);
    CHECK(json_integer_value(json_object_get(p.facts, "memory_bytes")) == 2113396776LL * 1024);
    CHECK_STR(json_string_value(json_object_get(json_object_get(p.facts, "os"), "version_id")),
              "12");
    CHECK_STR(json_string_value(json_object_get(p.facts, "driver_version")), "550.127.05");
    struct prov_cmd_result cut = {1, 0, "@@os\nID=debian\n", ""}; /* truncated: no @@end */
    CHECK(step("facts")->check_eval(&p, &cut, msg, sizeof msg) == PROV_FAIL);
    prov_provision_free(&p);
    json_decref(s);
}

static void config_step(void)
{
    json_t *s = stack_doc();
    struct prov_provision p;
    char err[256], msg[512];
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    char *apply = step("config")->apply_cmd(&p);
    CHECK(apply != NULL && strstr(apply, "'/data/.gpufleet/stack.json.tmp'") != NULL);
    /* the JSON content travels as one quoted printf argument */
    CHECK(strstr(apply, "printf '%s' '{\"image\"") != NULL);
    free(apply);
    struct prov_cmd_result absent = {1, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n", ""};
    CHECK(step("config")->check_eval(&p, &absent, msg, sizeof msg) == PROV_APPLY);
    char out[80];
    snprintf(out, sizeof out, "%s  -\n", p.config_sha256);
    struct prov_cmd_result present = {1, 0, out, ""};
    CHECK(step("config")->check_eval(&p, &present, msg, sizeof msg) == PROV_OK);
    prov_provision_free(&p);
    json_decref(s);
}

UNIT_SUITE(provision_tests) = {
    {"shell: single quotes hold every metacharacter", quoting},
    {"shell: templates take only %s and %%, argument count exact", templates},
    {"shell: path and version patterns", validators},
    {"steps: image reference by digest, pull decision, bad pool paths", init_and_image},
    {"steps: driver pin, nvidia-smi failure, facts parsing", driver_and_facts},
    {"steps: config written as one quoted argument, checked by sha256", config_step},
    UNIT_END,
};
