/* test_hvd_store.c - the rendezvous store semantics (Horovod's RendezvousHandler). */
#include <stdio.h>
#include <string.h>

#include "launchers/horovod/rendezvous.h"
#include "tap.h"

static struct dlrt_hvd_reply rep;

static int req(struct dlrt_hvd_store *st, enum dlrt_http_method m, const char *path,
	       const char *body)
{
	dlrt_hvd_store_handle(st, m, path, strlen(path), (const uint8_t *)body,
			      body ? strlen(body) : 0, &rep);
	return rep.status;
}

static int body_is(const char *want)
{
	return rep.len == strlen(want) && memcmp(rep.body, want, rep.len) == 0;
}

/* What gloo's connectFullMesh plus Horovod's Finalize do for one scope, for
 * all members: PUT rank_<r> (host name), GET rank_<i> for i < r, PUT <r>
 * (addresses), GET every peer <i>; barrier; DELETE <r>. Checks the scope is
 * kept until the last DELETE and cleared by it. */
static void gloo_scope(struct dlrt_hvd_store *st, const char *scope, int n,
		       const char *const *host_of)
{
	char path[128], body[64];
	int bad = 0;

	for (int r = 0; r < n; r++) {
		snprintf(path, sizeof(path), "/%s/rank_%d", scope, r);
		bad += req(st, DLRT_HTTP_PUT, path, host_of[r]) != 200;
		for (int i = 0; i < r; i++) {
			snprintf(path, sizeof(path), "/%s/rank_%d", scope, i);
			bad += req(st, DLRT_HTTP_GET, path, NULL) != 200 || !body_is(host_of[i]);
		}
		snprintf(path, sizeof(path), "/%s/%d", scope, r);
		snprintf(body, sizeof(body), "addrs-of-%d-in-%s", r, scope);
		bad += req(st, DLRT_HTTP_PUT, path, body) != 200;
	}
	for (int r = 0; r < n; r++) {
		for (int i = 0; i < n; i++) {
			if (i == r)
				continue;
			snprintf(path, sizeof(path), "/%s/%d", scope, i);
			snprintf(body, sizeof(body), "addrs-of-%d-in-%s", i, scope);
			bad += req(st, DLRT_HTTP_GET, path, NULL) != 200 || !body_is(body);
		}
	}
	TAP_IS_INT(bad, 0, "%s: %d ranks PUT and GET everything", scope, n);
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, scope), 2 * n, "%s: 2 keys per rank", scope);
	for (int r = n - 1; r >= 0; r--) {
		snprintf(path, sizeof(path), "/%s/%d", scope, r);
		TAP_IS_INT(req(st, DLRT_HTTP_DELETE, path, NULL), 200, "%s: DELETE %s", scope, path);
		if (r > 0) {
			TAP_IS_INT(dlrt_hvd_store_finished(st, scope), n - r,
				   "%s: %d finished", scope, n - r);
			TAP_IS_INT(dlrt_hvd_store_nkeys(st, scope), 2 * n,
				   "%s: keys kept while a rank is not done", scope);
		}
	}
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, scope), 0, "%s: cleared by the last DELETE", scope);
	TAP_IS_INT(dlrt_hvd_store_finished(st, scope), 0, "%s: finished list reset", scope);
	TAP_OK(rep.cleared, "%s: the last DELETE reports the clearing", scope);
	snprintf(path, sizeof(path), "/%s/0", scope);
	TAP_IS_INT(req(st, DLRT_HTTP_GET, path, NULL), 404, "%s: GET after clearing: 404", scope);
}

static void test_gloo_sequence(void)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_hvd_store *st;
	struct dlrt_err err = { { 0 } };
	/* Uneven: 3, 1 and 2 tasks per node. */
	static const char *const global_hosts[] = { "n1", "n1", "n1", "n2", "n3", "n3" };
	static const char *const n1[] = { "n1", "n1", "n1" };
	static const char *const n2[] = { "n2" };
	static const char *const n3[] = { "n3", "n3" };
	static const char *const cross0[] = { "n1", "n2", "n3" };
	static const char *const cross1[] = { "n1", "n3" };
	static const char *const cross2[] = { "n1" };

	TAP_IS_INT(dlrt_hvd_plan_parse(&plan, "n1:3,n2:1,n3:2", &err), 0, "plan 3,1,2");
	TAP_IS_INT(dlrt_hvd_store_create(&st, &plan, 0, &err), 0, "store with the plan");
	dlrt_hvd_plan_free(&plan); /* the store keeps its own copy */

	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "global"), 6, "global registered with 6");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "local_n1"), 3, "local_n1 with 3");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "local_n2"), 1, "local_n2 with 1");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "local_n3"), 2, "local_n3 with 2");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_0"), 3, "cross_0 with 3");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_1"), 2, "cross_1 with 2");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_2"), 1, "cross_2 with 1");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_3"), -1, "no cross_3");

	gloo_scope(st, "global", 6, global_hosts);
	gloo_scope(st, "local_n1", 3, n1);
	gloo_scope(st, "local_n2", 1, n2);
	gloo_scope(st, "local_n3", 2, n3);
	gloo_scope(st, "cross_0", 3, cross0);
	gloo_scope(st, "cross_1", 2, cross1);
	gloo_scope(st, "cross_2", 1, cross2);
	TAP_IS_INT(dlrt_hvd_store_bytes(st), 0, "nothing held after all scopes");

	/* A second round (elastic reset or a second init) works the same. */
	gloo_scope(st, "global", 6, global_hosts);
	dlrt_hvd_store_destroy(st);
}

static void test_clear_all_finished_lists(void)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_hvd_store *st;
	struct dlrt_err err = { { 0 } };

	dlrt_hvd_plan_parse(&plan, "a:2,b:2", &err);
	dlrt_hvd_store_create(&st, &plan, 0, &err);
	dlrt_hvd_plan_free(&plan);
	req(st, DLRT_HTTP_PUT, "/local_a/0", "x");
	req(st, DLRT_HTTP_DELETE, "/local_a/0", NULL);
	TAP_IS_INT(dlrt_hvd_store_finished(st, "local_a"), 1, "local_a: one finished");
	for (int r = 0; r < 4; r++) {
		char path[32];

		snprintf(path, sizeof(path), "/global/%d", r);
		req(st, DLRT_HTTP_DELETE, path, NULL);
	}
	TAP_IS_INT(dlrt_hvd_store_finished(st, "local_a"), 0,
		   "completing global resets every finished list (as Horovod)");
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, "local_a"), 1, "... but keeps other scopes' keys");
	req(st, DLRT_HTTP_DELETE, "/local_a/1", NULL);
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, "local_a"), 1,
		   "so local_a needs 2 more DELETEs to clear");
	req(st, DLRT_HTTP_DELETE, "/local_a/1", NULL);
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, "local_a"), 0,
		   "the finished list counts keys, duplicates included (a list, not a set)");
	dlrt_hvd_store_destroy(st);
}

static void test_adhoc_and_paths(void)
{
	struct dlrt_hvd_store *st;
	struct dlrt_err err = { { 0 } };

	TAP_IS_INT(dlrt_hvd_store_create(&st, NULL, 0, &err), 0, "store without a plan");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/runfunc/func", NULL), 404, "GET absent: 404");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/runfunc/func", "v1"), 200, "PUT: 200");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/runfunc/func", "value-2"), 200, "overwrite: 200");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/runfunc/func", NULL), 200, "GET: 200");
	TAP_OK(body_is("value-2"), "GET returns the last value");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/runfunc/empty", ""), 200, "PUT empty body");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/runfunc/empty", NULL), 200, "GET empty value: 200");
	TAP_IS_INT(rep.len, 0, "... of length 0");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/runfunc/func", NULL), 200, "ad-hoc DELETE: 200");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/runfunc/func", NULL), 404, "deleted key: 404");
	TAP_IS_INT(dlrt_hvd_store_nkeys(st, "runfunc"), 1, "other key kept");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/runfunc/nothere", NULL), 200,
		   "DELETE of an absent key: 200");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/noscope/x", NULL), 200,
		   "DELETE in an absent scope: 200");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/runfunc/empty", NULL), 200, "DELETE the last key");
	TAP_IS_INT(dlrt_hvd_store_bytes(st), 0, "empty scope dropped, nothing held");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/global/0", NULL), 200,
		   "without a plan, global is ad hoc");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/a:0", NULL), 404,
		   "without a plan, rank_and_size is a plain scope");

	static const char *const bad[] = {
		"/global", "/", "global/x", "/global/rank_0/x", "/a/b/c/d", "//x", "/x/", "/x//",
		"", "/a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TAP_IS_INT(req(st, DLRT_HTTP_GET, bad[i], NULL), 400, "GET '%s': 400", bad[i]);
		TAP_IS_INT(req(st, DLRT_HTTP_PUT, bad[i], "v"), 400, "PUT '%s': 400", bad[i]);
		TAP_IS_INT(req(st, DLRT_HTTP_DELETE, bad[i], NULL), 400, "DELETE '%s': 400", bad[i]);
	}
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/s/k?x=1", "q"), 200,
		   "query strings are part of the key, as in Horovod");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/s/k", NULL), 404, "... so /s/k is another key");
	dlrt_hvd_store_destroy(st);
}

static void test_rank_and_size(void)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_hvd_store *st;
	struct dlrt_err err = { { 0 } };

	dlrt_hvd_plan_parse(&plan, "n1:3,n2:1,n3:2", &err);
	dlrt_hvd_store_create(&st, &plan, 0, &err);
	dlrt_hvd_plan_free(&plan);
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n3:1", NULL), 200, "rank_and_size n3:1");
	TAP_OK(body_is("5,6,1,2,1,2"), "n3:1 is rank 5 of 6, local 1 of 2, cross 1 of 2");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:2", NULL), 200, "n1:2");
	TAP_OK(body_is("2,6,2,3,0,1"), "n1:2 is rank 2, cross 0 of 1");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n9:0", NULL), 200, "unknown host: 200");
	TAP_OK(body_is("-1,-1,-1,-1,-1,-1"), "... with Horovod's removed-host answer");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n2:1", NULL), 200, "slot past local_size");
	TAP_OK(body_is("-1,-1,-1,-1,-1,-1"), "... removed-host answer");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1", NULL), 400, "no ':' -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:x", NULL), 400, "non-numeric -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:1:2", NULL), 400, "two ':' -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:", NULL), 400, "empty rank -> 400");
	/* Horovod's ElasticDriver: int(local_rank), then host_slots[local_rank]
	 * when len(host_slots) > local_rank (Python indexing, any size). */
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:99999999999999999999", NULL), 200,
		   "20-digit rank: 200");
	TAP_OK(body_is("-1,-1,-1,-1,-1,-1"), "... not in the plan");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:-1", NULL), 200, "n1:-1: 200");
	TAP_OK(body_is("2,6,2,3,0,1"), "... the host's last slot, as Python's [-1]");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:-3", NULL), 200, "n1:-3: 200");
	TAP_OK(body_is("0,6,0,3,0,3"), "... its first slot");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:-4", NULL), 400,
		   "n1:-4 (IndexError in Horovod) -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n3:-0", NULL), 200, "n3:-0: 200");
	TAP_OK(body_is("4,6,0,2,2,3"), "... slot 0");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n3:+1", NULL), 200, "n3:+1: 200");
	TAP_OK(body_is("5,6,1,2,1,2"), "... slot 1");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:0_1", NULL), 200, "n1:0_1: 200");
	TAP_OK(body_is("1,6,1,3,0,2"), "... int('0_1') is 1");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n9:-1", NULL), 200, "n9:-1: 200");
	TAP_OK(body_is("-1,-1,-1,-1,-1,-1"), "... unknown host");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:-", NULL), 400, "sign only -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:1_", NULL), 400, "trailing _ -> 400");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/rank_and_size/n1:--1", NULL), 400, "two signs -> 400");
	/* base64 of a pickled (addresses, secret), as codec.dumps_base64 writes. */
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:0", "gASVCgAAAAAAAACMAWGUhZQu"),
		   200, "PUT worker_addresses (base64) is stored");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/worker_addresses/n1:0", NULL), 200, "and readable");
	TAP_OK(body_is("gASVCgAAAAAAAACMAWGUhZQu"), "... as sent, still encoded (as Horovod keeps it)");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:1", "raw bytes, not base64"), 400,
		   "a raw (not base64) worker_addresses PUT: 400 (Horovod raises, drops the "
		   "connection)");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/worker_addresses/n1:1", NULL), 404,
		   "... and nothing is stored, as with Horovod");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:1", "YWJ"), 400,
		   "base64 with its padding cut: 400 (b64decode: Incorrect padding)");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:1", ""), 400,
		   "an empty body: 400 (nothing to unpickle)");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1", "YWJj"), 400,
		   "a key without ':': 400 (Horovod's key.split(':') raises)");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:x", "YWJj"), 400,
		   "a local rank int() refuses: 400");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses/n1:0:1", "YWJj"), 400,
		   "two ':': 400");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/worker_addresses_x/n1:1", "raw"), 200,
		   "other scopes store any bytes, as Horovod's KVStoreHandler");
	dlrt_hvd_store_destroy(st);
}

static void test_bytes_bound(void)
{
	struct dlrt_hvd_store *st;
	struct dlrt_err err = { { 0 } };
	char big[101];

	memset(big, 'v', 100);
	big[100] = '\0';
	dlrt_hvd_store_create(&st, NULL, 200, &err);
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/s/a", big), 200, "100 bytes fit in 200");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/s/b", big), 507, "another 100 do not: 507");
	TAP_IS_INT(req(st, DLRT_HTTP_GET, "/s/b", NULL), 404, "... and are not stored");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/s/a", big), 200, "overwriting in place fits");
	TAP_IS_INT(req(st, DLRT_HTTP_DELETE, "/s/a", NULL), 200, "DELETE frees");
	TAP_IS_INT(req(st, DLRT_HTTP_PUT, "/s/b", big), 200, "then b fits");
	dlrt_hvd_store_destroy(st);
}

int main(void)
{
	test_gloo_sequence();
	test_clear_all_finished_lists();
	test_adhoc_and_paths();
	test_rank_and_size();
	test_bytes_bound();
	return tap_done();
}
