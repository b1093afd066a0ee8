/* fuzz_exchange_reply.c - libFuzzer target for the reader of the exchange's answers
 * (exchange/exchange_reply.c), which the plugin runs inside slurmstepd's
 * task: whatever the bytes, it must return 0 with a usable root address (and,
 * when asked, every task's numeric address and the task ports of
 * needs_task_ports) or -1 with a one-line error. The PMIx carrier's
 * unsealing runs first on a copy: it may only shorten the text, and what it
 * keeps must be exactly as many lines as values asked for. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "exchange/exchange_reply.h"
#include "exchange/rdvclient.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void unseal(const uint8_t *data, size_t size)
{
	static const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = { 7 };
	static const struct dlrt_reply_want want[3] = {
		{ "dlrt/1/root", -1 }, { "dlrt/1/tports/2", 2 }, { "dlrt/1/tports/5", 5 },
	};
	struct dlrt_err err = { "" };
	char buf[4096];
	size_t len = size < sizeof(buf) ? size : sizeof(buf), n = size ? data[0] % 4 : 0, lines = 0;

	memcpy(buf, data, len);
	if (dlrt_exchange_reply_unseal(secret, want, n, buf, &len, &err) == 0) {
		if (len > (size < sizeof(buf) ? size : sizeof(buf)))
			__builtin_trap();
		for (size_t i = 0; i < len; i++)
			lines += buf[i] == '\n';
		if (lines != n)
			__builtin_trap();
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_addrs mine, all[4];
	struct dlrt_task_addr tasks[4];
	struct dlrt_err err = { "" };
	struct in_addr a;
	uint32_t n = size ? data[0] % 5 : 0;
	bool want_tasks = size & 2;

	unseal(data, size);
	memset(all, 0, sizeof(all));
	memset(tasks, 0, sizeof(tasks));
	if (dlrt_exchange_reply_parse_tasks((const char *)data, size, n, &mine,
					    (size & 1) ? all : NULL, want_tasks ? tasks : NULL,
					    &err) == 0) {
		if (inet_pton(AF_INET, mine.root_ip, &a) != 1 || mine.root_port == 0)
			__builtin_trap();
		for (uint32_t i = 0; (size & 1) && i < n; i++)
			if (inet_pton(AF_INET, all[i].node_ip, &a) != 1)
				__builtin_trap();
		/* Only tasks that exist, each with a numeric address. */
		for (uint32_t i = 0; i < 4; i++)
			if (tasks[i].port && (i >= n || inet_pton(AF_INET, tasks[i].ip, &a) != 1))
				__builtin_trap();
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		__builtin_trap();
	}
	return 0;
}
