/* exchange_reply.h - reading the answers of the address exchange.
 *
 * A node's first task gets the values it asked for (srun's rendezvous,
 * exchange/rdvclient.h, or Slurm's PMIx through dlrt-kv, whose values are
 * first unsealed below) and writes them as lines, one per value, which this
 * one parser reads (fuzzed: the values came over the network):
 *
 *   <root ip>:<root port>        (the value task `root` published)
 *   !<message>                   (the root cannot serve: its service did not start)
 *   <rank> <node ip>             (one per task, only when every address was asked for)
 *   <rank> <ip>:<t>=<port>,...   (the ports of the tasks t of the node whose first
 *                                 task is <rank>: runtimes with needs_task_ports)
 *
 * A line "dlrt-kv: <message>" is read as an error with that message (the
 * format is the one dlrt-kv prints for the same operations).
 */
#ifndef DLRT_EXCHANGE_REPLY_H
#define DLRT_EXCHANGE_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "runtime/runtime.h"
#include "services/svcauth.h"

/* Parses `text` (`len` bytes, need not be NUL-terminated). Fills mine->root_*
 * and, if `all` is not NULL, all[0..ntasks-1].node_ip (each rank exactly once).
 * On a "dlrt-kv: ..." line, the error is that line's message. */
int dlrt_exchange_reply_parse(const char *text, size_t len, uint32_t ntasks,
			      struct dlrt_addrs *mine, struct dlrt_addrs *all,
			      struct dlrt_err *err);

/* The same, also reading task-port lines into tasks[0..ntasks-1] (an entry
 * with a port is taken: a task named twice is an error). Entries the reply
 * does not name are left as they are: the caller checks that all are set. */
int dlrt_exchange_reply_parse_tasks(const char *text, size_t len, uint32_t ntasks,
				    struct dlrt_addrs *mine, struct dlrt_addrs *all,
				    struct dlrt_task_addr *tasks, struct dlrt_err *err);

/* A node's tasks that one task-ports value can carry ("T=P," is at most 12
 * bytes: 256 of them and the address fit in 4095 bytes). */
#define DLRT_EXCHANGE_NODE_TASKS_MAX 256

/* One value the PMIx carrier asked for: its name, as bound into its
 * signature, and for a per-task value the rank its line starts with (-1:
 * the root's value, a line of the value alone). */
struct dlrt_reply_want {
	const char *key;
	long rank;
};

/* The PMIx carrier's answers, read before the parser above: `n` lines in
 * want's order, each value sealed with the step secret (exchange/rdvclient.h,
 * "TAG VALUE"), because anyone on a node can publish into Slurm's PMIx. Each
 * signature is checked and the line rewritten in place without its tag;
 * *len becomes the length of the n plain lines (what follows them is
 * cleared). -1 with one line when a line is missing, out of order, or a value
 * is not the step's. */
int dlrt_exchange_reply_unseal(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			       const struct dlrt_reply_want *want, size_t n, char *text,
			       size_t *len, struct dlrt_err *err);

#endif
