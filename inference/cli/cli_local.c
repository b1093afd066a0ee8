/* cli_local.c - dlrt-infer local: the same answers as a pool's, computed in
 * this one process, one batch at a time; the reference the tests compare a
 * pool's results file with, and a quick check of a model on its inputs.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inference/models/idx.h"
#include "inference/models/model.h"
#include "cli.h"

int cmd_local(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "model", required_argument, NULL, 'm' }, { "inputs", required_argument, NULL, 'i' },
		{ "batch", required_argument, NULL, 'b' }, { "first", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'c' }, { "labels", required_argument, NULL, 'l' },
		{ "out", required_argument, NULL, 'o' }, { "model-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *model = NULL, *inputs = NULL, *labels = NULL, *out = NULL, *mdir = NULL;
	uint32_t batch = 16, first = 0, count = 0;
	struct dlrt_idx img = { 0 }, lab = { 0 };
	struct dlrt_model *m = NULL;
	struct dlrt_err err;
	char guessed[PATH_MAX];
	int opt, rc = 1;
	int *pred = NULL;
	float *score = NULL;
	uint32_t correct = 0;
	FILE *f = stdout;

	while ((opt = getopt_long(argc, argv, "m:i:b:f:c:l:o:d:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'm': model = optarg; break;
		case 'i': inputs = optarg; break;
		case 'b': if (parse_u32_opt("batch", optarg, 1, DLRT_IP_MAX_BATCH, &batch)) return 2; break;
		case 'f': if (parse_u32_opt("first", optarg, 0, DLRT_IP_MAX_QUERIES, &first)) return 2; break;
		case 'c': if (parse_u32_opt("count", optarg, 1, DLRT_IP_MAX_QUERIES, &count)) return 2; break;
		case 'l': labels = optarg; break;
		case 'o': out = optarg; break;
		case 'd': mdir = optarg; break;
		case 'h':
			printf("usage: dlrt-infer local --model M --inputs FILE [--batch B] [--first I]\n"
			       "         [--count N] [--labels FILE] [--out CSV] [--model-dir DIR]\n"
			       "Answers the queries in this process, one batch at a time, and writes\n"
			       "input_index,prediction,score (to --out or stdout) and the accuracy (to\n"
			       "stderr): the reference a pool's answers must equal.\n");
			return 0;
		default: return 2;
		}
	}
	if (!model || !inputs)
		return die("local needs --model and --inputs") + 1;
	if (dlrt_model_open(&m, model, mdir, &err) < 0 || dlrt_idx_load(&img, inputs, &err) < 0) {
		die("%s", err.msg);
		goto out;
	}
	if (img.item_size != dlrt_model_input_size(m) || first >= img.count) {
		die("%s does not hold 28x28 images from index %u", inputs, first);
		goto out;
	}
	if (!count || (uint64_t)first + count > img.count)
		count = (uint32_t)(img.count - first);
	if (!labels && guess_labels(inputs, guessed, sizeof(guessed)) == 0)
		labels = guessed;
	if (labels && (dlrt_idx_load(&lab, labels, &err) < 0 ||
		       dlrt_idx_check_labels(&img, &lab, 10, &err) < 0)) {
		die("%s", err.msg);
		goto out;
	}
	if (out && !(f = fopen(out, "w"))) {
		die("cannot write %s: %s", out, strerror(errno));
		goto out;
	}
	pred = malloc(batch * sizeof(*pred));
	score = malloc(batch * sizeof(*score));
	if (!pred || !score)
		goto out;
	fprintf(f, "input_index,prediction,score\n");
	for (uint32_t q = 0; q < count; q += batch) {
		uint32_t n = count - q < batch ? count - q : batch;

		if (dlrt_model_infer_u8(m, img.data + (size_t)(first + q) * img.item_size, n, pred,
					score, &err) < 0) {
			die("%s", err.msg);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			fprintf(f, "%u,%d,%.6f\n", first + q + i, pred[i], (double)score[i]);
			if (lab.data && pred[i] == lab.data[first + q + i])
				correct++;
		}
	}
	if (lab.data)
		fprintf(stderr, "accuracy %.2f%% (%u/%u)\n", 100.0 * correct / count, correct, count);
	rc = 0;
out:
	if (f && f != stdout)
		fclose(f);
	free(pred);
	free(score);
	dlrt_model_free(m);
	dlrt_idx_free(&img);
	dlrt_idx_free(&lab);
	return rc;
}
