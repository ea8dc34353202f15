/* tokens.c — see tokens.h. */
#include "api/tokens.h"

#include <stdlib.h>
#include <string.h>

#include "api/jsonspec.h"
#include "db/tokens.h"
#include "service/tokens.h"

static long keep_s = 7776000; /* GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS's default */

void api_tokens_configure(long max_ttl_s)
{
    keep_s = max_ttl_s;
}

/* 1-128 printable ASCII characters without spaces (a jti, a subject). */
static int valid_word(const char *s)
{
    for (const char *p = s; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            return 0;
    return 1;
}

struct revoke_in {
    const char *jti, *sub, *reason;
};
#define TO(m) SPEC_TO(struct revoke_in, m)
static const struct spec_field revoke_spec[] = {
    {"jti", SPEC_STRING, 0, 1, 128, valid_word,
     "the token's jti: 1-128 printable ASCII "
     "characters without spaces",
     NULL, NULL, TO(jti)},
    {"sub", SPEC_STRING, 0, 1, 128, valid_word,
     "a subject: 1-128 printable ASCII characters "
     "without spaces",
     NULL, NULL, TO(sub)},
    {"reason", SPEC_STRING, 0, 1, 500, spec_printable, "text without control characters", NULL,
     NULL, TO(reason)},
    SPEC_END,
};
#undef TO

struct revoke_arg {
    struct api_req *r;
    struct revoke_in in;
    char *doc;
};

static enum db_status revoke_fn(struct db_conn *c, void *arg)
{
    struct revoke_arg *a = arg;
    free(a->doc);
    a->doc = NULL;
    enum db_status s = db_token_revoke(c, a->in.jti, a->in.sub, a->in.reason, a->r->principal.sub,
                                       keep_s, &a->doc);
    if (s <= 0)
        return s < 0 ? s : DB_HARD_ERROR;
    s = api_audit_reason(c, a->r, a->in.jti ? "token.revoke" : "token.revoke_subject",
                         a->in.jti ? "token" : "token_subject", a->in.jti ? a->in.jti : a->in.sub,
                         200, a->in.reason);
    return s < 0 ? s : DB_ONE_RESULT;
}

enum MHD_Result api_tokens_revoke(struct api_req *r)
{
    if (!r->actor.platform_admin)
        return api_reply_problem(r, API_ERR_INSUFFICIENT_ROLE, NULL,
                                 "only a platform admin may revoke tokens");
    struct revoke_arg a = {.r = r};
    if (api_spec_parse(r, r->json, revoke_spec, &a.in) != 0)
        return MHD_YES;
    if ((a.in.jti == NULL) == (a.in.sub == NULL))
        return api_reply_problem(r, a.in.jti ? API_ERR_INVALID_FIELD : API_ERR_MISSING_FIELD,
                                 a.in.jti ? "sub" : "jti",
                                 "name exactly one of jti (one token) and sub (every token of "
                                 "that subject issued up to now)");
    enum db_status s = db_run_tx(revoke_fn, &a);
    if (s < 0) {
        free(a.doc);
        return api_reply_db(r, s);
    }
    /* Here at once; the other replicas within GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS. */
    svc_tokens_reload(1);
    return api_reply_text(r, MHD_HTTP_OK, a.doc, NULL);
}
