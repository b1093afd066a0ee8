/* hostlist.h - Slurm's compressed node and count lists.
 *
 * SLURM_STEP_NODELIST looks like "n[1-3,7],gpu[01-02]" and
 * SLURM_STEP_TASKS_PER_NODE like "2(x3),1". dlrt expands both itself rather
 * than linking libslurm, so the plugin depends on spank.h only.
 */
#ifndef DLRT_HOSTLIST_H
#define DLRT_HOSTLIST_H

#include <stdint.h>

#include "dlrt_err.h"

/* Upper bound on expanded names: a typo like "n[1-999999999]" must fail, not allocate. */
#define DLRT_HOSTLIST_MAX 65536

struct dlrt_hostlist {
	uint32_t n;
	char **names;
};

int dlrt_hostlist_expand(struct dlrt_hostlist *out, const char *list, struct dlrt_err *err);
void dlrt_hostlist_free(struct dlrt_hostlist *hl);

/* Expands "2(x3),1" into counts; `n` must equal the number of entries it expands to. */
int dlrt_counts_expand(uint32_t *counts, uint32_t n, const char *list, struct dlrt_err *err);

#endif
