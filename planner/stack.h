/* stack.h — pinned software stack rules (docs/product.md §3): image by digest, driver/branch
 * agreement, CUDA checked against the driver with NVIDIA's tables (data/). Pure logic. */
#ifndef GPUFLEET_STACK_H
#define GPUFLEET_STACK_H

#include <jansson.h>
#include <stddef.h>

struct plan_cuda_toolkit {
    const char *triplet;      /* "12.4.1" */
    const char *label;        /* "12.4 Update 1" */
    const char *linux_driver; /* minimum driver shipped with the toolkit */
    int ga;
};
struct plan_cuda_family {
    int major;
    const char *min_driver; /* minor-version-compatibility floor ("525.60.13", or "580") */
};
extern const struct plan_cuda_toolkit plan_cuda_toolkits[];
extern const size_t plan_cuda_toolkits_count;
extern const struct plan_cuda_family plan_cuda_families[];
extern const size_t plan_cuda_families_count;

enum plan_stack_err {
    PLAN_STACK_OK = 0,
    PLAN_STACK_IMAGE_NOT_PINNED,
    PLAN_STACK_INVALID_FIELD,
    PLAN_STACK_UNKNOWN_CUDA,
    PLAN_STACK_CUDA_INCOMPATIBLE,
};

struct plan_stack_result {
    enum plan_stack_err err;
    char field[64];
    char detail[320];
    json_t *warnings; /* array of {code, message}; new reference, caller owns */
    char image_name[384];
    char image_digest[80];
};

/* Compares dotted numeric versions ("550.54.15" vs "525.60.13"): <0, 0, >0. */
int plan_version_cmp(const char *a, const char *b);
/* Splits and checks "name[:tag]@sha256:<64 lowercase hex>". Returns 0, or an error kind
 * (IMAGE_NOT_PINNED for a tag-only or malformed digest, INVALID_FIELD for a bad name). */
enum plan_stack_err plan_image_check(const char *image, char *name, size_t namelen, char *digest,
                                     size_t digestlen, char *detail, size_t detaillen);
/* Checks a stack body whose fields passed the type/pattern spec. Always fills
 * res->warnings (possibly empty). */
void plan_stack_check(const json_t *stack, struct plan_stack_result *res);

#endif
