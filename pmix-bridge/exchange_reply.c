#include "exchange_reply.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
#include "opts.h"
#include "svcauth.h"

#define LINE_MAX_LEN 512

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

int dlrt_exchange_reply_parse(const char *text, size_t len, uint32_t ntasks,
			      struct dlrt_addrs *mine, struct dlrt_addrs *all,
			      struct dlrt_err *err)
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
		if (sscanf(line, "%511s %511s", rank_s, ip) != 2 ||
		    dlrt_parse_u32(rank_s, 0, ntasks ? ntasks - 1 : 0, &r) < 0 ||
		    !valid_ipv4(ip) || strlen(ip) >= DLRT_IPV4_LEN || (got && got[r])) {
			dlrt_err_set(err, "dlrt-kv printed an unexpected line '%.64s'", line);
			goto fail;
		}
		if (!all)
			continue;
		got[r] = 1;
		memcpy(all[r].node_ip, ip, strlen(ip) + 1); /* checked < DLRT_IPV4_LEN above */
		seen++;
	}
	if (!have_root) {
		dlrt_err_set(err, "the PMIx exchange ended without the root's address");
		goto fail;
	}
	if (all && seen != ntasks) {
		dlrt_err_set(err, "the PMIx exchange returned %u of %u task addresses", seen, ntasks);
		goto fail;
	}
	free(got);
	return 0;
fail:
	free(got);
	return -1;
}
