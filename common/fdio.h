/* fdio.h - writing a whole buffer to a descriptor.
 *
 * write(2) may store less than asked (a full pipe, a signal, a disk that
 * fills up halfway). Every writer of a user's results, a journal, a log or a
 * container's config goes through this one loop, so a short write is never
 * taken for a whole one and no caller can spin on a write that stores nothing.
 */
#ifndef DLRT_FDIO_H
#define DLRT_FDIO_H

#include <stddef.h>

/* Writes all n bytes of p to fd, again after EINTR and short writes.
 * 0, or -1 with errno set; a write(2) that stores nothing and reports no
 * error (a full device seen that way) is ENOSPC, never a loop. */
int dlrt_write_all(int fd, const void *p, size_t n);

#endif
