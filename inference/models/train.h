/* train.h - backpropagation and SGD with momentum for a dlrt_net.
 *
 * Deliberately simple and deterministic: one sample at a time, single
 * threaded, gradients summed over a minibatch and applied by
 * dlrt_train_step. Same network, same seed, same sample order => the same
 * weights, bit for bit (on one machine and build).
 */
#ifndef DLRT_TRAIN_H
#define DLRT_TRAIN_H

#include <stddef.h>

#include "common/dlrt_err.h"
#include "net.h"

struct dlrt_trainer {
	struct dlrt_net *net;
	float *grad;   /* nparams: summed gradients of the current minibatch */
	float *vel;    /* nparams: momentum */
	float *acts;   /* every layer's input and the last output, one sample */
	size_t act_off[DLRT_NET_MAX_LAYERS + 1];
	float *g0, *g1;    /* max_act each: gradients flowing backwards */
	float *col, *dcol; /* col_size each */
	size_t pending;    /* samples whose gradients are in grad */
};

int dlrt_train_init(struct dlrt_trainer *t, struct dlrt_net *net,
		    struct dlrt_err *err);
void dlrt_train_free(struct dlrt_trainer *t);

/* Cross-entropy loss of one sample (forward only; used by gradient checks). */
float dlrt_train_loss(struct dlrt_trainer *t, const float *x, int label);

/* Forward and backward for one sample: adds d(loss)/d(params) to t->grad
 * and returns the loss. */
float dlrt_train_sample(struct dlrt_trainer *t, const float *x, int label);

/* Applies the averaged minibatch gradient: v = mu v - lr (g/B + wd w),
 * w += v; clears the gradient. */
void dlrt_train_step(struct dlrt_trainer *t, float lr, float mu, float wd);

#endif
