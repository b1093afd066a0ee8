/* exchange_reply.h - reading what `dlrt-kv` printed for the plugin's exchange.
 *
 * The plugin runs the exchange in a fresh process (dlrt-kv), never in the
 * task itself: the task is a fork of slurmstepd, whose libpmix is initialised
 * as the step's PMIx *server*, so a PMIx client call there returns the
 * server's identity and then waits forever for a progress thread that did not
 * survive the fork. dlrt-kv prints, on its stdout:
 *
 *   <root ip>:<root port>        (the value task `root` published)
 *   <root ip>:<root port>#<hex>  (a node service's address with the step secret)
 *   !<message>                   (the root cannot serve: its service did not start)
 *   <rank> <node ip>             (one per task, only when every address was asked for)
 *   <rank> <ip>:<t>=<port>,...   (the ports of the tasks t of the node whose first
 *                                 task is <rank>: runtimes with needs_task_ports)
 *
 * and on failure a line "dlrt-kv: <message>" (its stderr shares the pipe).
 */
#ifndef DLRT_EXCHANGE_REPLY_H
#define DLRT_EXCHANGE_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "dlrt_err.h"
#include "runtime.h"

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
 * bytes: 256 of them and the address fit dlrt-kv's 4095-byte values). */
#define DLRT_EXCHANGE_NODE_TASKS_MAX 256

#endif
