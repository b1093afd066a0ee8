/* dlrt-train - trains a built-in model on Fashion-MNIST, reproducibly.
 *
 *   dlrt-train --model lenet5 [--out FILE] [--epochs E] [--samples N] ...
 *   dlrt-train --info FILE
 *
 * Single-threaded and seeded (splitmix64, not rand()), so the same options
 * give the same weights file byte for byte on the same machine and build.
 * Prints per-epoch loss and the accuracy on the 10k test images, and records
 * the accuracy in the weights file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"
#include "idx.h"
#include "model.h"
#include "nn.h"
#include "net.h"
#include "train.h"
#include "weights.h"

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

struct opts {
	const char *model, *out, *data, *info;
	unsigned epochs, samples, batch, test_limit;
	uint64_t seed;
	float lr, lr_end, mu, wd;
	int quiet;
};

struct dataset {
	struct dlrt_idx img, lab;
	float *x; /* count x 784, normalized */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dlrt-train --model lenet5|deepcnn [options]\n"
		"       dlrt-train --info FILE.dlrtw\n"
		"  --out FILE        weights file (default $DLRT_MODEL_DIR/<model>.dlrtw)\n"
		"  --data DIR        Fashion-MNIST IDX files (default " DEFAULT_DATA ")\n"
		"  --epochs N        passes over the training samples (default 2)\n"
		"  --samples N       training samples per epoch, from 60000 (default all)\n"
		"  --batch N         minibatch size (default 32)\n"
		"  --lr X            initial learning rate (default 0.02), decays\n"
		"  --lr-end X        linearly to this at the end (default 0.001)\n"
		"  --momentum X      (default 0.9)\n"
		"  --wd X            weight decay (default 0.0001)\n"
		"  --seed N          initialization and shuffling seed (default 1)\n"
		"  --test-limit N    evaluate on the first N test images (default all)\n"
		"  --quiet           only the final line\n");
}

static int load_set(struct dataset *d, const char *dir, const char *prefix,
		    struct dlrt_err *err)
{
	char p[4096];

	memset(d, 0, sizeof(*d));
	snprintf(p, sizeof(p), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
	if (dlrt_idx_load(&d->img, p, err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
	if (dlrt_idx_load(&d->lab, p, err) < 0)
		return -1;
	if (dlrt_idx_check_labels(&d->img, &d->lab, DLRT_MODEL_NCLASSES, err) < 0)
		return -1;
	if (d->img.item_size != DLRT_MODEL_IN_H * DLRT_MODEL_IN_W)
		return dlrt_err_set(err, "%s images are %zu pixels, not 28x28",
				    prefix, d->img.item_size);
	d->x = malloc(d->img.count * d->img.item_size * sizeof(float));
	if (!d->x)
		return dlrt_err_set(err, "out of memory for %s images", prefix);
	dlrt_model_normalize_u8(d->img.data, d->img.count * d->img.item_size,
				d->x);
	return 0;
}

static void free_set(struct dataset *d)
{
	dlrt_idx_free(&d->img);
	dlrt_idx_free(&d->lab);
	free(d->x);
}

static double evaluate(const struct dlrt_net *net, const struct dataset *d,
		       size_t limit)
{
	size_t n = limit && limit < d->img.count ? limit : d->img.count;
	size_t chunk = DLRT_MODEL_CHUNK, i, b, c, right = 0;
	float *scratch = malloc(sizeof(float) * dlrt_net_scratch_size(net, chunk));
	float *probs = malloc(sizeof(float) * chunk * net->nclasses);

	if (!scratch || !probs) {
		free(scratch);
		free(probs);
		return -1;
	}
	for (i = 0; i < n; i += c) {
		c = n - i < chunk ? n - i : chunk;
		dlrt_net_forward(net, d->x + i * net->in_size, c, scratch, probs);
		for (b = 0; b < c; b++)
			right += dlrt_nn_argmax(probs + b * net->nclasses,
						      net->nclasses) ==
				 d->lab.data[i + b];
	}
	free(scratch);
	free(probs);
	return (double)right / (double)n;
}

static int info(const char *path)
{
	struct dlrt_weights_meta meta;
	struct dlrt_err err = { "" };
	struct dlrt_net net;
	uint32_t kind;

	if (dlrt_weights_load(path, &net, &kind, &meta, &err) < 0) {
		fprintf(stderr, "dlrt-train: %s\n", err.msg);
		return 1;
	}
	printf("%s: model %s, %zu parameters, %zu MACs/query, seed %u, "
	       "%u epochs x %u samples, test accuracy %.4f\n", path,
	       dlrt_arch_by_kind(kind)->name, net.nparams, net.macs, meta.seed,
	       meta.epochs, meta.train_samples, meta.test_acc);
	dlrt_net_free(&net);
	return 0;
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		{ "data", required_argument, NULL, 'd' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "samples", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "lr", required_argument, NULL, 'l' },
		{ "lr-end", required_argument, NULL, 'L' },
		{ "momentum", required_argument, NULL, 'M' },
		{ "wd", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "test-limit", required_argument, NULL, 't' },
		{ "info", required_argument, NULL, 'i' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->data = DEFAULT_DATA;
	o->epochs = 2;
	o->batch = 32;
	o->lr = 0.02f;
	o->lr_end = 0.001f;
	o->mu = 0.9f;
	o->wd = 1e-4f;
	o->seed = 1;
	while ((c = getopt_long(argc, argv, "m:o:d:e:n:b:l:L:M:w:s:t:i:qh", lo,
				NULL)) != -1) {
		char *end = NULL;
		double v = 0;

		if (optarg && strchr("enbst", c)) {
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || v < 0 || v > 1e9 ||
			    v != (double)(unsigned long)v) {
				fprintf(stderr, "dlrt-train: -%c needs a whole "
					"number, got \"%s\"\n", c, optarg);
				return -1;
			}
		} else if (optarg && strchr("lLMw", c)) {
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || !(v >= 0 && v < 10)) {
				fprintf(stderr, "dlrt-train: bad number \"%s\"\n",
					optarg);
				return -1;
			}
		}
		switch (c) {
		case 'm': o->model = optarg; break;
		case 'o': o->out = optarg; break;
		case 'd': o->data = optarg; break;
		case 'e': o->epochs = (unsigned)v; break;
		case 'n': o->samples = (unsigned)v; break;
		case 'b': o->batch = (unsigned)v; break;
		case 'l': o->lr = (float)v; break;
		case 'L': o->lr_end = (float)v; break;
		case 'M': o->mu = (float)v; break;
		case 'w': o->wd = (float)v; break;
		case 's': o->seed = (uint64_t)v; break;
		case 't': o->test_limit = (unsigned)v; break;
		case 'i': o->info = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dlrt-train: unexpected argument \"%s\"\n",
			argv[optind]);
		return -1;
	}
	if (!o->info && !o->model) {
		fprintf(stderr, "dlrt-train: --model lenet5|deepcnn is required\n");
		return -1;
	}
	if (!o->batch || !o->epochs) {
		fprintf(stderr, "dlrt-train: --batch and --epochs must be at "
			"least 1\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dataset train = { 0 }, test = { 0 };
	struct dlrt_err err = { "" };
	struct dlrt_weights_meta meta;
	const struct dlrt_arch *arch;
	struct dlrt_trainer tr = { 0 };
	struct dlrt_net net = { 0 };
	struct opts o;
	char outbuf[4096];
	unsigned *order = NULL;
	size_t i, nsamp, step = 0, nsteps;
	uint64_t rng;
	unsigned e;
	double t0, ttrain = 0, acc = 0;
	int rv = 1;

	if (parse_opts(&o, argc, argv) < 0)
		return 2;
	if (o.info)
		return info(o.info);
	arch = dlrt_arch_by_name(o.model);
	if (!arch || !arch->spec) {
		fprintf(stderr, "dlrt-train: unknown model \"%s\": use lenet5 or "
			"deepcnn\n", o.model);
		return 2;
	}
	if (!o.out) {
		const char *dir = getenv("DLRT_MODEL_DIR");

		if (!dir || !*dir) {
			fprintf(stderr, "dlrt-train: give --out FILE or set "
				"DLRT_MODEL_DIR\n");
			return 2;
		}
		snprintf(outbuf, sizeof(outbuf), "%s/%s.dlrtw", dir, arch->name);
		o.out = outbuf;
	}
	if (load_set(&train, o.data, "train", &err) < 0 ||
	    load_set(&test, o.data, "t10k", &err) < 0)
		goto fail;
	if (dlrt_net_init(&net, arch->spec, arch->nspec, DLRT_MODEL_IN_C,
			  DLRT_MODEL_IN_H, DLRT_MODEL_IN_W, &err) < 0 ||
	    dlrt_train_init(&tr, &net, &err) < 0)
		goto fail;
	dlrt_net_init_params(&net, o.seed);
	nsamp = o.samples && o.samples < train.img.count ? o.samples :
		train.img.count;
	order = malloc(train.img.count * sizeof(*order));
	if (!order) {
		dlrt_err_set(&err, "out of memory");
		goto fail;
	}
	for (i = 0; i < train.img.count; i++)
		order[i] = (unsigned)i;
	rng = o.seed ^ 0x5eedf00dULL;

	nsteps = (size_t)o.epochs * ((nsamp + o.batch - 1) / o.batch);
	if (!o.quiet)
		printf("%s: %zu parameters, %zu MACs/query; %u epochs x %zu "
		       "samples, batch %u, lr %g -> %g, momentum %g, seed %llu\n",
		       arch->name, net.nparams, net.macs, o.epochs, nsamp,
		       o.batch, o.lr, o.lr_end, o.mu,
		       (unsigned long long)o.seed);
	for (e = 0; e < o.epochs; e++) {
		double loss = 0;

		/* Fisher-Yates over all 60k, then take the first nsamp:
		 * each epoch sees a different subset when --samples < 60000. */
		for (i = train.img.count - 1; i > 0; i--) {
			size_t j = dlrt_net_rand(&rng) % (i + 1);
			unsigned tmp = order[i];

			order[i] = order[j];
			order[j] = tmp;
		}
		t0 = now();
		for (i = 0; i < nsamp; i++) {
			unsigned s = order[i];

			loss += dlrt_train_sample(&tr, train.x + (size_t)s * net.in_size,
						  train.lab.data[s]);
			if (tr.pending == o.batch || i + 1 == nsamp) {
				float f = nsteps > 1 ? (float)step / (float)(nsteps - 1) : 1;

				dlrt_train_step(&tr, o.lr + (o.lr_end - o.lr) * f,
						o.mu, o.wd);
				step++;
			}
		}
		ttrain += now() - t0;
		if (!o.quiet) {
			acc = evaluate(&net, &test, o.test_limit);
			printf("%s: epoch %u/%u loss %.4f test accuracy %.4f "
			       "(train %.1f s)\n", arch->name, e + 1, o.epochs,
			       loss / (double)nsamp, acc, ttrain);
			fflush(stdout);
		}
	}
	if (o.quiet)
		acc = evaluate(&net, &test, o.test_limit);
	meta.seed = (uint32_t)o.seed;
	meta.epochs = o.epochs;
	meta.train_samples = (uint32_t)nsamp;
	meta.test_acc = (float)acc;
	if (dlrt_weights_save(o.out, &net, arch->kind, &meta, &err) < 0)
		goto fail;
	printf("%s: test accuracy %.2f%% on %zu test images; trained %u epochs "
	       "x %zu samples in %.1f s (seed %llu); wrote %s\n", arch->name,
	       acc * 100, o.test_limit && o.test_limit < test.img.count ?
	       (size_t)o.test_limit : test.img.count, o.epochs, nsamp, ttrain,
	       (unsigned long long)o.seed, o.out);
	rv = 0;
fail:
	if (rv)
		fprintf(stderr, "dlrt-train: %s\n", err.msg);
	free(order);
	dlrt_train_free(&tr);
	dlrt_net_free(&net);
	free_set(&train);
	free_set(&test);
	return rv;
}
