/* bw_reference.c — see bw_reference.h. */
#include "planner/bw_reference.h"

#include <string.h>

const struct plan_bw_reference *plan_bw_reference_find(const char *model_key,
                                                       const char *interconnect, int gpu_count)
{
    if (model_key == NULL)
        return NULL;
    int any = interconnect == NULL || strcmp(interconnect, "any") == 0;
    for (unsigned long i = 0; i < plan_bw_references_len; i++) {
        const struct plan_bw_reference *r = &plan_bw_references[i];
        if (strcmp(r->model_key, model_key) == 0 && r->gpu_count == gpu_count &&
            (any || strcmp(r->interconnect, interconnect) == 0))
            return r;
    }
    return NULL;
}
