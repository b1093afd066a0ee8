/* net.h - a CNN as a list of layers over one flat parameter array.
 *
 * The same description drives inference (model.c), training (train.c) and
 * the weights file (weights.c): a layer's weights and bias live at fixed
 * offsets in `params`, in layer order, weight before bias, so the file is
 * those tensors in that order. Shapes are derived once by dlrt_net_init;
 * after that forward passes allocate nothing.
 */
#ifndef DLRT_NET_H
#define DLRT_NET_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

#define DLRT_NET_MAX_LAYERS 24

enum dlrt_layer_op {
	DLRT_LAYER_CONV = 1, /* k x k, stride 1, zero padding `pad`, `n` filters */
	DLRT_LAYER_MAXPOOL,  /* k x k, stride k */
	DLRT_LAYER_AVGPOOL,  /* k x k, stride k */
	DLRT_LAYER_RELU,
	DLRT_LAYER_TANH,
	DLRT_LAYER_DENSE,    /* flattens its input (C*H*W) to `n` outputs */
};

struct dlrt_layer_spec {
	enum dlrt_layer_op op;
	int n;   /* conv filters / dense outputs */
	int k;   /* conv or pool window */
	int pad; /* conv zero padding */
};

struct dlrt_layer {
	struct dlrt_layer_spec s;
	int ic, ih, iw;   /* input shape */
	int oc, oh, ow;   /* output shape */
	size_t in_size, out_size; /* floats per sample */
	size_t w_off, w_len, b_off, b_len; /* into params; lengths 0 if none */
};

struct dlrt_net {
	int nlayers;
	struct dlrt_layer l[DLRT_NET_MAX_LAYERS];
	int in_c, in_h, in_w;
	int nclasses;      /* outputs of the last layer */
	size_t in_size;    /* floats per input sample */
	size_t nparams;
	size_t max_act;    /* largest activation of any layer, floats per sample */
	size_t col_size;   /* im2col scratch for the largest conv, floats */
	size_t macs;       /* multiply-adds per sample (forward) */
	float *params;     /* owned, nparams floats */
};

/* Derives every layer's shape and offsets and allocates zeroed params.
 * Fails with a one-line error on an impossible shape (kernel larger than
 * its padded input, a pool that leaves nothing, ...). */
int dlrt_net_init(struct dlrt_net *net, const struct dlrt_layer_spec *spec,
		  int nspec, int c, int h, int w, struct dlrt_err *err);
void dlrt_net_free(struct dlrt_net *net);

/* He-uniform weights (bias 0) from a splitmix64 stream seeded with `seed`:
 * same seed, same parameters, on every machine. */
void dlrt_net_init_params(struct dlrt_net *net, uint64_t seed);

/* Scratch for dlrt_net_forward with up to `batch` samples, in floats. */
size_t dlrt_net_scratch_size(const struct dlrt_net *net, size_t batch);

/* Runs `n` samples (n <= the batch the scratch was sized for) and leaves
 * their softmax probabilities (n x nclasses) in `probs`. */
void dlrt_net_forward(const struct dlrt_net *net, const float *in, size_t n,
		      float *scratch, float *probs);

/* Deterministic PRNG shared by init and the trainer's shuffling. */
uint64_t dlrt_net_rand(uint64_t *state);

#endif
