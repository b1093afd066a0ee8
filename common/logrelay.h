/* logrelay.h - copies a task's stdout and stderr into its exported log file.
 *
 * --dl-log-dir (spank/logs.c) forks each task in two: the child becomes the
 * program, the parent (still the process Slurm knows as the task) runs this relay:
 * every line the program writes is passed on unchanged to where Slurm sends the
 * task's output (srun, or the batch output file) and appended, stamped, to the
 * log file (logline.h). The relay ends when the program and everything that
 * inherited its output are done, or `drain_ms` after the program exited if a
 * daemonized grandchild keeps the pipes open, so a task can never hang here.
 * Pure C and no SPANK symbol, so the unit tests drive it directly.
 */
#ifndef DLRT_LOGRELAY_H
#define DLRT_LOGRELAY_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define DLRT_LOGRELAY_LINE 4096 /* longer lines are cut into several log lines */

struct dlrt_logrelay {
	int in[2];   /* read ends of the program's stdout and stderr pipes (-1 = closed) */
	int tee[2];  /* where the raw output also goes (-1 = nowhere) */
	int file;    /* the log file, opened O_APPEND */
	char line[2][DLRT_LOGRELAY_LINE];
	size_t len[2];
	/* Stamped lines are collected here and written once per read, not per line. */
	char out[65536];
	size_t out_len;
	char stamp[32];   /* of the current read: its lines arrived together */
};

/* Runs until done (see above); *status is the program's wait status. */
int dlrt_logrelay_run(struct dlrt_logrelay *r, pid_t child, int drain_ms, int *status);

/* Appends one stamped "dlrt" line (dlrt's own notes: start, attempt, exit). */
void dlrt_logrelay_note(int file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
