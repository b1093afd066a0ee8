#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "net.h"
#include "weights.h"

struct dlrt_model {
	const struct dlrt_arch *arch;
	struct dlrt_net net;   /* unused for noop */
	struct dlrt_weights_meta meta;
	float *scratch;        /* dlrt_net_scratch_size(net, CHUNK) floats */
	float *probs;          /* CHUNK x nclasses */
	float *xbuf;           /* CHUNK x input size, for dlrt_model_infer_u8 */
};

static int model_new(struct dlrt_model **out, const struct dlrt_arch *arch,
		     struct dlrt_net *net, const struct dlrt_weights_meta *meta,
		     struct dlrt_err *err)
{
	struct dlrt_model *m = calloc(1, sizeof(*m));

	if (!m)
		goto oom;
	m->arch = arch;
	m->meta.test_acc = -1;
	if (net) {
		m->net = *net;
		memset(net, 0, sizeof(*net)); /* ownership moves to m */
		if (meta)
			m->meta = *meta;
		m->scratch = malloc(sizeof(float) *
				    dlrt_net_scratch_size(&m->net, DLRT_MODEL_CHUNK));
		m->probs = malloc(sizeof(float) * DLRT_MODEL_CHUNK *
				  (size_t)m->net.nclasses);
		m->xbuf = malloc(sizeof(float) * DLRT_MODEL_CHUNK * m->net.in_size);
		if (!m->scratch || !m->probs || !m->xbuf) {
			dlrt_model_free(m);
			goto oom;
		}
	}
	*out = m;
	return 0;
oom:
	if (net)
		dlrt_net_free(net);
	return dlrt_err_set(err, "out of memory opening model %s", arch->name);
}

int dlrt_model_load(struct dlrt_model **out, const char *path,
		    struct dlrt_err *err)
{
	struct dlrt_weights_meta meta;
	struct dlrt_net net;
	uint32_t kind;

	*out = NULL;
	if (dlrt_weights_load(path, &net, &kind, &meta, err) < 0)
		return -1;
	return model_new(out, dlrt_arch_by_kind(kind), &net, &meta, err);
}

int dlrt_model_open(struct dlrt_model **out, const char *spec,
		    const char *model_dir, struct dlrt_err *err)
{
	const struct dlrt_arch *arch;
	size_t n = strlen(spec);
	char path[4096];

	*out = NULL;
	if (strchr(spec, '/') || (n > 6 && !strcmp(spec + n - 6, ".dlrtw")))
		return dlrt_model_load(out, spec, err);
	arch = dlrt_arch_by_name(spec);
	if (!arch)
		return dlrt_err_set(err, "unknown model \"%s\": use noop, lenet5, "
				    "deepcnn or a path to a .dlrtw file", spec);
	if (!arch->spec)
		return model_new(out, arch, NULL, NULL, err);
	if (!model_dir || !*model_dir)
		model_dir = getenv("DLRT_MODEL_DIR");
	if (!model_dir || !*model_dir)
		return dlrt_err_set(err, "model %s needs its weights directory: "
				    "set DLRT_MODEL_DIR (make models writes "
				    "$(BUILD)/models)", spec);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.dlrtw", model_dir,
			     spec) >= sizeof(path))
		return dlrt_err_set(err, "model directory path is too long");
	return dlrt_model_load(out, path, err);
}

const char *dlrt_model_name(const struct dlrt_model *m)
{
	return m->arch->name;
}

size_t dlrt_model_input_size(const struct dlrt_model *m)
{
	(void)m;
	return (size_t)DLRT_MODEL_IN_C * DLRT_MODEL_IN_H * DLRT_MODEL_IN_W;
}

int dlrt_model_nclasses(const struct dlrt_model *m)
{
	(void)m;
	return DLRT_MODEL_NCLASSES;
}

size_t dlrt_model_macs(const struct dlrt_model *m)
{
	return m->arch->spec ? m->net.macs : 0;
}

float dlrt_model_trained_accuracy(const struct dlrt_model *m)
{
	return m->meta.test_acc;
}

int dlrt_model_infer(struct dlrt_model *m, const float *inputs, size_t n,
		     int *pred, float *score, struct dlrt_err *err)
{
	size_t done, c, b, in = dlrt_model_input_size(m);
	int nc = DLRT_MODEL_NCLASSES;

	if (n && (!inputs || !pred))
		return dlrt_err_set(err, "dlrt_model_infer: NULL inputs or pred "
				    "for %zu queries", n);
	if (!m->arch->spec) {
		memset(pred, 0, n * sizeof(*pred));
		if (score)
			for (b = 0; b < n; b++)
				score[b] = 0;
		return 0;
	}
	for (done = 0; done < n; done += c) {
		c = n - done < DLRT_MODEL_CHUNK ? n - done : DLRT_MODEL_CHUNK;
		dlrt_net_forward(&m->net, inputs + done * in, c, m->scratch,
				 m->probs);
		for (b = 0; b < c; b++) {
			const float *p = m->probs + b * nc;
			int k = 0, j;

			for (j = 1; j < nc; j++)
				if (p[j] > p[k])
					k = j;
			pred[done + b] = k;
			if (score)
				score[done + b] = p[k];
		}
	}
	return 0;
}

int dlrt_model_infer_u8(struct dlrt_model *m, const uint8_t *pixels, size_t n,
			int *pred, float *score, struct dlrt_err *err)
{
	size_t done, c, in = dlrt_model_input_size(m);

	if (n && (!pixels || !pred))
		return dlrt_err_set(err, "dlrt_model_infer_u8: NULL pixels or "
				    "pred for %zu queries", n);
	if (!m->arch->spec) {
		memset(pred, 0, n * sizeof(*pred));
		if (score)
			memset(score, 0, n * sizeof(*score));
		return 0;
	}
	for (done = 0; done < n; done += c) {
		c = n - done < DLRT_MODEL_CHUNK ? n - done : DLRT_MODEL_CHUNK;
		dlrt_model_normalize_u8(pixels + done * in, c * in, m->xbuf);
		if (dlrt_model_infer(m, m->xbuf, c, pred + done,
				     score ? score + done : NULL, err) < 0)
			return -1;
	}
	return 0;
}

void dlrt_model_free(struct dlrt_model *m)
{
	if (!m)
		return;
	dlrt_net_free(&m->net);
	free(m->xbuf);
	free(m->scratch);
	free(m->probs);
	free(m);
}
