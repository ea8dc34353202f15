/* gate_storage.h — the storage_throughput check (docs/hosts-and-gates.md, "Storage
 * throughput"): a sequential read of a large file on the durable path with the page cache
 * bypassed (dd iflag=direct, or fio --direct=1 --output-format=json when the host has it),
 * and a write with fsync to scratch (dd oflag=direct conv=fsync), judged against the
 * pool's gate.storage minimums. Its commands are templates (provisioner/shell.c); its
 * judge reads them with provisioner/parse/parse_dd.c and parse_fio.c. */
#ifndef GPUFLEET_GATE_STORAGE_H
#define GPUFLEET_GATE_STORAGE_H

#include <jansson.h>

#include "provisioner/jobs/gate_eval.h"

#define GATE_STORAGE_READ_MIB_DEFAULT  1024
#define GATE_STORAGE_WRITE_MIB_DEFAULT 1024
/* The rate a command's timeout assumes (MB/s), on top of GATE_STORAGE_TIMEOUT_BASE_S. */
#define GATE_STORAGE_TIMEOUT_FLOOR_MBPS 50.0
#define GATE_STORAGE_TIMEOUT_BASE_S     60
#define GATE_STORAGE_TIMEOUT_MAX_S      3600

/* Fills *s from the pool's gate.storage object (NULL: none). enabled when the object is
 * there or the check is named (named != 0); sizes default and clamp to their bounds. The
 * strings are borrowed from the object. */
void prov_storage_ref_load(struct prov_storage_ref *s, const json_t *storage, int named);
/* 1 when s is a path relative to a directory: 1-512 of [A-Za-z0-9._-] components joined
 * by single /, none of them . or .., no leading or trailing /. */
int prov_valid_rel_path(const char *s);

/* Whether it runs (why: the reason it does not). */
int gate_storage_applies(const struct prov_gate *g, char *why, size_t n);
/* Command 0 reads on the durable path, command 1 writes on scratch; NULL when a path or
 * the artifact fails validation. Caller frees. */
char *gate_storage_cmd(const struct prov_gate *g, int i);
/* Seconds command i may run: gate.storage.timeout_s, else BASE + the data at FLOOR MB/s
 * (the read counts twice: the probe may have to be written first), at most MAX. */
int gate_storage_timeout(const struct prov_gate *g, int i);
/* Judges both commands' results (r[0] the read, r[1] the write). */
void gate_eval_storage_throughput(const struct prov_gate *g, const struct prov_cmd_result *r,
                                  struct prov_check_out *o);

#endif
