/* webhook_horizon.c — the webhook dispatcher's horizon (see webhooks_internal.h): the
 * highest event id below which every id has committed. Ids come from a sequence and may
 * commit out of order, so an id that is missing is waited for WHH_GAP_WAIT_US, then taken
 * for rolled back (as the event stream does). Runs on the dispatcher thread. */
#include <stdlib.h>

#include "db/events.h"
#include "db/webhooks.h"
#include "service/webhooks_internal.h"

#define IDS_LIMIT 10000 /* event ids read per query */

struct max_arg {
    int64_t max;
};
static enum db_status max_fn(struct db_conn *c, void *arg)
{
    return db_events_max_id(c, &((struct max_arg *)arg)->max);
}

struct ids_arg {
    int64_t after;
    struct db_webhook_event *ev;
    int n;
};
static enum db_status ids_fn(struct db_conn *c, void *arg)
{
    struct ids_arg *a = arg;
    return db_webhook_event_ids(c, a->after, IDS_LIMIT, &a->ev, &a->n);
}

int whh_advance(struct whh_horizon *h, int64_t now)
{
    if (!h->known) {
        struct max_arg m = {0};
        if (db_run(max_fn, &m) < 0)
            return 0;
        h->upto = m.max;
        h->known = 1;
        return 1;
    }
    int64_t before = h->upto;
    for (int round = 0; round < 10; round++) {
        struct ids_arg a = {h->upto, NULL, 0};
        if (db_run(ids_fn, &a) < 0)
            break;
        int stop = a.n < IDS_LIMIT;
        for (int i = 0; i < a.n; i++) {
            int64_t id = a.ev[i].id;
            if (id == h->upto + 1) {
                h->upto = id;
                h->gap_since = 0;
                h->new_types |= a.ev[i].type >= 0 ? 1u << a.ev[i].type : 0;
                continue;
            }
            /* ids upto + 1 … id - 1 are missing: wait for them, then skip them. */
            if (h->gap_since == 0 || h->gap_id != h->upto + 1) {
                h->gap_since = now;
                h->gap_id = h->upto + 1;
            }
            if (now - h->gap_since < WHH_GAP_WAIT_US) {
                stop = 1;
                break;
            }
            h->upto = id;
            h->gap_since = 0;
            h->new_types |= a.ev[i].type >= 0 ? 1u << a.ev[i].type : 0;
        }
        free(a.ev);
        if (stop)
            break;
    }
    return h->upto != before;
}

int64_t whh_gap_deadline(const struct whh_horizon *h)
{
    return h->gap_since != 0 ? h->gap_since + WHH_GAP_WAIT_US : 0;
}
