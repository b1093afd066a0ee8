/* kvcmd.c - the Redis commands of the Caffe2 helper store.
 *
 * Which commands, and why:
 *   SETNX, GET, INCRBY, EXISTS k1 k2 ...  Caffe2 RedisStoreHandler and gloo
 *                                          RedisStore (the rendezvous itself)
 *   SET, MGET, MSET, INCR, DECR, DECRBY, DEL, UNLINK, KEYS, DBSIZE, TYPE,
 *   STRLEN, APPEND, GETSET, GETDEL         what people type into redis-cli
 *                                          while debugging a stuck rendezvous
 *   PING, ECHO, SELECT, QUIT, FLUSHDB, FLUSHALL, COMMAND, CLIENT, CONFIG,
 *   HELLO, INFO, AUTH                      what client libraries, redis-cli and
 *                                          redis-benchmark send on their own
 *   SET's options, SETEX, PSETEX, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT,
 *   TTL, PTTL, PERSIST
 *                                          job scripts and loaders (kvttl.c)
 *   MULTI, EXEC, DISCARD, WATCH, UNWATCH   redis-py's default pipeline (kvtx.c)
 * Replies and error texts are redis-server 7.0's (checked against it by
 * tests/unit/resp_redis_cli.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kvstore.h"
#include "kvstore_int.h"
#include "resp.h"

#ifndef DLRT_VERSION
#define DLRT_VERSION "unknown" /* the fuzz build does not pass -DDLRT_VERSION */
#endif

#define ARGS DLRT_KV_ARGS

static const char ERR_NOT_INT[] = "ERR value is not an integer or out of range";
static const char ERR_SYNTAX[] = "ERR syntax error";
static const char ERR_OVERFLOW[] = "ERR increment or decrement would overflow";

/* Reply helpers that remember an output overflow instead of returning it. */
static void r_simple(struct dlrt_kv_ctx *c, const char *s)
{
	c->rc |= dlrt_resp_add_simple(c->out, s);
}

static void r_error(struct dlrt_kv_ctx *c, const char *s)
{
	c->rc |= dlrt_resp_add_error(c->out, s);
}

static void r_int(struct dlrt_kv_ctx *c, int64_t v)
{
	c->rc |= dlrt_resp_add_int(c->out, v);
}

static void r_bulk(struct dlrt_kv_ctx *c, const void *p, size_t n)
{
	c->rc |= dlrt_resp_add_bulk(c->out, p, n);
}

static void r_bulk_str(struct dlrt_kv_ctx *c, const char *s)
{
	c->rc |= dlrt_resp_add_bulk_str(c->out, s);
}

static void r_nil(struct dlrt_kv_ctx *c)
{
	c->rc |= dlrt_resp_add_nil(c->out);
}

static void r_array(struct dlrt_kv_ctx *c, size_t n)
{
	c->rc |= dlrt_resp_add_array(c->out, n);
}

/* GET's answer, also given by GETSET, GETDEL, MGET and SET ... GET: the
 * key's value, or nil where it has none. True if it had one. */
static bool r_value(struct dlrt_kv_ctx *c, const uint8_t *key, size_t klen)
{
	const uint8_t *v;
	size_t vl;

	if (!dlrt_kv_lookup(c->kv, key, klen, &v, &vl)) {
		r_nil(c);
		return false;
	}
	r_bulk(c, v, vl);
	return true;
}

static void r_oom(struct dlrt_kv_ctx *c)
{
	r_error(c, "OOM command not allowed when used memory > 'maxmemory'.");
}

void dlrt_kv_reply_oom(struct dlrt_kv_ctx *c)
{
	r_oom(c);
}

void dlrt_kv_reply_full(struct dlrt_kv_ctx *c)
{
	r_error(c, c->kv->full);
	c->cl->refused_full = true;
}

/* For commands that must not half-succeed (MSET) or that answer before they
 * write (GETSET, SET ... GET): refuse up front when the new keys might not
 * fit. It may refuse a write that would have replaced values in place just
 * under the limit; it never lets one through that does not fit. */
static bool room_for(struct dlrt_kv_ctx *c, size_t argc, const uint8_t *const *argv,
		     const size_t *argvlen, size_t first)
{
	size_t need = 0;

	(void)argv;
	for (size_t i = first; i + 1 < argc; i += 2) {
		size_t cost = dlrt_kv_entry_cost(argvlen[i], argvlen[i + 1]);

		if (cost > SIZE_MAX - need)
			return false;
		need += cost;
	}
	if (dlrt_kv_has_room(c->kv, need))
		return true;
	r_oom(c);
	return false;
}

bool dlrt_kv_arg_is(const uint8_t *a, size_t n, const char *s)
{
	return n == strlen(s) && strncasecmp((const char *)a, s, n) == 0;
}

#define arg_is dlrt_kv_arg_is

/* "'get'" style lowercase names in arity errors, as Redis prints them. */
void dlrt_kv_reply_arity(struct dlrt_kv_ctx *c, const char *name)
{
	c->rc |= dlrt_resp_add_errorf(c->out,
				      "ERR wrong number of arguments for '%s' command",
				      name);
}

#define r_arity dlrt_kv_reply_arity

static void r_unknown_sub(struct dlrt_kv_ctx *c, const uint8_t *sub, size_t n, const char *cmd)
{
	c->rc |= dlrt_resp_add_errorf(c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
				      (int)(n > 128 ? 128 : n), (const char *)sub, cmd);
}

/* ---- strings ----------------------------------------------------------- */

static void cmd_get(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	r_value(c, argv[1], argvlen[1]);
}

static void cmd_setnx(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *v;
	size_t vl;

	(void)argc;
	if (dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl)) {
		r_int(c, 0);
		return;
	}
	if (dlrt_kv_put(c->kv, argv[1], argvlen[1], argv[2], argvlen[2]) < 0)
		r_oom(c);
	else
		r_int(c, 1);
}

static void cmd_getset(struct dlrt_kv_ctx *c, ARGS)
{
	if (!room_for(c, argc, argv, argvlen, 1))
		return;
	r_value(c, argv[1], argvlen[1]);
	if (dlrt_kv_put(c->kv, argv[1], argvlen[1], argv[2], argvlen[2]) < 0)
		c->rc = -1; /* the reply is out already: close rather than lie */
}

static void cmd_getdel(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	if (r_value(c, argv[1], argvlen[1]))
		dlrt_kv_remove(c->kv, argv[1], argvlen[1]);
}

static void cmd_mget(struct dlrt_kv_ctx *c, ARGS)
{
	r_array(c, argc - 1);
	for (size_t i = 1; i < argc; i++)
		r_value(c, argv[i], argvlen[i]);
}

static void cmd_mset(struct dlrt_kv_ctx *c, ARGS)
{
	if (argc % 2 == 0) {
		r_arity(c, "mset");
		return;
	}
	if (!room_for(c, argc, argv, argvlen, 1))
		return;
	for (size_t i = 1; i < argc; i += 2) {
		if (dlrt_kv_put(c->kv, argv[i], argvlen[i], argv[i + 1], argvlen[i + 1]) < 0) {
			r_oom(c);
			return;
		}
	}
	r_simple(c, "OK");
}

static void cmd_strlen(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *v;
	size_t vl;

	(void)argc;
	r_int(c, dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl) ? (int64_t)vl : 0);
}

static void cmd_append(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *v;
	size_t vl = 0;
	uint8_t *nv;

	(void)argc;
	if (!dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl)) {
		v = NULL;
		vl = 0;
	}
	if (argvlen[2] > c->kv->max_value || vl > c->kv->max_value - argvlen[2]) {
		r_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
		return;
	}
	nv = malloc(vl + argvlen[2] + 1);
	if (!nv) {
		r_oom(c);
		return;
	}
	if (vl)
		memcpy(nv, v, vl);
	memcpy(nv + vl, argv[2], argvlen[2]);
	/* APPEND, INCR and friends change the value in place: the key keeps
	 * its time to live, as in Redis. */
	if (dlrt_kv_put_keepttl(c->kv, argv[1], argvlen[1], nv, vl + argvlen[2]) < 0)
		r_oom(c);
	else
		r_int(c, (int64_t)(vl + argvlen[2]));
	free(nv);
}

static void incr_by(struct dlrt_kv_ctx *c, const uint8_t *key, size_t klen, int64_t by)
{
	const uint8_t *v;
	size_t vl;
	int64_t cur = 0;
	char buf[24];
	int n;

	if (dlrt_kv_lookup(c->kv, key, klen, &v, &vl) &&
	    dlrt_resp_str2ll(v, vl, &cur) < 0) {
		r_error(c, ERR_NOT_INT);
		return;
	}
	if ((by < 0 && cur < 0 && by < INT64_MIN - cur) ||
	    (by > 0 && cur > 0 && by > INT64_MAX - cur)) {
		r_error(c, ERR_OVERFLOW);
		return;
	}
	cur += by;
	n = snprintf(buf, sizeof(buf), "%lld", (long long)cur);
	if (dlrt_kv_put_keepttl(c->kv, key, klen, buf, (size_t)n) < 0)
		r_oom(c);
	else
		r_int(c, cur);
}

static void cmd_incr(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	incr_by(c, argv[1], argvlen[1], 1);
}

static void cmd_decr(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	incr_by(c, argv[1], argvlen[1], -1);
}

static void cmd_incrby(struct dlrt_kv_ctx *c, ARGS)
{
	int64_t by;

	(void)argc;
	if (dlrt_resp_str2ll(argv[2], argvlen[2], &by) < 0) {
		r_error(c, ERR_NOT_INT);
		return;
	}
	incr_by(c, argv[1], argvlen[1], by);
}

static void cmd_decrby(struct dlrt_kv_ctx *c, ARGS)
{
	int64_t by;

	(void)argc;
	if (dlrt_resp_str2ll(argv[2], argvlen[2], &by) < 0) {
		r_error(c, ERR_NOT_INT);
		return;
	}
	if (by == INT64_MIN) {
		r_error(c, "ERR decrement would overflow");
		return;
	}
	incr_by(c, argv[1], argvlen[1], -by);
}

/* ---- keys -------------------------------------------------------------- */

/* EXISTS counts a key named twice twice, as Redis does; Caffe2 and gloo
 * compare the count with the number of names they asked about. */
static void cmd_exists(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *v;
	size_t vl;
	int64_t n = 0;

	for (size_t i = 1; i < argc; i++)
		n += dlrt_kv_lookup(c->kv, argv[i], argvlen[i], &v, &vl);
	r_int(c, n);
}

static void cmd_del(struct dlrt_kv_ctx *c, ARGS)
{
	int64_t n = 0;

	for (size_t i = 1; i < argc; i++)
		n += dlrt_kv_remove(c->kv, argv[i], argvlen[i]);
	r_int(c, n);
}

static void cmd_type(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *v;
	size_t vl;

	(void)argc;
	r_simple(c, dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl) ? "string" : "none");
}

struct keys_walk {
	struct dlrt_kv_ctx *c;
	const uint8_t *pat;
	size_t plen;
	size_t n;
	bool emit;
};

static int keys_visit(const uint8_t *key, size_t klen, void *arg)
{
	struct keys_walk *w = arg;

	if (!dlrt_kv_glob(w->pat, w->plen, key, klen))
		return 0;
	w->n++;
	if (w->emit)
		r_bulk(w->c, key, klen);
	return w->c->rc < 0 ? -1 : 0;
}

static void cmd_keys(struct dlrt_kv_ctx *c, ARGS)
{
	struct keys_walk w = { c, argv[1], argvlen[1], 0, false };

	(void)argc;
	/* Two passes: count, then emit, so the array header is exact. */
	dlrt_kv_foreach(c->kv, keys_visit, &w);
	r_array(c, w.n);
	w.emit = true;
	w.n = 0;
	dlrt_kv_foreach(c->kv, keys_visit, &w);
}

static void cmd_dbsize(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	(void)argv;
	(void)argvlen;
	r_int(c, (int64_t)dlrt_kv_count(c->kv));
}

static void cmd_flush(struct dlrt_kv_ctx *c, ARGS)
{
	if (argc > 2 || (argc == 2 && !arg_is(argv[1], argvlen[1], "ASYNC") &&
			 !arg_is(argv[1], argvlen[1], "SYNC"))) {
		r_error(c, ERR_SYNTAX);
		return;
	}
	dlrt_kv_flush(c->kv);
	r_simple(c, "OK");
}

/* ---- connection -------------------------------------------------------- */

static void cmd_ping(struct dlrt_kv_ctx *c, ARGS)
{
	if (argc > 2)
		r_arity(c, "ping");
	else if (argc == 2)
		r_bulk(c, argv[1], argvlen[1]);
	else
		r_simple(c, "PONG");
}

static void cmd_echo(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	r_bulk(c, argv[1], argvlen[1]);
}

static void cmd_select(struct dlrt_kv_ctx *c, ARGS)
{
	int64_t db;

	(void)argc;
	if (dlrt_resp_str2ll(argv[1], argvlen[1], &db) < 0 || db < INT32_MIN || db > INT32_MAX)
		r_error(c, ERR_NOT_INT);
	else if (db != 0)
		r_error(c, "ERR DB index is out of range");
	else
		r_simple(c, "OK");
}

static void cmd_quit(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argc;
	(void)argv;
	(void)argvlen;
	r_simple(c, "OK");
	c->quit = true;
}

static void cmd_auth(struct dlrt_kv_ctx *c, ARGS)
{
	(void)argv;
	(void)argvlen;
	if (argc > 3)
		r_error(c, ERR_SYNTAX);
	else
		r_error(c, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
}

/* The server description HELLO returns (a map, flattened in RESP2). */
static void hello_map(struct dlrt_kv_ctx *c)
{
	r_array(c, 14);
	r_bulk_str(c, "server");
	r_bulk_str(c, "redis");
	r_bulk_str(c, "version");
	r_bulk_str(c, "7.0.0");
	r_bulk_str(c, "proto");
	r_int(c, 2);
	r_bulk_str(c, "id");
	r_int(c, (int64_t)c->cl->id);
	r_bulk_str(c, "mode");
	r_bulk_str(c, "standalone");
	r_bulk_str(c, "role");
	r_bulk_str(c, "master");
	r_bulk_str(c, "modules");
	r_array(c, 0);
}

static bool name_ok(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '!' || s[i] > '~')
			return false;
	return true;
}

/* A name may be as long as a value, on every connection: it counts in the
 * store's bound like the client's transaction does. */
static void set_name(struct dlrt_kv_ctx *c, const uint8_t *s, size_t n)
{
	size_t cost = n ? n + 1 + DLRT_KV_MALLOC_OVERHEAD : 0;
	char *name = NULL;

	if (n) {
		if (cost > c->cl->name_held && !dlrt_kv_has_room(c->kv, cost - c->cl->name_held)) {
			dlrt_kv_reply_full(c);
			return;
		}
		name = malloc(n + 1);
		if (!name) {
			r_oom(c);
			return;
		}
		memcpy(name, s, n);
		name[n] = '\0';
	}
	free(c->cl->name);
	c->cl->name = name;
	dlrt_kv_hold(c->kv, &c->cl->name_held, cost);
}

/* HELLO [protover [AUTH user pass] [SETNAME name]]: RESP2 only. Redis 7
 * clients that ask for RESP3 get NOPROTO and fall back to RESP2. */
static void cmd_hello(struct dlrt_kv_ctx *c, ARGS)
{
	int64_t ver = 2;

	if (argc >= 2) {
		if (dlrt_resp_str2ll(argv[1], argvlen[1], &ver) < 0) {
			r_error(c, "ERR Protocol version is not an integer or out of range");
			return;
		}
		if (ver != 2) {
			r_error(c, "NOPROTO unsupported protocol version");
			return;
		}
	}
	for (size_t i = 2; i < argc; i++) {
		if (arg_is(argv[i], argvlen[i], "AUTH") && i + 2 < argc) {
			r_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
			return;
		} else if (arg_is(argv[i], argvlen[i], "SETNAME") && i + 1 < argc) {
			if (!name_ok(argv[i + 1], argvlen[i + 1])) {
				r_error(c, "ERR Client names cannot contain spaces, newlines or special characters.");
				return;
			}
			i++;
		} else {
			c->rc |= dlrt_resp_add_errorf(c->out, "ERR Syntax error in HELLO option '%.*s'",
						      (int)(argvlen[i] > 128 ? 128 : argvlen[i]),
						      (const char *)argv[i]);
			return;
		}
	}
	for (size_t i = 2; i + 1 < argc; i++) {
		if (arg_is(argv[i], argvlen[i], "SETNAME")) {
			set_name(c, argv[i + 1], argvlen[i + 1]);
			i++;
		}
	}
	hello_map(c);
}

static void cmd_client(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *sub = argv[1];
	size_t n = argvlen[1];

	if (arg_is(sub, n, "SETNAME")) {
		if (argc != 3)
			r_arity(c, "client|setname");
		else if (!name_ok(argv[2], argvlen[2]))
			r_error(c, "ERR Client names cannot contain spaces, newlines or special characters.");
		else {
			set_name(c, argv[2], argvlen[2]);
			r_simple(c, "OK");
		}
	} else if (arg_is(sub, n, "GETNAME")) {
		if (argc != 2)
			r_arity(c, "client|getname");
		else if (c->cl->name)
			r_bulk_str(c, c->cl->name);
		else
			r_nil(c);
	} else if (arg_is(sub, n, "ID")) {
		if (argc != 2)
			r_arity(c, "client|id");
		else
			r_int(c, (int64_t)c->cl->id);
	} else if (arg_is(sub, n, "SETINFO")) {
		/* Redis 7.2 clients (hiredis 1.2, redis-py 5) announce their
		 * library name and version; there is nothing to keep. */
		if (argc != 4)
			r_arity(c, "client|setinfo");
		else
			r_simple(c, "OK");
	} else {
		r_unknown_sub(c, sub, n, "CLIENT");
	}
}

/* The settings redis-benchmark (save, appendonly) and curious users look at. */
static void cmd_config(struct dlrt_kv_ctx *c, ARGS)
{
	const uint8_t *sub = argv[1];
	size_t n = argvlen[1];

	if (arg_is(sub, n, "GET")) {
		char maxbulk[24], maxmem[24];
		const char *table[][2] = {
			{ "appendonly", "no" },
			{ "databases", "1" },
			{ "maxmemory", maxmem },
			{ "proto-max-bulk-len", maxbulk },
			{ "save", "" },
			{ "timeout", "0" },
		};
		size_t nt = sizeof(table) / sizeof(table[0]), hits = 0;
		bool hit[sizeof(table) / sizeof(table[0])] = { false };

		if (argc < 3) {
			r_arity(c, "config|get");
			return;
		}
		snprintf(maxbulk, sizeof(maxbulk), "%zu", c->kv->max_value);
		snprintf(maxmem, sizeof(maxmem), "%zu", dlrt_kv_max_memory(c->kv));
		for (size_t i = 2; i < argc; i++)
			for (size_t t = 0; t < nt; t++)
				if (!hit[t] && dlrt_kv_glob(argv[i], argvlen[i],
							    (const uint8_t *)table[t][0],
							    strlen(table[t][0]))) {
					hit[t] = true;
					hits++;
				}
		r_array(c, hits * 2);
		for (size_t t = 0; t < nt; t++) {
			if (!hit[t])
				continue;
			r_bulk_str(c, table[t][0]);
			r_bulk_str(c, table[t][1]);
		}
	} else if (arg_is(sub, n, "SET")) {
		if (argc < 4 || argc % 2)
			r_arity(c, "config|set");
		else
			c->rc |= dlrt_resp_add_errorf(
				c->out, "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'",
				(int)(argvlen[2] > 128 ? 128 : argvlen[2]), (const char *)argv[2]);
	} else if (arg_is(sub, n, "RESETSTAT")) {
		if (argc != 2)
			r_arity(c, "config|resetstat");
		else
			r_simple(c, "OK");
	} else if (arg_is(sub, n, "REWRITE")) {
		if (argc != 2)
			r_arity(c, "config|rewrite");
		else
			r_error(c, "ERR The server is running without a config file");
	} else {
		r_unknown_sub(c, sub, n, "CONFIG");
	}
}

static const struct dlrt_kv_cmd *lookup(const uint8_t *name, size_t n);
static size_t ncommands(void);

/* COMMAND with no details: client libraries only need it not to fail
 * (redis-cli asks for COMMAND DOCS to build its hints and falls back to its
 * own help table when the answer is empty). */
static void cmd_command(struct dlrt_kv_ctx *c, ARGS)
{
	if (argc == 1) {
		r_array(c, 0);
		return;
	}
	if (arg_is(argv[1], argvlen[1], "COUNT")) {
		if (argc != 2)
			r_arity(c, "command|count");
		else
			r_int(c, (int64_t)ncommands());
	} else if (arg_is(argv[1], argvlen[1], "DOCS")) {
		r_array(c, 0);
	} else if (arg_is(argv[1], argvlen[1], "INFO")) {
		r_array(c, argc - 2);
		for (size_t i = 2; i < argc; i++)
			r_nil(c); /* no per-command metadata */
	} else if (arg_is(argv[1], argvlen[1], "LIST")) {
		r_array(c, ncommands());
		for (size_t i = 0; i < ncommands(); i++)
			r_bulk_str(c, lookup(NULL, i)->name);
	} else {
		r_unknown_sub(c, argv[1], argvlen[1], "COMMAND");
	}
}

static void cmd_info(struct dlrt_kv_ctx *c, ARGS)
{
	char text[512];
	int n;

	(void)argc;
	(void)argv;
	(void)argvlen;
	n = snprintf(text, sizeof(text),
		     "# Server\r\n"
		     "redis_version:7.0.0\r\n"
		     "dlrt_store_version:%s\r\n"
		     "redis_mode:standalone\r\n"
		     "\r\n"
		     "# Memory\r\n"
		     "used_memory:%zu\r\n"
		     "maxmemory:%zu\r\n"
		     "maxmemory_policy:noeviction\r\n"
		     "\r\n"
		     "# Keyspace\r\n"
		     "db0:keys=%zu,expires=%zu,avg_ttl=0\r\n",
		     DLRT_VERSION, dlrt_kv_used(c->kv), dlrt_kv_max_memory(c->kv),
		     dlrt_kv_count(c->kv), dlrt_kv_volatile_count(c->kv));
	r_bulk(c, text, (size_t)n);
}

/* Hot commands first: the lookup is a linear scan over lengths and names. */
static const struct dlrt_kv_cmd commands[] = {
	{ "get", 2, cmd_get },
	{ "set", -3, dlrt_kv_cmd_set },
	{ "setnx", 3, cmd_setnx },
	{ "exists", -2, cmd_exists },
	{ "incrby", 3, cmd_incrby },
	{ "incr", 2, cmd_incr },
	{ "decr", 2, cmd_decr },
	{ "decrby", 3, cmd_decrby },
	{ "mget", -2, cmd_mget },
	{ "mset", -3, cmd_mset },
	{ "del", -2, cmd_del },
	{ "unlink", -2, cmd_del },
	{ "getset", 3, cmd_getset },
	{ "getdel", 2, cmd_getdel },
	{ "strlen", 2, cmd_strlen },
	{ "append", 3, cmd_append },
	{ "type", 2, cmd_type },
	{ "keys", 2, cmd_keys },
	{ "dbsize", 1, cmd_dbsize },
	{ "flushdb", -1, cmd_flush },
	{ "flushall", -1, cmd_flush },
	{ "ping", -1, cmd_ping },
	{ "echo", 2, cmd_echo },
	{ "select", 2, cmd_select },
	{ "quit", -1, cmd_quit },
	{ "auth", -2, cmd_auth },
	{ "hello", -1, cmd_hello },
	{ "client", -2, cmd_client },
	{ "config", -2, cmd_config },
	{ "command", -1, cmd_command },
	{ "info", -1, cmd_info },
	{ "setex", 4, dlrt_kv_cmd_setex },
	{ "psetex", 4, dlrt_kv_cmd_psetex },
	{ "expire", -3, dlrt_kv_cmd_expire },
	{ "pexpire", -3, dlrt_kv_cmd_pexpire },
	{ "expireat", -3, dlrt_kv_cmd_expireat },
	{ "pexpireat", -3, dlrt_kv_cmd_pexpireat },
	{ "ttl", 2, dlrt_kv_cmd_ttl },
	{ "pttl", 2, dlrt_kv_cmd_pttl },
	{ "persist", 2, dlrt_kv_cmd_persist },
	{ "multi", 1, dlrt_kv_cmd_multi },
	{ "exec", 1, dlrt_kv_cmd_exec },
	{ "discard", 1, dlrt_kv_cmd_discard },
	{ "watch", -2, dlrt_kv_cmd_watch },
	{ "unwatch", 1, dlrt_kv_cmd_unwatch },
};

static size_t ncommands(void)
{
	return sizeof(commands) / sizeof(commands[0]);
}

/* By name, or (name == NULL) the n-th entry. */
static const struct dlrt_kv_cmd *lookup(const uint8_t *name, size_t n)
{
	if (!name)
		return n < ncommands() ? &commands[n] : NULL;
	for (size_t i = 0; i < ncommands(); i++)
		if (arg_is(name, n, commands[i].name))
			return &commands[i];
	return NULL;
}

/* "ERR unknown command 'FOO', with args beginning with: 'a' 'b' " exactly as
 * Redis 7.0 builds it: at most 128 bytes of name, args while under 128 bytes,
 * each cut so the list stays within 128, C strings (a NUL ends an arg). */
void dlrt_kv_reply_unknown(struct dlrt_kv_ctx *c, ARGS)
{
	char args[160];
	size_t len = 0;

	args[0] = '\0';
	for (size_t i = 1; i < argc && len < 128; i++) {
		size_t n = strnlen((const char *)argv[i], argvlen[i]);
		size_t room = 128 - len;

		if (n > room)
			n = room;
		len += (size_t)snprintf(args + len, sizeof(args) - len, "'%.*s' ", (int)n,
					(const char *)argv[i]);
	}
	c->rc |= dlrt_resp_add_errorf(c->out,
				      "ERR unknown command '%.*s', with args beginning with: %s",
				      (int)strnlen((const char *)argv[0],
						   argvlen[0] > 128 ? 128 : argvlen[0]),
				      (const char *)argv[0], args);
}

const struct dlrt_kv_cmd *dlrt_kv_cmd_find(const uint8_t *name, size_t n)
{
	return lookup(name, n);
}

bool dlrt_kv_cmd_arity_ok(const struct dlrt_kv_cmd *cmd, size_t argc)
{
	return (cmd->arity > 0 && argc == (size_t)cmd->arity) ||
	       (cmd->arity < 0 && argc >= (size_t)-cmd->arity);
}

void dlrt_kv_cmd_run(struct dlrt_kv_ctx *c, const struct dlrt_kv_cmd *cmd, ARGS)
{
	cmd->fn(c, argc, argv, argvlen);
}
