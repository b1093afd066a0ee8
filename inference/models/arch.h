/* arch.h - the built-in network architectures, by model kind.
 *
 * The kind number is what a weights file records; the layer list lives only
 * here, so a file can never describe a network the code does not know.
 */
#ifndef DLRT_ARCH_H
#define DLRT_ARCH_H

#include <stdint.h>

#include "net.h"

enum dlrt_model_kind {
	DLRT_MODEL_NOOP = 0,    /* no network: pred 0, for dispatch benchmarks */
	DLRT_MODEL_LENET5 = 1,  /* LeNet-5 (ReLU, max-pool), 61,706 params */
	DLRT_MODEL_DEEPCNN = 2, /* 5 conv + 2 dense layers, ~440k params */
};

/* Input shape of every built-in model: one 28x28 grey image (Fashion-MNIST). */
#define DLRT_MODEL_IN_C 1
#define DLRT_MODEL_IN_H 28
#define DLRT_MODEL_IN_W 28
#define DLRT_MODEL_NCLASSES 10

struct dlrt_arch {
	uint32_t kind;
	const char *name;
	const struct dlrt_layer_spec *spec; /* NULL for noop */
	int nspec;
};

/* NULL for an unknown kind or name. */
const struct dlrt_arch *dlrt_arch_by_kind(uint32_t kind);
const struct dlrt_arch *dlrt_arch_by_name(const char *name);

#endif
