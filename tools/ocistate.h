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
 * user's, and writable by no one else; the user's own are made so (Slurm 24.11
 * makes the step's and the task's folders mode 0770, group the job's: the
 * group's write and every ACL are taken off them, since who shares a group
 * cannot be known); root's must have no group or others' write and no access
 * ACL (a shared /tmp is refused). The state folder must be the job user's own
 * folder, not a link, writable by no one else (common/privdir.c's rule), its
 * ACLs taken off; an absent one is created with mode 0700. The bundle's
 * folder, where config.json is read and the task's copy written, gets the
 * same walk, and config.json itself must be root's or the user's, a regular
 * file with one link, writable by no one else.
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

/* Checks the bundle's folder `bundle` (an absolute path) and every folder above
 * it as above (`file`, the file read there, names the target in messages).
 * Returns a descriptor of it; -1 with one line in err. */
int dlrt_ocistate_bundle(const char *bundle, const char *file, struct dlrt_err *err);

/* Checks the file open on fd (`shown`: its path), read from a bundle: root's or
 * the caller's, a regular file with one link, not writable by group or others,
 * no access ACL (the caller's own loses its ACLs). 0, or -1 with one line in
 * err. */
int dlrt_ocistate_file(int fd, const char *shown, struct dlrt_err *err);

#endif
