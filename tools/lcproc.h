/* lcproc.h - dlrt-lifecycle's one reader of /proc: what it needs to know of
 * its node's processes (each task's and its children's), read as the job user
 * from files the kernel makes readable to a process of the same user.
 *
 * Both of dlrt-lifecycle's jobs use it: the warning (does a task catch the
 * signal yet? which processes are an agent's workers?) and the hang watch
 * (how many bytes did a task and its children write?).
 */
#ifndef DLRT_LCPROC_H
#define DLRT_LCPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* /proc/PID/NAME into buf, NUL-terminated: its length, or -1 when the process
 * (or the file) is gone. One read: these files are a few hundred bytes. */
ssize_t dlrt_lcproc_read(pid_t pid, const char *name, char *buf, size_t size);

/* The parent of pid ("ppid" in /proc/PID/stat); -1 if gone. */
long dlrt_lcproc_ppid(pid_t pid);

/* The parent in the text of a /proc/PID/stat ("pid (comm) state ppid ...";
 * comm may hold spaces and ')'); -1 if it is not such a line. */
long dlrt_lcproc_parse_ppid(const char *stat);

/* Whether pid catches or ignores sig (SigCgt, SigIgn in /proc/PID/status): a
 * program still starting (exec, imports) has no handler yet, and the signal's
 * default action would end it. False if gone. */
bool dlrt_lcproc_handles(pid_t pid, int sig);

/* Bytes pid wrote (write(2) to its output, files, sockets): "wchar" in
 * /proc/PID/io; 0 if gone. */
uint64_t dlrt_lcproc_wchar(pid_t pid);

/* Calls fn(child, i, ctx) for every process of the node whose parent is
 * parents[i] (parents of 0 or less are skipped). */
void dlrt_lcproc_children(const pid_t *parents, size_t n,
			  void (*fn)(pid_t child, size_t i, void *ctx), void *ctx);

#endif
