/* torchrun.h - the torchrun runtime's own options (--dl-elastic,
 * --dl-nproc-per-node). The option table and struct dlrt_opts still live in
 * common/opts.[ch]; their parsing lives here, next to the runtime that reads
 * them, so the runtime stays one folder.
 */
#ifndef DLRT_TORCHRUN_H
#define DLRT_TORCHRUN_H

#include "dlrt_err.h"
#include "opts.h"

/* Applies --dl-elastic=MIN:MAX or --dl-nproc-per-node=N|gpu to `o`. */
int dlrt_torchrun_opt_set(struct dlrt_opts *o, enum dlrt_opt_id id, const char *arg,
			  struct dlrt_err *err);

#endif
