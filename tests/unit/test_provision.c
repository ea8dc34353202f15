/* test_provision.c — command templates and quoting, and the provisioning steps' decisions
 * over recorded command results. */
#include <stdlib.h>

#include "common/utf8.h"
#include "provisioner/jobs/steps.h"
#include "provisioner/shell.h"
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
    CHECK(prov_sh_template("echo %d", 0, NULL) == NULL);    /* only %s and %% */
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
    CHECK_STR(cmd, "docker image inspect --format '{{json .RepoDigests}}' -- "
                   "'vllm/vllm-openai@sha256:"
                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'");
    free(cmd);
    struct prov_cmd_result missing = {1, 1, "", "Error: No such image"};
    CHECK(step("image")->check_eval(&p, &missing, msg, sizeof msg) == PROV_APPLY);
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
    /* raw bytes in the OS name and a GPU name: the facts keep both GPUs, cleaned */
    char raw[1024];
    snprintf(raw, sizeof raw, "%s", facts.out);
    memcpy(strstr(raw, "Debian GNU"),
           "Deb\xff"
           "an",
           6);
    strstr(raw, ", GPU-1")[-1] = '\xff'; /* "…HBM\xff" */
    facts.out = raw;
    CHECK(step("facts")->check_eval(&p, &facts, msg, sizeof msg) == PROV_OK);
    CHECK(json_integer_value(json_object_get(p.facts, "gpu_count")) == 2);
    char *dump = json_dumps(p.facts, JSON_COMPACT);
    CHECK(dump != NULL && strstr(dump, "Deb\xef\xbf\xbd"
                                       "an") != NULL);
    free(dump);
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
    struct prov_cmd_result absent = {
        1, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n", ""};
    CHECK(step("config")->check_eval(&p, &absent, msg, sizeof msg) == PROV_APPLY);
    char out[80];
    snprintf(out, sizeof out, "%s  -\n", p.config_sha256);
    struct prov_cmd_result present = {1, 0, out, ""};
    CHECK(step("config")->check_eval(&p, &present, msg, sizeof msg) == PROV_OK);
    prov_provision_free(&p);
    json_decref(s);
}

#define PIN   "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER "sha256:def0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc"

/* check (inspect) → apply (pull) → verify (inspect): the digest is only ever taken from
 * the local image's RepoDigests, never from what the pull printed. */
static void image_digest(void)
{
    json_t *s = stack_doc();
    struct prov_provision p;
    char err[256], msg[512];
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    const struct prov_step_def *d = step("image");
    CHECK(d->check_class == PROV_CMD_QUERY && d->apply_class == PROV_CMD_PULL &&
          d->verify_class == PROV_CMD_QUERY && d->verify_cmd != NULL && d->verify_eval != NULL);
    char *pull = d->apply_cmd(&p), *verify = d->verify_cmd(&p), *check = d->check_cmd(&p);
    CHECK_STR(pull, "docker pull -- 'vllm/vllm-openai@" PIN "'");
    CHECK(verify != NULL && check != NULL && strcmp(verify, check) == 0);
    free(pull);
    free(verify);
    free(check);
    static const struct {
        const char *out;
        int exit_status;
        enum prov_verdict check, verify;
    } cases[] = {
        {"[\"vllm/vllm-openai@" PIN "\"]\n", 0, PROV_OK, PROV_OK},
        /* several RepoDigests, the pinned one second */
        {"[\"mirror.example/vllm@" OTHER "\",\"vllm/vllm-openai@" PIN "\"]", 0, PROV_OK, PROV_OK},
        /* docker's own spelling of a Docker Hub repository */
        {"[\"docker.io/vllm/vllm-openai@" PIN "\"]", 0, PROV_OK, PROV_OK},
        /* the pinned digest under another repository is not the pinned image */
        {"[\"evil/vllm-openai@" PIN "\"]", 0, PROV_APPLY, PROV_FAIL},
        {"[\"vllm/vllm-openai@" OTHER "\"]", 0, PROV_APPLY, PROV_FAIL},
        {"[]", 0, PROV_APPLY, PROV_FAIL},
        {"null", 0, PROV_APPLY, PROV_FAIL},
        {"{\"RepoDigests\": []}", 0, PROV_APPLY, PROV_FAIL},
        {"vllm/vllm-openai@" PIN, 0, PROV_APPLY, PROV_FAIL}, /* not JSON: unverified */
        {"[\"vllm/vllm-openai@" PIN "\"", 0, PROV_APPLY, PROV_FAIL},
        {"\xff[garbage", 0, PROV_APPLY, PROV_FAIL},
        {"[1, null, \"vllm/vllm-openai@" PIN "\"]", 0, PROV_OK, PROV_OK},
        {"", 1, PROV_APPLY, PROV_FAIL}, /* Error: No such image */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct prov_cmd_result r = {1, cases[i].exit_status, cases[i].out,
                                    cases[i].exit_status ? "Error: No such image: x\n" : ""};
        CHECK(d->check_eval(&p, &r, msg, sizeof msg) == cases[i].check);
        CHECK(utf8_valid(msg, strlen(msg)));
        CHECK(d->verify_eval(&p, &r, msg, sizeof msg) == cases[i].verify);
        CHECK(utf8_valid(msg, strlen(msg)));
    }
    /* library/ images: "ubuntu" is "docker.io/library/ubuntu" */
    json_object_set_new(s, "image", json_string("ubuntu:24.04@" PIN));
    prov_provision_free(&p);
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    struct prov_cmd_result lib = {1, 0, "[\"docker.io/library/ubuntu@" PIN "\"]", ""};
    CHECK(d->check_eval(&p, &lib, msg, sizeof msg) == PROV_OK);
    lib.out = "[\"library/ubuntu@" PIN "\"]";
    CHECK(d->verify_eval(&p, &lib, msg, sizeof msg) == PROV_OK);
    lib.out = "[\"docker.io/library/debian@" PIN "\"]";
    CHECK(d->verify_eval(&p, &lib, msg, sizeof msg) == PROV_FAIL);
    prov_provision_free(&p);
    json_object_set_new(s, "image", json_string("vllm/vllm-openai:v0.6.3@" PIN));
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    /* the pull: its exit status only; its output (which names the pinned digest) proves
     * nothing, so the verify decides */
    struct prov_cmd_result pulled = {1, 0,
                                     "v0.6.3: Pulling from vllm/vllm-openai\nDigest: " PIN
                                     "\nStatus: Downloaded newer image for vllm/vllm-openai@" PIN
                                     "\n",
                                     ""};
    CHECK(d->apply_eval(&p, &pulled, msg, sizeof msg) == PROV_OK);
    struct prov_cmd_result after = {1, 0, "[\"vllm/vllm-openai@" OTHER "\", \"x/y@sha256:99\"]\n",
                                    ""};
    CHECK(d->verify_eval(&p, &after, msg, sizeof msg) == PROV_FAIL);
    CHECK(strstr(msg, "pulled vllm/vllm-openai@" PIN ";") != NULL);
    CHECK(strstr(msg, "the local image reports " OTHER ", sha256:99") != NULL);
    /* many digests: as many as fit, then "…" */
    char many[2048] = "[";
    for (int i = 0; i < 12; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s\"r%d@" OTHER "\"",
                 i ? "," : "", i);
    strcat(many, "]");
    after.out = many;
    CHECK(d->verify_eval(&p, &after, msg, sizeof msg) == PROV_FAIL);
    CHECK(utf8_valid(msg, strlen(msg)) && strlen(msg) < 480 && strstr(msg, ", …") != NULL);
    struct prov_cmd_result denied = {1, 1, "",
                                     "Error response from daemon: pull access denied for \xff"
                                     "vllm\nmore\n"};
    CHECK(d->apply_eval(&p, &denied, msg, sizeof msg) == PROV_FAIL);
    CHECK(strstr(msg, "pull access denied") != NULL && strstr(msg, "more") == NULL);
    CHECK(utf8_valid(msg, strlen(msg)));
    prov_provision_free(&p);
    json_decref(s);
}

static void step_classes(void)
{
    for (int i = 0; i < prov_provision_nsteps; i++) {
        const struct prov_step_def *d = &prov_provision_steps[i];
        int image = strcmp(d->name, "image") == 0;
        CHECK(d->check_class == PROV_CMD_QUERY && d->verify_class == PROV_CMD_QUERY);
        CHECK(d->apply_class == (image ? PROV_CMD_PULL : PROV_CMD_QUERY));
        CHECK((d->verify_cmd != NULL) == image && (d->verify_eval != NULL) == image);
    }
    CHECK_STR(prov_cmd_class_name(PROV_CMD_QUERY), "query");
    CHECK_STR(prov_cmd_class_name(PROV_CMD_PULL), "pull");
    CHECK_STR(prov_cmd_class_name(PROV_CMD_WORKLOAD), "workload");
    CHECK_STR(prov_cmd_class_name(PROV_CMD_STOP), "stop");
}

/* Host bytes in step messages: always valid UTF-8. */
static void step_messages_utf8(void)
{
    json_t *s = stack_doc();
    struct prov_provision p;
    char err[256], msg[512];
    CHECK(prov_provision_init(&p, s, "/data", "/scratch", err, sizeof err) == 0);
    struct prov_cmd_result drv = {1, 0,
                                  "550.127.05\n\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82"
                                  "\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                                  "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82"
                                  "\xac\xe2\x82\xac\xe2\x82\xac\n",
                                  ""};
    CHECK(step("driver")->check_eval(&p, &drv, msg, sizeof msg) == PROV_FAIL);
    CHECK(utf8_valid(msg, strlen(msg)));
    struct prov_cmd_result rt = {1, 0, "24.0\xff\n", ""};
    CHECK(step("container_runtime")->check_eval(&p, &rt, msg, sizeof msg) == PROV_OK);
    CHECK(utf8_valid(msg, strlen(msg)));
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
    {"steps: image — inspect RepoDigests, pull, verify the pinned digest (several digests, "
     "docker.io/, library/, garbage, empty, a pull naming the digest)",
     image_digest},
    {"steps: command classes (only the pull is not a query), verify only for the image",
     step_classes},
    {"steps: host bytes in messages stay valid UTF-8", step_messages_utf8},
    UNIT_END,
};
