/* hosts.h — /v1/hosts and host actions, /v1/jobs. */
#ifndef GPUFLEET_API_HOSTS_H
#define GPUFLEET_API_HOSTS_H

#include "api/http.h"

/* A host key fingerprint as ssh-keygen -l prints it: SHA256:<43 base64 characters>. */
int api_valid_host_key(const char *s);
/* A login name as hosts name theirs (POSIX-ish: a-z, 0-9, _ and -, at most 32, not starting
 * with a digit or -): a host's user and a credential's allowed_users. */
int api_valid_login_user(const char *s);

enum MHD_Result api_hosts_create(struct api_req *r);
enum MHD_Result api_hosts_list(struct api_req *r);
enum MHD_Result api_hosts_get(struct api_req *r);
enum MHD_Result api_hosts_patch(struct api_req *r);
enum MHD_Result api_hosts_delete(struct api_req *r);
enum MHD_Result api_hosts_provision(struct api_req *r);

enum MHD_Result api_jobs_list(struct api_req *r);
enum MHD_Result api_jobs_get(struct api_req *r);
enum MHD_Result api_jobs_cancel(struct api_req *r);

#endif
