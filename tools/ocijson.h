/* ocijson.h - just enough JSON to read and edit an OCI bundle's config.json
 * (dlrt-oci-run, tools/ocitask.c).
 *
 * No tree is built: a document is checked once (strict RFC 8259: UTF-8,
 * nesting at most DLRT_OCIJSON_MAX_DEPTH deep, nothing after the value), and
 * then values are named by their byte span in it, so an edit copies
 * everything it does not change byte for byte. Every function but
 * dlrt_ocijson_check expects a document dlrt_ocijson_check accepted.
 */
#ifndef DLRT_OCIJSON_H
#define DLRT_OCIJSON_H

#include <stddef.h>

#include "common/buf.h"
#include "common/dlrt_err.h"

#define DLRT_OCIJSON_MAX_DEPTH 64

/* A value: doc[off .. off + len). */
struct dlrt_ocijson_span {
	size_t off;
	size_t len;
};

enum dlrt_ocijson_type {
	DLRT_OCIJSON_OBJECT,
	DLRT_OCIJSON_ARRAY,
	DLRT_OCIJSON_STRING,
	DLRT_OCIJSON_NUMBER,
	DLRT_OCIJSON_TRUE,
	DLRT_OCIJSON_FALSE,
	DLRT_OCIJSON_NULL,
};

/* 0 when doc[0..len) is one JSON value, *top its span; else -1 and err says
 * what is wrong at which byte and line ("not JSON at line 3, byte 41: ..."). */
int dlrt_ocijson_check(const char *doc, size_t len, struct dlrt_ocijson_span *top,
		       struct dlrt_err *err);

enum dlrt_ocijson_type dlrt_ocijson_type(const char *doc, struct dlrt_ocijson_span v);

/* Walks an object's members or an array's elements: *pos starts at 0; each
 * call returns 1 with the next one in *val (and its name in *key for an
 * object; key may be NULL), 0 after the last. */
int dlrt_ocijson_next(const char *doc, struct dlrt_ocijson_span container, size_t *pos,
		      struct dlrt_ocijson_span *key, struct dlrt_ocijson_span *val);

/* The member named `name` (compared after unescaping) of object obj: 1 and
 * *val, 0 when it has none, -1 when it has two or more (which one a reader
 * takes is up to the reader: the caller refuses the document). */
int dlrt_ocijson_member(const char *doc, struct dlrt_ocijson_span obj, const char *name,
			struct dlrt_ocijson_span *val);

/* Whether string s, unescaped, is exactly want (a NUL-terminated string). */
int dlrt_ocijson_str_eq(const char *doc, struct dlrt_ocijson_span s, const char *want);

/* Python's truth of the value: false for null, false, 0, "", [] and {}. */
int dlrt_ocijson_truthy(const char *doc, struct dlrt_ocijson_span v);

/* Where a new member goes in object obj: the offset just after its last
 * member's value (*empty = 0, write ", " first) or just after its '{'
 * (*empty = 1). */
size_t dlrt_ocijson_insert_at(const char *doc, struct dlrt_ocijson_span obj, int *empty);

/* Appends s[0..n) as a JSON string (quotes included) as Python's json.dumps
 * writes it: '"', '\\' and control characters escaped, everything else not
 * ASCII as \uXXXX (a surrogate pair above U+FFFF); a byte that is not part of
 * valid UTF-8 becomes \udcXX, as Python's surrogateescape reads the
 * environment. -1 when b is full. */
int dlrt_ocijson_put_string(struct dlrt_buf *b, const char *s, size_t n);

#endif
