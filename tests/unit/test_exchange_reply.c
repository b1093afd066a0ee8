/* Unit tests: reading the answers of the plugin's address exchange (exchange/exchange_reply.h). */
#include <string.h>

#include "exchange/exchange_reply.h"
#include "exchange/rdvclient.h"
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

/* needs_task_ports: "R IP:T=P,..." lines, one per other node. */
static int parse_ports(const char *text, struct dlrt_task_addr *tasks, struct dlrt_err *err)
{
	struct dlrt_addrs mine;

	memset(&mine, 0, sizeof(mine));
	return dlrt_exchange_reply_parse_tasks(text, strlen(text), 4, &mine, NULL, tasks, err);
}

static void bad_ports(const char *text, const char *needle)
{
	struct dlrt_task_addr tasks[4];
	struct dlrt_err err = { "" };

	memset(tasks, 0, sizeof(tasks));
	tasks[0].port = 41000; /* this node's own task, filled before the reply */
	TAP_OK(parse_ports(text, tasks, &err) < 0 && strstr(err.msg, needle) &&
		       !strchr(err.msg, '\n'),
	       "task ports: refused '%.40s': %s", text, err.msg);
}

static void check_task_ports(void)
{
	struct dlrt_task_addr tasks[4];
	struct dlrt_err err;
	struct dlrt_addrs mine;

	memset(tasks, 0, sizeof(tasks));
	TAP_OK(parse_ports("2 10.0.0.2:2=52000,3=52001\n10.0.0.1:4000\n1 10.0.0.1:1=41001\n",
			   tasks, &err) == 0 &&
		       !strcmp(tasks[2].ip, "10.0.0.2") && tasks[2].port == 52000 &&
		       tasks[3].port == 52001 && !strcmp(tasks[1].ip, "10.0.0.1") &&
		       tasks[1].port == 41001 && tasks[0].port == 0,
	       "task ports: every named task's address; the others left alone");
	memset(tasks, 0, sizeof(tasks));
	TAP_OK(parse_ports("10.0.0.1:4000\n2 10.0.0.2:0=9,3=10\n1 10.0.0.2\n", tasks, &err) == 0 &&
		       tasks[0].port == 9,
	       "task ports next to the root's 'got' lines");
	memset(&mine, 0, sizeof(mine));
	TAP_OK(dlrt_exchange_reply_parse("10.0.0.1:4000\n2 10.0.0.2:2=52000\n", 34, 4, &mine, NULL,
					 &err) < 0, "task ports when none were asked for: refused");
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:0=52000\n", "bad task ports");   /* taken */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2=1,2=2\n", "bad task ports");   /* twice */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:4=52000\n", "bad task ports");   /* no such task */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2=0\n", "bad task ports");       /* port 0 */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2=65536\n", "bad task ports");
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2=5,\n", "bad task ports");      /* trailing comma */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2\n", "bad task ports");
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:\n", "bad task ports");
	bad_ports("10.0.0.1:4000\n2 n2:2=5\n", "bad task ports");
	bad_ports("10.0.0.1:4000\n9 10.0.0.2:2=5\n", "bad task ports");       /* rank */
	bad_ports("10.0.0.1:4000\n2 10.0.0.2:2=5x\n", "bad task ports");
	bad_ports("!n1 could not start\n0 !\n", "could not start");          /* the root failed */
}

/* The PMIx carrier's answers: signed values unsealed in place; a value
 * signed with another secret, under another name, or missing is refused. */
static void check_unseal(void)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = { 1, 2, 3 }, other[DLRT_SVCAUTH_SECRET_LEN] = { 9 };
	const struct dlrt_reply_want want[2] = { { "dlrt/4/root", -1 }, { "dlrt/4/tports/3", 3 } };
	char root[200], ports[200], text[512];
	struct dlrt_err err;
	size_t len;

	dlrt_rdv_seal(secret, "dlrt/4/root", "10.0.0.1:4000", root);
	dlrt_rdv_seal(secret, "dlrt/4/tports/3", "10.0.0.2:3=5000", ports);
	len = (size_t)snprintf(text, sizeof(text), "%s\n3 %s\ngot ack\n", root, ports);
	TAP_OK(dlrt_exchange_reply_unseal(secret, want, 2, text, &len, &err) == 0 &&
		       len == strlen("10.0.0.1:4000\n3 10.0.0.2:3=5000\n") &&
		       !memcmp(text, "10.0.0.1:4000\n3 10.0.0.2:3=5000\n", len),
	       "signed values: unsealed in place, what follows them dropped");
	len = (size_t)snprintf(text, sizeof(text), "%s\n3 %s\n", root, ports);
	TAP_OK(dlrt_exchange_reply_unseal(other, want, 2, text, &len, &err) < 0 &&
		       strstr(err.msg, "dlrt/4/root in Slurm's PMIx is not this step's value"),
	       "a value signed with another secret: refused, naming it (%s)", err.msg);
	dlrt_rdv_seal(secret, "dlrt/4/tports/2", "10.0.0.2:3=5000", ports);
	len = (size_t)snprintf(text, sizeof(text), "%s\n3 %s\n", root, ports);
	TAP_OK(dlrt_exchange_reply_unseal(secret, want, 2, text, &len, &err) < 0 &&
		       strstr(err.msg, "dlrt/4/tports/3"),
	       "a value signed under another name (replayed): refused");
	len = (size_t)snprintf(text, sizeof(text), "10.6.6.6:4000\n");
	TAP_OK(dlrt_exchange_reply_unseal(secret, want, 1, text, &len, &err) < 0,
	       "an unsigned value (a stranger's): refused");
	len = (size_t)snprintf(text, sizeof(text), "%s\n", root);
	TAP_OK(dlrt_exchange_reply_unseal(secret, want, 2, text, &len, &err) < 0 &&
		       strstr(err.msg, "1 of its 2 values"),
	       "a missing line: refused");
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
	check_task_ports();
	check_unseal();
	return tap_done();
}
