/* lcprogress.h - --dl-hang-timeout's view of the whole step: every node's
 * watcher writes the time of its node's last progress into the job's
 * checkpoint folder (the user's, 0700, on a filesystem the nodes share) as
 * ".progress.<step>.<node>", and reads the others': the step's last progress
 * is the latest of them. Nothing here prints.
 */
#ifndef DLRT_LCPROGRESS_H
#define DLRT_LCPROGRESS_H

#include <stdint.h>
#include <time.h>

/* This node's last progress into DIR/.progress.<step>.<node> (written to a
 * ".tmp" beside it and renamed over it, so a reader never sees half of it).
 * 0, or -1 when it could not be written (the ".tmp" is then removed). Every
 * descriptor it opens it closes exactly once. */
int dlrt_lcprogress_write(const char *dir, uint32_t step, const char *node, time_t last);

/* The latest progress any node of the step wrote into dir, or `mine` if that
 * is later (or nothing could be read). */
time_t dlrt_lcprogress_latest(const char *dir, uint32_t step, time_t mine);

#endif
