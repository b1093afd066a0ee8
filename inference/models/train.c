#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "nn_hot.h"

int dlrt_train_init(struct dlrt_trainer *t, struct dlrt_net *net,
		    struct dlrt_err *err)
{
	size_t off = 0;
	int i;

	memset(t, 0, sizeof(*t));
	t->net = net;
	t->act_off[0] = 0;
	off = net->in_size;
	for (i = 0; i < net->nlayers; i++) {
		t->act_off[i + 1] = off;
		off += net->l[i].out_size;
	}
	t->grad = calloc(net->nparams + 1, sizeof(float));
	t->vel = calloc(net->nparams + 1, sizeof(float));
	t->acts = calloc(off, sizeof(float));
	t->g0 = calloc(net->max_act, sizeof(float));
	t->g1 = calloc(net->max_act, sizeof(float));
	t->col = calloc(net->col_size + 1, sizeof(float));
	t->dcol = calloc(net->col_size + 1, sizeof(float));
	if (!t->grad || !t->vel || !t->acts || !t->g0 || !t->g1 || !t->col ||
	    !t->dcol) {
		dlrt_train_free(t);
		return dlrt_err_set(err, "out of memory for the trainer");
	}
	return 0;
}

void dlrt_train_free(struct dlrt_trainer *t)
{
	free(t->grad);
	free(t->vel);
	free(t->acts);
	free(t->g0);
	free(t->g1);
	free(t->col);
	free(t->dcol);
	memset(t, 0, sizeof(*t));
}

/* Runs one sample, keeping every layer's input in t->acts; returns the
 * logits (the last layer's output). */
static float *forward(struct dlrt_trainer *t, const float *x)
{
	const struct dlrt_net *net = t->net;
	int i;

	memcpy(t->acts, x, net->in_size * sizeof(float));
	for (i = 0; i < net->nlayers; i++) {
		const struct dlrt_layer *l = &net->l[i];
		const float *in = t->acts + t->act_off[i];
		float *out = t->acts + t->act_off[i + 1];
		const float *wt = net->params + l->w_off;
		const float *bias = net->params + l->b_off;

		switch (l->s.op) {
		case DLRT_LAYER_CONV:
			dlrt_nn_conv2d(in, l->ic, l->ih, l->iw, wt, bias, l->oc,
				       l->s.k, l->s.pad, out, t->col);
			break;
		case DLRT_LAYER_MAXPOOL:
			dlrt_nn_maxpool(in, l->ic, l->ih, l->iw, l->s.k, out);
			break;
		case DLRT_LAYER_AVGPOOL:
			dlrt_nn_avgpool(in, l->ic, l->ih, l->iw, l->s.k, out);
			break;
		case DLRT_LAYER_RELU:
			memcpy(out, in, l->out_size * sizeof(float));
			dlrt_nn_relu(out, l->out_size);
			break;
		case DLRT_LAYER_TANH:
			memcpy(out, in, l->out_size * sizeof(float));
			dlrt_nn_tanh(out, l->out_size);
			break;
		case DLRT_LAYER_DENSE:
			dlrt_nn_dense(in, 1, (int)l->in_size, wt, bias, l->oc, out);
			break;
		}
	}
	return t->acts + t->act_off[net->nlayers];
}

/* Softmax cross-entropy of the logits z against `label`; leaves the
 * probabilities in p. */
static float xent(const float *z, int n, int label, float *p)
{
	memcpy(p, z, n * sizeof(float));
	dlrt_nn_softmax(p, n);
	return -logf(p[label] > 1e-30f ? p[label] : 1e-30f);
}

float dlrt_train_loss(struct dlrt_trainer *t, const float *x, int label)
{
	const float *z = forward(t, x);

	return xent(z, t->net->nclasses, label, t->g0);
}

static void pool_back(const struct dlrt_layer *l, const float *in,
		      const float *g, float *din)
{
	int k = l->s.k, c, oy, ox, dy, dx;
	float inv = 1.0f / (float)(k * k);

	memset(din, 0, l->in_size * sizeof(float));
	for (c = 0; c < l->ic; c++)
		for (oy = 0; oy < l->oh; oy++)
			for (ox = 0; ox < l->ow; ox++) {
				size_t base = ((size_t)c * l->ih + oy * k) * l->iw +
					      ox * k;
				float go = *g++;

				if (l->s.op == DLRT_LAYER_AVGPOOL) {
					for (dy = 0; dy < k; dy++)
						for (dx = 0; dx < k; dx++)
							din[base + dy * l->iw + dx] += go * inv;
					continue;
				}
				/* The same first-maximum rule as dlrt_nn_maxpool. */
				size_t best = base;

				for (dy = 0; dy < k; dy++)
					for (dx = 0; dx < k; dx++)
						if (in[base + dy * l->iw + dx] > in[best])
							best = base + dy * l->iw + dx;
				din[best] += go;
			}
}

float dlrt_train_sample(struct dlrt_trainer *t, const float *x, int label)
{
	const struct dlrt_net *net = t->net;
	const float *z = forward(t, x);
	float *g = t->g0, *gn = t->g1, *tmp, loss;
	size_t j;
	int i;

	loss = xent(z, net->nclasses, label, g);
	g[label] -= 1.0f; /* d(loss)/d(logits) = softmax - onehot */
	for (i = net->nlayers - 1; i >= 0; i--) {
		const struct dlrt_layer *l = &net->l[i];
		const float *in = t->acts + t->act_off[i];
		const float *out = t->acts + t->act_off[i + 1];
		const float *wt = net->params + l->w_off;
		float *dw = t->grad + l->w_off, *db = t->grad + l->b_off;
		int K, P;

		switch (l->s.op) {
		case DLRT_LAYER_DENSE:
			dlrt_hot_dense_back(in, g, wt, (int)l->in_size, l->oc, dw,
					    db, i ? gn : NULL);
			break;
		case DLRT_LAYER_CONV:
			K = l->ic * l->s.k * l->s.k;
			P = l->oh * l->ow;
			dlrt_nn_im2col(in, l->ic, l->ih, l->iw, l->s.k, l->s.pad,
				       t->col);
			dlrt_hot_gemm_nt_acc(g, t->col, dw, db, l->oc, K, P);
			if (i) {
				dlrt_hot_gemm_tn(wt, g, t->dcol, l->oc, K, P);
				memset(gn, 0, l->in_size * sizeof(float));
				dlrt_nn_col2im(t->dcol, l->ic, l->ih, l->iw,
					       l->s.k, l->s.pad, gn);
			}
			break;
		case DLRT_LAYER_MAXPOOL:
		case DLRT_LAYER_AVGPOOL:
			pool_back(l, in, g, gn);
			break;
		case DLRT_LAYER_RELU:
			for (j = 0; j < l->in_size; j++)
				g[j] = in[j] > 0 ? g[j] : 0;
			continue; /* in place: g stays g */
		case DLRT_LAYER_TANH:
			for (j = 0; j < l->in_size; j++)
				g[j] *= 1.0f - out[j] * out[j];
			continue;
		}
		tmp = g;
		g = gn;
		gn = tmp;
	}
	t->pending++;
	return loss;
}

void dlrt_train_step(struct dlrt_trainer *t, float lr, float mu, float wd)
{
	if (!t->pending)
		return;
	dlrt_hot_sgd(t->net->params, t->vel, t->grad, t->net->nparams, lr, mu,
		     1.0f / (float)t->pending, wd);
	t->pending = 0;
}
