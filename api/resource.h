/* resource.h — request patterns shared by resource families. */
#ifndef GPUFLEET_RESOURCE_H
#define GPUFLEET_RESOURCE_H

#include "api/http.h"
#include "common/crypt.h"
#include "service/host_commands.h"

/* The {id} path parameter when it is a UUID; otherwise replies 404 "no <what> has this id"
 * (an id that cannot exist is answered like an unknown one) and returns NULL. */
const char *api_path_id(struct api_req *r, const char *what);

/* A secret sealed for a new row (common/crypt.h), its fresh id the AAD. */
struct api_sealed {
    char id[37];
    const char *kid; /* the master key's id (borrowed) */
    unsigned char nonce[CRYPT_NONCE_LEN];
    unsigned char *ct; /* ciphertext and tag (caller frees) */
    size_t ctlen;
};
/* Seals pt[ptlen] under the master key for a new row. Returns 0, or -1 after logging
 * "<what>: …" and replying 500 into *ret: no master key, or "<secret> could not be
 * sealed". */
int api_seal_new(struct api_req *r, const char *what, const char *secret, const unsigned char *pt,
                 size_t ptlen, struct api_sealed *out, enum MHD_Result *ret);

/* DELETE of one row: 204 and an audit event in the same transaction, 404 when absent,
 * 409 when a foreign key still references it. */
struct api_delete_def {
    const char *what;   /* "brief": for the 404 detail */
    const char *action; /* "brief.delete" */
    enum db_status (*del)(struct db_conn *c, const char *id);
    enum api_error in_use;     /* the 409 code */
    const char *in_use_detail; /* what to do about it */
};
/* id must already be validated (a UUID). */
enum MHD_Result api_delete_resource(struct api_req *r, const char *id,
                                    const struct api_delete_def *d);

/* The same for a project-owned row: del_in deletes it only when its project lies in scope
 * (api_scope_route: where the caller holds one of the route's roles) and gives the
 * project it had, which the audit row names (the row is gone). A row outside the scope is
 * answered by api_scope_refuse (403 when the caller may see it, else 404, audited as
 * "<what>.denied"). */
struct api_delete_in_def {
    const char *what;   /* "brief": the audit resource type and the 404 detail */
    const char *action; /* "brief.delete" */
    enum db_status (*del_in)(struct db_conn *c, const char *id, const char *scope,
                             char project_id[37]);
    enum api_error in_use;     /* the 409 code */
    const char *in_use_detail; /* what to do about it */
};
enum MHD_Result api_delete_resource_in(struct api_req *r, const char *id,
                                       const struct api_delete_in_def *d);

/* GET of one document rendered by PostgreSQL: 200 with an ETag (304 on If-None-Match), 404
 * when absent, 503/500 for database failures. id must already be validated. */
typedef enum db_status (*api_doc_fetch)(struct db_conn *c, const char *id, char **doc);
enum MHD_Result api_get_document(struct api_req *r, const char *id, const char *what,
                                 api_doc_fetch fetch);
/* The same read, for a handler that answers with something made from the document:
 * returns it (caller frees), or NULL after replying 404, 503 or 500. */
char *api_fetch_document(struct api_req *r, const char *id, const char *what, api_doc_fetch fetch);

/* The same for a project-owned document: fetch filters by the caller's read scope
 * (api/scope.h: a uuid[] literal, NULL for every project), so another project's document
 * answers 404 as one that does not exist. */
typedef enum db_status (*api_doc_fetch_in)(struct db_conn *c, const char *id, const char *scope,
                                           char **doc);
enum MHD_Result api_get_document_in(struct api_req *r, const char *id, const char *what,
                                    api_doc_fetch_in fetch);
char *api_fetch_document_in(struct api_req *r, const char *id, const char *what,
                            api_doc_fetch_in fetch);

/* Runs fn in a transaction (db_run_tx) whose output is one rendered document, *doc, which
 * fn sets. *doc is owned here until the transaction ends: it is freed before every
 * attempt (a retried transaction starts over) and when the transaction fails after fn
 * set it (a later statement or the COMMIT failed). So on return *doc is non-NULL only when
 * the transaction committed and fn set it; the caller then sends or frees it. */
enum db_status api_run_tx_doc(db_tx_fn fn, void *arg, char **doc);

/* The problem answered when a write breaks a constraint; detail NULL: none declared (the
 * failure is answered as a database error). */
struct api_violation {
    enum api_error code;
    const char *field;
    const char *detail;
};

/* A project-owned resource stored as one validated JSON document (briefs, pools),
 * declared. */
struct api_document_def {
    const char *what;       /* "brief": for the details; audit actions are "brief.create"… */
    const char *collection; /* "/v1/briefs": a new one's Location is collection/id */
    /* Validates r->json; returns the document to store (a new reference), or NULL after
     * replying 400. */
    json_t *(*prepare)(struct api_req *r);
    /* DB_NO_RESULTS: refused, nothing written (answered with `refused`). */
    enum db_status (*insert)(struct db_conn *c, const json_t *spec, const char *project_id,
                             const char *created_by, char **doc, char id[37]);
    /* The current document (as GET renders it, so that its ETag is the one GET gave), when
     * its project lies in scope. */
    enum db_status (*get)(struct db_conn *c, const char *id, const char *scope, int for_update,
                          char **doc);
    /* DB_NO_RESULTS for the row get locked: refused, nothing written. */
    enum db_status (*update)(struct db_conn *c, const char *id, const json_t *spec, char **doc);
    const struct api_violation *unique, *fk; /* answers to a broken constraint, or NULL */
    const struct api_violation *refused;     /* the answer when a write writes no row */
    /* PUT, or NULL: the project's limits on the new spec, asked with the row locked
     * before it is written; a refusal (*why not PLAN_CMD_OK, out naming the limit) writes
     * nothing and answers as a host command's (api_reply_host_limit). */
    enum db_status (*limit)(struct db_conn *c, const char *id, const json_t *spec,
                            enum plan_cmd_refusal *why, struct svc_host_limit *out);
};
/* POST: the project it is created in (api_create_project: the body's "project", or the
 * caller's only project; 404/403/400), then prepare (400), then insert and an audit event
 * in one transaction; 201 with the document and its Location; the declared problems for a
 * broken constraint or a refused write; 503/500. */
enum MHD_Result api_create_document(struct api_req *r, const struct api_document_def *d);
/* PUT of the whole document with optimistic concurrency:
 *   - 404 when the path id is not a UUID; 428 without If-Match;
 *   - a "project" member may name the document's own project only (a document never moves:
 *     400 invalid_field project), by its name or id or as the {"id", "name"} object a GET
 *     gave (so that a document read, changed and sent back is accepted); it is taken out
 *     before prepare validates the body (400);
 *   - in one transaction: the current version is read and locked, when it lies in
 *     api_scope_route (else api_scope_refuse: 403 or 404); 412 when If-Match does not name
 *     its ETag (nothing written); otherwise update and an audit event;
 *   - 200 with the new document and its ETag; the declared problems for a broken
 *     constraint or a refused write; 503/500 for other failures. */
enum MHD_Result api_replace_document(struct api_req *r, const struct api_document_def *d);

/* Inside the transaction, right after the write whose status is s: the declared problem
 * of the constraint it broke (unique or fk, either may be NULL), or NULL. Only a
 * DB_HARD_ERROR breaks one, so the transaction then fails too (s < 0). */
const struct api_violation *api_violation_of(struct db_conn *c, enum db_status s,
                                             const struct api_violation *unique,
                                             const struct api_violation *fk);
/* The answer to a failed write (status s): the problem declared for the constraint it broke
 * (v, from api_violation_of), or else the database problem (503/500). */
enum MHD_Result api_reply_write_error(struct api_req *r, const struct api_violation *v,
                                      enum db_status s);

#endif
