/* grants.c — see grants.h. */
#include "service/grants.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "db/projects.h"

#define MEMBER_SLOTS    512 /* cached subjects (a hash table; a collision replaces) */
#define MAX_MEMBERSHIPS 64

struct member_slot {
    char subject[129];
    int64_t loaded_us;
    int n;
    struct db_membership m[MAX_MEMBERSHIPS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct db_project_ref *refs; /* every project, sorted by name */
static int nrefs;
static int64_t refs_loaded_us;
static uint64_t generation; /* bumped by svc_grants_invalidate */
static struct member_slot *slots;

unsigned svc_role_bits(const char *name)
{
    if (name == NULL)
        return 0;
    if (!strcmp(name, "viewer"))
        return ACTOR_ROLE_VIEWER;
    if (!strcmp(name, "operator"))
        return ACTOR_ROLE_OPERATOR;
    if (!strcmp(name, "admin"))
        return ACTOR_ROLE_ADMIN;
    if (!strcmp(name, "reporter"))
        return ACTOR_ROLE_REPORTER;
    return 0;
}

void svc_grants_invalidate(void)
{
    pthread_mutex_lock(&lock);
    generation++;
    refs_loaded_us = 0;
    if (slots != NULL)
        for (int i = 0; i < MEMBER_SLOTS; i++)
            slots[i].loaded_us = 0;
    pthread_mutex_unlock(&lock);
}

static int fresh(int64_t loaded_us, int64_t now)
{
    return loaded_us != 0 && now - loaded_us < (int64_t)GRANTS_TTL_MS * 1000;
}

/* Reloads the names when stale (lock held; the query runs without it). */
static int load_refs(int64_t now)
{
    if (fresh(refs_loaded_us, now))
        return 0;
    uint64_t gen = generation;
    pthread_mutex_unlock(&lock);
    struct db_project_ref *fresh_refs = NULL;
    int n = 0;
    enum db_status s = DB_UNAVAILABLE;
    struct db_conn *c = db_acquire(&s);
    if (c != NULL) {
        s = db_project_refs(c, &fresh_refs, &n);
        db_release(c);
    }
    pthread_mutex_lock(&lock);
    if (s < 0)
        return -1;
    free(refs);
    refs = fresh_refs;
    nrefs = n;
    refs_loaded_us = gen == generation ? now : 0;
    return 0;
}

static const struct db_project_ref *ref_by_name(const char *name)
{
    for (int i = 0; i < nrefs; i++)
        if (!strcmp(refs[i].name, name))
            return &refs[i];
    return NULL;
}

static const struct db_project_ref *ref_by_id(const char *id)
{
    for (int i = 0; i < nrefs; i++)
        if (!strcasecmp(refs[i].id, id))
            return &refs[i];
    return NULL;
}

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

/* The subject's slot, loaded when stale (lock held; the query runs without it). */
static struct member_slot *load_members(const char *subject, int64_t now)
{
    if (slots == NULL && (slots = calloc(MEMBER_SLOTS, sizeof *slots)) == NULL)
        return NULL;
    struct member_slot *sl = &slots[hash(subject) % MEMBER_SLOTS];
    if (!strcmp(sl->subject, subject) && fresh(sl->loaded_us, now))
        return sl;
    uint64_t gen = generation;
    pthread_mutex_unlock(&lock);
    struct db_membership m[MAX_MEMBERSHIPS];
    int n = 0;
    enum db_status s = DB_UNAVAILABLE;
    struct db_conn *c = db_acquire(&s);
    if (c != NULL) {
        s = db_memberships(c, subject, m, MAX_MEMBERSHIPS, &n);
        db_release(c);
    }
    pthread_mutex_lock(&lock);
    if (s < 0)
        return NULL;
    snprintf(sl->subject, sizeof sl->subject, "%s", subject);
    memcpy(sl->m, m, (size_t)n * sizeof m[0]);
    sl->n = n;
    sl->loaded_us = gen == generation ? now : 0;
    return sl;
}

static int add_grant(struct actor_grant *out, int n, int max, const char *id, unsigned role)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(out[i].project_id, id)) {
            out[i].role |= role;
            return n;
        }
    if (n >= max)
        return n; /* more projects than a request carries: the rest are not granted */
    snprintf(out[n].project_id, sizeof out[n].project_id, "%s", id);
    out[n].role = role;
    return n + 1;
}

int svc_grants_resolve(const char *subject, const struct svc_claim *claims, int nclaims,
                       struct actor_grant *out, int max, unsigned *roles)
{
    int64_t now = util_mono_us();
    int n = 0;
    *roles = 0;
    pthread_mutex_lock(&lock);
    if (load_refs(now) != 0) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    for (int i = 0; i < nclaims; i++) {
        const struct db_project_ref *p = ref_by_name(claims[i].project);
        if (p != NULL)
            n = add_grant(out, n, max, p->id, claims[i].role);
    }
    const struct member_slot *sl = load_members(subject, now);
    if (sl == NULL) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    for (int i = 0; i < sl->n; i++)
        n = add_grant(out, n, max, sl->m[i].project_id, svc_role_bits(sl->m[i].role));
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        *roles |= out[i].role;
    return n;
}

int svc_project_lookup(const char *ref, char id[37], char name[64])
{
    int64_t now = util_mono_us();
    pthread_mutex_lock(&lock);
    int rc = -1;
    if (load_refs(now) == 0) {
        const struct db_project_ref *p = util_is_uuid(ref) ? ref_by_id(ref) : ref_by_name(ref);
        rc = p ? 0 : 1;
        if (p != NULL) {
            snprintf(id, 37, "%s", p->id);
            snprintf(name, 64, "%s", p->name);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void svc_project_name(const char *id, char name[64])
{
    char tmp[37];
    name[0] = '\0';
    if (id == NULL || svc_project_lookup(id, tmp, name) != 0)
        name[0] = '\0';
}
