/* readiness.h — the guides' nine-question production-readiness checklist (docs/product.md §7),
 * answered from recorded facts only. Pure logic over one JSON document of evidence (see
 * db_host_readiness_facts). Each answer is yes, no or unknown, with its evidence. */
#ifndef GPUFLEET_READINESS_H
#define GPUFLEET_READINESS_H

#include <jansson.h>

/* Returns {"host_id", "questions": [{id, question, answer, evidence}], "summary"}. New
 * reference. */
json_t *plan_readiness(const json_t *facts);

#endif
