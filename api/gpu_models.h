/* gpu_models.h — /v1/gpu-models: the catalog (viewer reads the shared models and its
 * projects' own; a project's admin adds custom models to it; a platform admin shares
 * them). */
#ifndef GPUFLEET_API_GPU_MODELS_H
#define GPUFLEET_API_GPU_MODELS_H

#include "api/http.h"

enum MHD_Result api_gpu_models_list(struct api_req *r);
enum MHD_Result api_gpu_models_get(struct api_req *r);
enum MHD_Result api_gpu_models_create(struct api_req *r);
enum MHD_Result api_gpu_models_patch(struct api_req *r);

/* Key pattern ^[a-z0-9][a-z0-9_]{1,63}$. */
int api_valid_model_key(const char *s);

#endif
