#include "auth.h"

#include <dlfcn.h>
#include <errno.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crypto.h"

/* The transcript's first 16 bytes: the string without its NUL. */
static const char MAGIC[] = "DLRT-INFER-AUTH1";
#define MAGIC_LEN (sizeof(MAGIC) - 1)
_Static_assert(MAGIC_LEN == 16, "the transcript starts with 16 bytes of magic");

const char *dlrt_auth_mode_name(unsigned mode)
{
	return mode == DLRT_AUTH_MUNGE ? "munge" : mode == DLRT_AUTH_SECRET ? "secret" : "?";
}

void dlrt_auth_transcript(uint8_t out[DLRT_AUTH_TRANSCRIPT], uint8_t mode,
			  const uint8_t snonce[DLRT_AUTH_NONCE],
			  const uint8_t cnonce[DLRT_AUTH_NONCE], uint8_t role, uint64_t epoch)
{
	size_t o = 0;

	memcpy(out, MAGIC, MAGIC_LEN);
	o += MAGIC_LEN;
	out[o++] = mode;
	memcpy(out + o, snonce, DLRT_AUTH_NONCE);
	o += DLRT_AUTH_NONCE;
	memcpy(out + o, cnonce, DLRT_AUTH_NONCE);
	o += DLRT_AUTH_NONCE;
	out[o++] = role;
	for (int i = 0; i < 8; i++)
		out[o++] = (uint8_t)(epoch >> (8 * i));
}

int dlrt_auth_nonce(uint8_t out[DLRT_AUTH_NONCE], struct dlrt_err *err)
{
	if (dlrt_crypto_random(out, DLRT_AUTH_NONCE) < 0)
		return dlrt_err_errno(err, errno, "cannot get random bytes for authentication");
	return 0;
}

/* ---- libmunge, loaded at run time: a node without it falls back to the secret ---- */

static struct {
	bool tried, ok;
	char why[200];
	__typeof__(munge_encode) *encode;
	__typeof__(munge_decode) *decode;
	__typeof__(munge_strerror) *strerror_;
	__typeof__(munge_ctx_create) *ctx_create;
	__typeof__(munge_ctx_destroy) *ctx_destroy;
	__typeof__(munge_ctx_set) *ctx_set;
} M;

static bool munge_load(void)
{
	void *h;

	if (M.tried)
		return M.ok;
	M.tried = true;
	h = dlopen("libmunge.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(M.why, sizeof(M.why), "libmunge.so.2 cannot be loaded (install munge)");
		return false;
	}
	M.encode = (__typeof__(M.encode))dlsym(h, "munge_encode");
	M.decode = (__typeof__(M.decode))dlsym(h, "munge_decode");
	M.strerror_ = (__typeof__(M.strerror_))dlsym(h, "munge_strerror");
	M.ctx_create = (__typeof__(M.ctx_create))dlsym(h, "munge_ctx_create");
	M.ctx_destroy = (__typeof__(M.ctx_destroy))dlsym(h, "munge_ctx_destroy");
	M.ctx_set = (__typeof__(M.ctx_set))dlsym(h, "munge_ctx_set");
	if (!M.encode || !M.decode || !M.strerror_ || !M.ctx_create || !M.ctx_destroy ||
	    !M.ctx_set) {
		snprintf(M.why, sizeof(M.why), "libmunge.so.2 lacks the functions dlrt needs");
		return false;
	}
	M.ok = true;
	return true;
}

/* A context on $DLRT_MUNGE_SOCKET if set (munged's default socket otherwise). */
static munge_ctx_t munge_ctx(void)
{
	munge_ctx_t ctx = M.ctx_create();
	const char *sock = getenv("DLRT_MUNGE_SOCKET");

	if (ctx && sock && *sock)
		M.ctx_set(ctx, MUNGE_OPT_SOCKET, sock);
	return ctx;
}

static int munge_enc(const void *p, int n, uid_t only, char **cred, struct dlrt_err *err)
{
	munge_ctx_t ctx;
	munge_err_t e;

	if (!munge_load())
		return dlrt_err_set(err, "%s", M.why);
	ctx = munge_ctx();
	if (!ctx)
		return dlrt_err_set(err, "out of memory for a MUNGE context");
	/* Only the pool owner can decode it: a stolen credential is useless. */
	M.ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, only);
	e = M.encode(cred, ctx, p, n);
	M.ctx_destroy(ctx);
	if (e != EMUNGE_SUCCESS)
		return dlrt_err_set(err, "MUNGE cannot make a credential: %s (is munged running?)",
				    M.strerror_(e));
	return 0;
}

int dlrt_auth_pick(const char *want, uint8_t *mode, char *why, size_t whylen,
		   struct dlrt_err *err)
{
	static const uint8_t probe[] = "dlrt-infer munge probe";
	struct dlrt_err e2;
	char *cred = NULL;
	void *back = NULL;
	int blen = 0;
	uid_t uid;
	gid_t gid;
	munge_ctx_t ctx;
	munge_err_t e;

	if (!want || !*want)
		want = getenv("DLRT_INFER_AUTH");
	if (!want || !*want)
		want = "auto";
	why[0] = '\0';
	if (!strcmp(want, "secret")) {
		*mode = DLRT_AUTH_SECRET;
		snprintf(why, whylen, "DLRT_INFER_AUTH=secret");
		return 0;
	}
	if (strcmp(want, "munge") && strcmp(want, "auto"))
		return dlrt_err_set(err, "DLRT_INFER_AUTH=%.40s: use munge, secret or auto", want);
	/* Does munged answer? Encode and decode one credential. */
	if (munge_enc(probe, (int)sizeof(probe), getuid(), &cred, &e2) < 0) {
		snprintf(why, whylen, "%s", e2.msg);
	} else {
		ctx = munge_ctx();
		e = ctx ? M.decode(cred, ctx, &back, &blen, &uid, &gid) : EMUNGE_NO_MEMORY;
		if (ctx)
			M.ctx_destroy(ctx);
		free(back);
		free(cred);
		if (e == EMUNGE_SUCCESS) {
			*mode = DLRT_AUTH_MUNGE;
			return 0;
		}
		snprintf(why, whylen, "munged cannot decode its own credential: %s",
			 M.strerror_(e));
	}
	if (!strcmp(want, "munge"))
		return dlrt_err_set(err, "DLRT_INFER_AUTH=munge but %s", why);
	*mode = DLRT_AUTH_SECRET;
	return 0;
}

static void hmac_hex(const char *secret, const uint8_t *t, char out[2 * DLRT_HMAC_LEN + 1])
{
	uint8_t mac[DLRT_HMAC_LEN];

	dlrt_crypto_hmac_sha256(secret, strlen(secret), t, DLRT_AUTH_TRANSCRIPT, mac);
	for (int i = 0; i < DLRT_HMAC_LEN; i++)
		sprintf(out + 2 * i, "%02x", mac[i]);
}

int dlrt_auth_prove(uint8_t mode, const uint8_t snonce[DLRT_AUTH_NONCE], const char *secret,
		    uint8_t role, uint64_t epoch, uint8_t cnonce[DLRT_AUTH_NONCE],
		    char proof[DLRT_AUTH_PROOF_MAX + 1], struct dlrt_err *err)
{
	uint8_t t[DLRT_AUTH_TRANSCRIPT];

	if (dlrt_auth_nonce(cnonce, err) < 0)
		return -1;
	dlrt_auth_transcript(t, mode, snonce, cnonce, role, epoch);
	if (mode == DLRT_AUTH_SECRET) {
		hmac_hex(secret, t, proof);
		return 0;
	}
	if (mode == DLRT_AUTH_MUNGE) {
		char *cred;

		if (munge_enc(t, (int)sizeof(t), getuid(), &cred, err) < 0)
			return dlrt_err_set(err, "the coordinator requires MUNGE, but here: %.3000s",
					    err->msg);
		if (strlen(cred) > DLRT_AUTH_PROOF_MAX) {
			free(cred);
			return dlrt_err_set(err, "the MUNGE credential is too long");
		}
		snprintf(proof, DLRT_AUTH_PROOF_MAX + 1, "%s", cred);
		free(cred);
		return 0;
	}
	return dlrt_err_set(err, "the coordinator asks for unknown authentication mode %u: run "
			    "the same dlrt version everywhere", mode);
}

int dlrt_auth_verify(uint8_t mode, const uint8_t snonce[DLRT_AUTH_NONCE], const char *secret,
		     uint8_t role, uint64_t epoch, const uint8_t cnonce[DLRT_AUTH_NONCE],
		     const char *proof, uid_t owner, struct dlrt_err *err)
{
	uint8_t t[DLRT_AUTH_TRANSCRIPT];

	dlrt_auth_transcript(t, mode, snonce, cnonce, role, epoch);
	if (mode == DLRT_AUTH_SECRET) {
		char want[2 * DLRT_HMAC_LEN + 1];

		hmac_hex(secret, t, want);
		if (strlen(proof) != strlen(want) || !dlrt_crypto_equal(proof, want, strlen(want)))
			return dlrt_err_set(err, "wrong proof of the pool secret (forged or replayed)");
		return 0;
	}
	if (mode == DLRT_AUTH_MUNGE) {
		munge_ctx_t ctx;
		munge_err_t e;
		void *p = NULL;
		int n = 0;
		uid_t uid = (uid_t)-1;
		gid_t gid;

		if (!munge_load())
			return dlrt_err_set(err, "%s", M.why);
		ctx = munge_ctx();
		if (!ctx)
			return dlrt_err_set(err, "out of memory for a MUNGE context");
		e = M.decode(proof, ctx, &p, &n, &uid, &gid);
		M.ctx_destroy(ctx);
		if (e != EMUNGE_SUCCESS) {
			free(p);
			switch (e) {
			case EMUNGE_CRED_REPLAYED:
				return dlrt_err_set(err, "replayed MUNGE credential (uid %d)", (int)uid);
			case EMUNGE_CRED_INVALID:
			case EMUNGE_BAD_CRED:
				return dlrt_err_set(err, "forged or corrupt MUNGE credential: %s",
						    M.strerror_(e));
			default:
				return dlrt_err_set(err, "MUNGE credential refused: %s", M.strerror_(e));
			}
		}
		if (uid != owner) {
			free(p);
			return dlrt_err_set(err, "MUNGE credential of uid %d, not the pool owner "
					    "(uid %d)", (int)uid, (int)owner);
		}
		if (n != (int)sizeof(t) || !dlrt_crypto_equal(p, t, sizeof(t))) {
			free(p);
			return dlrt_err_set(err, "MUNGE credential of the owner made for another "
					    "connection (replayed)");
		}
		free(p);
		return 0;
	}
	return dlrt_err_set(err, "unknown authentication mode %u", mode);
}
