/* extproto.h - the stdin/stdout protocol of external model commands.
 *
 * A worker starts a user's model command once per job and keeps it running:
 *
 *   model -> worker   "READY[ <name>]\n" once, when the model is loaded
 *   worker -> model   "BATCH <task_id> <n> <bytes_per_query>\n" + n * bytes_per_query raw bytes
 *   model -> worker   n lines "<query_index> <prediction> <score>\n" (index 0..n-1,
 *                     any order, each exactly once), then "END <task_id>\n"
 *   model -> worker   "ERROR <text>\n" at any time: the model gives up (the task fails)
 *   worker closes stdin -> model exits 0
 *
 * Lines are at most DLRT_EXTPROTO_LINE_MAX bytes; stdout carries only the
 * protocol (diagnostics go to stderr). docs/inference-models.md has the
 * full definition. This file has both sides: formatters and parsers, and a
 * worker-side reader that checks every query is answered exactly once.
 */
#ifndef DLRT_EXTPROTO_H
#define DLRT_EXTPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"

#define DLRT_EXTPROTO_LINE_MAX 4096
#define DLRT_EXTPROTO_MAX_QUERIES 65536u
#define DLRT_EXTPROTO_MAX_QUERY_BYTES (16u << 20)
#define DLRT_EXTPROTO_MAX_BATCH_BYTES ((uint64_t)256 << 20)

struct dlrt_extproto_batch {
	uint64_t task_id;
	uint32_t n;
	uint32_t bytes_per_query;
};

enum dlrt_extproto_kind {
	DLRT_EXTPROTO_READY = 1,
	DLRT_EXTPROTO_RESULT,
	DLRT_EXTPROTO_END,
	DLRT_EXTPROTO_ERROR,
};

/* One line of model output. */
struct dlrt_extproto_msg {
	enum dlrt_extproto_kind kind;
	uint64_t task_id; /* END */
	uint32_t index;   /* RESULT */
	int32_t pred;     /* RESULT */
	float score;      /* RESULT */
	char text[256];   /* READY name / ERROR text (truncated, sanitized) */
};

/* Worker side: writes the BATCH header line into buf; returns its length
 * or -1 (bad sizes, buffer too small). */
int dlrt_extproto_format_batch(char *buf, size_t size,
			       const struct dlrt_extproto_batch *b,
			       struct dlrt_err *err);

/* Model side: parses a BATCH header line (without or with its '\n'). */
int dlrt_extproto_parse_batch(const char *line, size_t len,
			      struct dlrt_extproto_batch *b, struct dlrt_err *err);

/* Model side: result and END lines; return the length or -1 if too small. */
int dlrt_extproto_format_result(char *buf, size_t size, uint32_t index,
				int32_t pred, float score);
int dlrt_extproto_format_end(char *buf, size_t size, uint64_t task_id);

/* Worker side: parses one line of model output (without or with '\n'). */
int dlrt_extproto_parse_line(const char *line, size_t len,
			     struct dlrt_extproto_msg *m, struct dlrt_err *err);

/* Worker side: the state of one model process's stdout. */
struct dlrt_extproto_reader {
	struct dlrt_buf in;   /* bytes not yet parsed (bounded) */
	int ready;            /* READY seen */
	int in_batch;         /* between _begin and END */
	uint64_t task_id;
	uint32_t n, got;
	int32_t *pred;        /* n answers of the current/last batch */
	float *score;
	uint8_t *seen;
	uint32_t cap;
	char name[256];       /* from READY */
};

enum {
	DLRT_EXTPROTO_MORE = 0,      /* need more bytes */
	DLRT_EXTPROTO_GOT_READY = 1, /* the model said READY */
	DLRT_EXTPROTO_GOT_BATCH = 2, /* every answer of the batch is in pred/score */
};

void dlrt_extproto_reader_init(struct dlrt_extproto_reader *r);
void dlrt_extproto_reader_free(struct dlrt_extproto_reader *r);

/* Call after writing a BATCH of n queries (the model must be READY and the
 * previous batch complete). */
int dlrt_extproto_reader_begin(struct dlrt_extproto_reader *r,
			       uint64_t task_id, uint32_t n, struct dlrt_err *err);

/* Feeds bytes read from the model's stdout. Returns -1 on a protocol error
 * (the model process should be killed), DLRT_EXTPROTO_MORE, _GOT_READY or
 * _GOT_BATCH. After a GOT_* result, call again with len 0 to parse any
 * further complete lines already buffered. */
int dlrt_extproto_reader_feed(struct dlrt_extproto_reader *r, const void *data,
			      size_t len, struct dlrt_err *err);

#endif
