#include "exchange_reply.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/netaddr.h"
#include "exchange/rdvclient.h"
#include "runtime/opts.h"
#include "services/svcauth.h"

/* The longest line: a node's task ports, "R IP:T=P,..." for at most
 * DLRT_EXCHANGE_NODE_TASKS_MAX tasks (at most 4095 bytes per value). */
#define LINE_MAX_LEN 4352

/* Copies the next line (without '\n') into `line`; returns false at the end. */
static bool next_line(const char **p, const char *end, char line[LINE_MAX_LEN])
{
	const char *nl;
	size_t n;

	if (*p >= end)
		return false;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	n = (size_t)((nl ? nl : end) - *p);
	if (n >= LINE_MAX_LEN)
		n = LINE_MAX_LEN - 1;
	memcpy(line, *p, n);
	line[n] = '\0';
	*p = nl ? nl + 1 : end;
	return true;
}

static bool valid_ipv4(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

/* "IP:T=P,T=P,...": the tasks of one node and their ports, each task at most
 * once in the whole reply (a filled entry has a port). */
static int parse_task_ports(const char *v, uint32_t ntasks, struct dlrt_task_addr *tasks)
{
	const char *colon = strchr(v, ':'), *p;
	char ip[DLRT_IPV4_LEN];

	if (!colon || (size_t)(colon - v) >= sizeof(ip))
		return -1;
	memcpy(ip, v, (size_t)(colon - v));
	ip[colon - v] = '\0';
	if (!valid_ipv4(ip) || !colon[1])
		return -1;
	for (p = colon + 1; *p;) {
		char num[16];
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		uint32_t t, port;

		if (!eq || (size_t)(eq - p) >= sizeof(num) || n - (size_t)(eq - p) - 1 >= sizeof(num))
			return -1;
		memcpy(num, p, (size_t)(eq - p));
		num[eq - p] = '\0';
		if (dlrt_parse_u32(num, 0, ntasks ? ntasks - 1 : 0, &t) < 0 || !ntasks)
			return -1;
		memcpy(num, eq + 1, n - (size_t)(eq - p) - 1);
		num[n - (size_t)(eq - p) - 1] = '\0';
		if (dlrt_parse_u32(num, 1, 65535, &port) < 0 || tasks[t].port)
			return -1;
		memcpy(tasks[t].ip, ip, sizeof(ip));
		tasks[t].port = (uint16_t)port;
		p += n;
		if (*p == ',' && !*++p)
			return -1; /* a trailing comma */
	}
	return 0;
}

int dlrt_exchange_reply_parse(const char *text, size_t len, uint32_t ntasks,
			      struct dlrt_addrs *mine, struct dlrt_addrs *all,
			      struct dlrt_err *err)
{
	return dlrt_exchange_reply_parse_tasks(text, len, ntasks, mine, all, NULL, err);
}

int dlrt_exchange_reply_parse_tasks(const char *text, size_t len, uint32_t ntasks,
				    struct dlrt_addrs *mine, struct dlrt_addrs *all,
				    struct dlrt_task_addr *tasks, struct dlrt_err *err)
{
	const char *p = text, *end = text + len;
	char line[LINE_MAX_LEN];
	bool have_root = false;
	uint32_t seen = 0;
	uint8_t *got = NULL;

	/* An error line wins wherever it is: it says why the rest is missing. */
	while (next_line(&p, end, line)) {
		if (!strncmp(line, "dlrt-kv: ", 9))
			return dlrt_err_set(err, "%s", line[9] ? line + 9 :
					    "dlrt-kv failed without saying why");
		/* The root published why it cannot serve (its service did not
		 * start): every node fails with that line at once. */
		if (line[0] == '!')
			return dlrt_err_set(err, "%s", line[1] ? line + 1 :
					    "the root task failed without saying why");
	}
	if (all && !(got = calloc(ntasks ? ntasks : 1, 1)))
		return dlrt_err_set(err, "out of memory");
	p = text;
	while (next_line(&p, end, line)) {
		char ip[LINE_MAX_LEN], rank_s[LINE_MAX_LEN];
		const char *value = strchr(line, ' ');
		uint32_t r;

		if (!strchr(line, ' ')) {
			bool with_secret = strchr(line, '#') != NULL;

			if (have_root ||
			    (with_secret ? dlrt_svcaddr_parse(line, strlen(line), mine->root_ip,
							      &mine->root_port, mine->secret)
					 : dlrt_net_parse_hostport(line, mine->root_ip,
								   &mine->root_port)) < 0) {
				dlrt_err_set(err, "the root task published a bad address '%.64s'",
					     line);
				goto fail;
			}
			have_root = true;
			mine->has_secret = with_secret;
			continue;
		}
		/* A node's task ports (only asked for by needs_task_ports). */
		if (tasks && value && strchr(value, ':')) {
			if (sscanf(line, "%15s", rank_s) != 1 ||
			    dlrt_parse_u32(rank_s, 0, ntasks ? ntasks - 1 : 0, &r) < 0 ||
			    parse_task_ports(value + 1, ntasks, tasks) < 0) {
				dlrt_err_set(err, "the exchange returned bad task ports '%.64s'", line);
				goto fail;
			}
			continue;
		}
		if (sscanf(line, "%4351s %4351s", rank_s, ip) != 2 ||
		    dlrt_parse_u32(rank_s, 0, ntasks ? ntasks - 1 : 0, &r) < 0 ||
		    !valid_ipv4(ip) || strlen(ip) >= DLRT_IPV4_LEN || (got && got[r])) {
			dlrt_err_set(err, "the exchange returned an unexpected line '%.64s'", line);
			goto fail;
		}
		if (!all)
			continue;
		got[r] = 1;
		memcpy(all[r].node_ip, ip, strlen(ip) + 1); /* checked < DLRT_IPV4_LEN above */
		seen++;
	}
	if (!have_root) {
		dlrt_err_set(err, "the exchange ended without the root's address");
		goto fail;
	}
	if (all && seen != ntasks) {
		dlrt_err_set(err, "the exchange returned %u of %u task addresses", seen, ntasks);
		goto fail;
	}
	free(got);
	return 0;
fail:
	free(got);
	return -1;
}

int dlrt_exchange_reply_unseal(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			       const struct dlrt_reply_want *want, size_t n, char *text,
			       size_t *len, struct dlrt_err *err)
{
	char *p = text, *end = text + *len, *out = text;

	for (size_t i = 0; i < n; i++) {
		char *nl, prefix[24] = "";
		size_t line, plen = 0, vlen;
		const uint8_t *value;

		if (p >= end)
			return dlrt_err_set(err, "the PMIx exchange returned %zu of its %zu values: "
					    "the nodes run different dlrt versions? reinstall dlrt "
					    "on every node", i, n);
		nl = memchr(p, '\n', (size_t)(end - p));
		line = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (want[i].rank >= 0) {
			plen = (size_t)snprintf(prefix, sizeof(prefix), "%ld ", want[i].rank);
			if (line < plen || memcmp(p, prefix, plen))
				return dlrt_err_set(err, "the PMIx exchange answered out of order: "
						    "the nodes run different dlrt versions? "
						    "reinstall dlrt on every node");
		}
		if (dlrt_rdv_open(secret, want[i].key, (const uint8_t *)p + plen, line - plen,
				  &value, &vlen) < 0)
			return dlrt_err_set(err, "%s in Slurm's PMIx is not this step's value (its "
					    "signature does not match): another process connected "
					    "to the node's PMIx server as that task first, which any "
					    "user of a node the job shares can; run the step with "
					    "--exclusive or --dl-exchange=srun", want[i].key);
		/* out never passes p: each line only loses its tag. */
		memmove(out, prefix, plen);
		memmove(out + plen, value, vlen);
		out += plen + vlen;
		*out++ = '\n';
		p += line + (nl != NULL);
	}
	memset(out, 0, (size_t)(end - out));
	*len = (size_t)(out - text);
	return 0;
}
