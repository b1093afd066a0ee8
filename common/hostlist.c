#include "hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push_name(struct dlrt_hostlist *hl, const char *name, size_t len,
		     struct dlrt_err *err)
{
	char **p;

	if (hl->n >= DLRT_HOSTLIST_MAX)
		return dlrt_err_set(err, "node list expands to more than %d names",
				    DLRT_HOSTLIST_MAX);
	if ((hl->n & (hl->n - 1)) == 0) { /* grow at powers of two */
		p = realloc(hl->names, (hl->n ? hl->n * 2 : 1) * sizeof(*p));
		if (!p)
			return dlrt_err_set(err, "out of memory expanding a node list");
		hl->names = p;
	}
	hl->names[hl->n] = strndup(name, len);
	if (!hl->names[hl->n])
		return dlrt_err_set(err, "out of memory expanding a node list");
	hl->n++;
	return 0;
}

/* Parses an unsigned decimal of at most 9 digits; returns digits used, 0 if none. */
static int parse_num(const char *s, const char *end, unsigned long *v)
{
	int d = 0;

	*v = 0;
	while (s + d < end && isdigit((unsigned char)s[d]) && d < 9)
		*v = *v * 10 + (unsigned long)(s[d++] - '0');
	if (s + d < end && isdigit((unsigned char)s[d]))
		return 0; /* too long */
	return d;
}

/* Expands one item (no top-level comma): "prefix[ranges]rest", where rest may
 * hold further bracket groups (a product, as Slurm allows). */
static int expand_item(struct dlrt_hostlist *hl, const char *item, size_t len,
		       struct dlrt_err *err)
{
	const char *lb = memchr(item, '[', len), *rb, *p;
	char buf[512];

	if (!lb) {
		if (memchr(item, ']', len))
			return dlrt_err_set(err, "node list item '%.*s' has ']' without '['",
					    (int)len, item);
		if (len == 0 || len >= sizeof(buf))
			return dlrt_err_set(err, "node list has an empty or over-long name");
		return push_name(hl, item, len, err);
	}
	rb = memchr(lb, ']', len - (size_t)(lb - item));
	if (!rb || rb == lb + 1)
		return dlrt_err_set(err, "node list item '%.*s' has an unclosed or empty '['",
				    (int)len, item);
	for (p = lb + 1; p < rb;) {
		unsigned long lo, hi;
		int dl = parse_num(p, rb, &lo), dh, width = dl;
		const char *q = p + dl;

		if (!dl)
			return dlrt_err_set(err, "node list range '%.*s' is not a number",
					    (int)(rb - lb + 1), lb);
		hi = lo;
		if (q < rb && *q == '-') {
			dh = parse_num(q + 1, rb, &hi);
			if (!dh || hi < lo)
				return dlrt_err_set(err, "node list range '%.*s' is invalid",
						    (int)(rb - lb + 1), lb);
			q += 1 + dh;
		}
		if (q < rb && *q != ',')
			return dlrt_err_set(err, "node list range '%.*s' is invalid",
					    (int)(rb - lb + 1), lb);
		if (hi - lo >= DLRT_HOSTLIST_MAX)
			return dlrt_err_set(err, "node list expands to more than %d names",
					    DLRT_HOSTLIST_MAX);
		for (unsigned long v = lo; v <= hi; v++) {
			int n = snprintf(buf, sizeof(buf), "%.*s%0*lu%.*s", (int)(lb - item),
					 item, width, v, (int)(item + len - rb - 1), rb + 1);

			if (n < 0 || (size_t)n >= sizeof(buf))
				return dlrt_err_set(err, "node list has an over-long name");
			if (expand_item(hl, buf, (size_t)n, err) < 0)
				return -1;
		}
		p = q < rb ? q + 1 : q;
	}
	return 0;
}

int dlrt_hostlist_expand(struct dlrt_hostlist *out, const char *list, struct dlrt_err *err)
{
	const char *s = list, *start;
	int depth = 0;

	memset(out, 0, sizeof(*out));
	if (!list || !*list)
		return dlrt_err_set(err, "the node list is empty");
	for (start = s;; s++) {
		if (*s == '[')
			depth++;
		else if (*s == ']')
			depth--;
		if ((*s == ',' && depth == 0) || *s == '\0') {
			if (expand_item(out, start, (size_t)(s - start), err) < 0) {
				dlrt_hostlist_free(out);
				return -1;
			}
			if (*s == '\0')
				break;
			start = s + 1;
		}
	}
	return 0;
}

void dlrt_hostlist_free(struct dlrt_hostlist *hl)
{
	for (uint32_t i = 0; i < hl->n; i++)
		free(hl->names[i]);
	free(hl->names);
	memset(hl, 0, sizeof(*hl));
}

int dlrt_counts_expand(uint32_t *counts, uint32_t n, const char *list, struct dlrt_err *err)
{
	const char *s = list;
	uint32_t k = 0;

	if (!list || !*list)
		return dlrt_err_set(err, "the tasks-per-node list is empty");
	while (*s) {
		unsigned long v, rep = 1;
		int d = parse_num(s, s + strlen(s), &v);

		if (!d)
			return dlrt_err_set(err, "tasks-per-node list '%s' is invalid", list);
		s += d;
		if (strncmp(s, "(x", 2) == 0) {
			d = parse_num(s + 2, s + strlen(s), &rep);
			if (!d || s[2 + d] != ')' || rep == 0)
				return dlrt_err_set(err, "tasks-per-node list '%s' is invalid", list);
			s += 3 + d;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return dlrt_err_set(err, "tasks-per-node list '%s' is invalid", list);
		if (rep > n - k)
			return dlrt_err_set(err, "tasks-per-node list '%s' names more than %u nodes",
					    list, n);
		while (rep--)
			counts[k++] = (uint32_t)v;
	}
	if (k != n)
		return dlrt_err_set(err, "tasks-per-node list '%s' names %u nodes, the node list %u",
				    list, k, n);
	return 0;
}
