/* pools.h — /v1/pools: expected GPUs, prices, idle policy, stop command, paths, gate. */
#ifndef GPUFLEET_API_POOLS_H
#define GPUFLEET_API_POOLS_H

#include "api/http.h"

enum MHD_Result api_pools_create(struct api_req *r);
enum MHD_Result api_pools_list(struct api_req *r);
enum MHD_Result api_pools_get(struct api_req *r);
enum MHD_Result api_pools_replace(struct api_req *r);
enum MHD_Result api_pools_delete(struct api_req *r);

/* Pattern checks shared with whoever builds remote commands from a pool (exported for
 * the provisioner and the unit tests). Each returns 1 when s is acceptable. */
int api_pool_valid_stop_command(const char *s);
int api_pool_valid_path(const char *s);
int api_pool_valid_link_class(const char *s);

#endif
