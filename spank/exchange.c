/* exchange.c - the address exchange, in each task just before exec.
 *
 * Runtimes whose tasks must find a root (the mxnet scheduler, torch rank 0)
 * learn its address from the root task itself through one PMIx fence: the root
 * picks a port that is free on its node right now and publishes "ip:port";
 * every task publishes its node's address too. No redis, ZooKeeper or file.
 * Only for runtimes whose programs do not use PMIx themselves (see
 * pmix_bridge.h for why).
 */
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
#include "netaddr.h"
#include "pmix_bridge.h"

/* slurmstepd put the PMIx server's coordinates into the task's future
 * environment (S_JOB_ENV), not into this process's: copy them over so the
 * PMIx client library, which reads environ, finds its server. */
static void import_pmix_env(spank_t sp)
{
	char **env = NULL;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env)
		return;
	for (; *env; env++) {
		const char *eq = strchr(*env, '=');
		char name[256];

		if (strncmp(*env, "PMIX_", 5) || !eq || (size_t)(eq - *env) >= sizeof(name))
			continue;
		memcpy(name, *env, (size_t)(eq - *env));
		name[eq - *env] = '\0';
		setenv(name, eq + 1, 1);
	}
}

bool dlrt_exchange_possible(spank_t sp)
{
	import_pmix_env(sp);
	return dlrt_pmix_available();
}

int dlrt_exchange_root(spank_t sp, const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
		       struct dlrt_addrs *all, struct dlrt_err *err)
{
	char launch_ip[64] = "", buf[64];
	struct dlrt_pmix p;
	int rc = -1;

	memset(mine, 0, sizeof(*mine));
	import_pmix_env(sp);
	spank_getenv(sp, "SLURM_LAUNCH_NODE_IPADDR", launch_ip, sizeof(launch_ip));
	if (dlrt_net_node_ipv4(req->iface, launch_ip, mine->node_ip, err) < 0)
		return -1;
	snprintf(mine->iface, sizeof(mine->iface), "%s", req->iface ? req->iface : "");
	if (dlrt_pmix_open(&p, req->timeout_s, err) < 0)
		return -1;
	if (p.rank != req->rank) {
		dlrt_err_set(err, "PMIx rank %u differs from Slurm's task id %u", p.rank, req->rank);
		goto out;
	}
	if (dlrt_pmix_put(&p, "host", mine->node_ip, err) < 0)
		goto out;
	if (req->rank == req->root) {
		uint16_t port;

		if (dlrt_net_free_port(mine->node_ip, &port, err) < 0)
			goto out;
		snprintf(buf, sizeof(buf), "%s:%u", mine->node_ip, port);
		if (dlrt_pmix_put(&p, "root", buf, err) < 0)
			goto out;
	}
	if (dlrt_pmix_fence(&p, err) < 0 ||
	    dlrt_pmix_get(&p, req->root, "root", buf, sizeof(buf), err) < 0)
		goto out;
	if (dlrt_net_parse_hostport(buf, mine->root_ip, &mine->root_port) < 0) {
		dlrt_err_set(err, "task %u published a bad root address '%s'", req->root, buf);
		goto out;
	}
	mine->valid = true;
	/* The dry run shows every task's address: fetch them from the local store. */
	for (uint32_t t = 0; all && t < p.size; t++) {
		all[t] = *mine;
		if (dlrt_pmix_get(&p, t, "host", all[t].node_ip, sizeof(all[t].node_ip), err) < 0)
			goto out;
	}
	rc = 0;
out:
	dlrt_pmix_close(&p);
	return rc;
}
