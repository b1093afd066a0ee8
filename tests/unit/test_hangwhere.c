/* Unit tests: where a hung task is, from gdb's backtrace, the position lines
 * the nodes share, and the line naming the tasks that are elsewhere
 * (jobpolicy/hangwhere.c). */
#include <stdlib.h>
#include <unistd.h>

#include "jobpolicy/hangwhere.h"
#include "tap.h"

static const char waiting[] =
"Thread 2 (Thread 0x7f11297dd6c0 (LWP 10044) \"python3\"):\n"
"#0  0x00007f114c50f26f in __GI___poll (fds=0x7f111c000b90, nfds=2, timeout=-1) at poll.c:29\n"
"#1  0x00007f1148080c61 in ?? () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
"Thread 1 (Thread 0x7f114c4122c0 (LWP 8818) \"python3\"):\n"
"#0  __futex_abstimed_wait_common64 (private=0, cancel=true) at ./nptl/futex-internal.c:57\n"
"#1  0x00007f114c498f7b in __GI___futex_abstimed_wait_cancelable64 (futex_word=0x2b) at f.c:1\n"
"#2  0x00007f114c49b5d8 in __pthread_cond_wait_common (abstime=0x0) at c.c:503\n"
"#3  ___pthread_cond_wait (cond=0x2b87e950, mutex=0x2b87e928) at c.c:618\n"
"#4  0x00007f11480c2843 in c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/libtorch_cpu.so\n"
"#5  0x00007f114b9a9b4e in ?? () from /lib/x86_64-linux-gnu/libtorch_python.so.1.13\n";

static const char sleeping[] =
"Thread 1 (Thread 0x7fa5539722c0 (LWP 8819) \"python3\"):\n"
"#0  0x00007fa553a42545 in __GI___clock_nanosleep (clock_id=1, flags=1) at cn.c:48\n"
"#1  0x00000000005d64b4 in ?? ()\n"
"#2  0x000000000052c21a in _PyEval_EvalFrameDefault ()\n";

int main(void)
{
	struct dlrt_hw_task t[6], u;
	char w[DLRT_HW_WHERE], line[DLRT_HW_LINE], cmp[512];
	size_t n;

	TAP_IS_INT(dlrt_hw_from_gdb(waiting, sizeof(waiting) - 1, 8818, w, sizeof(w)), 0,
		   "the main thread of a task in a collective is found");
	TAP_IS_STR(w, "c10d::Work::wait", "below the futex and pthread_cond frames");
	TAP_IS_INT(dlrt_hw_from_gdb(sleeping, sizeof(sleeping) - 1, 8819, w, sizeof(w)), 0,
		   "a task in time.sleep");
	TAP_IS_STR(w, "clock_nanosleep", "libc's internal prefixes are left out");
	TAP_IS_INT(dlrt_hw_from_gdb(waiting, sizeof(waiting) - 1, 881, w, sizeof(w)), -1,
		   "LWP 881 is not LWP 8818: no thread, no position");
	TAP_IS_INT(dlrt_hw_from_gdb("ptrace: Operation not permitted.\n", 33, 5, w, sizeof(w)), -1,
		   "gdb that could not attach: no position");

	u = (struct dlrt_hw_task){ .rank = 3, .role = "worker", .node = "n2 x=y", .where = "a b" };
	n = dlrt_hw_format_line(&u, line, sizeof(line));
	TAP_IS_STR(line, "task=3 role=worker node=n2_x_y at=a_b\n", "a position line, fields reduced");
	TAP_IS_INT(dlrt_hw_parse_line(line, n, &u), 0, "and read back");
	TAP_IS_INT(u.rank, 3, "its task");
	TAP_IS_STR(u.where, "a_b", "its position");
	TAP_IS_INT(dlrt_hw_parse_line("task=1 role=w node=n at=?", 25, &u), 0, "unknown position");
	TAP_IS_STR(u.where, "", "is empty");
	TAP_IS_INT(dlrt_hw_parse_line("task=-1 role=w node=n at=x", 26, &u), -1, "negative task");
	TAP_IS_INT(dlrt_hw_parse_line("task=1 role=w node=n at=x y", 27, &u), -1, "trailing field");
	TAP_IS_INT(dlrt_hw_parse_line("task=1 role=w node= at=x", 24, &u), -1, "empty node");
	TAP_IS_INT(dlrt_hw_parse_line("task=1 role=w", 13, &u), -1, "short line");
	TAP_IS_INT(dlrt_hw_parse_line("task=1 role=w node=n? at=x", 26, &u), -1, "? in a name");
	TAP_IS_INT(dlrt_hw_parse_line("task=01 role=w node=n at=x", 26, &u), -1, "leading zero");

	for (int i = 0; i < 4; i++)
		t[i] = (struct dlrt_hw_task){ .rank = 3 - i, .role = "worker",
					      .node = "n1", .where = "c10d::Work::wait" };
	snprintf(t[0].where, sizeof(t[0].where), "clock_nanosleep");
	snprintf(t[0].node, sizeof(t[0].node), "n2");
	dlrt_hw_compare(t, 4, cmp, sizeof(cmp));
	TAP_IS_STR(cmp, "dlrt: hang: tasks 0,1,2 are in c10d::Work::wait; this task is elsewhere: "
		   "task 3 (worker on n2) in clock_nanosleep\n", "the task not where the others are");
	/* sorted by rank now: t[3] is task 3 */
	snprintf(t[3].where, sizeof(t[3].where), "c10d::Work::wait");
	dlrt_hw_compare(t, 4, cmp, sizeof(cmp));
	TAP_IS_STR(cmp, "dlrt: hang: all 4 tasks are in c10d::Work::wait: none is elsewhere\n",
		   "all in one place");
	snprintf(t[2].where, sizeof(t[2].where), "poll");
	snprintf(t[3].where, sizeof(t[3].where), "poll");
	dlrt_hw_compare(t, 4, cmp, sizeof(cmp));
	TAP_IS_STR(cmp, "dlrt: hang: the tasks are in different places and none holds most of them: "
		   "tasks 0,1 in c10d::Work::wait; tasks 2,3 in poll\n", "a tie names each place");
	t[1].where[0] = t[2].where[0] = t[3].where[0] = '\0';
	TAP_IS_INT((int)dlrt_hw_compare(t, 4, cmp, sizeof(cmp)), 0, "one known: cannot be told");
	for (int i = 0; i < 6; i++)
		t[i] = (struct dlrt_hw_task){ .rank = 1000000 + i, .role = "worker", .node = "node",
					      .where = "somewhere_with_a_long_name" };
	t[5].where[0] = 'x';
	n = dlrt_hw_compare(t, 6, cmp, 80);
	TAP_OK(n < 80 && cmp[n - 1] == '\n' && strstr(cmp, "...\n"), "a long line is cut: %s", cmp);
	{
		char dir[] = "/tmp/test_hangwhere.XXXXXX", path[128];
		struct dlrt_hw_task a[2] = { { .rank = 1, .role = "w", .node = "n1", .where = "x" },
					     { .rank = 0, .role = "w", .node = "n1", .where = "x" } };
		struct dlrt_hw_task got[8];
		FILE *f;

		TAP_OK(mkdtemp(dir) != NULL, "a scratch folder");
		TAP_IS_INT(dlrt_hw_share(dir, ".where.0.0.n1", a, 2), 0, "a node shares its positions");
		TAP_IS_INT(dlrt_hw_share(dir, "a/b", a, 2), -1, "a name with a slash is refused");
		snprintf(path, sizeof(path), "%s/.where.0.0.n2", dir);
		f = fopen(path, "w");
		fputs("garbage\ntask=2 role=w node=n2 at=y\ntask=3 role=w node=n2 at=", f);
		fclose(f);
		snprintf(path, sizeof(path), "%s/.where.0.0.n3", dir);
		TAP_IS_INT(symlink("/etc/passwd", path), 0, "a link among the files");
		snprintf(path, sizeof(path), "%s/.where.1.0.n1", dir);
		TAP_IS_INT(dlrt_hw_share(dir, ".where.1.0.n1", a, 1), 0, "another attempt's file");
		TAP_IS_INT((int)dlrt_hw_read_dir(dir, ".where.0.0.", got, 8), 3,
			   "read back: both of n1's, n2's whole line, no link, no other attempt");
		TAP_IS_INT((int)dlrt_hw_read_dir(dir, ".where.0.0.", got, 2), 2, "at most max");
		if (system("rm -rf /tmp/test_hangwhere.??????") != 0)
			printf("# could not remove %s\n", dir);
	}
	return tap_done();
}
