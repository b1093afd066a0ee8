/* runtimes.c - the list of runtimes: the one place that names them all.
 *
 * The runtime interface (runtime/runtime.h) declares dlrt_runtimes[] and
 * never names a runtime; each runtime's folder (launchers/<name>/, or
 * inference/ for dlrt-infer) defines its `struct dlrt_runtime`. This file sits
 * above both, so the interface depends on no runtime and no runtime on
 * another: adding a runtime is one folder and one row here.
 */
#include "runtime/runtime.h"

extern const struct dlrt_runtime dlrt_runtime_mxnet;
extern const struct dlrt_runtime dlrt_runtime_horovod;
extern const struct dlrt_runtime dlrt_runtime_caffe2;
extern const struct dlrt_runtime dlrt_runtime_torch;
extern const struct dlrt_runtime dlrt_runtime_torchrun;
extern const struct dlrt_runtime dlrt_runtime_jax;
extern const struct dlrt_runtime dlrt_runtime_tensorflow;
extern const struct dlrt_runtime dlrt_runtime_infer;

/* The order is the order users see, and a runtime's index is its bit in
 * cfg->allowed and its block in struct dlrt_opts/dlrt_config (opts.h):
 * at most DLRT_RUNTIME_MAX rows. */
const struct dlrt_runtime *const dlrt_runtimes[] = {
	&dlrt_runtime_mxnet,
	&dlrt_runtime_horovod,
	&dlrt_runtime_caffe2,
	&dlrt_runtime_torch,
	&dlrt_runtime_torchrun,
	&dlrt_runtime_jax,
	&dlrt_runtime_tensorflow,
	&dlrt_runtime_infer,
	NULL,
};
