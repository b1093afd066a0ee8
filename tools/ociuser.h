/* ociuser.h - oci.conf's RunTimeQuery, RunTimeKill and RunTimeDelete as the
 * job's user (dlrt-oci-run --user %u -- RUNTIME ARGS...).
 *
 * slurmstepd runs those three as root, on the runtime's state folder, which
 * the job's user can write (the user's crun keeps the containers' states
 * there, %b/crun or %m/crun): root's crun would follow a state of the user's
 * making (a link to a file only root may read, a process to signal, a named
 * pipe in place of the status file, on which crun's read and slurmstepd,
 * which waits for the command without a limit, would block for good). So
 * the runtime runs in a child that has become the user, with the user's
 * rights alone, and this process stays root, relays the child's output and
 * kills it if it has not ended within DLRT_OCIUSER_TIMEOUT_S: a process of
 * the user's can be stopped or made to wait by the user, root's cannot.
 */
#ifndef DLRT_OCIUSER_H
#define DLRT_OCIUSER_H

#include "common/dlrt_err.h"

/* How long the runtime may take (crun's state, kill and delete take
 * milliseconds). */
#define DLRT_OCIUSER_TIMEOUT_S 30

/* Runs argv (NULL-terminated, argv[0] found in PATH) as `user` in a child,
 * after `prepare` (if not NULL) has run there as the user (it prints its own
 * one-line error and returns -1 to stop). The caller is root, or that user.
 * Returns the child's exit status (128 + the signal that ended it), or -1
 * with one line in err (no such user, the change of user failed, the runtime
 * did not end in time and was killed). */
int dlrt_ociuser_run(const char *user, char *const *argv, int timeout_s,
		     int (*prepare)(char *const *argv), struct dlrt_err *err);

#endif
