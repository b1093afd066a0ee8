/* dlrt-preflight: one node's part of --dl-preflight (docs/preflight.md).
 *
 * srun runs it (spank/preflight.c) as a helper step of one task per node on
 * the allocation's nodes, before the user's step exists, with the job's own
 * environment plus DLRT_PREFLIGHT_RDV ("PORT#HEX": the rendezvous srun started
 * for it and the secret of this check), DLRT_PREFLIGHT_SPEC (pfspec.h's form),
 * DLRT_PREFLIGHT_CKPT (the step's checkpoint folder, or empty),
 * DLRT_PREFLIGHT_IFACE (--dl-iface) and DLRT_PREFLIGHT_TAG (names the
 * checkpoint probe's file). It runs the node's local checks (preflight/pfcheck.h),
 * publishes its probe server's address in the rendezvous, pings every peer,
 * samples the bandwidth to the next node, checks that it sees the first
 * node's file in the checkpoint folder, prints its one line
 * (preflight/pfline.h) and waits for the others to finish their probes of
 * it. srun judges the lines (preflight/pfdecide.h). Every wait ends by the
 * spec's timeout, less srun's own share.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/netaddr.h"
#include "common/parse.h"
#include "exchange/rdvclient.h"
#include "preflight/pfcheck.h"
#include "preflight/pfline.h"
#include "preflight/pfnet.h"
#include "preflight/pfspec.h"

#define PF_MAX_NODES 65536

struct pf_ctx {
	struct dlrt_pf_spec spec;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	uint16_t rdv_port;
	char launch_ip[DLRT_IPV4_LEN], ip[DLRT_IPV4_LEN], ckpt[1100], tag[96];
	uint32_t idx, n;
	int64_t start, deadline;
	struct dlrt_rdv rdv;
	bool rdv_up;
	char **addr; /* each peer's "ip:port", NULL when unknown */
};

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

static int die(const char *msg)
{
	fprintf(stderr, "dlrt-preflight: %s\n", msg);
	return 2;
}

/* (Re)connects to srun's rendezvous with the given deadline. */
static int rdv_up(struct pf_ctx *c, int64_t deadline, struct dlrt_err *err)
{
	if (c->rdv_up) {
		c->rdv.deadline_ms = deadline;
		return 0;
	}
	if (dlrt_rdv_connect(&c->rdv, c->launch_ip, c->rdv_port, c->secret, deadline, err) < 0)
		return -1;
	c->rdv_up = true;
	return 0;
}

static void rdv_down(struct pf_ctx *c)
{
	if (c->rdv_up)
		dlrt_rdv_close(&c->rdv);
	c->rdv_up = false;
}

/* Every node's value of key PREFIX<i> into vals (malloc'ed, NULL unknown):
 * all at once until `deadline`; when that fails (a node is missing), each
 * one with a short wait, so that one dead node costs one timeout, not n. */
static void get_all(struct pf_ctx *c, const char *prefix, char **vals, int64_t deadline)
{
	char (*names)[24] = calloc(c->n, sizeof(*names));
	const char **keys = calloc(c->n, sizeof(*keys));
	struct dlrt_err err;

	if (!names || !keys)
		goto out;
	for (uint32_t i = 0; i < c->n; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%u", prefix, i);
		keys[i] = names[i];
	}
	if (rdv_up(c, deadline, &err) == 0 && dlrt_rdv_get(&c->rdv, keys, c->n, vals, &err) == 0)
		goto out;
	rdv_down(c);
	for (uint32_t i = 0; i < c->n; i++) {
		vals[i] = NULL;
		if (rdv_up(c, dlrt_now_ms() + 200, &err) < 0 ||
		    dlrt_rdv_get(&c->rdv, &keys[i], 1, &vals[i], &err) < 0) {
			vals[i] = NULL;
			rdv_down(c);
		}
	}
out:
	free(names);
	free(keys);
}

static void free_all(char **v, uint32_t n)
{
	for (uint32_t i = 0; v && i < n; i++)
		free(v[i]);
}

static int setup(struct pf_ctx *c, struct dlrt_err *err)
{
	const char *rdv = env("DLRT_PREFLIGHT_RDV");

	dlrt_pf_spec_default(&c->spec);
	if (dlrt_pf_spec_parse(&c->spec, env("DLRT_PREFLIGHT_SPEC"), "DLRT_PREFLIGHT_SPEC", err) < 0)
		return -1;
	if (dlrt_rdv_env_parse(rdv, &c->rdv_port, c->secret) < 0 || !c->rdv_port)
		return dlrt_err_set(err, "DLRT_PREFLIGHT_RDV is not PORT#HEX: srun starts this "
				    "program itself (--dl-preflight)");
	unsetenv("DLRT_PREFLIGHT_RDV");
	if (dlrt_parse_u32(env("SLURM_NNODES"), 1, PF_MAX_NODES, &c->n) < 0 ||
	    dlrt_parse_u32(env("SLURM_NODEID"), 0, c->n - 1, &c->idx) < 0)
		return dlrt_err_set(err, "SLURM_NNODES/SLURM_NODEID missing: run by srun only");
	snprintf(c->launch_ip, sizeof(c->launch_ip), "%s", env("SLURM_LAUNCH_NODE_IPADDR"));
	snprintf(c->ckpt, sizeof(c->ckpt), "%s", env("DLRT_PREFLIGHT_CKPT"));
	snprintf(c->tag, sizeof(c->tag), "%s", env("DLRT_PREFLIGHT_TAG"));
	if (!c->tag[0] || strpbrk(c->tag, "/ "))
		snprintf(c->tag, sizeof(c->tag), "x");
	c->start = dlrt_now_ms();
	/* srun's share: the helper step's launch and its end */
	c->deadline = c->start + (int64_t)c->spec.timeout_s * 1000 * 8 / 10;
	c->addr = calloc(c->n, sizeof(*c->addr));
	if (!c->addr)
		return dlrt_err_set(err, "out of memory");
	return dlrt_net_node_ipv4(env("DLRT_PREFLIGHT_IFACE")[0] ? env("DLRT_PREFLIGHT_IFACE") : NULL,
				  c->launch_ip, c->ip, err);
}

static void local_checks(struct dlrt_pf_result *r, const struct pf_ctx *c)
{
	char meminfo[8192] = "";
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, meminfo, sizeof(meminfo) - 1) : -1;
	uint64_t mem = dlrt_pf_mem_request(getenv("SLURM_MEM_PER_NODE"), getenv("SLURM_MEM_PER_CPU"),
					   getenv("SLURM_CPUS_ON_NODE"));

	if (fd >= 0)
		close(fd);
	meminfo[k > 0 ? k : 0] = '\0';
	if (dlrt_pf_check_gpus(getenv("CUDA_VISIBLE_DEVICES"), getenv("SLURM_STEP_GPUS"),
			       getenv("SLURM_JOB_GPUS"), c->spec.gpudev, r->figure, sizeof(r->figure)) < 0)
		snprintf(r->check, sizeof(r->check), "gpu");
	else if (dlrt_pf_check_mem(meminfo, mem, r->figure, sizeof(r->figure)) < 0)
		snprintf(r->check, sizeof(r->check), "mem");
	else if (dlrt_pf_check_shm("/dev/shm", c->spec.shm_mib, r->figure, sizeof(r->figure)) < 0)
		snprintf(r->check, sizeof(r->check), "shm");
}

/* Pings every peer (the first node's answer gives the clock offset), then the
 * bandwidth sample to the next node. */
static void probes(struct pf_ctx *c, struct dlrt_pf_result *r)
{
	int npings = c->spec.mode == DLRT_PF_FULL ? 10 : 3;
	uint32_t *rtts = calloc(c->n, sizeof(*rtts)), nr = 0, next = (c->idx + 1) % c->n;
	size_t ul = 0;

	/* Each node starts with the next one, so that at any moment each is
	 * probed by about one peer, not all of them by everyone at once. */
	for (uint32_t k = 1; k < c->n && rtts; k++) {
		uint32_t j = (c->idx + k) % c->n;
		char ip[DLRT_IPV4_LEN];
		uint16_t port;
		uint32_t rtt = 0;
		int64_t off = 0;
		struct dlrt_err err;
		int64_t dl = dlrt_now_ms() + 1000;

		if (dl > c->deadline)
			dl = c->deadline;
		if (!c->addr[j] || dlrt_net_parse_hostport(c->addr[j], ip, &port) < 0 ||
		    dlrt_pf_ping(ip, port, c->secret, npings, dl, &rtt, &off, &err) < 0) {
			ul += (size_t)snprintf(r->unreach + ul, ul < sizeof(r->unreach) ? sizeof(r->unreach) - ul : 0,
					       "%s%u", ul ? "," : "", j);
			if (ul >= sizeof(r->unreach))
				ul = sizeof(r->unreach) - 1;
			continue;
		}
		rtts[nr++] = rtt;
		/* The ping gives the first node's clock minus ours; the line
		 * carries ours minus the first's (pfline.h). */
		if (j == 0)
			r->clock_us = -off;
	}
	/* The best of its round trips: a node behind a slow link has no fast
	 * peer, while a healthy node pinging that node still has the others
	 * (its median would blame it for the slow node). */
	for (uint32_t a = 0; a < nr; a++)
		if (!r->rtt_us || rtts[a] < r->rtt_us)
			r->rtt_us = rtts[a] ? rtts[a] : 1;
	free(rtts);
	if (c->n > 1 && c->addr[next] && !dlrt_pf_unreached(r, next)) {
		char ip[DLRT_IPV4_LEN];
		uint16_t port;
		struct dlrt_err err;

		/* A failed sample is tried once more, then left unmeasured (0):
		 * only a sample that completed can name this node. */
		for (int t = 0; t < 2 && dlrt_net_parse_hostport(c->addr[next], ip, &port) == 0; t++)
			if (dlrt_pf_bandwidth(ip, port, c->secret, c->spec.mode == DLRT_PF_FULL ? 1000 : 200,
					      c->deadline, &r->bw_kBps, &err) == 0) {
				if (!r->bw_kBps)
					r->bw_kBps = 1; /* under 1 kB/s, but measured */
				break;
			}
	}
}

/* Only the step's nodes may reach the probe server from now on. */
static void allow_peers(const struct pf_ctx *c, struct dlrt_pf_server *srv)
{
	char (*ips)[DLRT_IPV4_LEN] = calloc(c->n, sizeof(*ips));
	const char **list = calloc(c->n, sizeof(*list));
	size_t k = 0;

	for (uint32_t i = 0; ips && list && i < c->n; i++) {
		uint16_t port;

		if (c->addr[i] && dlrt_net_parse_hostport(c->addr[i], ips[k], &port) == 0) {
			list[k] = ips[k];
			k++;
		}
	}
	if (ips && list)
		dlrt_pf_server_allow(srv, list, k);
	free(ips);
	free(list);
}

static const char usage[] =
	"Usage: dlrt-preflight\n"
	"One node's part of --dl-preflight: srun runs it as a helper step, one task per node,\n"
	"before a dlrt step (DLRT_PREFLIGHT_RDV, DLRT_PREFLIGHT_SPEC, DLRT_PREFLIGHT_CKPT,\n"
	"DLRT_PREFLIGHT_IFACE, DLRT_PREFLIGHT_TAG in its environment); it prints one line\n"
	"for srun to judge. See dlrt-preflight(8) and docs/preflight.md.\n"
	"  --help   this text\n";

int main(int argc, char **argv)
{
	struct pf_ctx c = { 0 };
	struct dlrt_pf_result r = { 0 };
	struct dlrt_pf_server *srv;
	struct dlrt_err err;
	char addr[64], fname[160], token[40], line[DLRT_PF_LINE_MAX], **done;
	uint8_t rnd[16];
	uint16_t port;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "dlrt-preflight: takes no argument (see dlrt-preflight --help)\n");
		return 2;
	}
	if (setup(&c, &err) < 0)
		return die(err.msg);
	r.idx = c.idx;
	snprintf(r.node, sizeof(r.node), "%s", env("SLURMD_NODENAME")[0] ? env("SLURMD_NODENAME") : "?");
	local_checks(&r, &c);
	srv = dlrt_pf_server_start(c.ip, c.secret, &port, &err);
	if (!srv)
		return die(err.msg);
	snprintf(addr, sizeof(addr), "%s:%u", c.ip, port);
	snprintf(fname, sizeof(fname), ".dlrt-preflight-%s", c.tag);
	if (rdv_up(&c, c.deadline, &err) < 0)
		return die(err.msg);
	snprintf(line, sizeof(line), "a%u", c.idx);
	dlrt_rdv_set(&c.rdv, line, addr, &err);
	if (c.idx == 0 && c.ckpt[0]) {
		const char *ck = "-";

		dlrt_crypto_random(rnd, sizeof(rnd));
		dlrt_svcauth_hex(rnd, sizeof(rnd), token);
		if (!r.check[0] && dlrt_pf_ckpt_write(c.ckpt, fname, token, r.figure, sizeof(r.figure)) < 0)
			snprintf(r.check, sizeof(r.check), "ckpt");
		else if (!r.check[0])
			ck = token;
		dlrt_rdv_set(&c.rdv, "ck", ck, &err);
	}
	get_all(&c, "a", c.addr, c.start + (int64_t)c.spec.timeout_s * 1000 * 4 / 10);
	allow_peers(&c, srv);
	probes(&c, &r);
	if (c.idx != 0 && c.ckpt[0]) {
		const char *k = "ck";
		char *v = NULL;

		if (rdv_up(&c, c.deadline, &err) == 0 && dlrt_rdv_get(&c.rdv, &k, 1, &v, &err) == 0 &&
		    strcmp(v, "-"))
			r.ckpt = dlrt_pf_ckpt_read(c.ckpt, fname, v);
		else if (!v)
			rdv_down(&c);
		free(v);
	}
	fwrite(line, 1, dlrt_pf_line_format(&r, line, sizeof(line)), stdout);
	fflush(stdout);
	/* The others may still be probing this node: stay until all are done. */
	snprintf(line, sizeof(line), "d%u", c.idx);
	if (rdv_up(&c, c.deadline, &err) == 0)
		dlrt_rdv_set(&c.rdv, line, "1", &err);
	done = calloc(c.n, sizeof(*done));
	if (done)
		get_all(&c, "d", done, c.start + (int64_t)c.spec.timeout_s * 1000 * 85 / 100);
	free_all(done, c.n);
	free(done);
	if (c.idx == 0 && c.ckpt[0] && !r.check[0]) {
		char path[1300];

		snprintf(path, sizeof(path), "%s/%s", c.ckpt, fname);
		unlink(path);
	}
	dlrt_pf_server_stop(srv);
	rdv_down(&c);
	free_all(c.addr, c.n);
	free(c.addr);
	return 0;
}
