/* --dl-preflight's pure parts: the spec (option and site key), the node's
 * line, the verdict, the local checks on files made here, and one probe
 * server on 127.0.0.1 (secret proven, ping, bandwidth, a wrong secret). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "preflight/pfcheck.h"
#include "preflight/pfdecide.h"
#include "preflight/pfline.h"
#include "preflight/pfnet.h"
#include "preflight/pfspec.h"
#include "tap.h"

static void test_spec(void)
{
	struct dlrt_pf_spec s;
	struct dlrt_err err;
	char out[DLRT_PF_SPEC_MAX];

	dlrt_pf_spec_default(&s);
	TAP_IS_INT(s.mode, DLRT_PF_OFF, "off by default");
	TAP_IS_INT(dlrt_pf_spec_parse(&s, "quick", "--dl-preflight", &err), 0, "quick");
	TAP_IS_INT(s.mode, DLRT_PF_QUICK, "is quick");
	TAP_IS_INT(dlrt_pf_spec_parse(&s, "full,shm=128,clock=50,timeout=20,gpudev=/tmp/g",
				      "--dl-preflight", &err), 0, "every key");
	TAP_OK(s.mode == DLRT_PF_FULL && s.shm_mib == 128 && s.clock_ms == 50 && s.timeout_s == 20 &&
	       !strcmp(s.gpudev, "/tmp/g"), "every key applied");
	dlrt_pf_spec_format(&s, out, sizeof(out));
	TAP_IS_STR(out, "full,shm=128,clock=50,timeout=20,gpudev=/tmp/g", "formatted back");
	dlrt_pf_spec_default(&s);
	TAP_IS_INT(dlrt_pf_spec_parse(&s, "shm=1", "x", &err), 0, "a key alone");
	TAP_IS_INT(s.mode, DLRT_PF_QUICK, "turns an off spec quick");
	const char *bad[] = { "", "fast", "quick,", ",quick", "shm=-1", "shm=1M", "timeout=1",
			      "timeout=301", "clock=0", "gpudev=rel", "gpudev=/a%n", "quick,bogus=1",
			      "quick shm=1", NULL };
	for (int i = 0; bad[i]; i++) {
		struct dlrt_pf_spec before = s;

		TAP_IS_INT(dlrt_pf_spec_parse(&s, bad[i], "--dl-preflight", &err), -1, "refused: '%s'",
			   bad[i]);
		TAP_OK(!memcmp(&before, &s, sizeof(s)), "and the spec is unchanged");
	}
	TAP_OK(strstr(err.msg, "--dl-preflight=quick shm=1: give off, quick or full") != NULL,
	       "one line naming the valid form: %s", err.msg);
}

static void test_line(void)
{
	struct dlrt_pf_result r = { .idx = 2, .clock_us = -1500, .rtt_us = 80, .bw_kBps = 900000,
				    .ckpt = DLRT_PF_CKPT_UNSHARED };
	struct dlrt_pf_result b;
	char line[DLRT_PF_LINE_MAX];
	size_t n;

	snprintf(r.node, sizeof(r.node), "n3");
	snprintf(r.unreach, sizeof(r.unreach), "0,1");
	snprintf(r.check, sizeof(r.check), "shm");
	snprintf(r.figure, sizeof(r.figure), "3 MiB free in /dev/shm, 64 MiB needed");
	n = dlrt_pf_line_format(&r, line, sizeof(line));
	TAP_IS_STR(line, "dlrt-preflight idx=2 node=n3 clock_us=-1500 rtt_us=80 bw_kBps=900000 "
		   "ckpt=unshared unreach=0,1 fail=shm 3 MiB free in /dev/shm, 64 MiB needed\n",
		   "the line");
	TAP_IS_INT(dlrt_pf_line_parse(line, n, &b), 0, "parses back");
	TAP_OK(!memcmp(&b, &r, sizeof(b)) || (b.idx == 2 && !strcmp(b.figure, r.figure) &&
					       b.clock_us == -1500 && b.ckpt == r.ckpt),
	       "to the same fields");
	TAP_OK(dlrt_pf_unreached(&b, 1) && !dlrt_pf_unreached(&b, 2) && !dlrt_pf_unreached(&b, 10),
	       "unreach list");
	const char *bad[] = {
		"dlrt-preflight idx=2 node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=- fail=",
		"dlrt-preflight idx=2 node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=maybe unreach=- fail=-",
		"dlrt-preflight idx=2 node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=1,,2 fail=-",
		"dlrt-preflight idx=x node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=- fail=-",
		"dlrt-preflight idx=2 node=n3 rtt_us=0 clock_us=0 bw_kBps=0 ckpt=none unreach=- fail=-",
		"dlrt-preflight idx=2 node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=- fail=SHM x",
		"dlrt-preflight idx=2 node=n3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=- fail=shm",
		"dlrt-preflight idx=2 node=n\t3 clock_us=0 rtt_us=0 bw_kBps=0 ckpt=none unreach=- fail=-",
		"srun: error: something else",
		NULL };
	for (int i = 0; bad[i]; i++)
		TAP_IS_INT(dlrt_pf_line_parse(bad[i], strlen(bad[i]), &b), -1, "refused line %d", i);
}

static struct dlrt_pf_result ok_node(uint32_t i)
{
	struct dlrt_pf_result r = { .idx = i, .rtt_us = 100, .bw_kBps = 500000,
				    .ckpt = i ? DLRT_PF_CKPT_SHARED : DLRT_PF_CKPT_NONE };

	snprintf(r.node, sizeof(r.node), "n%u", i + 1);
	return r;
}

static void test_decide(void)
{
	const char *names[4] = { "n1", "n2", "n3", "n4" };
	struct dlrt_pf_result r[4];
	struct dlrt_pf_verdict v[4];
	bool have[4] = { true, true, true, true };
	struct dlrt_pf_spec s;

	dlrt_pf_spec_default(&s);
	for (uint32_t i = 0; i < 4; i++)
		r[i] = ok_node(i);
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 0, "healthy: no verdict");
	r[1].bw_kBps = 120; /* a rate-limited link */
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "slow sender named");
	TAP_OK(v[0].idx == 1 && !strcmp(v[0].check, "net") && strstr(v[0].figure, "0.12 MB/s to n3"),
	       "as n2, net: %s", v[0].figure);
	r[0].bw_kBps = 14000; /* n1 to n2: n2's ACKs wait behind its own data */
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "its predecessor is not named");
	TAP_IS_INT(v[0].idx, 1, "only n2");
	r[0] = ok_node(0);
	r[1].bw_kBps = 0; /* not measured */
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 0, "an unmeasured sample names no one");
	r[1] = ok_node(1);
	have[3] = false;
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "a silent node");
	TAP_OK(v[0].idx == 3 && !strcmp(v[0].check, "answer"), "named: %s", v[0].figure);
	have[3] = true;
	r[2].ckpt = DLRT_PF_CKPT_UNSHARED;
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "a node without the shared folder");
	TAP_OK(v[0].idx == 2 && !strcmp(v[0].check, "ckpt"), "named: %s", v[0].figure);
	r[1].ckpt = r[3].ckpt = DLRT_PF_CKPT_UNSHARED;
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "the first node is the odd one");
	TAP_OK(v[0].idx == 0 && !strcmp(v[0].check, "ckpt"), "named: %s", v[0].figure);
	for (uint32_t i = 0; i < 4; i++)
		r[i] = ok_node(i);
	snprintf(r[0].unreach, sizeof(r[0].unreach), "2");
	snprintf(r[1].unreach, sizeof(r[1].unreach), "2");
	snprintf(r[3].unreach, sizeof(r[3].unreach), "2");
	snprintf(r[2].unreach, sizeof(r[2].unreach), "0,1,3");
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "a node nobody reaches");
	TAP_OK(v[0].idx == 2 && strstr(v[0].figure, "not reachable from 3 of 3 peers"), "named: %s",
	       v[0].figure);
	for (uint32_t i = 0; i < 4; i++)
		r[i] = ok_node(i);
	r[3].clock_us = -2500000;
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "a clock off by 2.5 s");
	TAP_OK(v[0].idx == 3 && strstr(v[0].figure, "2.500 s behind n1's clock"), "named: %s",
	       v[0].figure);
	r[3] = ok_node(3);
	snprintf(r[1].check, sizeof(r[1].check), "gpu");
	snprintf(r[1].figure, sizeof(r[1].figure), "GPU 1: /dev/nvidia1 is missing");
	TAP_IS_INT(dlrt_pf_decide(&s, r, have, names, 4, v), 1, "a local check");
	TAP_IS_STR(v[0].figure, "GPU 1: /dev/nvidia1 is missing", "its figure as the node gave it");
}

static void test_checks(void)
{
	char fig[DLRT_PF_FIGURE_MAX], dir[] = "/tmp/dlrt-pf-XXXXXX", path[64];

	TAP_IS_INT(dlrt_pf_check_mem("MemTotal: 1 kB\nMemAvailable:  2097152 kB\n", 1024, fig,
				     sizeof(fig)), 0, "2 GiB available, 1 GiB asked");
	TAP_IS_INT(dlrt_pf_check_mem("MemAvailable:  2097152 kB\n", 4096, fig, sizeof(fig)), -1,
		   "4 GiB asked");
	TAP_IS_STR(fig, "2048 MiB available, the step asks for 4096 MiB", "its figure");
	TAP_IS_INT((int)dlrt_pf_mem_request(NULL, "100", "4"), 400, "per cpu times cpus");
	TAP_IS_INT((int)dlrt_pf_mem_request("2000", "100", "4"), 2000, "per node first");
	TAP_IS_INT(dlrt_pf_check_shm("/", 1, fig, sizeof(fig)), 0, "/ has a MiB free");
	TAP_IS_INT(dlrt_pf_check_shm("/", 1u << 20, fig, sizeof(fig)), -1, "not a TiB");
	TAP_OK(mkdtemp(dir) != NULL, "a folder");
	snprintf(path, sizeof(path), "%s/nvidia1", dir);
	TAP_IS_INT(dlrt_pf_check_gpus(NULL, NULL, NULL, "/dev/null-", fig, sizeof(fig)), 0,
		   "no GPU: passes");
	TAP_OK(mknod(path, S_IFREG | 0600, 0) == 0, "a regular file as GPU 1");
	snprintf(path, sizeof(path), "%s/nvidia", dir);
	TAP_IS_INT(dlrt_pf_check_gpus(NULL, "1", NULL, path, fig, sizeof(fig)), -1, "not a device");
	TAP_OK(strstr(fig, "not a character device") != NULL, "%s", fig);
	TAP_IS_INT(dlrt_pf_check_gpus(NULL, "0,1", NULL, path, fig, sizeof(fig)), -1, "GPU 0 missing");
	TAP_OK(strstr(fig, "GPU 0 of the step (SLURM_STEP_GPUS):") && strstr(fig, "is missing"), "%s",
	       fig);
	TAP_IS_INT(dlrt_pf_check_gpus(NULL, "0", NULL, "/dev/nul", fig, sizeof(fig)), -1,
		   "/dev/nul0 missing");
	TAP_IS_INT(dlrt_pf_ckpt_write(dir, ".probe", "tok", fig, sizeof(fig)), 0, "token written");
	TAP_IS_INT(dlrt_pf_ckpt_read(dir, ".probe", "tok"), DLRT_PF_CKPT_SHARED, "and seen");
	TAP_IS_INT(dlrt_pf_ckpt_read(dir, ".probe", "other"), DLRT_PF_CKPT_UNSHARED, "other token");
	TAP_IS_INT(dlrt_pf_ckpt_read(dir, ".none", "tok"), DLRT_PF_CKPT_UNSHARED, "no file");
	TAP_IS_INT(dlrt_pf_ckpt_write(dir, ".probe", "tok", fig, sizeof(fig)), -1, "never over a file");
	TAP_IS_INT(dlrt_pf_ckpt_write("/proc/1", ".probe", "tok", fig, sizeof(fig)), -1,
		   "a folder not writable");
	snprintf(path, sizeof(path), "%s/.probe", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nvidia1", dir);
	unlink(path);
	rmdir(dir);
}

static void test_net(void)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = { 1, 2, 3 }, wrong[DLRT_SVCAUTH_SECRET_LEN] = { 9 };
	struct dlrt_err err;
	uint16_t port = 0;
	struct dlrt_pf_server *s = dlrt_pf_server_start("127.0.0.1", secret, &port, &err);
	uint32_t rtt = 0;
	int64_t off = 99;
	uint64_t kbps = 0;

	TAP_OK(s != NULL && port > 0, "probe server listens");
	if (!s)
		return;
	TAP_IS_INT(dlrt_pf_ping("127.0.0.1", port, secret, 3, dlrt_now_ms() + 2000, &rtt, &off, &err),
		   0, "ping with the secret");
	TAP_OK(off > -100000 && off < 100000, "same clock: offset %lld us", (long long)off);
	TAP_IS_INT(dlrt_pf_bandwidth("127.0.0.1", port, secret, 50, dlrt_now_ms() + 3000, &kbps, &err),
		   0, "bandwidth sample");
	TAP_OK(kbps > 0, "delivered %llu kB/s", (unsigned long long)kbps);
	TAP_IS_INT(dlrt_pf_ping("127.0.0.1", port, wrong, 1, dlrt_now_ms() + 2000, &rtt, &off, &err),
		   -1, "a wrong secret gets no answer");
	{
		/* Idle connections that never prove the secret (another user's)
		 * do not keep a peer out: the oldest are ended for new ones. */
		int idle[300];
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		for (int i = 0; i < 300; i++) {
			idle[i] = socket(AF_INET, SOCK_STREAM, 0);
			if (idle[i] >= 0 && connect(idle[i], (struct sockaddr *)&a, sizeof(a)) < 0) {
				close(idle[i]);
				idle[i] = -1;
			}
		}
		TAP_IS_INT(dlrt_pf_ping("127.0.0.1", port, secret, 1, dlrt_now_ms() + 2000, &rtt, &off,
					&err), 0, "a ping gets through 300 idle connections");
		for (int i = 0; i < 300; i++)
			if (idle[i] >= 0)
				close(idle[i]);
	}
	{
		const char *only[] = { "127.0.0.2" };

		dlrt_pf_server_allow(s, only, 1);
		TAP_IS_INT(dlrt_pf_ping("127.0.0.1", port, secret, 1, dlrt_now_ms() + 1000, &rtt, &off,
					&err), -1, "from an address not the step's: closed at once");
	}
	dlrt_pf_server_stop(s);
	TAP_IS_INT(dlrt_pf_ping("127.0.0.1", port, secret, 1, dlrt_now_ms() + 500, &rtt, &off, &err),
		   -1, "stopped: unreachable");
}

int main(void)
{
	test_spec();
	test_line();
	test_decide();
	test_checks();
	test_net();
	return tap_done();
}
