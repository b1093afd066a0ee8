/* pfdecide.h - srun's verdict on a step's nodes from their preflight lines
 * (pfline.h): at most one failure per node, each the line the user reads.
 *
 * In this order, the first that applies names a node:
 *  - answer: it printed no line within the time (or an unreadable one);
 *  - its own local check (gpu, mem, shm, ckpt: pfcheck.h);
 *  - ckpt: it does not see the first node's file in the checkpoint folder;
 *    when most nodes do not, the first node is the odd one and is named;
 *  - net: peers could not reach it (named when at least half of the peers
 *    that answered failed to reach it), or it reached none of its peers;
 *  - clock: its offset against the first node is over the spec's limit;
 *  - net: (3 nodes or more) its bandwidth sample is under a tenth of the
 *    median of its peers' (but its predecessor's, which goes to it), or its
 *    best round trip to any peer is over ten times the median and over 50 ms;
 *    of two such neighbours only the later is named (a node slow to send also
 *    slows what it receives: its ACKs wait behind its data).
 * Pure: the unit test feeds it lines.
 */
#ifndef DLRT_PFDECIDE_H
#define DLRT_PFDECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfline.h"
#include "pfspec.h"

#define DLRT_PF_VERDICT_MAX 320

struct dlrt_pf_verdict {
	uint32_t idx;                  /* the node's index in the step's node list */
	char check[DLRT_PF_CHECK_MAX];
	char figure[DLRT_PF_VERDICT_MAX];
};

/* res[i] is node i's result when have[i]; names[i] its name (n nodes). Fills
 * out (room for n) and returns how many nodes failed. */
size_t dlrt_pf_decide(const struct dlrt_pf_spec *s, const struct dlrt_pf_result *res,
		      const bool *have, const char *const *names, size_t n,
		      struct dlrt_pf_verdict *out);

#endif
