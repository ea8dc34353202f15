/* webhooks.h — /v1/webhooks: signed event deliveries (service/webhooks.h delivers them).
 * Admin only: a webhook's URL may carry a token of its receiver's. */
#ifndef GPUFLEET_API_WEBHOOKS_H
#define GPUFLEET_API_WEBHOOKS_H

#include "api/http.h"

/* GPUFLEET_WEBHOOK_ALLOW_CIDRS (borrowed for the process lifetime). */
void api_webhooks_configure(const char *allow_cidrs);

enum MHD_Result api_webhooks_create(struct api_req *r);
enum MHD_Result api_webhooks_list(struct api_req *r);
enum MHD_Result api_webhooks_get(struct api_req *r);
enum MHD_Result api_webhooks_delete(struct api_req *r);
enum MHD_Result api_webhooks_deliveries(struct api_req *r);
enum MHD_Result api_webhooks_replay(struct api_req *r);

#endif
