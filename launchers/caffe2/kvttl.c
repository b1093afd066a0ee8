/* kvttl.c - SET with its options, and the expiry commands of the Caffe2
 * helper store: SETEX, PSETEX, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with
 * NX/XX/GT/LT), TTL, PTTL, PERSIST.
 *
 * Option parsing, the order of the checks and every error text follow
 * redis-server 7.0 (t_string.c parseExtendedStringArgumentsOrReply and
 * setGenericCommand, expire.c expireGenericCommand), including its overflow
 * rules, which add the current Unix time in milliseconds: the store's clock
 * (dlrt_kv_now_ms) is dlrt's monotonic clock anchored to Unix time once.
 * An expired key is gone for every command: it is removed when it is next
 * looked at, or by the server's periodic dlrt_kv_expire_cycle.
 */
#include <stdio.h>
#include <string.h>

#include "kvstore.h"
#include "kvstore_int.h"
#include "resp.h"

#define ERR_NOT_INT "ERR value is not an integer or out of range"

enum {
	F_NX = 1 << 0,
	F_XX = 1 << 1,
	F_GET = 1 << 2,
	F_KEEPTTL = 1 << 3,
	F_EX = 1 << 4,
	F_PX = 1 << 5,
	F_EXAT = 1 << 6,
	F_PXAT = 1 << 7,
	F_GT = 1 << 8,
	F_LT = 1 << 9,
};

#define F_ANY_EXPIRE (F_EX | F_PX | F_EXAT | F_PXAT)

static void err(struct dlrt_kv_ctx *c, const char *s)
{
	c->rc |= dlrt_resp_add_error(c->out, s);
}

static void err_expire_time(struct dlrt_kv_ctx *c, const char *cmd)
{
	c->rc |= dlrt_resp_add_errorf(c->out, "ERR invalid expire time in '%s' command", cmd);
}

/* SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]: which
 * option may follow which, as Redis checks it (a repeated EX is allowed, the
 * last one counts; EX with PX is a syntax error). */
static int set_options(struct dlrt_kv_ctx *c, DLRT_KV_ARGS, int *flags, size_t *exp_arg)
{
	static const struct {
		const char *name;
		int flag, excludes;
	} opts[] = {
		{ "nx", F_NX, F_XX },
		{ "xx", F_XX, F_NX },
		{ "get", F_GET, 0 },
		{ "keepttl", F_KEEPTTL, F_ANY_EXPIRE },
		{ "ex", F_EX, F_KEEPTTL | F_EXAT | F_PX | F_PXAT },
		{ "px", F_PX, F_KEEPTTL | F_EX | F_EXAT | F_PXAT },
		{ "exat", F_EXAT, F_KEEPTTL | F_EX | F_PX | F_PXAT },
		{ "pxat", F_PXAT, F_KEEPTTL | F_EX | F_EXAT | F_PX },
	};

	for (size_t j = 3; j < argc; j++) {
		size_t o;

		for (o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
			if (dlrt_kv_arg_is(argv[j], argvlen[j], opts[o].name))
				break;
		if (o == sizeof(opts) / sizeof(opts[0]) || (*flags & opts[o].excludes) ||
		    ((opts[o].flag & F_ANY_EXPIRE) && j + 1 == argc)) {
			err(c, "ERR syntax error");
			return -1;
		}
		*flags |= opts[o].flag;
		if (opts[o].flag & F_ANY_EXPIRE)
			*exp_arg = ++j;
	}
	return 0;
}

/* Redis's getExpireMillisecondsOrReply: the Unix ms time the key expires. */
static int set_expire_time(struct dlrt_kv_ctx *c, const uint8_t *a, size_t n, int flags,
			   int64_t *at, const char *cmd)
{
	int64_t v;

	if (dlrt_resp_str2ll(a, n, &v) < 0) {
		err(c, ERR_NOT_INT);
		return -1;
	}
	if (v <= 0 || ((flags & (F_EX | F_EXAT)) && v > INT64_MAX / 1000))
		goto bad;
	if (flags & (F_EX | F_EXAT))
		v *= 1000;
	if (flags & (F_EX | F_PX)) {
		int64_t now = dlrt_kv_now_ms(c->kv);

		if (v > INT64_MAX - now)
			goto bad;
		v += now;
	}
	*at = v;
	return 0;
bad:
	err_expire_time(c, cmd);
	return -1;
}

void dlrt_kv_cmd_set(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	int flags = 0;
	size_t exp_arg = 0;
	int64_t at = DLRT_KV_NO_EXPIRY;
	const uint8_t *v;
	size_t vl;
	bool exists;
	int rc;

	if (set_options(c, argc, argv, argvlen, &flags, &exp_arg) < 0)
		return;
	if (exp_arg &&
	    set_expire_time(c, argv[exp_arg], argvlen[exp_arg], flags, &at, "set") < 0)
		return;
	/* GET answers with the old value before the write: refuse up front
	 * when the write might not fit, never after having answered. */
	if ((flags & F_GET) &&
	    !dlrt_kv_has_room(c->kv, dlrt_kv_entry_cost(argvlen[1], argvlen[2]))) {
		dlrt_kv_reply_oom(c);
		return;
	}
	exists = dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl);
	if (flags & F_GET)
		c->rc |= exists ? dlrt_resp_add_bulk(c->out, v, vl) : dlrt_resp_add_nil(c->out);
	if (((flags & F_NX) && exists) || ((flags & F_XX) && !exists)) {
		if (!(flags & F_GET))
			c->rc |= dlrt_resp_add_nil(c->out);
		return;
	}
	if (flags & F_KEEPTTL)
		rc = dlrt_kv_put_keepttl(c->kv, argv[1], argvlen[1], argv[2], argvlen[2]);
	else
		rc = dlrt_kv_put(c->kv, argv[1], argvlen[1], argv[2], argvlen[2]);
	if (rc < 0) {
		if (flags & F_GET)
			c->rc = -1; /* the old value is out already: close rather than lie */
		else
			dlrt_kv_reply_oom(c);
		return;
	}
	if (at != DLRT_KV_NO_EXPIRY)
		dlrt_kv_set_expire(c->kv, argv[1], argvlen[1], at); /* in the past: gone */
	if (!(flags & F_GET))
		c->rc |= dlrt_resp_add_simple(c->out, "OK");
}

/* SETEX key seconds value, PSETEX key milliseconds value. */
static void setex_generic(struct dlrt_kv_ctx *c, DLRT_KV_ARGS, int flag, const char *name)
{
	int64_t at;

	(void)argc;
	if (set_expire_time(c, argv[2], argvlen[2], flag, &at, name) < 0)
		return;
	if (dlrt_kv_put(c->kv, argv[1], argvlen[1], argv[3], argvlen[3]) < 0) {
		dlrt_kv_reply_oom(c);
		return;
	}
	dlrt_kv_set_expire(c->kv, argv[1], argvlen[1], at);
	c->rc |= dlrt_resp_add_simple(c->out, "OK");
}

void dlrt_kv_cmd_setex(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	setex_generic(c, argc, argv, argvlen, F_EX, "setex");
}

void dlrt_kv_cmd_psetex(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	setex_generic(c, argc, argv, argvlen, F_PX, "psetex");
}

/* ---- EXPIRE and friends ------------------------------------------------- */

/* Redis's parseExtendedExpireArgumentsOrReply. */
static int expire_flags(struct dlrt_kv_ctx *c, DLRT_KV_ARGS, int *flags)
{
	for (size_t j = 3; j < argc; j++) {
		if (dlrt_kv_arg_is(argv[j], argvlen[j], "nx")) {
			*flags |= F_NX;
		} else if (dlrt_kv_arg_is(argv[j], argvlen[j], "xx")) {
			*flags |= F_XX;
		} else if (dlrt_kv_arg_is(argv[j], argvlen[j], "gt")) {
			*flags |= F_GT;
		} else if (dlrt_kv_arg_is(argv[j], argvlen[j], "lt")) {
			*flags |= F_LT;
		} else {
			/* Redis prints the argument as a C string. */
			size_t n = strnlen((const char *)argv[j], argvlen[j]);

			c->rc |= dlrt_resp_add_errorf(c->out, "ERR Unsupported option %.*s",
						      (int)(n > 128 ? 128 : n),
						      (const char *)argv[j]);
			return -1;
		}
	}
	if ((*flags & F_NX) && (*flags & (F_XX | F_GT | F_LT))) {
		err(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
		return -1;
	}
	if ((*flags & F_GT) && (*flags & F_LT)) {
		err(c, "ERR GT and LT options at the same time are not compatible");
		return -1;
	}
	return 0;
}

/* relative: add now; seconds: argv[2] is in seconds. */
static void expire_generic(struct dlrt_kv_ctx *c, DLRT_KV_ARGS, const char *name,
			   bool relative, bool seconds)
{
	int flags = 0;
	int64_t when, base = relative ? dlrt_kv_now_ms(c->kv) : 0, cur;
	const uint8_t *v;
	size_t vl;

	if (expire_flags(c, argc, argv, argvlen, &flags) < 0)
		return;
	if (dlrt_resp_str2ll(argv[2], argvlen[2], &when) < 0) {
		err(c, ERR_NOT_INT);
		return;
	}
	if (seconds) {
		if (when > INT64_MAX / 1000 || when < INT64_MIN / 1000) {
			err_expire_time(c, name);
			return;
		}
		when *= 1000;
	}
	if (when > INT64_MAX - base) {
		err_expire_time(c, name);
		return;
	}
	when += base;
	if (!dlrt_kv_lookup(c->kv, argv[1], argvlen[1], &v, &vl)) {
		c->rc |= dlrt_resp_add_int(c->out, 0);
		return;
	}
	cur = dlrt_kv_get_expire(c->kv, argv[1], argvlen[1]);
	if (((flags & F_NX) && cur != DLRT_KV_NO_EXPIRY) ||
	    ((flags & F_XX) && cur == DLRT_KV_NO_EXPIRY) ||
	    ((flags & F_GT) && (cur == DLRT_KV_NO_EXPIRY || when <= cur)) ||
	    ((flags & F_LT) && cur != DLRT_KV_NO_EXPIRY && when >= cur)) {
		c->rc |= dlrt_resp_add_int(c->out, 0);
		return;
	}
	/* DLRT_KV_NO_EXPIRY is INT64_MIN: as a time it is long past anyway. */
	if (when == DLRT_KV_NO_EXPIRY)
		when++;
	dlrt_kv_set_expire(c->kv, argv[1], argvlen[1], when);
	c->rc |= dlrt_resp_add_int(c->out, 1);
}

void dlrt_kv_cmd_expire(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	expire_generic(c, argc, argv, argvlen, "expire", true, true);
}

void dlrt_kv_cmd_pexpire(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	expire_generic(c, argc, argv, argvlen, "pexpire", true, false);
}

void dlrt_kv_cmd_expireat(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	expire_generic(c, argc, argv, argvlen, "expireat", false, true);
}

void dlrt_kv_cmd_pexpireat(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	expire_generic(c, argc, argv, argvlen, "pexpireat", false, false);
}

static void ttl_generic(struct dlrt_kv_ctx *c, const uint8_t *key, size_t klen, bool ms)
{
	const uint8_t *v;
	size_t vl;
	int64_t at, ttl;

	if (!dlrt_kv_lookup(c->kv, key, klen, &v, &vl)) {
		c->rc |= dlrt_resp_add_int(c->out, -2);
		return;
	}
	at = dlrt_kv_get_expire(c->kv, key, klen);
	if (at == DLRT_KV_NO_EXPIRY) {
		c->rc |= dlrt_resp_add_int(c->out, -1);
		return;
	}
	ttl = at - dlrt_kv_now_ms(c->kv);
	if (ttl < 0)
		ttl = 0;
	c->rc |= dlrt_resp_add_int(c->out, ms ? ttl : (ttl + 500) / 1000);
}

void dlrt_kv_cmd_ttl(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	(void)argc;
	ttl_generic(c, argv[1], argvlen[1], false);
}

void dlrt_kv_cmd_pttl(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	(void)argc;
	ttl_generic(c, argv[1], argvlen[1], true);
}

void dlrt_kv_cmd_persist(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	(void)argc;
	if (dlrt_kv_get_expire(c->kv, argv[1], argvlen[1]) == DLRT_KV_NO_EXPIRY) {
		c->rc |= dlrt_resp_add_int(c->out, 0);
		return;
	}
	dlrt_kv_set_expire(c->kv, argv[1], argvlen[1], DLRT_KV_NO_EXPIRY);
	c->rc |= dlrt_resp_add_int(c->out, 1);
}
