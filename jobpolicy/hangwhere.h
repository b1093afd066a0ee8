/* hangwhere.h - where each task of a hung step is, and which ones are not
 * where the others are (--dl-hang-timeout's report, tools/dlrt_lifecycle_main.c).
 *
 * A task's position is the innermost function of its main thread in gdb's
 * "thread apply all bt" that is not lock or wait plumbing (futex, pthread_cond,
 * std::): c10d::Work::wait for a rank waiting in a collective, clock_nanosleep
 * for one in time.sleep. Each node writes its tasks' positions, one line each,
 * into the job's checkpoint folder; task 0's node reads all of them back
 * (dlrt_hw_parse_line: input another process wrote, so parsed strictly) and
 * prints one line comparing them.
 */
#ifndef DLRT_HANGWHERE_H
#define DLRT_HANGWHERE_H

#include <stddef.h>
#include <stdint.h>

#define DLRT_HW_WHERE 80
#define DLRT_HW_LINE 256 /* a position line is never longer */

struct dlrt_hw_task {
	int32_t rank;
	char role[16];
	char node[64];
	char where[DLRT_HW_WHERE]; /* "" when it could not be told */
};

/* Where thread `pid` (the process's main thread) is in gdb's output
 * text[0..len): 0 and the function in where[size], or -1. */
int dlrt_hw_from_gdb(const char *text, size_t len, int pid, char *where, size_t size);

/* "task=R role=ROLE node=NODE at=WHERE\n" (WHERE "?" when unknown) into buf;
 * fields are reduced to [A-Za-z0-9_.:<>~,+-]. Its length. */
size_t dlrt_hw_format_line(const struct dlrt_hw_task *t, char *buf, size_t size);

/* One such line (without or with its newline), len bytes: 0, or -1 if it is
 * not one. */
int dlrt_hw_parse_line(const char *line, size_t len, struct dlrt_hw_task *t);

/* The comparison of n tasks into buf (one line, with its newline), e.g.
 * "dlrt: hang: tasks 0,1,2 are in c10d::Work::wait; task 3 (worker on n2) is
 * elsewhere: clock_nanosleep". Sorts t by rank. 0 when it cannot be told
 * (fewer than two positions known). */
size_t dlrt_hw_compare(struct dlrt_hw_task *t, size_t n, char *buf, size_t size);

/* A node's positions into DIR/NAME (NAME one component), written whole: a
 * temporary file (O_NOFOLLOW, 0600) renamed. 0, or -1. */
int dlrt_hw_share(const char *dir, const char *name, const struct dlrt_hw_task *t, size_t n);

/* Reads every DIR/PREFIX* position file (not "PREFIXdone", not "*.tmp";
 * regular files only, not followed through a link, the first
 * DLRT_HW_FILE_MAX bytes of each) into t, at most max; their number. A line
 * that is not a position line, or a cut last line, is skipped. */
#define DLRT_HW_FILE_MAX 65536
size_t dlrt_hw_read_dir(const char *dir, const char *prefix, struct dlrt_hw_task *t, size_t max);

#endif
