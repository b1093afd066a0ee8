/* pfspec.h - what --dl-preflight (and plugstack.conf's preflight=) asks for.
 *
 * One comma list, the same for the option, the site key and the helper's
 * environment (spank/preflight.c hands the resolved spec to dlrt-preflight in
 * this form): a mode word and key=value thresholds, in any order,
 *   off | quick | full, shm=MIB, clock=MS, timeout=S, gpudev=PREFIX
 * A job's value is applied over the site's: keys it does not give keep the
 * site's, and keys given without a mode turn an `off` site into `quick`.
 * Pure and strict (no blank, no sign, no unknown key): it is user input.
 */
#ifndef DLRT_PFSPEC_H
#define DLRT_PFSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

enum dlrt_pf_mode {
	DLRT_PF_OFF,
	DLRT_PF_QUICK, /* 0.2 s bandwidth sample, 3 pings per peer */
	DLRT_PF_FULL,  /* 1 s bandwidth sample, 10 pings per peer */
};

#define DLRT_PF_GPUDEV_MAX 128
/* The formatted spec: every key, the longest values. */
#define DLRT_PF_SPEC_MAX (64 + DLRT_PF_GPUDEV_MAX)

struct dlrt_pf_spec {
	enum dlrt_pf_mode mode;
	uint32_t shm_mib;   /* free space /dev/shm must have, MiB (default 64) */
	uint32_t clock_ms;  /* largest clock offset against the first node (default 1000) */
	uint32_t timeout_s; /* the whole check, from srun's point of view (default 10) */
	char gpudev[DLRT_PF_GPUDEV_MAX]; /* GPU index N is the device PREFIX N ("/dev/nvidia") */
};

void dlrt_pf_spec_default(struct dlrt_pf_spec *s);
/* Applies v over *s; on error *s is unchanged and err names the valid form
 * (`what`: "--dl-preflight" or "plugstack.conf: preflight"). */
int dlrt_pf_spec_parse(struct dlrt_pf_spec *s, const char *v, const char *what,
		       struct dlrt_err *err);
/* Every field, in the form dlrt_pf_spec_parse reads (out: DLRT_PF_SPEC_MAX). */
void dlrt_pf_spec_format(const struct dlrt_pf_spec *s, char *out, size_t len);
const char *dlrt_pf_mode_name(enum dlrt_pf_mode m);

#endif
