/* test_periodic.c — the shared background loop (service/periodic.c): passes every
 * interval, none before the first interval, a stop that wakes the thread at once, and the
 * refused starts. */
#include <stdatomic.h>
#include <time.h>

#include "common/util.h"
#include "service/periodic.h"
#include "tests/unit/unit.h"

static atomic_int passes;

static void count_pass(void *arg)
{
    (void)arg;
    atomic_fetch_add(&passes, 1);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_periodic(void)
{
    static struct svc_periodic p = SVC_PERIODIC_INIT;
    atomic_store(&passes, 0);
    CHECK(svc_periodic_start(&p, 0, count_pass, NULL) == -1);
    CHECK(svc_periodic_start(&p, -5, count_pass, NULL) == -1);
    CHECK(svc_periodic_start(&p, 20, NULL, NULL) == -1);
    CHECK(!p.running);
    CHECK(svc_periodic_start(&p, 20, count_pass, NULL) == 0);
    CHECK(svc_periodic_start(&p, 20, count_pass, NULL) == 0); /* running: unchanged */
    nap_ms(250);
    svc_periodic_stop(&p);
    int n = atomic_load(&passes);
    CHECK(n >= 3 && n <= 13); /* about 12 at 20 ms over 250 ms, on a busy machine fewer */
    nap_ms(60);
    CHECK(atomic_load(&passes) == n); /* stopped: no more passes */
    svc_periodic_stop(&p);            /* a second stop is a no-op */
    /* a long interval: nothing before it, and the stop does not wait for it */
    atomic_store(&passes, 0);
    CHECK(svc_periodic_start(&p, 60000, count_pass, NULL) == 0);
    nap_ms(50);
    int64_t t0 = util_mono_us();
    svc_periodic_stop(&p);
    CHECK(util_mono_us() - t0 < 2000000);
    CHECK(atomic_load(&passes) == 0);
    /* and it starts again after a stop */
    CHECK(svc_periodic_start(&p, 10, count_pass, NULL) == 0);
    nap_ms(100);
    svc_periodic_stop(&p);
    CHECK(atomic_load(&passes) >= 1);
}

UNIT_SUITE(periodic_tests) = {
    {"periodic: passes every interval, a prompt stop, refused starts", test_periodic},
    UNIT_END,
};
