#include "extproto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strict decimal: at least one digit, no sign, no leading blanks, at most
 * `max`; advances *p past the digits. */
static int parse_u64(const char **p, const char *end, uint64_t max,
		     uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -1;
	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

static int expect_space(const char **p, const char *end)
{
	if (*p >= end || **p != ' ')
		return -1;
	(*p)++;
	return 0;
}

static size_t strip_nl(const char *line, size_t len)
{
	return len && line[len - 1] == '\n' ? len - 1 : len;
}

static void copy_text(char *dst, size_t size, const char *s, size_t n)
{
	size_t i;

	if (n >= size)
		n = size - 1;
	for (i = 0; i < n; i++)
		dst[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	dst[n] = 0;
}

int dlrt_extproto_format_batch(char *buf, size_t size,
			       const struct dlrt_extproto_batch *b,
			       struct dlrt_err *err)
{
	int n;

	if (b->n < 1 || b->n > DLRT_EXTPROTO_MAX_QUERIES ||
	    b->bytes_per_query < 1 ||
	    b->bytes_per_query > DLRT_EXTPROTO_MAX_QUERY_BYTES ||
	    (uint64_t)b->n * b->bytes_per_query > DLRT_EXTPROTO_MAX_BATCH_BYTES)
		return dlrt_err_set(err, "batch of %u queries x %u bytes is outside "
				    "the protocol's limits (1..%u queries, 1..%u "
				    "bytes each, %llu MiB in all)", b->n,
				    b->bytes_per_query, DLRT_EXTPROTO_MAX_QUERIES,
				    DLRT_EXTPROTO_MAX_QUERY_BYTES,
				    (unsigned long long)(DLRT_EXTPROTO_MAX_BATCH_BYTES >> 20));
	n = snprintf(buf, size, "BATCH %llu %u %u\n",
		     (unsigned long long)b->task_id, b->n, b->bytes_per_query);
	if (n < 0 || (size_t)n >= size)
		return dlrt_err_set(err, "BATCH header buffer too small");
	return n;
}

int dlrt_extproto_parse_batch(const char *line, size_t len,
			      struct dlrt_extproto_batch *b, struct dlrt_err *err)
{
	const char *p = line, *end = line + strip_nl(line, len);
	uint64_t id, n, q;

	if (end - p < 6 || memcmp(p, "BATCH ", 6) != 0)
		return dlrt_err_set(err, "expected \"BATCH <task_id> <n> "
				    "<bytes_per_query>\"");
	p += 6;
	if (parse_u64(&p, end, UINT64_MAX, &id) < 0 || expect_space(&p, end) < 0 ||
	    parse_u64(&p, end, DLRT_EXTPROTO_MAX_QUERIES, &n) < 0 ||
	    expect_space(&p, end) < 0 ||
	    parse_u64(&p, end, DLRT_EXTPROTO_MAX_QUERY_BYTES, &q) < 0 || p != end)
		return dlrt_err_set(err, "malformed BATCH header: want \"BATCH "
				    "<task_id> <n 1..%u> <bytes_per_query 1..%u>\"",
				    DLRT_EXTPROTO_MAX_QUERIES,
				    DLRT_EXTPROTO_MAX_QUERY_BYTES);
	if (n == 0 || q == 0 || n * q > DLRT_EXTPROTO_MAX_BATCH_BYTES)
		return dlrt_err_set(err, "BATCH of %llu x %llu bytes is empty or "
				    "larger than %llu MiB", (unsigned long long)n,
				    (unsigned long long)q,
				    (unsigned long long)(DLRT_EXTPROTO_MAX_BATCH_BYTES >> 20));
	b->task_id = id;
	b->n = (uint32_t)n;
	b->bytes_per_query = (uint32_t)q;
	return 0;
}

int dlrt_extproto_format_result(char *buf, size_t size, uint32_t index,
				int32_t pred, float score)
{
	int n = snprintf(buf, size, "%u %d %.9g\n", index, pred,
			 isfinite(score) ? (double)score : 0.0);

	return n < 0 || (size_t)n >= size ? -1 : n;
}

int dlrt_extproto_format_end(char *buf, size_t size, uint64_t task_id)
{
	int n = snprintf(buf, size, "END %llu\n", (unsigned long long)task_id);

	return n < 0 || (size_t)n >= size ? -1 : n;
}

static int parse_result(const char *p, const char *end,
			struct dlrt_extproto_msg *m, struct dlrt_err *err)
{
	char num[64], *e;
	uint64_t idx, pv;
	int neg = 0;
	size_t n, i;
	float f;

	if (parse_u64(&p, end, UINT32_MAX, &idx) < 0 || expect_space(&p, end) < 0)
		goto bad;
	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (parse_u64(&p, end, (uint64_t)INT32_MAX + (uint64_t)neg, &pv) < 0 ||
	    expect_space(&p, end) < 0)
		goto bad;
	n = (size_t)(end - p);
	/* strtof also takes blanks, hex, inf and nan: allow only a plain
	 * decimal number. */
	if (n == 0 || n >= sizeof(num) ||
	    !(p[0] == '-' || p[0] == '.' || (p[0] >= '0' && p[0] <= '9')))
		goto bad;
	/* The line is not NUL-terminated: check its bytes by count. */
	for (i = 0; i < n; i++)
		if (!strchr("0123456789.eE+-", p[i]) || !p[i])
			goto bad;
	memcpy(num, p, n);
	num[n] = 0;
	f = strtof(num, &e);
	if (*e || !isfinite(f))
		goto bad;
	m->kind = DLRT_EXTPROTO_RESULT;
	m->index = (uint32_t)idx;
	m->pred = neg ? (int32_t)(-(int64_t)pv) : (int32_t)pv;
	m->score = f;
	return 0;
bad:
	return dlrt_err_set(err, "malformed result line: want \"<query_index> "
			    "<prediction> <score>\" with integers and a decimal "
			    "score");
}

int dlrt_extproto_parse_line(const char *line, size_t len,
			     struct dlrt_extproto_msg *m, struct dlrt_err *err)
{
	const char *p = line, *end = line + strip_nl(line, len);
	size_t n = (size_t)(end - p);

	memset(m, 0, sizeof(*m));
	if (n >= 5 && !memcmp(p, "READY", 5) && (n == 5 || p[5] == ' ')) {
		m->kind = DLRT_EXTPROTO_READY;
		if (n > 6)
			copy_text(m->text, sizeof(m->text), p + 6, n - 6);
		return 0;
	}
	if (n >= 6 && !memcmp(p, "ERROR ", 6)) {
		m->kind = DLRT_EXTPROTO_ERROR;
		copy_text(m->text, sizeof(m->text), p + 6, n - 6);
		return 0;
	}
	if (n >= 4 && !memcmp(p, "END ", 4)) {
		p += 4;
		if (parse_u64(&p, end, UINT64_MAX, &m->task_id) < 0 || p != end)
			return dlrt_err_set(err, "malformed END line: want "
					    "\"END <task_id>\"");
		m->kind = DLRT_EXTPROTO_END;
		return 0;
	}
	return parse_result(p, end, m, err);
}

void dlrt_extproto_reader_init(struct dlrt_extproto_reader *r)
{
	memset(r, 0, sizeof(*r));
	/* Only one line is ever held unparsed, plus what one read() brings. */
	dlrt_buf_init(&r->in, 1 << 20);
}

void dlrt_extproto_reader_free(struct dlrt_extproto_reader *r)
{
	dlrt_buf_free(&r->in);
	free(r->pred);
	free(r->score);
	free(r->seen);
	memset(r, 0, sizeof(*r));
}

int dlrt_extproto_reader_begin(struct dlrt_extproto_reader *r,
			       uint64_t task_id, uint32_t n, struct dlrt_err *err)
{
	if (!r->ready || r->in_batch)
		return dlrt_err_set(err, "external model is not ready for a new "
				    "batch (%s)", r->ready ? "previous batch not "
				    "finished" : "no READY line yet");
	if (n < 1 || n > DLRT_EXTPROTO_MAX_QUERIES)
		return dlrt_err_set(err, "batch of %u queries: 1..%u allowed", n,
				    DLRT_EXTPROTO_MAX_QUERIES);
	if (n > r->cap) {
		int32_t *p = realloc(r->pred, n * sizeof(*p));
		float *s;
		uint8_t *seen;

		if (p)
			r->pred = p;
		s = realloc(r->score, n * sizeof(*s));
		if (s)
			r->score = s;
		seen = realloc(r->seen, n);
		if (seen)
			r->seen = seen;
		if (!p || !s || !seen)
			return dlrt_err_set(err, "out of memory for a batch of %u",
					    n);
		r->cap = n;
	}
	memset(r->seen, 0, n);
	r->task_id = task_id;
	r->n = n;
	r->got = 0;
	r->in_batch = 1;
	return 0;
}

/* Applies one complete line to the state machine. */
static int reader_line(struct dlrt_extproto_reader *r, const char *line,
		       size_t len, struct dlrt_err *err)
{
	struct dlrt_extproto_msg m;

	if (dlrt_extproto_parse_line(line, len, &m, err) < 0)
		return -1;
	switch (m.kind) {
	case DLRT_EXTPROTO_ERROR:
		return dlrt_err_set(err, "external model failed: %s", m.text);
	case DLRT_EXTPROTO_READY:
		if (r->ready)
			return dlrt_err_set(err, "external model said READY twice");
		r->ready = 1;
		memcpy(r->name, m.text, sizeof(r->name));
		return DLRT_EXTPROTO_GOT_READY;
	case DLRT_EXTPROTO_RESULT:
		if (!r->in_batch)
			return dlrt_err_set(err, "external model wrote a result "
					    "outside a batch (%s)", r->ready ?
					    "no batch running" : "before READY");
		if (m.index >= r->n)
			return dlrt_err_set(err, "external model answered query %u "
					    "of a batch of %u", m.index, r->n);
		if (r->seen[m.index])
			return dlrt_err_set(err, "external model answered query %u "
					    "of task %llu twice", m.index,
					    (unsigned long long)r->task_id);
		r->seen[m.index] = 1;
		r->pred[m.index] = m.pred;
		r->score[m.index] = m.score;
		r->got++;
		return DLRT_EXTPROTO_MORE;
	case DLRT_EXTPROTO_END:
		if (!r->in_batch)
			return dlrt_err_set(err, "external model wrote END outside "
					    "a batch");
		if (m.task_id != r->task_id)
			return dlrt_err_set(err, "external model ended task %llu "
					    "while task %llu was running",
					    (unsigned long long)m.task_id,
					    (unsigned long long)r->task_id);
		if (r->got != r->n)
			return dlrt_err_set(err, "external model ended task %llu "
					    "with %u of %u answers",
					    (unsigned long long)r->task_id,
					    r->got, r->n);
		r->in_batch = 0;
		return DLRT_EXTPROTO_GOT_BATCH;
	}
	return dlrt_err_set(err, "internal error: unknown message kind");
}

int dlrt_extproto_reader_feed(struct dlrt_extproto_reader *r, const void *data,
			      size_t len, struct dlrt_err *err)
{
	if (len && dlrt_buf_append(&r->in, data, len) < 0)
		return dlrt_err_set(err, "external model output buffer is full "
				    "(%zu bytes without being parsed)", r->in.len);
	while (r->in.len) {
		const char *s = (const char *)dlrt_buf_head(&r->in);
		const char *nl = memchr(s, '\n', r->in.len);
		size_t n;
		int rv;

		if (!nl) {
			if (r->in.len > DLRT_EXTPROTO_LINE_MAX)
				return dlrt_err_set(err, "external model wrote a "
						    "line longer than %d bytes "
						    "(is it printing to stdout?)",
						    DLRT_EXTPROTO_LINE_MAX);
			return DLRT_EXTPROTO_MORE;
		}
		n = (size_t)(nl - s) + 1;
		if (n > DLRT_EXTPROTO_LINE_MAX)
			return dlrt_err_set(err, "external model wrote a line "
					    "longer than %d bytes",
					    DLRT_EXTPROTO_LINE_MAX);
		rv = reader_line(r, s, n, err);
		dlrt_buf_consume(&r->in, n);
		if (rv != DLRT_EXTPROTO_MORE)
			return rv;
	}
	return DLRT_EXTPROTO_MORE;
}
