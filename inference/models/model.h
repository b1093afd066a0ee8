/* model.h - the built-in inference models a dlrt-infer worker runs.
 *
 * A worker opens a job's model once (dlrt_model_open), keeps it warm, and
 * calls dlrt_model_infer for every task. Built-in models:
 *   "lenet5"   LeNet-5, ~62k parameters, ~0.42 M multiply-adds per query
 *   "deepcnn"  5 conv + 2 dense layers, ~440k parameters, ~5.9 M MACs/query
 *   "noop"     no network, costs ~nothing, answers class 0 (dispatch benchmarks)
 * Inputs are 28x28 grey images as floats normalized by dlrt_model_normalize_u8
 * (the trainer used the same normalization). All scratch memory is allocated
 * at open; inference allocates nothing. A dlrt_model is not thread-safe
 * (its scratch is shared): use one per thread.
 */
#ifndef DLRT_MODEL_H
#define DLRT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

struct dlrt_model;

/* Queries per internal forward pass; larger calls are split into chunks of
 * this size (it bounds the scratch memory). */
#define DLRT_MODEL_CHUNK 16

/* Opens a model by name or by path:
 *   "noop"                       the no-op model (no file)
 *   "lenet5", "deepcnn"          <model_dir>/<name>.dlrtw, where model_dir is
 *                                the argument, else $DLRT_MODEL_DIR
 *   anything containing '/' or ending in ".dlrtw": that weights file.
 * Fails with a one-line error (unknown name, missing or corrupt file). */
int dlrt_model_open(struct dlrt_model **out, const char *spec,
		    const char *model_dir, struct dlrt_err *err);

/* Loads a weights file (.dlrtw, see weights.h). */
int dlrt_model_load(struct dlrt_model **out, const char *path,
		    struct dlrt_err *err);

const char *dlrt_model_name(const struct dlrt_model *m);
/* Floats per query (28 * 28 = 784 for every built-in model). */
size_t dlrt_model_input_size(const struct dlrt_model *m);
/* Number of classes the model predicts (10). */
int dlrt_model_nclasses(const struct dlrt_model *m);
/* Multiply-adds per query (0 for noop): a cost estimate for scheduling. */
size_t dlrt_model_macs(const struct dlrt_model *m);
/* Test accuracy recorded in the weights file by dlrt-train, or -1. */
float dlrt_model_trained_accuracy(const struct dlrt_model *m);

/* Classifies n queries laid out back to back (n * input_size floats):
 * pred[i] is the most probable class, score[i] its softmax probability
 * (score may be NULL). Returns 0, or -1 on bad arguments. */
int dlrt_model_infer(struct dlrt_model *m, const float *inputs, size_t n,
		     int *pred, float *score, struct dlrt_err *err);

/* The same from raw uint8 pixels (n * input_size bytes, as IDX files and
 * the coordinator carry them): normalizes into the model's own buffer, so
 * this allocates nothing either. */
int dlrt_model_infer_u8(struct dlrt_model *m, const uint8_t *pixels, size_t n,
			int *pred, float *score, struct dlrt_err *err);

void dlrt_model_free(struct dlrt_model *m);

/* uint8 pixels (as in IDX files) to the models' inputs:
 * (p / 255 - 0.2860) / 0.3530, the Fashion-MNIST mean and deviation. */
void dlrt_model_normalize_u8(const uint8_t *pix, size_t count, float *out);

#define DLRT_MODEL_PIX_MEAN 0.2860f
#define DLRT_MODEL_PIX_STD 0.3530f

#endif
