/* exitlike.h - end this process the way a child process ended. */
#ifndef DLRT_EXITLIKE_H
#define DLRT_EXITLIKE_H

/* `status` as waitpid() gave it: exits with the child's exit code, or dies of
 * the child's signal (without a second core file), so that whoever waits for
 * this process (slurmstepd) sees what happened to the program it stood in for. */
void dlrt_exit_like(int status) __attribute__((noreturn));

#endif
