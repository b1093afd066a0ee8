#include "poolarray.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "pool.h"
#include "common/proc.h"

extern char **environ;

/* The next line of text[*pos..len) into line[cap] (without its newline; a
 * longer line is cut and *cut set): 1, or 0 at the end. */
static int next_line(const char *text, size_t len, size_t *pos, char *line, size_t cap,
		     int *cut)
{
	size_t n = 0;

	if (*pos >= len)
		return 0;
	*cut = 0;
	while (*pos < len && text[*pos] != '\n') {
		if (n + 1 < cap)
			line[n++] = text[*pos];
		else
			*cut = 1;
		(*pos)++;
	}
	if (*pos < len)
		(*pos)++;
	line[n] = '\0';
	return 1;
}

/* A whole decimal number of at most 19 digits, nothing else. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 19)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!i)
		return -1;
	*out = v;
	return 0;
}

int dlrt_pool_array_parse(const char *text, size_t len, struct dlrt_pool_array *a,
			  struct dlrt_err *err)
{
	char line[128];
	size_t pos = 0;
	int cut, seen = 0;

	memset(a, 0, sizeof(*a));
	while (next_line(text, len, &pos, line, sizeof(line), &cut)) {
		char *v = strchr(line, '=');
		uint64_t u;
		int bit;

		if (!line[0])
			continue;
		if (cut || !v)
			return dlrt_err_set(err, "malformed line in the array record");
		*v++ = '\0';
		if (!strcmp(line, "job"))
			bit = 1;
		else if (!strcmp(line, "after_epoch"))
			bit = 2;
		else
			return dlrt_err_set(err, "unknown field '%.40s' in the array record", line);
		if (seen & bit)
			return dlrt_err_set(err, "field %s twice in the array record", line);
		if (parse_u64(v, &u) < 0 || (bit == 1 && (!u || u > UINT32_MAX)))
			return dlrt_err_set(err, "bad %s in the array record", line);
		seen |= bit;
		if (bit == 1)
			a->job = (uint32_t)u;
		else
			a->after_epoch = u;
	}
	if (seen != 3)
		return dlrt_err_set(err, "the array record lacks %s",
				    seen & 1 ? "after_epoch" : "job");
	return 0;
}

int dlrt_pool_array_read(const char *dir, struct dlrt_pool_array *a, struct dlrt_err *err)
{
	char path[4200], text[DLRT_POOL_ARRAY_MAX];
	struct stat st;
	size_t len = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/array", dir);
	/* O_NOFOLLOW: a link planted in place of the record is refused, not read. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		return dlrt_err_errno(err, errno, "cannot read the array record %s (remove it if it "
				      "is not a file of yours)", path);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return dlrt_err_set(err, "%s is not a regular file: remove it", path);
	}
	if (dlrt_pool_check_private(path, &st, err) < 0) {
		close(fd);
		return -1;
	}
	while (len < sizeof(text)) {
		ssize_t n = read(fd, text + len, sizeof(text) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			dlrt_err_errno(err, errno, "cannot read the array record %s", path);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len == sizeof(text))
		return dlrt_err_set(err, "the array record %s is too large: remove it", path);
	if (dlrt_pool_array_parse(text, len, a, err) < 0) {
		struct dlrt_err e2 = *err;

		return dlrt_err_set(err, "%s: %s: remove it and start the pool again", path,
				    e2.msg);
	}
	return 0;
}

int dlrt_pool_array_write(const char *dir, const struct dlrt_pool_array *a,
			  struct dlrt_err *err)
{
	char path[4200], tmp[4300], text[96];
	int fd, n, rc;

	snprintf(path, sizeof(path), "%s/array", dir);
	snprintf(tmp, sizeof(tmp), "%s/.array.%d", dir, (int)getpid());
	n = snprintf(text, sizeof(text), "job=%u\nafter_epoch=%llu\n", a->job,
		     (unsigned long long)a->after_epoch);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	rc = write(fd, text, (size_t)n) == n && fsync(fd) == 0 ? 0 : -1;
	if (rc < 0)
		dlrt_err_errno(err, errno, "cannot write %s", tmp);
	if (close(fd) < 0 && rc == 0)
		rc = dlrt_err_errno(err, errno, "cannot write %s", tmp);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = dlrt_err_errno(err, errno, "cannot install %s", path);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* A token of squeue's: letters, digits and the few signs Slurm uses. */
static int plain_token(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || strchr("_-.,:()/ ", *s)))
			return 0;
	return 1;
}

int dlrt_pool_squeue_parse(const char *text, size_t len, struct dlrt_pool_array_state *st,
			   struct dlrt_err *err)
{
	char line[256];
	size_t pos = 0;
	int cut;

	memset(st, 0, sizeof(*st));
	while (next_line(text, len, &pos, line, sizeof(line), &cut)) {
		char *state, *reason;
		uint64_t task;

		if (!line[0])
			continue;
		state = strchr(line, '|');
		reason = state ? strchr(state + 1, '|') : NULL;
		/* Warnings squeue writes among its lines are not ours to parse. */
		if (cut || !reason)
			continue;
		*state++ = '\0';
		*reason++ = '\0';
		/* %K of an element not yet split off a pending array is a range
		 * ("0-3", "0,2-3"): it starts with 0 when element 0 is in it. */
		if (parse_u64(line, &task) == 0 ? task != 0
		    : strncmp(line, "0-", 2) && strncmp(line, "0,", 2))
			continue;
		if (!*state || strlen(state) >= sizeof(st->state) || !plain_token(state) ||
		    strlen(reason) >= sizeof(st->reason) || !plain_token(reason))
			return dlrt_err_set(err, "unexpected squeue output for element 0");
		strcpy(st->state, state);
		strcpy(st->reason, reason);
		return 0;
	}
	return 1;
}

int dlrt_pool_array_query(const struct dlrt_pool_array *a, int timeout_ms,
			  struct dlrt_pool_array_state *st, struct dlrt_err *err)
{
	char job[16];
	char *argv[] = { "squeue", "-h", "-r", "-j", job, "-o", "%K|%T|%r", NULL };
	struct dlrt_proc_spec spec = { .argv = argv, .envp = environ, .timeout_ms = timeout_ms,
				       .out_max = 65536, .with_stderr = true };
	struct dlrt_proc_result res;
	struct dlrt_buf out;
	int rc;

	snprintf(job, sizeof(job), "%u", a->job);
	dlrt_buf_init(&out, 65536 + 1);
	if (dlrt_proc_run(&spec, "squeue", &out, &res, err) < 0) {
		dlrt_buf_free(&out);
		return -1;
	}
	/* squeue fails for a job id it no longer knows: the array has ended
	 * (and was purged); any other failure is Slurm's, not an answer. */
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status)) {
		char text[128];

		if (dlrt_buf_append(&out, "", 1) == 0 &&
		    strstr((const char *)dlrt_buf_head(&out), "Invalid job id"))
			rc = 1;
		else
			rc = dlrt_err_set(err, "squeue -j %u failed (%s): is slurmctld up?", a->job,
					  dlrt_proc_status_text(res.status, text, sizeof(text)));
	} else
		rc = dlrt_pool_squeue_parse((const char *)dlrt_buf_head(&out), out.len, st, err);
	dlrt_buf_free(&out);
	return rc;
}

int dlrt_pool_sbatch_parse(const char *text, size_t len, uint32_t *job, struct dlrt_err *err)
{
	char line[256];
	size_t pos = 0;
	int cut, found = 0;

	while (next_line(text, len, &pos, line, sizeof(line), &cut)) {
		uint64_t u;

		line[strcspn(line, ";")] = '\0';
		if (!cut && parse_u64(line, &u) == 0 && u && u <= UINT32_MAX) {
			*job = (uint32_t)u;
			found = 1;
		}
	}
	if (!found)
		return dlrt_err_set(err, "sbatch printed no job id");
	return 0;
}
