/* credentials.h — /v1/credentials: SSH private keys, encrypted at rest, never returned. */
#ifndef GPUFLEET_API_CREDENTIALS_H
#define GPUFLEET_API_CREDENTIALS_H

#include "api/http.h"

enum MHD_Result api_credentials_create(struct api_req *r);
enum MHD_Result api_credentials_list(struct api_req *r);
enum MHD_Result api_credentials_get(struct api_req *r);
enum MHD_Result api_credentials_delete(struct api_req *r);
/* PATCH: the binding (allowed_users, allowed_cidrs), audited with its before and after. */
enum MHD_Result api_credentials_patch(struct api_req *r);

#endif
