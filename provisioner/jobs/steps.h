/* steps.h — the provisioning program (docs/product.md §4): facts, driver, container runtime,
 * image, paths, config. Each step is a check and, when the check says so, an apply; each
 * is idempotent and every command it runs comes from a fixed template. Pure logic over
 * command results: the worker runs the commands and records them. */
#ifndef GPUFLEET_STEPS_H
#define GPUFLEET_STEPS_H

#include <jansson.h>
#include <stddef.h>

/* What the provisioning needs; all strings validated before use. */
struct prov_provision {
    const char *stack_id;
    const char *image_ref;      /* repository@sha256:… (no tag): what is pulled and inspected */
    const char *image_digest;   /* sha256:… */
    const char *driver_version; /* the stack's pin */
    const char *durable_path, *scratch_path;
    const char *config_json; /* the start-up config written to the host */
    char config_sha256[65];
    json_t *facts;      /* gathered facts (owned; created by the facts step) */
    json_t *stack_json; /* the stack document the strings above point into (owned
                           by the caller that set it) */
};

/* A command result, as the steps see it. */
struct prov_cmd_result {
    int ran; /* the command reached an exit status */
    int exit_status;
    const char *out; /* stdout tail */
    const char *err; /* stderr tail */
};

enum prov_verdict {
    PROV_OK,    /* in place: nothing to apply (check) / applied (apply) */
    PROV_APPLY, /* check says: run the apply */
    PROV_FAIL,  /* the step failed; msg says why */
};

/* What kind of remote command it is: the worker picks its timeout (and the message when
 * it does not answer) by class. */
enum prov_cmd_class {
    PROV_CMD_QUERY,    /* a short read: nvidia-smi, docker inspect/version, test, sha256sum … */
    PROV_CMD_PULL,     /* docker pull: network-bound, may take minutes */
    PROV_CMD_WORKLOAD, /* starts a container of the pinned image (docker run) */
    PROV_CMD_DIAG,     /* dcgmi diag */
    PROV_CMD_STOP,     /* the pool's stop command */
};
/* "query", "pull", "workload", "diag", "stop"; "unknown" for anything else. Static. */
const char *prov_cmd_class_name(enum prov_cmd_class c);

/* A step runs check → [apply → verify]: the apply only when check_eval says PROV_APPLY,
 * the verify (when the step has one) only after the apply succeeded; verify_eval's
 * verdict is the step's (PROV_OK or PROV_FAIL). */
struct prov_step_def {
    const char *name;
    /* Returns the command (caller frees), or NULL when a value failed validation. */
    char *(*check_cmd)(const struct prov_provision *p);
    enum prov_verdict (*check_eval)(struct prov_provision *p, const struct prov_cmd_result *r,
                                    char *msg, size_t msglen);
    char *(*apply_cmd)(const struct prov_provision *p); /* NULL when the step has no apply */
    enum prov_verdict (*apply_eval)(struct prov_provision *p, const struct prov_cmd_result *r,
                                    char *msg, size_t msglen);
    enum prov_cmd_class check_class, apply_class, verify_class;
    char *(*verify_cmd)(const struct prov_provision *p); /* NULL when the step has no verify */
    enum prov_verdict (*verify_eval)(struct prov_provision *p, const struct prov_cmd_result *r,
                                     char *msg, size_t msglen);
};

extern const struct prov_step_def prov_provision_steps[];
extern const int prov_provision_nsteps;

/* "repository@sha256:…" (the tag dropped) for a pinned image reference, or NULL when it
 * does not pass validation; digest receives "sha256:…". Caller frees. */
char *prov_image_ref(const char *image, char *digest, size_t digestlen);

/* Prepares p from a stack document (JSON text from the stacks table) and pool paths.
 * Returns 0, or -1 with a reason when a value does not pass validation. */
int prov_provision_init(struct prov_provision *p, const json_t *stack, const char *durable,
                        const char *scratch, char *err, size_t errlen);
void prov_provision_free(struct prov_provision *p);

#endif
