/* retrylog.h - what --dl-retries reads back (spank/requeue.c): the job's retry log,
 * `sinfo -N -o "%N %t"` and `scontrol show job -o`. Pure parsing, fuzzed
 * (tests/fuzz/fuzz_retrylog.c) because the retry log lies in a user's folder.
 */
#ifndef DLRT_RETRYLOG_H
#define DLRT_RETRYLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Adds `name` to the comma list `list[len]` unless it is there already (or does not fit). */
void dlrt_retry_list_add(char *list, size_t len, const char *name);

/* "... JobState=RUNNING ... ExcNodeList=n2 ..." -> the word after `key` ("" if absent). */
void dlrt_retry_field(const char *text, const char *key, char *out, size_t len);

/* Nodes of retry-log lines "<stamp> attempt=A node=X ... signal=N" with A == attempt,
 * added to list; lines whose N is ignore_sig are skipped (0: none is). */
void dlrt_retry_log_nodes(const char *log, uint32_t attempt, int ignore_sig, char *list,
			  size_t len);

/* Whether a line "<stamp> attempt=A warning ..." with A == attempt is in the log:
 * --dl-signal's warning of that attempt was due (spank/lifecycle.c records it). */
bool dlrt_retry_log_warned(const char *log, uint32_t attempt);

/* Nodes of sinfo lines "NODE STATE" that are down, failing, draining or not responding
 * (a '*' suffix), added to list. */
void dlrt_retry_down_nodes(const char *sinfo, char *list, size_t len);

#endif
