/* elfneeds.h - the shared libraries an ELF executable asks for (DT_NEEDED).
 *
 * The plugin uses it to tell whether the program of a step talks PMIx itself
 * (links libmpi, libpmix, libpmi*): such a task must not see a PMIx session
 * before exec (pmix-bridge/pmix_bridge.h), so dlrt leaves the wire-up to MPI.
 */
#ifndef DLRT_ELFNEEDS_H
#define DLRT_ELFNEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Calls need(name, arg) for each DT_NEEDED entry of the 64-bit little-endian
 * ELF image `img` (`len` bytes, the whole file). Returns the number of
 * entries, or -1 if `img` is not such an ELF file or is malformed. */
int dlrt_elf_needs(const uint8_t *img, size_t len, void (*need)(const char *name, void *arg),
		   void *arg);

/* True if `name` is a library of MPI or PMI/PMIx (libmpi*, libmpich*,
 * libpmix*, libpmi*, libopen-rte*, libopen-pal*). */
bool dlrt_lib_is_mpi(const char *name);

/* Larger programs are not looked into (taken as not linking MPI). */
#define DLRT_ELF_MAX_BYTES (4ull << 30)

/* True if the executable at `path` links such a library directly. A file
 * that cannot be read, is not a regular file (opened without blocking: a
 * FIFO gives false at once), is larger than DLRT_ELF_MAX_BYTES or is not ELF
 * (a script) gives false. */
bool dlrt_program_uses_mpi(const char *path);

#endif
