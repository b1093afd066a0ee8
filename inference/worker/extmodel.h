/* extmodel.h - a worker's external model: a user command that speaks the
 * stdin/stdout protocol of docs/inference-models.md (model spec "ext:CMD").
 */
#ifndef DLRT_INFER_EXTMODEL_H
#define DLRT_INFER_EXTMODEL_H

#include <stdint.h>

#include "common/dlrt_err.h"

struct dlrt_extmodel;

/* Starts `/bin/sh -c cmd` and waits (up to timeout_ms) for its READY. */
int dlrt_extmodel_start(struct dlrt_extmodel **out, const char *cmd, int timeout_ms,
			struct dlrt_err *err);
/* One batch of n queries of bytes_per_query raw bytes each. */
int dlrt_extmodel_infer(struct dlrt_extmodel *m, const uint8_t *inputs, uint32_t n,
			uint32_t bytes_per_query, int32_t *pred, float *score, int timeout_ms,
			struct dlrt_err *err);
/* Closes its stdin, waits up to 2 s for it to exit, then kills it. */
void dlrt_extmodel_stop(struct dlrt_extmodel *m);

#endif
