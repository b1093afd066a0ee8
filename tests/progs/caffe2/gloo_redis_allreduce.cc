// gloo_redis_allreduce - a Caffe2-style gloo job: rendezvous through
// gloo::rendezvous::RedisStore (wrapped in a PrefixStore of RUN_ID, as
// Caffe2's CreateCommonWorld wraps its store handler) on the helper store,
// then a ring allreduce whose result every rank checks. Each rank also adds
// to a counter with INCRBY exactly as Caffe2's RedisStoreHandler::add does.
//
// Environment (what the Kubeflow Caffe2 operator and dlrt inject):
//   REDIS_HOST, REDIS_PORT   the helper store
//   NFS_PATH                 without REDIS_HOST: a gloo FileStore in this shared
//                            folder (the operator's alternative, --dl-store=file:DIR);
//                            FileStore is not write-once and has no add, so the
//                            SETNX and INCRBY checks are skipped
//   NUM_SHARDS, SHARD_ID     world size and rank
//   RUN_ID                   unique per step attempt (the store keys are write-once)
//   GLOO_IFACE or DLRT_IFACE the interface gloo binds (default: the hostname's address)
//   GLOO_ALLREDUCE_COUNT     floats to reduce (default 1048576)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/device.h>

#include "tests/progs/gloo_compat.h"

static const char *prog = "gloo_redis_allreduce";

static long env_long(const char *name, long dflt, bool required)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s) {
		if (required) {
			fprintf(stderr, "%s: %s is not set: run under --dl-runtime=caffe2 or export it\n",
				prog, name);
			exit(2);
		}
		return dflt;
	}
	v = strtol(s, &end, 10);
	if (*end || v < 0) {
		fprintf(stderr, "%s: %s='%s' is not a non-negative integer\n", prog, name, s);
		exit(2);
	}
	return v;
}

static double ms_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
		.count();
}

// Caffe2's RedisStoreHandler::add: INCRBY through hiredis, answered by an integer.
static int redis_add(redisContext **rc, const char *host, long port, const std::string &ctr,
		     long rank)
{
	*rc = redisConnect(host, (int)port);
	if (!*rc || (*rc)->err) {
		fprintf(stderr, "%s: rank %ld: cannot connect to %s:%ld for INCRBY\n", prog, rank,
			host, port);
		return -1;
	}
	redisReply *rep = (redisReply *)redisCommand(*rc, "INCRBY %b %ld", ctr.c_str(),
						      (size_t)ctr.size(), rank + 1);
	bool good = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer >= rank + 1;
	if (rep)
		freeReplyObject(rep);
	if (!good) {
		fprintf(stderr, "%s: rank %ld: INCRBY did not answer an integer >= %ld\n", prog,
			rank, rank + 1);
		return -1;
	}
	return 0;
}

// Once every rank has added rank + 1, the counter is 1 + 2 + ... + size.
static int redis_check_sum(redisContext *rc, const std::string &ctr, long rank, long size)
{
	redisReply *rep = (redisReply *)redisCommand(rc, "GET %b", ctr.c_str(), (size_t)ctr.size());
	std::string want = std::to_string(size * (size + 1) / 2);
	bool good = rep && rep->type == REDIS_REPLY_STRING &&
		    std::string(rep->str, rep->len) == want;
	/* What came instead, so a failure says whether the count or the
	 * connection was wrong. */
	std::string got = !rep ? std::string("no reply: ") + rc->errstr :
			  rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_ERROR ?
			  std::string(rep->str, rep->len) : "reply type " + std::to_string(rep->type);

	if (rep)
		freeReplyObject(rep);
	redisFree(rc);
	if (!good) {
		fprintf(stderr, "%s: rank %ld: the INCRBY counter is not %s after all ranks added "
			"(got: %.80s)\n", prog, rank, want.c_str(), got.c_str());
		return -1;
	}
	return 0;
}

int main()
{
	const char *host = getenv("REDIS_HOST");
	const char *nfs = getenv("NFS_PATH");
	const char *run_id = getenv("RUN_ID");
	const char *iface = getenv("GLOO_IFACE");
	bool use_redis = host && *host;
	long port = env_long("REDIS_PORT", 6379, use_redis);
	long size = env_long("NUM_SHARDS", 1, true);
	long rank = env_long("SHARD_ID", 0, true);
	long count = env_long("GLOO_ALLREDUCE_COUNT", 1 << 20, false);

	if (!iface || !*iface)
		iface = getenv("DLRT_IFACE");
	if ((!use_redis && (!nfs || !*nfs)) || !run_id || !*run_id) {
		fprintf(stderr, "%s: RUN_ID and REDIS_HOST (or NFS_PATH) must be set: run under "
			"--dl-runtime=caffe2 or export them\n", prog);
		return 2;
	}
	if (size < 1 || rank >= size || count < 1) {
		fprintf(stderr, "%s: SHARD_ID=%ld must be below NUM_SHARDS=%ld (and the count positive)\n",
			prog, rank, size);
		return 2;
	}
	try {
		auto t0 = std::chrono::steady_clock::now();
		gloo::transport::tcp::attr attr;

		if (iface && *iface) {
			attr.iface = iface;
		} else {
			char hn[256] = "localhost";

			gethostname(hn, sizeof(hn) - 1);
			attr.hostname = hn;
		}
		auto dev = gloo::transport::tcp::CreateDevice(attr);
		std::shared_ptr<gloo::rendezvous::Store> base;
		if (use_redis)
			base = std::make_shared<gloo::rendezvous::RedisStore>(host, (int)port);
		else
			base = std::make_shared<gloo::rendezvous::FileStore>(nfs);
		auto store = dlrt_gloo::prefix_store(run_id, base);
		auto ctx = std::make_shared<gloo::rendezvous::Context>((int)rank, (int)size);

		ctx->setTimeout(std::chrono::seconds(60));
		dlrt_gloo::connect_full_mesh(*ctx, store, dev);
		double rdv_ms = ms_since(t0);

		// Keys are write-once (SETNX must answer 1, then 0): a second set of
		// the same key has to fail exactly as Caffe2 reports a reused RUN_ID.
		if (use_redis && rank == 0) {
			gloo::rendezvous::Store &redis = *base;
			std::string k = std::string(run_id) + "/dlrt-write-once";
			std::vector<char> v = { 'x' };
			bool refused = false;

			redis.set(k, v);
			try {
				redis.set(k, v);
			} catch (const std::exception &) {
				refused = true;
			}
			if (!refused) {
				fprintf(stderr, "%s: the store accepted a second SETNX of %s: keys must be write-once\n",
					prog, k.c_str());
				return 1;
			}
		}

		std::vector<float> data((size_t)count);
		for (long i = 0; i < count; i++)
			data[(size_t)i] = (float)(rank + (i % 1000));
		auto t1 = std::chrono::steady_clock::now();
		std::vector<float *> ptrs = { data.data() };
		gloo::AllreduceRing<float> allreduce(ctx, ptrs, (int)count);

		allreduce.run();
		double ar_ms = ms_since(t1);
		long bad = 0;
		for (long i = 0; i < count; i++) {
			float want = (float)(size * (i % 1000) + size * (size - 1) / 2);

			if (std::fabs(data[(size_t)i] - want) > 1e-3f * std::fabs(want) + 1e-3f)
				bad++;
		}
		// Caffe2's RedisStoreHandler::add, byte for byte: INCRBY %b %ld
		// through hiredis. Every rank adds its rank + 1; checked below.
		std::string ctr = std::string(run_id) + "dlrt-add";
		redisContext *rc = nullptr;
		if (use_redis && redis_add(&rc, host, port, ctr, rank) < 0)
			return 1;

		gloo::BarrierAllToAll barrier(ctx);
		barrier.run();
		// A rank that leaves right after the barrier tears down its pairs
		// while a slower rank may still be reading the barrier's last
		// message ("Connection closed by peer"). Leave together: each
		// rank publishes done/<rank> and waits for all of them (a
		// multi-key EXISTS poll on the store, as Caffe2's wait does).
		std::vector<std::string> done;
		for (long r = 0; r < size; r++)
			done.push_back("done/" + std::to_string(r));
		store->set(done[(size_t)rank], std::vector<char>{ '1' });
		store->wait(done, std::chrono::seconds(60));
		if (use_redis && redis_check_sum(rc, ctr, rank, size) < 0)
			return 1;
		if (bad) {
			fprintf(stderr, "%s: rank %ld/%ld: %ld of %ld sums are wrong\n", prog, rank,
				size, bad, count);
			return 1;
		}
		printf("%s: rank %ld/%ld ok: %ld floats summed correctly through the %s store (rendezvous %.1f ms, allreduce %.1f ms)\n",
		       prog, rank, size, count, use_redis ? "redis" : "file", rdv_ms, ar_ms);
	} catch (const std::exception &e) {
		fprintf(stderr, "%s: rank %ld/%ld: %s\n", prog, rank, size, e.what());
		return 1;
	}
	return 0;
}
