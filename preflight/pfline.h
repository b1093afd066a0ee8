/* pfline.h - the one line each node's dlrt-preflight prints: its local
 * verdict and the figures the cross-node verdict needs (pfdecide.h).
 *
 *   dlrt-preflight idx=I node=NAME clock_us=N rtt_us=N bw_kBps=N ckpt=WORD
 *   unreach=LIST fail=CHECK FIGURE...
 *
 * (one line, fields in this order). clock_us: this node's clock minus the
 * first node's, from the best of its pings; rtt_us: the best of its round
 * trips to every peer (0 alone); bw_kBps: what its sample to the next
 * node delivered, kB/s (0: not measured: alone, the next node unreached, or
 * the sample failed twice; a measured one is at least 1); ckpt: shared, unshared
 * (the first node's file is not there or differs) or none (no checkpoint
 * folder, or this is the first node); unreach: the step indices of peers it
 * could not reach, or "-"; fail: "-", or the first local check that failed and
 * its figure, to the end of the line. The lines travel through the helper
 * step's output to srun: parsed strictly (fuzzed), since a node's program
 * wrote them.
 */
#ifndef DLRT_PFLINE_H
#define DLRT_PFLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLRT_PF_LINE_MAX 1024
#define DLRT_PF_NAME_MAX 64
#define DLRT_PF_CHECK_MAX 16
#define DLRT_PF_FIGURE_MAX 256
#define DLRT_PF_UNREACH_MAX 512

enum dlrt_pf_ckpt {
	DLRT_PF_CKPT_NONE,
	DLRT_PF_CKPT_SHARED,
	DLRT_PF_CKPT_UNSHARED,
};

struct dlrt_pf_result {
	uint32_t idx;
	char node[DLRT_PF_NAME_MAX];
	int64_t clock_us;
	uint32_t rtt_us;
	uint64_t bw_kBps;
	enum dlrt_pf_ckpt ckpt;
	char unreach[DLRT_PF_UNREACH_MAX]; /* "" for none */
	char check[DLRT_PF_CHECK_MAX];     /* "" when every local check passed */
	char figure[DLRT_PF_FIGURE_MAX];
};

/* The line, with its '\n', into out (DLRT_PF_LINE_MAX); its length. */
size_t dlrt_pf_line_format(const struct dlrt_pf_result *r, char *out, size_t len);
/* Exactly one such line (len bytes, the '\n' optional, no NUL needed): 0, or
 * -1 when anything is off. */
int dlrt_pf_line_parse(const char *s, size_t len, struct dlrt_pf_result *r);
/* Whether step index i is in r->unreach. */
bool dlrt_pf_unreached(const struct dlrt_pf_result *r, uint32_t i);

#endif
