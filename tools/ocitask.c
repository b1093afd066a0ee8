/* ocitask.c - a task's own config.json (ocitask.h): the network-namespace
 * question and process.env, on tools/ocijson.c's spans. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocijson.h"
#include "ocitask.h"

int dlrt_ocitask_read(const char *path, char **data, size_t *len, struct dlrt_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot open %s", path);
	rc = dlrt_ocitask_read_fd(fd, path, data, len, err);
	close(fd);
	return rc;
}

int dlrt_ocitask_read_fd(int fd, const char *path, char **data, size_t *len,
			 struct dlrt_err *err)
{
	size_t cap = DLRT_OCITASK_MAX_CONFIG + 1, n = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return dlrt_err_set(err, "out of memory reading %s", path);
	while (n < cap) {
		ssize_t got = read(fd, buf + n, cap - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;

			free(buf);
			return dlrt_err_errno(err, e, "cannot read %s", path);
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	if (n > DLRT_OCITASK_MAX_CONFIG) {
		free(buf);
		return dlrt_err_set(err, "%s is over %u MiB, the most dlrt-oci-run reads", path,
				    DLRT_OCITASK_MAX_CONFIG >> 20);
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

static int twice(struct dlrt_err *err, const char *where, const char *name)
{
	return dlrt_err_set(err, "%s has two \"%s\" members, and readers differ on which counts: "
			    "keep one", where, name);
}

/* Python's dlrt-oci-run asked the same: linux.namespaces is a list with a
 * {"type": "network"} entry whose "path" is missing or false. */
static int own_network(const char *doc, struct dlrt_ocijson_span top, struct dlrt_err *err)
{
	struct dlrt_ocijson_span linux_, spaces, entry, type, path;
	size_t pos = 0;
	int rc;

	if (dlrt_ocijson_type(doc, top) != DLRT_OCIJSON_OBJECT)
		return 0;
	rc = dlrt_ocijson_member(doc, top, "linux", &linux_);
	if (rc < 0)
		return twice(err, "the document", "linux");
	if (rc == 0 || dlrt_ocijson_type(doc, linux_) != DLRT_OCIJSON_OBJECT)
		return 0;
	rc = dlrt_ocijson_member(doc, linux_, "namespaces", &spaces);
	if (rc < 0)
		return twice(err, "linux", "namespaces");
	if (rc == 0 || dlrt_ocijson_type(doc, spaces) != DLRT_OCIJSON_ARRAY)
		return 0;
	while (dlrt_ocijson_next(doc, spaces, &pos, NULL, &entry)) {
		if (dlrt_ocijson_type(doc, entry) != DLRT_OCIJSON_OBJECT)
			continue;
		rc = dlrt_ocijson_member(doc, entry, "type", &type);
		if (rc < 0)
			return twice(err, "a linux.namespaces entry", "type");
		if (rc == 0 || !dlrt_ocijson_str_eq(doc, type, "network"))
			continue;
		rc = dlrt_ocijson_member(doc, entry, "path", &path);
		if (rc < 0)
			return twice(err, "a linux.namespaces entry", "path");
		if (rc == 0 || !dlrt_ocijson_truthy(doc, path))
			return DLRT_OCITASK_OWN_NETWORK;
	}
	return 0;
}

struct var {
	const char *s;
	size_t name_len;
	size_t index;
};

static int var_cmp(const void *a, const void *b)
{
	const struct var *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->s, y->s, n);

	if (c)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* env as a JSON array, sorted by name; as Python's os.environ: entries
 * without '=' (after the first byte) are left out, the first of two with the
 * same name counts. */
static int put_env(struct dlrt_buf *out, char *const *env)
{
	struct var *vars;
	size_t n = 0, kept = 0;
	int rc = -1;

	while (env[n])
		n++;
	vars = calloc(n ? n : 1, sizeof(*vars));
	if (!vars)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *eq = env[i][0] ? strchr(env[i] + 1, '=') : NULL;

		if (!eq)
			continue;
		vars[kept++] = (struct var){ env[i], (size_t)(eq - env[i]), i };
	}
	qsort(vars, kept, sizeof(*vars), var_cmp);
	if (dlrt_buf_append(out, "[", 1) < 0)
		goto out;
	for (size_t i = 0, first = 1; i < kept; i++) {
		if (i > 0 && vars[i].name_len == vars[i - 1].name_len &&
		    memcmp(vars[i].s, vars[i - 1].s, vars[i].name_len) == 0)
			continue;
		if (!first && dlrt_buf_append(out, ", ", 2) < 0)
			goto out;
		first = 0;
		if (dlrt_ocijson_put_string(out, vars[i].s, strlen(vars[i].s)) < 0)
			goto out;
	}
	rc = dlrt_buf_append(out, "]", 1);
out:
	free(vars);
	return rc;
}

/* out = doc[0..from) TEXT doc[to..len), TEXT being `head` then env then `tail`. */
static int put_spliced(struct dlrt_buf *out, const char *doc, size_t len, size_t from, size_t to,
		  const char *head, char *const *env, const char *tail, struct dlrt_err *err)
{
	if (dlrt_buf_append(out, doc, from) < 0 || dlrt_buf_append(out, head, strlen(head)) < 0 ||
	    put_env(out, env) < 0 || dlrt_buf_append(out, tail, strlen(tail)) < 0 ||
	    dlrt_buf_append(out, doc + to, len - to) < 0)
		return dlrt_err_set(err, "the task's config.json would be over %u MiB (config.json "
				    "and the task's environment): shorten the environment",
				    DLRT_OCITASK_MAX_OUT >> 20);
	return 0;
}

int dlrt_ocitask_build(const char *doc, size_t len, char *const *env, struct dlrt_buf *out,
		       struct dlrt_err *err)
{
	struct dlrt_ocijson_span top, process, cur;
	size_t at;
	int rc, empty;

	if (len > DLRT_OCITASK_MAX_CONFIG)
		return dlrt_err_set(err, "config.json is over %u MiB, the most dlrt-oci-run reads",
				    DLRT_OCITASK_MAX_CONFIG >> 20);
	if (dlrt_ocijson_check(doc, len, &top, err) < 0)
		return -1;
	if (!env) {
		if (dlrt_buf_append(out, doc, len) < 0)
			return dlrt_err_set(err, "out of memory copying config.json");
		return 0;
	}
	if (dlrt_ocijson_type(doc, top) != DLRT_OCIJSON_OBJECT)
		return dlrt_err_set(err, "the document is not a JSON object");
	rc = own_network(doc, top, err);
	if (rc != 0)
		return rc;
	rc = dlrt_ocijson_member(doc, top, "process", &process);
	if (rc < 0)
		return twice(err, "the document", "process");
	if (rc == 0) {
		at = dlrt_ocijson_insert_at(doc, top, &empty);
		return put_spliced(out, doc, len, at, at, empty ? "\"process\": {\"env\": " :
			      ", \"process\": {\"env\": ", env, "}", err);
	}
	if (dlrt_ocijson_type(doc, process) != DLRT_OCIJSON_OBJECT)
		return dlrt_err_set(err, "its \"process\" is not a JSON object");
	rc = dlrt_ocijson_member(doc, process, "env", &cur);
	if (rc < 0)
		return twice(err, "process", "env");
	if (rc == 1)
		return put_spliced(out, doc, len, cur.off, cur.off + cur.len, "", env, "", err);
	at = dlrt_ocijson_insert_at(doc, process, &empty);
	return put_spliced(out, doc, len, at, at, empty ? "\"env\": " : ", \"env\": ", env, "", err);
}
