/* cli.h - what the dlrt-infer commands share: the one error line, option
 * parsers, the pool directory, the way to the pool's coordinator, and the
 * entry of each command for the table in dlrt_infer_main.c.
 *
 * The cli_*.c files are the command line only: they are linked into
 * dlrt-infer and never into libdlrt.a (inference/module.mk), so these
 * program-wide names need no dlrt_ prefix. What a command runs (the
 * coordinator, a worker, the standby, the pool's records) is in the library
 * (coord.h, worker.h, pool.h, poolarray.h).
 */
#ifndef DLRT_INFER_CLI_H
#define DLRT_INFER_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "inference/pool/pool.h"
#include "inference/pool/poolarray.h"
#include "inference/proto/proto.h"

#define CLIENT_TIMEOUT_MS 10000
/* How long a client (and pool start --wait) waits for the coordinator of a
 * pool whose array Slurm has not started yet: a job script's submit right
 * after pool start must outlast a short queue, not hang on a long one. */
#define START_TIMEOUT_S 600
#define SLURM_CMD_MS 30000 /* sbatch, squeue, scancel */

/* cli_common.c */
extern const char *prog;     /* the name every error line starts with */
extern const char *pool_opt; /* --pool, NULL = $DLRT_INFER_POOL or the default (pool.h) */

int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int parse_u32_opt(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out);
int parse_seconds_opt(const char *name, const char *v, double lo, double hi, double *out);
int pool_only_opts(int argc, char **argv, const char *help);
int pool_dir(char *out, size_t len);
int guess_labels(const char *inputs, char *out, size_t len);

/* cli_connect.c */
int pool_starting(const char *dir, struct dlrt_pool_array *arr);
int array_state(const struct dlrt_pool_array *arr, char *why, size_t len);
int wait_coordinator(const char *dir, int timeout_s, const char *fix);
int client_open(struct dlrt_ipc *c, char *dir, size_t len);
int client_call(struct dlrt_ipc *c, struct dlrt_ip_frame *f, int timeout_ms);

/* The commands, one per word of the command line (argv[0] is that word);
 * each returns the exit status. */
int cmd_submit(int argc, char **argv);  /* cli_client.c */
int cmd_status(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_pool(int argc, char **argv);    /* cli_pool.c */
int cmd_service(int argc, char **argv); /* cli_service.c: coordinator, worker, standby, pool run */
int cmd_local(int argc, char **argv);   /* cli_local.c */
int cmd_plot(int argc, char **argv);    /* cli_plot.c */

#endif
