/* test_models_train.c - the trainer: backprop against finite differences on
 * a tiny net that uses every layer kind, one SGD step by hand, determinism
 * (same seed, same weights bytes), and that training actually learns. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inference/models/arch.h"
#include "inference/models/idx.h"
#include "inference/models/model.h"
#include "inference/models/net.h"
#include "inference/models/train.h"
#include "inference/models/weights.h"
#include "tap.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

/* conv(pad) -> tanh -> maxpool -> conv -> relu -> avgpool -> dense -> tanh
 * -> dense: every op and both pools, small enough for a full check. */
static const struct dlrt_layer_spec tiny[] = {
	{ DLRT_LAYER_CONV, 3, 3, 1 }, { DLRT_LAYER_TANH, 0, 0, 0 },
	{ DLRT_LAYER_MAXPOOL, 0, 2, 0 }, { DLRT_LAYER_CONV, 5, 2, 0 },
	{ DLRT_LAYER_RELU, 0, 0, 0 }, { DLRT_LAYER_AVGPOOL, 0, 2, 0 },
	{ DLRT_LAYER_DENSE, 6, 0, 0 }, { DLRT_LAYER_TANH, 0, 0, 0 },
	{ DLRT_LAYER_DENSE, 4, 0, 0 },
};

static void random_input(float *x, size_t n, uint64_t seed)
{
	uint64_t st = seed;
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = (float)((double)(dlrt_net_rand(&st) >> 11) / 9007199254740992.0 * 2 - 1);
}

static void test_gradcheck(void)
{
	struct dlrt_err err = { "" };
	struct dlrt_trainer t;
	struct dlrt_net net;
	float x[2 * 6 * 6];
	size_t i, bad = 0, checked = 0;
	double worst = 0;
	const float eps = 1e-2f;
	int label = 2;

	TAP_OK(dlrt_net_init(&net, tiny, sizeof(tiny) / sizeof(tiny[0]), 2, 6, 6,
			     &err) == 0, "tiny net builds: %s", err.msg);
	TAP_IS_INT(net.nclasses, 4, "tiny net has 4 outputs");
	dlrt_net_init_params(&net, 3);
	/* Non-zero biases so the bias gradients are not all trivially tested. */
	for (i = 0; i < (size_t)net.nlayers; i++)
		if (net.l[i].b_len)
			random_input(net.params + net.l[i].b_off, net.l[i].b_len,
				     100 + i);
	random_input(x, sizeof(x) / sizeof(x[0]), 9);
	dlrt_train_init(&t, &net, &err);
	dlrt_train_sample(&t, x, label);
	for (i = 0; i < net.nparams; i++) {
		float keep = net.params[i], ana = t.grad[i];
		double lp, lm, num, diff;

		net.params[i] = keep + eps;
		lp = dlrt_train_loss(&t, x, label);
		net.params[i] = keep - eps;
		lm = dlrt_train_loss(&t, x, label);
		net.params[i] = keep;
		num = (lp - lm) / (2.0 * eps);
		diff = fabs(num - ana);
		checked++;
		if (diff > 2e-3 + 2e-2 * fabs(num)) {
			if (bad < 5)
				printf("#   param %zu: backprop %.6g, finite "
				       "difference %.6g\n", i, ana, num);
			bad++;
		}
		if (diff > worst)
			worst = diff;
	}
	TAP_OK(checked == net.nparams && bad == 0,
	       "backprop matches central differences for all %zu parameters "
	       "(worst |diff| %.2g)", checked, worst);
	/* A wrong gradient must be caught: scale one layer's gradient. */
	{
		float keep = net.params[net.l[0].w_off], ana = t.grad[net.l[0].w_off];
		double lp, lm;

		net.params[net.l[0].w_off] = keep + eps;
		lp = dlrt_train_loss(&t, x, label);
		net.params[net.l[0].w_off] = keep - eps;
		lm = dlrt_train_loss(&t, x, label);
		net.params[net.l[0].w_off] = keep;
		TAP_OK(fabs((lp - lm) / (2 * eps)) > 1e-4 &&
		       fabs(2 * ana - (lp - lm) / (2 * eps)) > 1e-4,
		       "the check is sensitive (first conv weight gradient "
		       "%.4g is not negligible)", ana);
	}

	/* One plain SGD step: w' = w - lr * g (mu 0, wd 0, one sample). */
	{
		float *w0 = malloc(net.nparams * sizeof(float));
		float *g0 = malloc(net.nparams * sizeof(float));
		int ok = 1;

		memcpy(w0, net.params, net.nparams * sizeof(float));
		memcpy(g0, t.grad, net.nparams * sizeof(float));
		dlrt_train_step(&t, 0.5f, 0, 0);
		for (i = 0; i < net.nparams; i++)
			ok &= fabsf(net.params[i] - (w0[i] - 0.5f * g0[i])) <= 1e-6f &&
			      t.grad[i] == 0;
		TAP_OK(ok, "SGD step: w -= lr * g, gradient cleared");
		free(w0);
		free(g0);
	}
	dlrt_train_free(&t);
	dlrt_net_free(&net);
}

/* Trains lenet5 on `n` samples (real images if available) and returns the
 * encoded weights file. */
static uint8_t *train_lenet(const float *x, const uint8_t *y, size_t n,
			    uint64_t seed, size_t *len, float *first, float *last)
{
	const struct dlrt_arch *a = dlrt_arch_by_name("lenet5");
	struct dlrt_trainer t;
	struct dlrt_net net;
	uint8_t *buf;
	size_t i;
	int e;

	dlrt_net_init(&net, a->spec, a->nspec, 1, 28, 28, NULL);
	dlrt_net_init_params(&net, seed);
	dlrt_train_init(&t, &net, NULL);
	for (e = 0; e < 4; e++) {
		float loss = 0;

		for (i = 0; i < n; i++) {
			loss += dlrt_train_sample(&t, x + i * 784, y[i]);
			if (t.pending == 16)
				dlrt_train_step(&t, 0.02f, 0.9f, 1e-4f);
		}
		dlrt_train_step(&t, 0.02f, 0.9f, 1e-4f);
		if (e == 0)
			*first = loss / (float)n;
		*last = loss / (float)n;
	}
	*len = dlrt_weights_size(&net);
	buf = malloc(*len);
	dlrt_weights_encode(&net, a->kind, NULL, buf);
	dlrt_train_free(&t);
	dlrt_net_free(&net);
	return buf;
}

static void test_determinism(void)
{
	enum { N = 256 };
	struct dlrt_err err = { "" };
	struct dlrt_idx img, lab;
	float *x = malloc(N * 784 * sizeof(float)), f1, l1, f2, l2, f3, l3;
	uint8_t y[N], *a, *b, *c;
	size_t la, lb, lc, i;
	int real = 0;

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) == 0 &&
	    dlrt_idx_load(&img, FMNIST "/train-images-idx3-ubyte.gz", &err) == 0 &&
	    dlrt_idx_load(&lab, FMNIST "/train-labels-idx1-ubyte.gz", &err) == 0) {
		dlrt_model_normalize_u8(img.data, N * 784, x);
		memcpy(y, lab.data, N);
		dlrt_idx_free(&img);
		dlrt_idx_free(&lab);
		real = 1;
	} else {
		/* Without the dataset: a learnable synthetic task (the class
		 * is which quarter of the image is bright). */
		for (i = 0; i < N; i++) {
			size_t p;

			y[i] = (uint8_t)(i % 4);
			for (p = 0; p < 784; p++)
				x[i * 784 + p] = ((p / 28 < 14) == (y[i] < 2) &&
						  (p % 28 < 14) == (y[i] % 2 == 0)) ? 1 : -1;
		}
	}
	a = train_lenet(x, y, N, 11, &la, &f1, &l1);
	b = train_lenet(x, y, N, 11, &lb, &f2, &l2);
	c = train_lenet(x, y, N, 12, &lc, &f3, &l3);
	TAP_OK(la == lb && !memcmp(a, b, la),
	       "same seed, same data: identical weights file bytes (%zu bytes)",
	       la);
	TAP_OK(la == lc && memcmp(a, c, la) != 0,
	       "another seed gives other weights");
	TAP_OK(l1 < 0.6f * f1, "training learns (%s data): mean loss %.3f -> "
	       "%.3f over 4 epochs", real ? "Fashion-MNIST" : "synthetic", f1, l1);
	free(a);
	free(b);
	free(c);
	free(x);
}

int main(void)
{
	test_gradcheck();
	test_determinism();
	return tap_done();
}
