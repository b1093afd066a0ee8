/* test_infer_auth.c - owner-only access of dlrt-infer (inference/pool/auth.c): the
 * secret's challenge-response (accepted once per challenge, forged and replayed
 * proofs refused), MUNGE where munged answers, and the CHALLENGE/AUTH messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inference/pool/auth.h"
#include "inference/proto/proto.h"
#include "tap.h"

static void test_secret(void)
{
	const char *secret = "8f3a0c5e9b7d1f2a4c6e8a0b2d4f6a8c0e2a4c6e8a0b2d4f6a8c0e2a4c6e8a0b";
	uint8_t sn[DLRT_AUTH_NONCE], sn2[DLRT_AUTH_NONCE], cn[DLRT_AUTH_NONCE], t[DLRT_AUTH_TRANSCRIPT];
	char proof[DLRT_AUTH_PROOF_MAX + 1], bad[DLRT_AUTH_PROOF_MAX + 1];
	struct dlrt_err err;
	uint8_t mode = 0;
	char why[256];

	TAP_IS_INT(dlrt_auth_pick("secret", &mode, why, sizeof(why), &err), 0, "secret forced");
	TAP_IS_INT(mode, DLRT_AUTH_SECRET, "mode secret");
	TAP_IS_INT(dlrt_auth_pick("kerberos", &mode, why, sizeof(why), &err), -1,
		   "unknown mode refused");
	TAP_OK(strstr(err.msg, "use munge, secret or auto") != NULL, "one line: %s", err.msg);
	dlrt_auth_nonce(sn, &err);
	dlrt_auth_nonce(sn2, &err);
	TAP_OK(memcmp(sn, sn2, sizeof(sn)) != 0, "nonces differ");
	TAP_IS_INT(dlrt_auth_prove(DLRT_AUTH_SECRET, sn, secret, 2, 7, cn, proof, &err), 0,
		   "proof made");
	TAP_IS_INT(strlen(proof), 64, "an HMAC in hex");
	TAP_OK(strstr(proof, secret) == NULL, "the proof is not the secret");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn, secret, 2, 7, cn, proof, getuid(), &err), 0,
		   "the proof is accepted");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn2, secret, 2, 7, cn, proof, getuid(), &err),
		   -1, "replayed against another challenge: refused");
	TAP_OK(strstr(err.msg, "forged or replayed") != NULL, "says why: %s", err.msg);
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn, secret, 1, 7, cn, proof, getuid(), &err),
		   -1, "for another role: refused");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn, secret, 2, 8, cn, proof, getuid(), &err),
		   -1, "for another epoch: refused");
	snprintf(bad, sizeof(bad), "%s", proof);
	bad[10] = bad[10] == 'a' ? 'b' : 'a';
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn, secret, 2, 7, cn, bad, getuid(), &err), -1,
		   "one changed character: refused");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_SECRET, sn, secret, 2, 7, cn, "", getuid(), &err), -1,
		   "empty proof: refused");
	dlrt_auth_transcript(t, 2, sn, cn, 1, 0x0102030405060708ull);
	TAP_OK(!memcmp(t, "DLRT-INFER-AUTH1", 16) && t[16] == 2 && t[16 + 65] == 1 &&
	       t[16 + 66] == 8 && t[DLRT_AUTH_TRANSCRIPT - 1] == 1, "transcript layout");
}

static void test_munge(void)
{
	uint8_t sn[DLRT_AUTH_NONCE], sn2[DLRT_AUTH_NONCE], cn[DLRT_AUTH_NONCE];
	char proof[DLRT_AUTH_PROOF_MAX + 1];
	struct dlrt_err err;
	uint8_t mode = 0;
	char why[256];

	if (dlrt_auth_pick("munge", &mode, why, sizeof(why), &err) < 0) {
		TAP_OK(strstr(err.msg, "DLRT_INFER_AUTH=munge but") != NULL,
		       "no munged here, said in one line: %s", err.msg);
		TAP_OK(dlrt_auth_pick("auto", &mode, why, sizeof(why), &err) == 0 &&
		       mode == DLRT_AUTH_SECRET, "auto falls back to the secret (# SKIP munge cases)");
		return;
	}
	TAP_IS_INT(mode, DLRT_AUTH_MUNGE, "munged answers: mode munge");
	dlrt_auth_nonce(sn, &err);
	dlrt_auth_nonce(sn2, &err);
	TAP_IS_INT(dlrt_auth_prove(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, &err), 0,
		   "a MUNGE credential made");
	TAP_OK(!strncmp(proof, "MUNGE:", 6), "it looks like one");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_MUNGE, sn2, "", 1, 3, cn, proof, getuid(), &err), -1,
		   "for another challenge: refused");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, getuid(), &err), -1,
		   "then the right one: replayed (munged decoded it once)");
	TAP_OK(strstr(err.msg, "replayed MUNGE credential") != NULL, "says why: %s", err.msg);
	TAP_IS_INT(dlrt_auth_prove(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, &err), 0, "another");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, getuid() + 1, &err),
		   -1, "from a uid that is not the owner's: refused");
	TAP_OK(strstr(err.msg, "not the pool owner") != NULL, "says why: %s", err.msg);
	TAP_IS_INT(dlrt_auth_prove(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, &err), 0, "another");
	proof[strlen(proof) / 2] ^= 1;
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, getuid(), &err), -1,
		   "forged: refused (%s)", err.msg);
	TAP_IS_INT(dlrt_auth_prove(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, &err), 0, "another");
	TAP_IS_INT(dlrt_auth_verify(DLRT_AUTH_MUNGE, sn, "", 1, 3, cn, proof, getuid(), &err), 0,
		   "the right one: accepted");
}

static void test_messages(void)
{
	struct dlrt_buf b;
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	struct dlrt_ip_challenge c = { .mode = 1 }, c2;
	static struct dlrt_ip_auth a = { .mode = 2 }, a2;

	memset(c.nonce, 7, sizeof(c.nonce));
	memset(a.nonce, 9, sizeof(a.nonce));
	strcpy(a.proof, "00ff");
	dlrt_buf_init(&b, 1 << 20);
	dlrt_ip_put_challenge(&b, &c);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(dlrt_ip_get_challenge(f.payload, f.len, &c2, &err), 0, "CHALLENGE decodes");
	TAP_OK(c2.mode == 1 && !memcmp(c2.nonce, c.nonce, sizeof(c.nonce)), "CHALLENGE round trip");
	TAP_IS_INT(dlrt_ip_get_challenge(f.payload, f.len - 1, &c2, &err), -1, "truncated CHALLENGE");
	dlrt_buf_consume(&b, f.frame_len);
	c.mode = 3;
	dlrt_ip_put_challenge(&b, &c);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(dlrt_ip_get_challenge(f.payload, f.len, &c2, &err), -1, "unknown mode refused");
	dlrt_buf_consume(&b, f.frame_len);
	dlrt_ip_put_auth(&b, &a);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_STR(dlrt_ip_type_name(f.type), "AUTH", "AUTH framed");
	TAP_IS_INT(dlrt_ip_get_auth(f.payload, f.len, &a2, &err), 0, "AUTH decodes");
	TAP_OK(a2.mode == 2 && a2.nonce[31] == 9 && !strcmp(a2.proof, "00ff"), "AUTH round trip");
	TAP_IS_INT(dlrt_ip_get_auth(f.payload, f.len - 1, &a2, &err), -1, "truncated AUTH");
	dlrt_buf_free(&b);
}

int main(void)
{
	test_secret();
	test_munge();
	test_messages();
	return tap_done();
}
