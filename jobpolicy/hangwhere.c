#include "hangwhere.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool safe_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("_.:<>~,+-", c) != NULL);
}

/* src[0..len) into dst with every other byte made '_' (the line format has
 * spaces and '=' as separators). */
static void sanitize(char *dst, size_t size, const char *src, size_t len)
{
	size_t i;

	for (i = 0; i < len && i + 1 < size; i++)
		dst[i] = safe_char(src[i]) ? src[i] : '_';
	dst[i] = '\0';
}

/* A frame's function, normalized: "__GI___clock_nanosleep" -> "clock_nanosleep". */
static const char *strip_internal(const char *f)
{
	for (;;) {
		if (*f == '_')
			f++;
		else if (!strncmp(f, "GI_", 3))
			f += 3;
		else
			return f;
	}
}

/* Lock and wait plumbing, under the function that waits. */
static bool plumbing(const char *f)
{
	static const char *const pre[] = { "futex", "pthread_cond", "pthread_mutex", "lll_",
					   "std::", "do_futex", "sem_", "new_sem_", "syscall" };

	for (size_t i = 0; i < sizeof(pre) / sizeof(*pre); i++)
		if (!strncmp(f, pre[i], strlen(pre[i])))
			return true;
	return false;
}

/* The function of one frame line "#N  [0xADDR in ]FUNC (args) ..." into fn. */
static bool frame_func(const char *l, const char *end, char *fn, size_t size)
{
	const char *s;

	if (l >= end || *l != '#')
		return false;
	for (l++; l < end && *l >= '0' && *l <= '9'; l++)
		;
	while (l < end && *l == ' ')
		l++;
	if (end - l > 2 && l[0] == '0' && l[1] == 'x') {
		for (l += 2; l < end && *l != ' '; l++)
			;
		if (end - l < 4 || memcmp(l, " in ", 4))
			return false;
		l += 4;
	}
	for (s = l; s < end && *s != ' ' && *s != '('; s++)
		;
	if (s == l || (s - l == 2 && !memcmp(l, "??", 2)))
		return false;
	sanitize(fn, size, l, (size_t)(s - l));
	return true;
}

/* Whether the header line names thread `pid`: "Thread 1 (Thread 0x7f.. (LWP
 * PID) ...):" or "Thread 1 (process PID)". */
static bool header_of(const char *l, const char *end, int pid)
{
	char tag[48];
	size_t n = (size_t)(end - l);
	int k;

	if (n < 7 || memcmp(l, "Thread ", 7))
		return false;
	for (int i = 0; i < 2; i++) {
		k = snprintf(tag, sizeof(tag), i ? "(process %d" : "(LWP %d)", pid);
		for (const char *p = l; p + k <= end; p++)
			if (!memcmp(p, tag, (size_t)k) && (i == 0 || p + k == end || p[k] < '0' ||
							  p[k] > '9'))
				return true;
	}
	return false;
}

int dlrt_hw_from_gdb(const char *text, size_t len, int pid, char *where, size_t size)
{
	const char *p = text, *end = text + len;
	bool in = false, any_header = false;
	char fn[DLRT_HW_WHERE], first[DLRT_HW_WHERE] = "";

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;

		if (le - p >= 7 && !memcmp(p, "Thread ", 7)) {
			if (in)
				break;
			any_header = true;
			in = header_of(p, le, pid);
		} else if ((in || !any_header) && frame_func(p, le, fn, sizeof(fn))) {
			const char *f = strip_internal(fn);

			if (!first[0])
				snprintf(first, sizeof(first), "%s", f);
			if (*f && !plumbing(f)) {
				snprintf(where, size, "%s", f);
				return 0;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!first[0] || !size)
		return -1;
	snprintf(where, size, "%s", first);
	return 0;
}

size_t dlrt_hw_format_line(const struct dlrt_hw_task *t, char *buf, size_t size)
{
	char role[sizeof(t->role)], node[sizeof(t->node)], where[DLRT_HW_WHERE];
	int n;

	sanitize(role, sizeof(role), t->role, strnlen(t->role, sizeof(t->role)));
	sanitize(node, sizeof(node), t->node, strnlen(t->node, sizeof(t->node)));
	sanitize(where, sizeof(where), t->where, strnlen(t->where, sizeof(t->where)));
	n = snprintf(buf, size, "task=%d role=%s node=%s at=%s\n", (int)t->rank,
		     role[0] ? role : "?", node[0] ? node : "?", where[0] ? where : "?");
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

/* "KEY=VALUE" at *p (VALUE of safe characters, or "?" for "" in out, ended
 * by ' ' or the end) into out; *p past it and its space. */
static int field(const char **p, const char *end, const char *key, char *out, size_t size)
{
	size_t k = strlen(key), n = 0;
	const char *v;

	if ((size_t)(end - *p) <= k || memcmp(*p, key, k) || (*p)[k] != '=')
		return -1;
	v = *p + k + 1;
	while (v + n < end && v[n] != ' ')
		n++;
	if (n == 0 || n >= size)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!safe_char(v[i]) && !(n == 1 && v[i] == '?')) /* "?": not known */
			return -1;
	memcpy(out, v, n);
	out[v[0] == '?' ? 0 : n] = '\0';
	*p = v + n + (v + n < end);
	return 0;
}

int dlrt_hw_parse_line(const char *line, size_t len, struct dlrt_hw_task *t)
{
	const char *p = line, *end = line + len;
	char rank[12], *e;
	long r;

	if (len && line[len - 1] == '\n')
		end--;
	memset(t, 0, sizeof(*t));
	if (field(&p, end, "task", rank, sizeof(rank)) < 0 ||
	    field(&p, end, "role", t->role, sizeof(t->role)) < 0 ||
	    field(&p, end, "node", t->node, sizeof(t->node)) < 0 ||
	    field(&p, end, "at", t->where, sizeof(t->where)) < 0 || p != end)
		return -1;
	r = strtol(rank, &e, 10);
	/* digits only, no leading zero: one spelling per task */
	if (*e || e == rank || rank[0] < '0' || rank[0] > '9' || (rank[0] == '0' && rank[1]) ||
	    r > INT32_MAX)
		return -1;
	t->rank = (int32_t)r;
	return 0;
}

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

/* Appends, or, once the line would not fit, ends it with "..." (room for it
 * and the newline is kept). */
static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char tmp[DLRT_HW_LINE];
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || o->len + (size_t)n + 5 > o->size) {
		o->full = true;
		if (o->len + 4 < o->size)
			o->len += (size_t)snprintf(o->buf + o->len, o->size - o->len, "...");
		return;
	}
	memcpy(o->buf + o->len, tmp, (size_t)n + 1);
	o->len += (size_t)n;
}

static int by_rank(const void *a, const void *b)
{
	const struct dlrt_hw_task *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* "tasks 0,1,2" / "task 0": the known tasks in `where`. */
static void put_ranks(struct out *o, const struct dlrt_hw_task *t, size_t n, const char *where,
		      size_t count)
{
	size_t k = 0;

	put(o, "task%s ", count == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		if (t[i].where[0] && !strcmp(t[i].where, where))
			put(o, "%s%d", k++ ? "," : "", (int)t[i].rank);
}

static size_t count_in(const struct dlrt_hw_task *t, size_t n, const char *where)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += t[i].where[0] && !strcmp(t[i].where, where);
	return c;
}

size_t dlrt_hw_compare(struct dlrt_hw_task *t, size_t n, char *buf, size_t size)
{
	struct out o = { buf, size, 0, false };
	size_t known = 0, best = 0, best_i = 0, k = 0;
	bool tie = false;

	if (size < 64)
		return 0;
	qsort(t, n, sizeof(*t), by_rank);
	for (size_t i = 0; i < n; i++) {
		size_t c;

		if (!t[i].where[0])
			continue;
		known++;
		c = count_in(t, n, t[i].where);
		if (c > best)
			best = c, best_i = i, tie = false;
		else if (c == best && strcmp(t[i].where, t[best_i].where))
			tie = true;
	}
	if (known < 2)
		return 0;
	put(&o, "dlrt: hang: ");
	if (best == known) {
		put(&o, "all %zu tasks are in %s: none is elsewhere\n", known, t[best_i].where);
		return o.len;
	}
	if (tie) {
		/* No place holds most of them: each place, with its tasks. */
		put(&o, "the tasks are in different places and none holds most of them:");
		for (size_t i = 0; i < n; i++) {
			bool seen = false;

			for (size_t j = 0; j < i && t[i].where[0] && !seen; j++)
				seen = !strcmp(t[j].where, t[i].where);
			if (!t[i].where[0] || seen)
				continue;
			put(&o, "%s ", k++ ? ";" : "");
			put_ranks(&o, t, n, t[i].where, count_in(t, n, t[i].where));
			put(&o, " in %s", t[i].where);
		}
	} else {
		put_ranks(&o, t, n, t[best_i].where, best);
		put(&o, " %s in %s; ", best == 1 ? "is" : "are", t[best_i].where);
		put(&o, "%s elsewhere:", known - best == 1 ? "this task is" : "these tasks are");
		for (size_t i = 0; i < n; i++)
			if (t[i].where[0] && strcmp(t[i].where, t[best_i].where))
				put(&o, "%s task %d (%s on %s) in %s", k++ ? "," : "", (int)t[i].rank,
				    t[i].role, t[i].node, t[i].where);
	}
	if (o.full)
		o.len = strlen(buf);
	buf[o.len++] = '\n';
	buf[o.len] = '\0';
	return o.len;
}

int dlrt_hw_share(const char *dir, const char *name, const struct dlrt_hw_task *t, size_t n)
{
	char path[4400], tmp[4500], line[DLRT_HW_LINE];
	bool ok = true;
	int fd;

	if (strchr(name, '/') || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
				     sizeof(path) - 8)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (size_t i = 0; i < n && ok; i++) {
		size_t len = dlrt_hw_format_line(&t[i], line, sizeof(line));

		ok = write(fd, line, len) == (ssize_t)len;
	}
	if (close(fd) == 0 && ok && rename(tmp, path) == 0)
		return 0;
	unlink(tmp);
	return -1;
}

/* The position lines of buf[0..got) into t[*n..max). */
static void parse_lines(const char *buf, size_t got, struct dlrt_hw_task *t, size_t *n,
			size_t max)
{
	for (const char *p = buf, *end = buf + got; p < end && *n < max;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) /* a cut last line */
			return;
		if (dlrt_hw_parse_line(p, (size_t)(nl - p + 1), &t[*n]) == 0)
			(*n)++;
		p = nl + 1;
	}
}

size_t dlrt_hw_read_dir(const char *dir, const char *prefix, struct dlrt_hw_task *t, size_t max)
{
	static char buf[DLRT_HW_FILE_MAX];
	size_t n = 0, plen = strlen(prefix);
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)) && n < max) {
		size_t len = strlen(e->d_name), got = 0;
		struct stat st;
		ssize_t r;
		int fd;

		if (strncmp(e->d_name, prefix, plen) || !strcmp(e->d_name + plen, "done") ||
		    (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			while (got < sizeof(buf) &&
			       ((r = read(fd, buf + got, sizeof(buf) - got)) > 0 ||
				(r < 0 && errno == EINTR)))
				got += r > 0 ? (size_t)r : 0;
		close(fd);
		parse_lines(buf, got, t, &n, max);
	}
	if (d)
		closedir(d);
	return n;
}
