/* dlrt_err.h - one-line errors that name the cause and the fix.
 *
 * Every fallible dlrt function takes a `struct dlrt_err *` and, on failure,
 * fills it with a single line such as
 *   "--dl-servers=9 needs 11 tasks (1 scheduler + 9 servers + 1 worker) but the
 *    step has 4: add tasks with -n or lower --dl-servers"
 * The caller decides where the line goes (srun's stderr, the slurmd log, a
 * command's stderr). Fixed-size storage: no allocation on the error path.
 */
#ifndef DLRT_ERR_H
#define DLRT_ERR_H

#include <stddef.h>

#define DLRT_ERR_MAX 512

struct dlrt_err {
	char msg[DLRT_ERR_MAX];
};

/* Sets err->msg (if err is not NULL) and returns -1, so callers can write
 * `return dlrt_err_set(err, "...");`. */
int dlrt_err_set(struct dlrt_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like dlrt_err_set, then appends ": strerror(errnum)". */
int dlrt_err_errno(struct dlrt_err *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
