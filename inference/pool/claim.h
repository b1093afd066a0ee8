/* claim.h - who may coordinate a dlrt-infer pool at an epoch.
 *
 * Every coordinator (element 0, a standby taking over, a worker taking over
 * after the coordinator and its standby were both lost, pool restart) claims
 * its epoch before it writes anything to the pool directory: a file
 * DIR/claims/epoch-N made by link(2) from a private temporary file. link
 * fails with EEXIST when the name exists, on local and on NFS filesystems
 * alike (O_EXCL was not atomic on old NFS clients), so exactly one claimer
 * wins each epoch. A winner that then sees a higher claim gives up too: a
 * claimer that read a stale access record never serves below a newer one.
 *
 * A coordinator that finds a claim above its own epoch stops serving at once
 * (fencing, coord_replication.c). Only the claim files' names are read, and
 * only names of the form epoch-N count: the directory is user-writable input.
 */
#ifndef DLRT_INFER_CLAIM_H
#define DLRT_INFER_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/dlrt_err.h"

#define DLRT_CLAIM_DIR "claims"

/* "epoch-N", N decimal in 1..2^64-1 without sign or leading zero: 0 and
 * *epoch, else -1. */
int dlrt_claim_parse_name(const char *name, size_t len, uint64_t *epoch);

/* Claims `epoch` in the pool directory: 0 if this process won it and no
 * higher claim exists, 1 if it is (or a higher one is) taken, -1 with err. */
int dlrt_claim_take(const char *pool, uint64_t epoch, struct dlrt_err *err);

/* The highest claimed epoch (0 if none): 0, or -1 with err. */
int dlrt_claim_highest(const char *pool, uint64_t *epoch, struct dlrt_err *err);

/* Has the claims directory changed since *seen (its status, zeroed at
 * first)? One stat(2): the coordinator asks before every batch of replies
 * and scans only when the answer is yes. */
int dlrt_claim_changed(const char *pool, struct stat *seen);

/* Was `epoch` claimed more than age_s seconds ago (wall clock of the
 * shared filesystem) and so by a claimer that died before it served? A
 * claimer replaying a large journal is younger: going past it would make two
 * coordinators replace the same files. */
bool dlrt_claim_stale(const char *pool, uint64_t epoch, int age_s);

/* pool start begins a new history: removes every claim. 0, or -1 with err. */
int dlrt_claim_clear(const char *pool, struct dlrt_err *err);

#endif
