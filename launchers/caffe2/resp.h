/* resp.h - the Redis protocol (RESP2) as the Caffe2 helper store speaks it.
 *
 * The parser reads requests the way redis-server does: arrays of bulk
 * strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", what hiredis, gloo and Caffe2
 * send) and inline commands ("PING\r\n", what telnet and redis-cli's pipe mode
 * send). It is incremental: the caller hands it the unconsumed bytes of its
 * input buffer (the same start each time, possibly with more appended), and
 * the parser resumes where it stopped, so a 64 MiB value arriving 4 KiB at a
 * time is scanned once, not once per read. It never allocates for a length a
 * peer merely announces (a "*1000000" or "$999999999" header costs nothing
 * until the bytes arrive), and every limit is checked before the bytes are
 * waited for. Protocol errors carry Redis's exact text; Redis closes the
 * connection after such a reply and so must the caller.
 *
 * Pure: no I/O, no printing.
 */
#ifndef DLRT_RESP_H
#define DLRT_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Redis's own inline/header limit (PROTO_INLINE_MAX_SIZE). */
#define DLRT_RESP_INLINE_MAX (64 * 1024)
#define DLRT_RESP_DEFAULT_MAX_BULK (64u * 1024 * 1024)
#define DLRT_RESP_DEFAULT_MAX_ARGS (1024 * 1024)

enum dlrt_resp_status {
	DLRT_RESP_ERROR = -1,    /* protocol error: reply p->error, then close */
	DLRT_RESP_NEED_MORE = 0, /* the request is not complete yet */
	DLRT_RESP_COMPLETE = 1,  /* p->argc/argv/argvlen hold a request */
	DLRT_RESP_EMPTY = 2,     /* an empty request (blank line, "*0"): no reply */
};

struct dlrt_resp_parser {
	/* Limits, set by dlrt_resp_init (change them before the first parse). */
	size_t max_bulk;  /* longest argument */
	size_t max_args;  /* most arguments in one request */

	/* The request just parsed (valid after DLRT_RESP_COMPLETE until the next
	 * call; argv points into the caller's data or the parser's scratch). */
	size_t argc;
	const uint8_t **argv;
	size_t *argvlen;
	size_t used;      /* bytes of the input this request took (also for _EMPTY) */
	const char *error; /* after DLRT_RESP_ERROR: "ERR Protocol error: ..." */
	char errbuf[64];

	/* Resumable state. */
	int state;
	size_t pos;       /* bytes of the current request scanned so far */
	size_t want_args; /* arguments the array header announced */
	int64_t bulk_len; /* length of the argument being read, -1 = header next */
	size_t *off;      /* argument offsets from the start of the request */
	size_t cap;       /* room in off/argv/argvlen */
	uint8_t *scratch; /* inline arguments after unquoting */
	size_t scratch_cap;
};

void dlrt_resp_init(struct dlrt_resp_parser *p, size_t max_bulk, size_t max_args);
void dlrt_resp_free(struct dlrt_resp_parser *p);

/* `data`/`len` are the unconsumed input, starting at the request being parsed.
 * After _COMPLETE or _EMPTY, drop p->used bytes from the front of the input
 * before the next call. Returns enum dlrt_resp_status. */
int dlrt_resp_parse(struct dlrt_resp_parser *p, const uint8_t *data, size_t len);

/* True while part of a request has been seen (for stalled-client timeouts). */
bool dlrt_resp_partial(const struct dlrt_resp_parser *p, size_t len);

/* Redis's strict integer syntax (string2ll): optional '-', no '+', no leading
 * zeros, no spaces, fits in int64. Returns 0 or -1. */
int dlrt_resp_str2ll(const uint8_t *s, size_t len, int64_t *out);

/* Reply builders; each returns 0, or -1 if `out` hit its limit. Error texts
 * are passed without the leading '-' ("ERR syntax error"); CR and LF inside
 * simple strings and errors are turned into spaces, as Redis does. */
int dlrt_resp_add_simple(struct dlrt_buf *out, const char *s);
int dlrt_resp_add_error(struct dlrt_buf *out, const char *s);
int dlrt_resp_add_errorf(struct dlrt_buf *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dlrt_resp_add_int(struct dlrt_buf *out, int64_t v);
int dlrt_resp_add_bulk(struct dlrt_buf *out, const void *p, size_t len);
int dlrt_resp_add_bulk_str(struct dlrt_buf *out, const char *s);
int dlrt_resp_add_nil(struct dlrt_buf *out);
int dlrt_resp_add_array(struct dlrt_buf *out, size_t n);

#endif
