/* test_hvd_plan.c - Horovod's get_host_assignments for the driver's --hosts. */
#include <stdio.h>
#include <string.h>

#include "launchers/horovod/hvd_plan.h"
#include "tap.h"

/* hosts.py get_host_assignments for "n1:3,n2:1,n3:2", worked out by hand:
 * rank, size, local_rank, local_size, cross_rank, cross_size. */
static const int uneven[6][6] = {
	{ 0, 6, 0, 3, 0, 3 }, /* n1 */
	{ 1, 6, 1, 3, 0, 2 },
	{ 2, 6, 2, 3, 0, 1 },
	{ 3, 6, 0, 1, 1, 3 }, /* n2 */
	{ 4, 6, 0, 2, 2, 3 }, /* n3 */
	{ 5, 6, 1, 2, 1, 2 },
};
static const char *const uneven_host[6] = { "n1", "n1", "n1", "n2", "n3", "n3" };

static void test_uneven(void)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_err err = { { 0 } };
	char buf[64];

	TAP_IS_INT(dlrt_hvd_plan_parse(&plan, "n1:3,n2:1,n3:2", &err), 0, "parse n1:3,n2:1,n3:2");
	TAP_IS_INT(plan.nslots, 6, "6 ranks");
	TAP_IS_INT(plan.nhosts, 3, "3 hosts");
	for (int r = 0; r < 6; r++) {
		const struct dlrt_hvd_slot *s = &plan.slot[r];
		int got[6] = { s->rank, s->size, s->local_rank, s->local_size,
			       s->cross_rank, s->cross_size };

		TAP_OK(memcmp(got, uneven[r], sizeof(got)) == 0 &&
		       strcmp(s->hostname, uneven_host[r]) == 0,
		       "rank %d: %s %d,%d,%d,%d,%d,%d", r, s->hostname, got[0], got[1], got[2],
		       got[3], got[4], got[5]);
	}
	dlrt_hvd_slot_format(dlrt_hvd_plan_find(&plan, "n3", 2, 1), buf, sizeof(buf));
	TAP_IS_STR(buf, "5,6,1,2,1,2", "SlotInfo.to_response_string of n3:1");
	dlrt_hvd_slot_format(dlrt_hvd_plan_find(&plan, "n2", 2, 0), buf, sizeof(buf));
	TAP_IS_STR(buf, "3,6,0,1,1,3", "n2:0");
	TAP_OK(dlrt_hvd_plan_find(&plan, "n2", 2, 1) == NULL, "n2:1 does not exist");
	TAP_OK(dlrt_hvd_plan_find(&plan, "n", 1, 0) == NULL, "prefix of a host name is not it");
	TAP_OK(dlrt_hvd_plan_find(&plan, "n1", 2, -1) == NULL, "negative local rank");
	dlrt_hvd_slot_format(NULL, buf, sizeof(buf));
	TAP_IS_STR(buf, "-1,-1,-1,-1,-1,-1", "INVALID_SLOT_INFO");
	dlrt_hvd_plan_free(&plan);
}

static void test_shapes(void)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_err err = { { 0 } };
	const char *hosts[] = { "a", "b" };
	const int slots[] = { 1, 4 };

	/* Fewer slots first: cross sizes come from the second host's extra slots. */
	TAP_IS_INT(dlrt_hvd_plan_build(&plan, hosts, slots, 2, &err), 0, "build a:1,b:4");
	TAP_OK(plan.slot[1].cross_rank == 1 && plan.slot[1].cross_size == 2,
	       "b local_rank 0: cross 1 of 2");
	TAP_OK(plan.slot[2].cross_rank == 0 && plan.slot[2].cross_size == 1,
	       "b local_rank 1: cross 0 of 1 (a has no slot 1)");
	TAP_IS_INT(plan.slot[4].rank, 4, "last rank 4");
	dlrt_hvd_plan_free(&plan);

	TAP_IS_INT(dlrt_hvd_plan_parse(&plan, "localhost:3", &err), 0, "single host");
	TAP_OK(plan.slot[2].local_rank == 2 && plan.slot[2].cross_size == 1 &&
	       plan.slot[2].local_size == 3, "localhost:3 rank 2");
	dlrt_hvd_plan_free(&plan);

	TAP_IS_INT(dlrt_hvd_plan_parse(&plan, "node-1.cluster_x:2", &err), 0,
		   "dots, dashes and underscores in names");
	dlrt_hvd_plan_free(&plan);
}

static void test_errors(void)
{
	static const char *const bad[] = {
		"", "n1", "n1:", ":2", "n1:0", "n1:-1", "n1:2x", "n1:2,,n2:1", "n1:2,n1:1",
		"n 1:2", "n1:99999999", "n1:2,", "n1: 2",
	};
	struct dlrt_hvd_plan plan;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dlrt_err err = { { 0 } };

		TAP_OK(dlrt_hvd_plan_parse(&plan, bad[i], &err) == -1 && err.msg[0] &&
		       !strchr(err.msg, '\n'), "'%s' refused: %s", bad[i], err.msg);
	}
}

int main(void)
{
	test_uneven();
	test_shapes();
	test_errors();
	return tap_done();
}
