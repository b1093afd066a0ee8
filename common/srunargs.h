/* srunargs.h - srun's own options, read from its command line.
 *
 * A heterogeneous step's exchange carrier is chosen in srun's init_post_opt
 * (spank/hetstep.h), and Slurm 24.11's srun exports the step's MPI plugin
 * (SLURM_MPI_TYPE) only after that phase (22.05's before it). So the plugin
 * reads srun's --mpi where srun read it: its command line (/proc/self/cmdline,
 * NUL-separated words, the user's own).
 */
#ifndef DLRT_SRUNARGS_H
#define DLRT_SRUNARGS_H

#include <stdbool.h>
#include <stddef.h>

/* The value of the last --mpi=V or --mpi V among srun's options in cmdline
 * (len bytes of NUL-separated words, argv[0] first), into out; false when
 * there is none. The scan stops at ':' and "--", and at a word that is
 * neither an option nor the word after one without '=' (an option's value):
 * the program's words follow there. After a flag (--exclusive prog) it reads
 * on into the program's words, where only a literal --mpi could mislead it. */
bool dlrt_srunargs_mpi(const char *cmdline, size_t len, char *out, size_t outlen);

#endif
