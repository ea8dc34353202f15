/* projects.h — /v1/projects, their members, and /v1/me (see projects.c). */
#ifndef GPUFLEET_API_PROJECTS_H
#define GPUFLEET_API_PROJECTS_H

#include "api/http.h"

enum MHD_Result api_projects_create(struct api_req *r);
enum MHD_Result api_projects_list(struct api_req *r);
enum MHD_Result api_projects_get(struct api_req *r);
enum MHD_Result api_projects_patch(struct api_req *r);
enum MHD_Result api_projects_delete(struct api_req *r);
enum MHD_Result api_project_members_list(struct api_req *r);
enum MHD_Result api_project_members_put(struct api_req *r);
enum MHD_Result api_project_members_delete(struct api_req *r);
enum MHD_Result api_me(struct api_req *r);

#endif
