/* Unit tests: reading dlrt-kv's answer to the plugin's address exchange. */
#include <string.h>

#include "exchange_reply.h"
#include "tap.h"

static int parse(const char *text, uint32_t n, struct dlrt_addrs *mine, struct dlrt_addrs *all,
		 struct dlrt_err *err)
{
	memset(mine, 0, sizeof(*mine));
	return dlrt_exchange_reply_parse(text, strlen(text), n, mine, all, err);
}

static void expect_bad(const char *text, struct dlrt_addrs *all, const char *needle)
{
	struct dlrt_addrs mine;
	struct dlrt_err err = { "" };

	TAP_OK(parse(text, 3, &mine, all, &err) < 0 && strstr(err.msg, needle),
	       "refused '%.30s...': %s", text, err.msg);
}

int main(void)
{
	struct dlrt_addrs mine, all[3];
	struct dlrt_err err;

	TAP_OK(parse("10.0.0.1:4000\n", 3, &mine, NULL, &err) == 0 &&
		       !strcmp(mine.root_ip, "10.0.0.1") && mine.root_port == 4000,
	       "a task's answer: the root's address");
	TAP_OK(parse("0 10.0.0.1\n1 10.0.0.2\n2 10.0.0.3\n10.0.0.1:4000\n", 3, &mine, NULL,
		     &err) == 0 && mine.root_port == 4000,
	       "the root's answer: host lines are ignored when not asked for");
	memset(all, 0, sizeof(all));
	TAP_OK(parse("2 10.0.0.3\n0 10.0.0.1\n1 10.0.0.2\n10.0.0.1:4000", 3, &mine, all, &err) ==
			       0 &&
		       !strcmp(all[0].node_ip, "10.0.0.1") && !strcmp(all[2].node_ip, "10.0.0.3"),
	       "every address, in any order, last line without newline");
	memset(&mine, 0, sizeof(mine));
	TAP_OK(parse("10.0.0.1:4000#00112233445566778899aabbccddeeff"
		     "00112233445566778899aabbccddee0f\n", 3, &mine, NULL, &err) == 0 &&
		       mine.root_port == 4000 && mine.has_secret && mine.secret[1] == 0x11 &&
		       mine.secret[31] == 0x0f,
	       "a service's address with the step secret");
	TAP_OK(parse("10.0.0.1:4000\n", 3, &mine, NULL, &err) == 0 && !mine.has_secret,
	       "an address without a secret says so");
	expect_bad("!the Caffe2 helper store (dlrt-store) did not start on n1 (exit 3)\n", NULL,
		   "did not start on n1");
	expect_bad("!\n", NULL, "the root task failed without saying why");
	expect_bad("10.0.0.1:4000#0011\n", NULL, "bad address");
	expect_bad("10.0.0.1:4000#00112233445566778899aabbccddeeff"
		   "00112233445566778899aabbccddeeXX\n", NULL, "bad address");
	expect_bad("dlrt-kv: tasks 2 did not publish dlrt.host within 3 s\n", NULL,
		   "tasks 2 did not publish");
	expect_bad("10.0.0.1:4000\ndlrt-kv: PMIx fence timed out\n", NULL, "fence timed out");
	expect_bad("", NULL, "without the root");
	expect_bad("n1:4000\n", NULL, "bad address");
	expect_bad("10.0.0.1:0\n", NULL, "bad address");
	expect_bad("10.0.0.1:4000\n10.0.0.2:4000\n", NULL, "bad address");
	expect_bad("10.0.0.1:4000\n0 10.0.0.1\n1 10.0.0.2\n", all, "2 of 3");
	expect_bad("10.0.0.1:4000\n0 10.0.0.1\n0 10.0.0.1\n2 10.0.0.3\n", all, "unexpected");
	expect_bad("10.0.0.1:4000\n3 10.0.0.1\n", all, "unexpected");
	expect_bad("10.0.0.1:4000\n0 somehost\n", all, "unexpected");
	return tap_done();
}
