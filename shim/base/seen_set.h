/* A bounded set of 128-bit identities: what tells a repeat from a first
 * sighting, for stderr's de-duplication (output.c) and the log's
 * (report.c). Past CG_SEEN_MAX identities, or out of memory, a new one
 * counts as first and is not remembered: nothing new is ever hidden, and
 * the set never grows with a pathological program. No locking: the caller
 * serialises. */
#ifndef CAPGUARD_SEEN_SET_H
#define CAPGUARD_SEEN_SET_H

#include <stdbool.h>

#include "capguard/image.h" /* cg_hash128 */

#define CG_SEEN_MAX 4096

typedef struct cg_seen_entry cg_seen_entry;
typedef struct {
  cg_seen_entry *head;
} cg_seen_set;

/* True the first time key is seen (remembered if there is room). */
bool cg_seen_first(cg_seen_set *s, cg_hash128 key);
/* Frees every identity: the set is empty again. */
void cg_seen_clear(cg_seen_set *s);

#endif
