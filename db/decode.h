/* decode.h — the decoders that turn results into the modules' typed structs, by column
 * name. Internal to db/ (each module calls its own after running its statements); they
 * are declared here so that the unit tests can feed them results built in memory
 * (PQmakeEmptyPGresult), with no server. */
#ifndef GPUFLEET_DB_DECODE_H
#define GPUFLEET_DB_DECODE_H

#include <libpq-fe.h>

#include "db/baselines.h"
#include "db/costs.h"
#include "db/events.h"
#include "db/gates.h"
#include "db/gpu_models.h"
#include "db/hosts.h"
#include "db/recommend.h"

/* A host_target row into *t (overwritten). Out of memory: DB_HARD_ERROR, *t left empty. */
enum db_status db_host_target_decode(const PGresult *r, struct db_host_target *t);
/* A readiness_facts row into *f (overwritten). Out of memory: DB_HARD_ERROR, *f left
 * empty. */
enum db_status db_readiness_facts_decode(const PGresult *r, struct db_readiness_facts *f);
/* gpu_model_catalog rows into *out (overwritten). */
enum db_status db_gpu_catalog_decode(const PGresult *r, struct db_gpu_catalog *out);
/* The decoders below take the results over (*out owns them, even on failure) and
 * overwrite *out; out of memory gives DB_HARD_ERROR with *out empty. */
enum db_status db_event_rows_decode(PGresult *r, struct db_event_rows *out);
enum db_status db_cost_decode(PGresult *hosts, PGresult *reports, struct db_cost_input *in);
enum db_status db_baselines_decode(PGresult *r, struct db_baselines *out);
enum db_status db_rec_decode(PGresult *held, PGresult *usage, PGresult *hosts, PGresult *briefs,
                             struct db_rec_input *in);

#endif
