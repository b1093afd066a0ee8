/* logrelay.h - copies a task's stdout and stderr into its exported log file.
 *
 * --dl-log-dir (spank/logs.c) forks each task in two: the child becomes the
 * program, the parent (still the process Slurm knows as the task) runs this relay:
 * every line the program writes is passed on unchanged to where Slurm sends the
 * task's output (srun, or the batch output file) and appended, stamped, to the
 * log file (logline.h). The relay ends when the program and everything that
 * inherited its output are done, or `drain_ms` after the program exited if a
 * daemonized grandchild keeps the pipes open, so a task can never hang here.
 * A write to the log file that fails (full disk, quota, I/O error) never stops
 * the task or its output to srun: the file is cut back to its last complete line,
 * ends with the line "dlrt log cut here: CAUSE; ..." (DLRT_LOGRELAY_CUT), gets
 * nothing more, and one warning line naming the file and the cause goes to the
 * task's stderr stream (tee[1]), which is where the user looks.
 * Pure C and no SPANK symbol, so the unit tests drive it directly.
 */
#ifndef DLRT_LOGRELAY_H
#define DLRT_LOGRELAY_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define DLRT_LOGRELAY_LINE 4096 /* longer lines are cut into several log lines */
#define DLRT_LOGRELAY_CUT "log cut here: " /* text of the dlrt line that ends a cut log */
#define DLRT_LOGRELAY_MARKS 8  /* earlier line starts the marker may fall back to */

struct dlrt_logrelay {
	int in[2];   /* read ends of the program's stdout and stderr pipes (-1 = closed) */
	int tee[2];  /* where the raw output also goes (-1 = nowhere) */
	int file;    /* the log file, opened O_APPEND (-1 = none) */
	const char *name; /* its path, for the warning */
	int cut;     /* errno of the write that failed (0 = the file is written) */
	/* Where the file ends after the last complete line, and earlier line ends at
	 * least 2 KiB apart: on a full disk the marker may need space freed first. */
	off_t good, marks[DLRT_LOGRELAY_MARKS];
	int nmarks;
	char line[2][DLRT_LOGRELAY_LINE];
	size_t len[2];
	/* Stamped lines are collected here and written once per read, not per line. */
	char out[65536];
	size_t out_len;
	char stamp[32];   /* of the current read: its lines arrived together */
};

/* Sets up r's log file (everything but in[] and tee[]); `name` must outlive r. */
void dlrt_logrelay_init(struct dlrt_logrelay *r, int file, const char *name);

/* Runs until done (see above); *status is the program's wait status. */
int dlrt_logrelay_run(struct dlrt_logrelay *r, pid_t child, int drain_ms, int *status);

/* Appends one stamped "dlrt" line (dlrt's own notes: start, attempt, exit). */
void dlrt_logrelay_note(struct dlrt_logrelay *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Closes the log file; a failing close (NFS reports write errors there) is
 * warned about on tee[1] like a failing write. Returns 0, or -1 if the file was
 * cut or its close failed. */
int dlrt_logrelay_close(struct dlrt_logrelay *r);

#endif
