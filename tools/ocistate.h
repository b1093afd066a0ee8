/* ocistate.h - the OCI runtime's state folder (crun's --root) of a task in
 * Slurm's OCI containers (srun --container, oci.conf).
 *
 * The runtime keeps one folder per container there, named after the
 * container (%n.%u.%j.%s.%t: all guessable). Whoever can create the state
 * folder, or anything in the folder above it, before the job can make the
 * step fail (crun: "cannot create state directory", "container ... already
 * exists") and, since Slurm 22.05 runs RunTimeQuery, RunTimeKill and
 * RunTimeDelete as root on the same folder, hand root a container state of
 * their making. So before the runtime runs, dlrt-oci-run checks that folder
 * on its descriptor: every folder from the one above it up to a folder of
 * root's that only root can write (SlurmdSpoolDir) must be root's or the job
 * user's and writable by no one else (a shared /tmp is refused; a folder its
 * group can write only when that group is the user's private group: Slurm
 * 24.11 makes its spool folders mode 0770, group the job's), and the state
 * folder the job user's own folder, not a link, writable by no one else
 * (common/privdir.c's rule); an absent one is created with mode 0700.
 */
#ifndef DLRT_OCISTATE_H
#define DLRT_OCISTATE_H

#include "common/dlrt_err.h"

/* The state folder the runtime's arguments name (crun's and runc's global
 * option: "--root=DIR" or "--root DIR"), from `args` (NULL-terminated, the
 * runtime's name first); NULL when they name none (the runtime then uses its
 * own default). */
const char *dlrt_ocistate_root(char *const *args);

/* Checks, or creates, the state folder `root` (an absolute path) as above,
 * as the caller. Returns a descriptor of it; -1 with one line in err naming
 * the cause and the fix. */
int dlrt_ocistate_open(const char *root, struct dlrt_err *err);

#endif
