/* dlrt-model-bench - per-query inference time of the built-in models.
 *
 *   dlrt-model-bench [--model-dir DIR] [--seconds S] [--batch LIST] [MODEL...]
 *
 * Runs each model (default: noop lenet5 deepcnn) over the Fashion-MNIST test
 * images for about S seconds per batch size (default 2 s; batch sizes 1,10),
 * single-threaded, after a warm-up, and prints microseconds per query, queries
 * per second and the cost ratio of every model to the cheapest real one. This
 * is the number the scheduler's per-query cost should roughly reproduce.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idx.h"
#include "model.h"

#define TEST_IMAGES "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Microseconds per query at `batch`, over at least `secs` seconds. */
static double bench(struct dlrt_model *m, const float *x, size_t nimg,
		    size_t batch, double secs)
{
	int pred[256];
	float score[256];
	size_t in = dlrt_model_input_size(m), done = 0, i = 0;
	double t0, t;

	for (i = 0; i + batch <= nimg && i < 200; i += batch) /* warm up */
		dlrt_model_infer(m, x + i * in, batch, pred, score, NULL);
	t0 = now();
	i = 0;
	do {
		size_t k;

		for (k = 0; k < 50; k++) {
			if (i + batch > nimg)
				i = 0;
			dlrt_model_infer(m, x + i * in, batch, pred, score, NULL);
			i += batch;
			done += batch;
		}
		t = now() - t0;
	} while (t < secs);
	return t * 1e6 / (double)done;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "model-dir", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 's' },
		{ "batch", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *defaults[] = { "noop", "lenet5", "deepcnn" };
	const char *dir = NULL, **names = defaults;
	size_t batches[8] = { 1, 10 }, nb = 2, b, nimg;
	double secs = 2, us[8][8] = { { 0 } };
	size_t macs[8] = { 0 };
	struct dlrt_err err = { "" };
	struct dlrt_idx img;
	int nnames = 3, c, k, base = -1;
	float *x;

	while ((c = getopt_long(argc, argv, "d:s:b:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 's': secs = atof(optarg); break;
		case 'b': {
			char *s = optarg, *tok;

			nb = 0;
			while (nb < 8 && (tok = strsep(&s, ","))) {
				long v = atol(tok);

				if (v < 1 || v > 256) {
					fprintf(stderr, "dlrt-model-bench: batch "
						"sizes are 1..256\n");
					return 2;
				}
				batches[nb++] = (size_t)v;
			}
			break;
		}
		case 'h':
			printf("usage: dlrt-model-bench [--model-dir DIR] "
			       "[--seconds S] [--batch 1,10] [MODEL...]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		names = (const char **)(argv + optind);
		nnames = argc - optind;
		if (nnames > 8)
			nnames = 8;
	}
	if (dlrt_idx_load(&img, TEST_IMAGES, &err) < 0) {
		fprintf(stderr, "dlrt-model-bench: %s\n", err.msg);
		return 1;
	}
	nimg = img.count;
	x = malloc(nimg * img.item_size * sizeof(float));
	if (!x)
		return 1;
	dlrt_model_normalize_u8(img.data, nimg * img.item_size, x);
	printf("%-10s %6s %12s %12s %10s\n", "model", "batch", "us/query",
	       "queries/s", "MACs/q");
	for (k = 0; k < nnames; k++) {
		struct dlrt_model *m;

		if (dlrt_model_open(&m, names[k], dir, &err) < 0) {
			fprintf(stderr, "dlrt-model-bench: %s\n", err.msg);
			return 1;
		}
		macs[k] = dlrt_model_macs(m);
		if (base < 0 && macs[k] > 0)
			base = k;
		for (b = 0; b < nb; b++) {
			us[k][b] = bench(m, x, nimg, batches[b], secs);
			printf("%-10s %6zu %12.2f %12.0f %10zu\n", names[k],
			       batches[b], us[k][b], 1e6 / us[k][b],
			       dlrt_model_macs(m));
			fflush(stdout);
		}
		dlrt_model_free(m);
	}
	if (base >= 0)
		for (k = 0; k < nnames; k++)
			for (b = 0; b < nb; b++)
				if (k != base && macs[k] && us[base][b] > 0)
					printf("cost ratio %s / %s at batch %zu: "
					       "%.2f\n", names[k], names[base],
					       batches[b], us[k][b] / us[base][b]);
	free(x);
	dlrt_idx_free(&img);
	return 0;
}
