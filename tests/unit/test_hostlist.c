/* Unit tests: Slurm hostlist and task-count expansion. */
#include "common/hostlist.h"
#include "tap.h"

static void expect_list(const char *in, int n, const char *const *want)
{
	struct dlrt_hostlist hl;
	struct dlrt_err err;
	int ok = dlrt_hostlist_expand(&hl, in, &err) == 0 && (int)hl.n == n;

	for (int i = 0; ok && i < n; i++)
		ok = !strcmp(hl.names[i], want[i]);
	TAP_OK(ok, "hostlist '%s' expands to %d names", in, n);
	if (ok)
		dlrt_hostlist_free(&hl);
}

static void expect_bad(const char *in, const char *needle)
{
	struct dlrt_hostlist hl;
	struct dlrt_err err = { "" };

	TAP_OK(dlrt_hostlist_expand(&hl, in, &err) < 0 && strstr(err.msg, needle),
	       "hostlist '%s' rejected: %s", in, err.msg);
}

int main(void)
{
	uint32_t c[8];
	struct dlrt_err err;

	expect_list("n1", 1, (const char *const[]){ "n1" });
	expect_list("n[1-3]", 3, (const char *const[]){ "n1", "n2", "n3" });
	expect_list("n[1-2,5],gpu[08-10]", 6,
		    (const char *const[]){ "n1", "n2", "n5", "gpu08", "gpu09", "gpu10" });
	expect_list("rack[1-2]-n[1-2]", 4,
		    (const char *const[]){ "rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2" });
	expect_list("a,b[7],c", 3, (const char *const[]){ "a", "b7", "c" });
	expect_bad("", "empty");
	expect_bad("n[1-3", "unclosed");
	expect_bad("n[]", "empty");
	expect_bad("n[3-1]", "invalid");
	expect_bad("n[a-b]", "not a number");
	expect_bad("n[1-999999]", "more than");
	expect_bad("n1]", "without");

	TAP_IS_INT(dlrt_counts_expand(c, 4, "2(x3),1", &err), 0, "counts 2(x3),1");
	TAP_OK(c[0] == 2 && c[1] == 2 && c[2] == 2 && c[3] == 1, "counts values 2,2,2,1");
	TAP_IS_INT(dlrt_counts_expand(c, 3, "3,1,2", &err), 0, "counts 3,1,2");
	TAP_OK(c[0] == 3 && c[1] == 1 && c[2] == 2, "counts values 3,1,2");
	TAP_IS_INT(dlrt_counts_expand(c, 3, "2(x2)", &err), -1, "too few counts rejected");
	TAP_IS_INT(dlrt_counts_expand(c, 2, "1,1,1", &err), -1, "too many counts rejected");
	TAP_IS_INT(dlrt_counts_expand(c, 2, "1,(x2)", &err), -1, "garbage rejected");
	TAP_IS_INT(dlrt_counts_expand(c, 2, "2(x0),1", &err), -1, "zero repeat rejected");
	return tap_done();
}
