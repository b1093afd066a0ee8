/* pool.h - how the elements of a dlrt-infer pool (separate array jobs) meet.
 *
 * The pool directory (shared filesystem, mode 0700) holds the coordinator's
 * access record `access` (mode 0600, owner only): its address, port, epoch
 * and the pool secret every connection must present. The coordinator writes
 * it atomically (temporary file + rename) when it starts, with an epoch one
 * above the previous record's, so a newer coordinator always wins. Workers
 * and clients read it and connect; a worker that finds no record waits for
 * one. Results (job-N.csv), the timeline (timeline.tsv) and logs live there too.
 *
 * Also here: a blocking connection with timeouts, for workers and clients.
 */
#ifndef DLRT_INFER_POOL_H
#define DLRT_INFER_POOL_H

#include <stdint.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "common/netaddr.h"
#include "inference/proto/proto.h"

#define DLRT_POOL_SECRET_LEN 64 /* hex characters */

struct dlrt_pool_access {
	uint64_t epoch;
	char address[DLRT_IPV4_LEN];
	uint16_t port;
	char secret[DLRT_POOL_SECRET_LEN + 1];
	char host[64];
	uint32_t pid;
};

/* The pool directory: `given`, else $DLRT_INFER_POOL, else $HOME/.dlrt-infer.
 * Written into out[len]; -1 if none can be found. */
int dlrt_pool_dir(const char *given, char *out, size_t len, struct dlrt_err *err);

/* Creates the directory (0700) if needed; refuses one owned by someone else
 * or open to others. */
int dlrt_pool_prepare(const char *dir, struct dlrt_err *err);

/* Every file of the pool directory (the access record, the journal, the
 * timelines) must be the user's own and closed to others: 0, or -1 with one
 * line naming the file and the fix. */
int dlrt_pool_check_private(const char *path, const struct stat *st, struct dlrt_err *err);

/* Reads <dir>/access; refuses a record not owned by us or readable by others.
 * Returns 0, 1 if there is no record (yet), -1 on error. */
int dlrt_pool_read_access(const char *dir, struct dlrt_pool_access *a, struct dlrt_err *err);
int dlrt_pool_write_access(const char *dir, const struct dlrt_pool_access *a,
			   struct dlrt_err *err);
/* 64 hex characters from getrandom(). */
int dlrt_pool_new_secret(char out[DLRT_POOL_SECRET_LEN + 1], struct dlrt_err *err);

/* A blocking connection to the coordinator. */
struct dlrt_ipc {
	int fd;
	struct dlrt_buf in;
	struct dlrt_buf out;
	size_t pending; /* bytes of the last frame returned by _recv, consumed on the next */
	uint64_t epoch;
	uint32_t id;
	uint32_t heartbeat_ms; /* from WELCOME: a worker sends HEARTBEAT this often */
};

/* Reads the access record, connects, says HELLO and waits for WELCOME. */
int dlrt_ipc_open(struct dlrt_ipc *c, const char *dir, uint8_t role, const char *name,
		  int timeout_ms, struct dlrt_err *err);
void dlrt_ipc_close(struct dlrt_ipc *c);
/* Sends everything in c->out. */
int dlrt_ipc_flush(struct dlrt_ipc *c, int timeout_ms, struct dlrt_err *err);
/* Waits for one frame: 1 with *f, 0 on timeout, -1 on error or EOF. */
int dlrt_ipc_recv(struct dlrt_ipc *c, struct dlrt_ip_frame *f, int timeout_ms,
		  struct dlrt_err *err);

#endif
