/* ocitask.h - a task's own config.json for Slurm 22.05's OCI containers
 * (dlrt-oci-run, tools/dlrt_oci_run_main.c; docs/containers.md).
 *
 * Slurm 22.05 writes the bundle's config.json once per step with the step's
 * environment; dlrt's plugin leaves each task's whole environment as the
 * environment of oci.conf's RunTimeRun, and dlrt-oci-run writes it into a
 * copy of config.json for the task.
 */
#ifndef DLRT_OCITASK_H
#define DLRT_OCITASK_H

#include <stddef.h>

#include "common/buf.h"
#include "common/dlrt_err.h"

/* The largest config.json read (Slurm's are a few KiB). */
#define DLRT_OCITASK_MAX_CONFIG (4u << 20)
/* The largest task config written: the config and the escaped environment. */
#define DLRT_OCITASK_MAX_OUT (64u << 20)

/* dlrt_ocitask_build's answer when the bundle gives the task a network
 * namespace of its own. */
#define DLRT_OCITASK_OWN_NETWORK 1

/* Reads the file at path into *data (malloc'ed, NUL-terminated), *len its
 * size: -1 and err when it cannot be read or is over
 * DLRT_OCITASK_MAX_CONFIG. */
int dlrt_ocitask_read(const char *path, char **data, size_t *len, struct dlrt_err *err);

/* The same from the file open on fd (`path` names it in messages). */
int dlrt_ocitask_read_fd(int fd, const char *path, char **data, size_t *len,
			 struct dlrt_err *err);

/* The task's config.json from config.json (doc[0..len)) into out (initialised
 * by the caller). env NULL (a step without dlrt): doc unchanged, once it is
 * checked to be JSON. env not NULL (an environ-style array): the environment
 * of the task; DLRT_OCITASK_OWN_NETWORK when linux.namespaces has a "network"
 * entry without a path (out unchanged), else doc with process.env replaced by
 * env's entries sorted by name ("NAME=VALUE"; the first of two with one name),
 * or inserted into process, or a process object added. -1 and err when doc is
 * not JSON, not an object, its process is not an object, or a member this
 * reads is there twice. */
int dlrt_ocitask_build(const char *doc, size_t len, char *const *env, struct dlrt_buf *out,
		       struct dlrt_err *err);

#endif
