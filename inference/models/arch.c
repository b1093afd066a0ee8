#include "arch.h"

#include <string.h>

#include "model.h"

#define CONV(n, k, pad) { DLRT_LAYER_CONV, (n), (k), (pad) }
#define MAXPOOL(k) { DLRT_LAYER_MAXPOOL, 0, (k), 0 }
#define RELU { DLRT_LAYER_RELU, 0, 0, 0 }
#define DENSE(n) { DLRT_LAYER_DENSE, (n), 0, 0 }

/* LeNet-5 as LeCun et al. 1998 laid it out (C1 padded to keep 28x28 as the
 * 32x32 input did), with ReLU and max-pooling, which train faster with
 * plain SGD than the original tanh and subsampling. ~0.42 M MACs/query. */
static const struct dlrt_layer_spec lenet5[] = {
	CONV(6, 5, 2), RELU, MAXPOOL(2),
	CONV(16, 5, 0), RELU, MAXPOOL(2),
	DENSE(120), RELU, DENSE(84), RELU, DENSE(10),
};

/* A VGG-style stack: two 3x3 convs per resolution, ~5.9 M MACs/query,
 * about 14x LeNet-5's cost, for a clearly more expensive second model. */
static const struct dlrt_layer_spec deepcnn[] = {
	CONV(16, 3, 1), RELU, CONV(16, 3, 1), RELU, MAXPOOL(2),
	CONV(32, 3, 1), RELU, CONV(32, 3, 1), RELU, MAXPOOL(2),
	CONV(64, 3, 1), RELU,
	DENSE(128), RELU, DENSE(10),
};

static const struct dlrt_arch archs[] = {
	{ DLRT_MODEL_NOOP, "noop", NULL, 0 },
	{ DLRT_MODEL_LENET5, "lenet5", lenet5, sizeof(lenet5) / sizeof(lenet5[0]) },
	{ DLRT_MODEL_DEEPCNN, "deepcnn", deepcnn, sizeof(deepcnn) / sizeof(deepcnn[0]) },
};

const struct dlrt_arch *dlrt_arch_by_kind(uint32_t kind)
{
	size_t i;

	for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i].kind == kind)
			return &archs[i];
	return NULL;
}

const struct dlrt_arch *dlrt_arch_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (!strcmp(archs[i].name, name))
			return &archs[i];
	return NULL;
}

/* Here rather than in model.c: it decides what the trainer sees, and
 * module.mk retrains the models when arch.c changes, not model.c. */
void dlrt_model_normalize_u8(const uint8_t *pix, size_t count, float *out)
{
	const float a = 1.0f / (255.0f * DLRT_MODEL_PIX_STD);
	const float b = -DLRT_MODEL_PIX_MEAN / DLRT_MODEL_PIX_STD;
	size_t i;

	for (i = 0; i < count; i++)
		out[i] = (float)pix[i] * a + b;
}
