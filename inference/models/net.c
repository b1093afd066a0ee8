#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

int dlrt_net_init(struct dlrt_net *net, const struct dlrt_layer_spec *spec,
		  int nspec, int c, int h, int w, struct dlrt_err *err)
{
	size_t off = 0;
	int i;

	memset(net, 0, sizeof(*net));
	if (nspec < 1 || nspec > DLRT_NET_MAX_LAYERS)
		return dlrt_err_set(err, "network has %d layers; 1 to %d are "
				    "supported", nspec, DLRT_NET_MAX_LAYERS);
	if (c < 1 || h < 1 || w < 1)
		return dlrt_err_set(err, "network input %dx%dx%d is empty", c, h, w);
	net->in_c = c;
	net->in_h = h;
	net->in_w = w;
	net->in_size = (size_t)c * h * w;
	net->max_act = net->in_size;
	for (i = 0; i < nspec; i++) {
		struct dlrt_layer *l = &net->l[i];
		const struct dlrt_layer_spec *s = &spec[i];

		l->s = *s;
		l->ic = c;
		l->ih = h;
		l->iw = w;
		switch (s->op) {
		case DLRT_LAYER_CONV:
			if (s->n < 1 || s->k < 1 || s->pad < 0 ||
			    h + 2 * s->pad < s->k || w + 2 * s->pad < s->k)
				return dlrt_err_set(err, "layer %d: conv %d filters "
						    "%dx%d pad %d does not fit a "
						    "%dx%d input", i, s->n, s->k,
						    s->k, s->pad, h, w);
			l->oc = s->n;
			l->oh = h + 2 * s->pad - s->k + 1;
			l->ow = w + 2 * s->pad - s->k + 1;
			l->w_len = (size_t)s->n * c * s->k * s->k;
			l->b_len = (size_t)s->n;
			if ((size_t)c * s->k * s->k * l->oh * l->ow > net->col_size)
				net->col_size = (size_t)c * s->k * s->k * l->oh * l->ow;
			net->macs += l->w_len * l->oh * l->ow;
			break;
		case DLRT_LAYER_MAXPOOL:
		case DLRT_LAYER_AVGPOOL:
			if (s->k < 1 || h / s->k < 1 || w / s->k < 1)
				return dlrt_err_set(err, "layer %d: %dx%d pool of a "
						    "%dx%d input leaves nothing",
						    i, s->k, s->k, h, w);
			l->oc = c;
			l->oh = h / s->k;
			l->ow = w / s->k;
			break;
		case DLRT_LAYER_RELU:
		case DLRT_LAYER_TANH:
			l->oc = c;
			l->oh = h;
			l->ow = w;
			break;
		case DLRT_LAYER_DENSE:
			if (s->n < 1)
				return dlrt_err_set(err, "layer %d: dense layer "
						    "with %d outputs", i, s->n);
			l->oc = s->n;
			l->oh = 1;
			l->ow = 1;
			l->w_len = (size_t)s->n * c * h * w;
			l->b_len = (size_t)s->n;
			net->macs += l->w_len;
			break;
		default:
			return dlrt_err_set(err, "layer %d: unknown op %d", i,
					    (int)s->op);
		}
		l->in_size = (size_t)c * h * w;
		l->out_size = (size_t)l->oc * l->oh * l->ow;
		l->w_off = off;
		off += l->w_len;
		l->b_off = off;
		off += l->b_len;
		if (l->out_size > net->max_act)
			net->max_act = l->out_size;
		c = l->oc;
		h = l->oh;
		w = l->ow;
	}
	net->nlayers = nspec;
	net->nclasses = c * h * w;
	net->nparams = off;
	net->params = calloc(off ? off : 1, sizeof(float));
	if (!net->params)
		return dlrt_err_set(err, "out of memory for %zu parameters", off);
	return 0;
}

void dlrt_net_free(struct dlrt_net *net)
{
	free(net->params);
	net->params = NULL;
}

uint64_t dlrt_net_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void dlrt_net_init_params(struct dlrt_net *net, uint64_t seed)
{
	uint64_t st = seed;
	int i;
	size_t j;

	memset(net->params, 0, net->nparams * sizeof(float));
	for (i = 0; i < net->nlayers; i++) {
		const struct dlrt_layer *l = &net->l[i];
		size_t fan_in;
		double lim;

		if (!l->w_len)
			continue;
		fan_in = l->w_len / l->b_len;
		lim = sqrt(6.0 / (double)fan_in); /* He uniform, for ReLU */
		for (j = 0; j < l->w_len; j++) {
			/* 24 random bits -> [0,1): exact in float and double */
			double u = (double)(dlrt_net_rand(&st) >> 40) / 16777216.0;

			net->params[l->w_off + j] = (float)((2 * u - 1) * lim);
		}
	}
}

size_t dlrt_net_scratch_size(const struct dlrt_net *net, size_t batch)
{
	return 2 * batch * net->max_act + net->col_size;
}

void dlrt_net_forward(const struct dlrt_net *net, const float *in, size_t n,
		      float *scratch, float *probs)
{
	float *bufs[2] = { scratch, scratch + n * net->max_act };
	float *col = scratch + 2 * n * net->max_act;
	const float *x = in;
	float *y = NULL;
	int i, cur = 0;
	size_t b;

	for (i = 0; i < net->nlayers; i++) {
		const struct dlrt_layer *l = &net->l[i];
		const float *wt = net->params + l->w_off;
		const float *bias = net->params + l->b_off;

		/* Activations run in place; everything else ping-pongs. */
		if (l->s.op == DLRT_LAYER_RELU || l->s.op == DLRT_LAYER_TANH) {
			if (x == in) {
				memcpy(bufs[cur], in, n * l->in_size * sizeof(float));
				x = bufs[cur];
				cur ^= 1;
			}
			y = (float *)x;
			if (l->s.op == DLRT_LAYER_RELU)
				dlrt_nn_relu(y, n * l->out_size);
			else
				dlrt_nn_tanh(y, n * l->out_size);
			continue;
		}
		y = bufs[cur];
		cur ^= 1;
		switch (l->s.op) {
		case DLRT_LAYER_CONV:
			for (b = 0; b < n; b++)
				dlrt_nn_conv2d(x + b * l->in_size, l->ic, l->ih,
					       l->iw, wt, bias, l->oc, l->s.k,
					       l->s.pad, y + b * l->out_size, col);
			break;
		case DLRT_LAYER_MAXPOOL:
			for (b = 0; b < n; b++)
				dlrt_nn_maxpool(x + b * l->in_size, l->ic, l->ih,
						l->iw, l->s.k, y + b * l->out_size);
			break;
		case DLRT_LAYER_AVGPOOL:
			for (b = 0; b < n; b++)
				dlrt_nn_avgpool(x + b * l->in_size, l->ic, l->ih,
						l->iw, l->s.k, y + b * l->out_size);
			break;
		case DLRT_LAYER_DENSE:
			dlrt_nn_dense(x, n, (int)l->in_size, wt, bias, l->oc, y);
			break;
		default:
			break;
		}
		x = y;
	}
	for (b = 0; b < n; b++) {
		memcpy(probs + b * net->nclasses, x + b * net->nclasses,
		       net->nclasses * sizeof(float));
		dlrt_nn_softmax(probs + b * net->nclasses, net->nclasses);
	}
}
