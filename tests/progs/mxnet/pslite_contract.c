/* pslite_contract.c - a ps-lite start-up contract test program (no ZMQ).
 *
 *   pslite_contract [--vector-len N] [--rounds R] [--timeout-s T]
 *                   [--round-delay-ms D] [--crash ROLE[:RANK]] [--crash-after-ms MS]
 *
 * The same command runs in every task, as MXNet does; the role comes from
 * DMLC_ROLE (unset = worker, as mxnet/kvstore.h IsWorkerNode). It reads the
 * variables ps-lite reads (docs/contracts.md, mxnet) with ps-lite's rules:
 *   scheduler  binds DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT, numeric only, once
 *   nodes      bind DMLC_NODE_HOST, else DMLC_INTERFACE's IPv4, else the first
 *              non-loopback IPv4 (network_utils.h), on PORT or a free port;
 *              they connect to DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT
 * so a launcher that gets any of them wrong fails this test the way it would
 * fail (or hang) MXNet. Details and exit codes: docs/mxnet.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/evloop.h"
#include "common/parse.h"
#include "pslite_contract.h"

#define NODE_BIND_RETRIES 40    /* zmq_van.h Bind: max_retry for servers and workers */

static const char usage[] =
	"usage: pslite_contract [--vector-len N] [--rounds R] [--timeout-s T]\n"
	"                       [--round-delay-ms D] [--crash ROLE[:RANK]] [--crash-after-ms MS]\n"
	"Runs one role of a ps-lite job (DMLC_ROLE) and checks the summed vectors.\n";

static struct psc P;

void psc_describe(char *out, size_t len, const struct dlrt_pslite_node *n, uint32_t rank)
{
	snprintf(out, len, "%s %u (id %d) at %s:%u", dlrt_pslite_role_name(n->role), rank,
		 (int)n->id, n->ip, n->port);
}

void psc_fail(const struct psc *p, const char *msg)
{
	char who[64];

	if (p->role != DLRT_PSLITE_SCHEDULER && p->my_id)
		snprintf(who, sizeof(who), "%s %u of %u", dlrt_pslite_role_name(p->role), p->rank,
			 p->role == DLRT_PSLITE_SERVER ? p->ns : p->nw);
	else
		snprintf(who, sizeof(who), "%s", dlrt_pslite_role_name(p->role));
	if (p->ip[0])
		fprintf(stderr, "pslite_contract: %s on %s (%s:%u): %s\n", who, p->host, p->ip,
			p->role == DLRT_PSLITE_SCHEDULER ? p->root_port : p->port, msg);
	else
		fprintf(stderr, "pslite_contract: %s on %s: %s\n", who, p->host, msg);
}

void psc_arm_crash(struct psc *p)
{
	if (p->o.crash_role != (int)p->role)
		return;
	if (p->role != DLRT_PSLITE_SCHEDULER && p->o.crash_rank != PSC_NONE &&
	    p->o.crash_rank != p->rank)
		return;
	p->crash_at_ms = dlrt_now_ms() + p->o.crash_after_ms;
}

void psc_maybe_crash(struct psc *p)
{
	if (!p->crash_at_ms || dlrt_now_ms() < p->crash_at_ms)
		return;
	psc_fail(p, "--crash: killing myself with SIGKILL");
	fflush(stderr);
	raise(SIGKILL);
}

static int opt_u32(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	if (v && dlrt_parse_u32(v, lo, hi, out) == 0)
		return 0;
	fprintf(stderr, "pslite_contract: %s %s: must be a number from %u to %u\n%s", name,
		v ? v : "(missing)", lo, hi, usage);
	return -1;
}

static int parse_crash(const char *v, struct psc_opts *o)
{
	char role[16];
	const char *colon = v ? strchr(v, ':') : NULL;
	size_t l = colon ? (size_t)(colon - v) : (v ? strlen(v) : 0);

	if (!v || l == 0 || l >= sizeof(role))
		goto bad;
	memcpy(role, v, l);
	role[l] = '\0';
	if (!strcmp(role, "scheduler"))
		o->crash_role = DLRT_PSLITE_SCHEDULER;
	else if (!strcmp(role, "server"))
		o->crash_role = DLRT_PSLITE_SERVER;
	else if (!strcmp(role, "worker"))
		o->crash_role = DLRT_PSLITE_WORKER;
	else
		goto bad;
	if (colon && dlrt_parse_u32(colon + 1, 0, DLRT_PSLITE_MAX_NODES - 1, &o->crash_rank) < 0)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "pslite_contract: --crash %s: expected scheduler, server[:RANK] or "
		"worker[:RANK]\n", v ? v : "(missing)");
	return -1;
}

static int parse_args(int argc, char **argv, struct psc_opts *o)
{
	*o = (struct psc_opts){ .vlen = 1000, .rounds = 5, .timeout_s = 60, .crash_role = -1,
				.crash_rank = PSC_NONE, .crash_after_ms = 500 };
	/* Every option takes a value: step over both. */
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int rc;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			exit(0);
		}
		if (!strcmp(a, "--vector-len"))
			rc = opt_u32(a, v, 1, DLRT_PSLITE_MAX_VALUES, &o->vlen);
		else if (!strcmp(a, "--rounds"))
			rc = opt_u32(a, v, 1, 1000000, &o->rounds);
		else if (!strcmp(a, "--timeout-s"))
			rc = opt_u32(a, v, 1, 86400, &o->timeout_s);
		else if (!strcmp(a, "--round-delay-ms"))
			rc = opt_u32(a, v, 0, 3600000, &o->delay_ms);
		else if (!strcmp(a, "--crash-after-ms"))
			rc = opt_u32(a, v, 0, 3600000, &o->crash_after_ms);
		else if (!strcmp(a, "--crash"))
			rc = parse_crash(v, o);
		else {
			fprintf(stderr, "pslite_contract: unknown argument '%s'\n%s", a, usage);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	/* Servers time out when no worker speaks for T seconds. */
	if ((uint64_t)o->delay_ms >= (uint64_t)o->timeout_s * 1000) {
		fprintf(stderr, "pslite_contract: --round-delay-ms %u must be below --timeout-s %u "
			"(servers give up after that long without a message)\n", o->delay_ms,
			o->timeout_s);
		return -1;
	}
	return 0;
}

static int env_u32(const char *name, uint32_t lo, uint32_t hi, bool required, uint32_t *out)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		if (!required)
			return 0;
		fprintf(stderr, "pslite_contract: %s is not set: the launcher must export it to "
			"every task (srun --dl-runtime=mxnet does)\n", name);
		return -1;
	}
	if (dlrt_parse_u32(v, lo, hi, out) == 0)
		return 0;
	fprintf(stderr, "pslite_contract: %s=%s: must be a number from %u to %u\n", name, v, lo, hi);
	return -1;
}

/* ps-lite's GetIP(interface) and GetAvailableInterfaceAndIP: the IPv4 address
 * of the named interface, or of the first non-loopback interface. */
static int interface_ip(const char *ifname, char *ip, size_t len, const char **source)
{
	static char src[IF_NAMESIZE + 32];
	struct ifaddrs *ifs, *i;
	int rc = -1;

	if (getifaddrs(&ifs) < 0)
		return -1;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (ifname ? strcmp(i->ifa_name, ifname) != 0 : (i->ifa_flags & IFF_LOOPBACK) != 0)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, (socklen_t)len);
		snprintf(src, sizeof(src), "%s %s", ifname ? "DMLC_INTERFACE" : "interface",
			 i->ifa_name);
		*source = src;
		rc = 0;
		break;
	}
	freeifaddrs(ifs);
	return rc;
}

static int read_env(struct psc *p)
{
	const char *role = getenv("DMLC_ROLE"), *root = getenv("DMLC_PS_ROOT_URI");
	const char *host = getenv("DMLC_NODE_HOST"), *itf = getenv("DMLC_INTERFACE");
	const char *local = getenv("DMLC_LOCAL"), *k8s = getenv("DMLC_USE_KUBERNETES");
	uint32_t v = 0, port = 0;
	struct in_addr a;

	if (!role || !*role || !strcmp(role, "worker"))
		p->role = DLRT_PSLITE_WORKER;
	else if (!strcmp(role, "server"))
		p->role = DLRT_PSLITE_SERVER;
	else if (!strcmp(role, "scheduler"))
		p->role = DLRT_PSLITE_SCHEDULER;
	else {
		fprintf(stderr, "pslite_contract: DMLC_ROLE=%s: must be scheduler, server or worker\n",
			role);
		return -1;
	}
	if (env_u32("DMLC_NUM_SERVER", 1, DLRT_PSLITE_MAX_NODES, true, &p->ns) < 0 ||
	    env_u32("DMLC_NUM_WORKER", 1, DLRT_PSLITE_MAX_NODES, true, &p->nw) < 0 ||
	    env_u32("DMLC_PS_ROOT_PORT", 1, 65535, true, &port) < 0 ||
	    env_u32("PORT", 0, 65535, false, &v) < 0)
		return -1;
	p->root_port = (uint16_t)port;
	p->port = (uint16_t)v;
	v = 0;
	if (env_u32("PS_VERBOSE", 0, 2, false, &v) < 0)
		return -1;
	p->verbose = (int)v;
	if (p->ns + p->nw > DLRT_PSLITE_MAX_NODES) {
		fprintf(stderr, "pslite_contract: %u servers + %u workers is over this test's limit "
			"of %u nodes\n", p->ns, p->nw, DLRT_PSLITE_MAX_NODES);
		return -1;
	}
	if (p->o.vlen < p->ns) {
		fprintf(stderr, "pslite_contract: --vector-len %u is shorter than DMLC_NUM_SERVER=%u: "
			"every server needs a key range\n", p->o.vlen, p->ns);
		return -1;
	}
	if (local && *local && strcmp(local, "0")) {
		fprintf(stderr, "pslite_contract: DMLC_LOCAL=%s selects ps-lite's ipc:// transport, "
			"which this TCP test does not implement: unset it\n", local);
		return -1;
	}
	if (!root || !*root) {
		fprintf(stderr, "pslite_contract: DMLC_PS_ROOT_URI is not set: the launcher must "
			"export the scheduler's numeric IPv4 address to every task\n");
		return -1;
	}
	if (p->role == DLRT_PSLITE_SCHEDULER) {
		/* zmq_bind resolves AI_NUMERICHOST only: a host name cannot be bound. */
		if (inet_pton(AF_INET, root, &a) != 1) {
			fprintf(stderr, "pslite_contract: scheduler: DMLC_PS_ROOT_URI=%s is not a "
				"numeric IPv4 address; ZMQ binds numeric addresses only, so "
				"ps-lite's scheduler cannot bind it\n", root);
			return -1;
		}
		snprintf(p->root_ip, sizeof(p->root_ip), "%s", root);
		/* zmq_van.h Bind: with DMLC_USE_KUBERNETES the scheduler binds 0.0.0.0. */
		snprintf(p->ip, sizeof(p->ip), "%s",
			 k8s && atoi(k8s) > 0 ? "0.0.0.0" : root);
		return 0;
	}
	/* The connecting side resolves names (zmq_connect does). */
	if (inet_pton(AF_INET, root, &a) == 1) {
		snprintf(p->root_ip, sizeof(p->root_ip), "%s", root);
	} else {
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;

		if (getaddrinfo(root, NULL, &hints, &ai) != 0) {
			fprintf(stderr, "pslite_contract: DMLC_PS_ROOT_URI=%s does not resolve to an "
				"IPv4 address\n", root);
			return -1;
		}
		inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, p->root_ip,
			  sizeof(p->root_ip));
		freeaddrinfo(ai);
	}
	if (host && *host) {
		if (inet_pton(AF_INET, host, &a) != 1) {
			fprintf(stderr, "pslite_contract: DMLC_NODE_HOST=%s is not a numeric IPv4 "
				"address; ZMQ binds numeric addresses only\n", host);
			return -1;
		}
		snprintf(p->ip, sizeof(p->ip), "%s", host);
		p->ip_source = "DMLC_NODE_HOST";
	} else if (interface_ip(itf && *itf ? itf : NULL, p->ip, sizeof(p->ip),
				&p->ip_source) < 0) {
		if (itf && *itf)
			fprintf(stderr, "pslite_contract: DMLC_INTERFACE=%s has no IPv4 address "
				"(ps-lite: failed to get ip)\n", itf);
		else
			fprintf(stderr, "pslite_contract: no non-loopback IPv4 interface and no "
				"DMLC_NODE_HOST/DMLC_INTERFACE (ps-lite: failed to get ip)\n");
		return -1;
	}
	return 0;
}

/* Servers and workers: bind ip:PORT (or a free port); on failure retry random
 * ports 10000-49999 up to 40 times, as zmq_van.h Bind does. Binding port 0
 * instead of ps-lite's probe-and-release GetAvailablePort keeps the port. */
static int node_bind(struct psc *p)
{
	struct dlrt_err err = { "" };
	unsigned seed = (unsigned)getpid() ^ (unsigned)dlrt_now_ms();
	uint16_t port = p->port;

	for (int i = 0; i <= NODE_BIND_RETRIES; i++) {
		if (pnet_listen(&p->net, p->ip, port, &err) == 0) {
			p->port = pnet_port(&p->net);
			return 0;
		}
		if (port == 0)
			break;
		port = (uint16_t)(10000 + rand_r(&seed) % 40000);
	}
	psc_fail(p, err.msg);
	return -1;
}

int main(int argc, char **argv)
{
	struct psc *p = &P;
	char *dot;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (gethostname(p->host, sizeof(p->host) - 1) < 0)
		snprintf(p->host, sizeof(p->host), "?");
	if ((dot = strchr(p->host, '.')))
		*dot = '\0';
	if (parse_args(argc, argv, &p->o) < 0 || read_env(p) < 0)
		return PSC_USAGE;
	pnet_init(&p->net, NULL, NULL, p, p->verbose);
	snprintf(p->net.who, sizeof(p->net.who), "%s", dlrt_pslite_role_name(p->role));
	if (p->role == DLRT_PSLITE_SCHEDULER) {
		rc = psc_run_scheduler(p);
	} else {
		if (p->verbose)
			fprintf(stderr, "pslite_contract[%s]: address %s from %s\n",
				dlrt_pslite_role_name(p->role), p->ip, p->ip_source);
		rc = node_bind(p) < 0 ? PSC_FAIL : psc_run_node(p);
	}
	pnet_destroy(&p->net);
	free(p->regs);
	return rc;
}
