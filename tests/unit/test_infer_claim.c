/* test_infer_claim.c - epoch claims (inference/pool/claim.c): only names
 * epoch-N count; each epoch is won once; a claim below a higher one is lost;
 * the highest claim is found; a claims directory that is a link or open to
 * others is refused; a change of the directory is seen; clear removes them. */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inference/pool/claim.h"
#include "tap.h"

static int parse(const char *s, uint64_t *e)
{
	return dlrt_claim_parse_name(s, strlen(s), e);
}

int main(void)
{
	char pool[] = "/tmp/dlrt-claim-XXXXXX", dir[256], other[256];
	struct dlrt_err err;
	struct stat seen = { 0 };
	uint64_t e = 0;
	int wins = 0;

	TAP_OK(parse("epoch-1", &e) == 0 && e == 1, "epoch-1 parses");
	TAP_OK(parse("epoch-18446744073709551615", &e) == 0 && e == UINT64_MAX, "the largest epoch");
	TAP_OK(parse("epoch-18446744073709551616", &e) < 0, "an epoch past 64 bits is refused");
	TAP_OK(parse("epoch-0", &e) < 0 && parse("epoch-01", &e) < 0, "zero and leading zeros refused");
	TAP_OK(parse("epoch-", &e) < 0 && parse("epoch--1", &e) < 0 && parse("epoch-+1", &e) < 0,
	   "empty and signed refused");
	TAP_OK(parse("epoch-1x", &e) < 0 && parse(".claim.n1.5", &e) < 0 && parse("Epoch-1", &e) < 0,
	   "other names refused");
	TAP_OK(dlrt_claim_parse_name("epoch-12", 7, &e) == 0 && e == 1, "only len bytes are read");

	if (!mkdtemp(pool))
		return 1;
	TAP_OK(dlrt_claim_highest(pool, &e, &err) == 0 && e == 0, "no claim: highest 0");
	TAP_OK(dlrt_claim_changed(pool, &seen) == 1, "first look: changed");
	TAP_OK(dlrt_claim_changed(pool, &seen) == 0, "second look: unchanged");
	TAP_OK(dlrt_claim_take(pool, 3, &err) == 0, "epoch 3 won");
	TAP_OK(dlrt_claim_changed(pool, &seen) == 1, "a new claim changes the directory");
	TAP_OK(dlrt_claim_take(pool, 3, &err) == 1, "epoch 3 again: taken");
	TAP_OK(dlrt_claim_take(pool, 2, &err) == 1, "epoch 2 below a claim of 3: lost");
	TAP_OK(dlrt_claim_highest(pool, &e, &err) == 0 && e == 3, "highest is 3");
	TAP_OK(dlrt_claim_take(pool, 0, &err) < 0, "epoch 0 refused");
	TAP_OK(!dlrt_claim_stale(pool, 3, 60) && !dlrt_claim_stale(pool, 9, 0),
	       "a fresh claim, and a missing one, are not stale");
	{
		char p3[300];
		struct timespec old[2] = { { .tv_sec = time(NULL) - 120 }, { .tv_sec = time(NULL) - 120 } };

		snprintf(p3, sizeof(p3), "%s/claims/epoch-3", pool);
		utimensat(AT_FDCWD, p3, old, AT_SYMLINK_NOFOLLOW);
		TAP_OK(dlrt_claim_stale(pool, 3, 60), "a claim two minutes old is stale");
	}

	/* Eight processes race for epoch 4: exactly one wins. */
	for (int i = 0; i < 8; i++)
		if (fork() == 0)
			_exit(dlrt_claim_take(pool, 4, &err) == 0 ? 0 : 1);
	for (int i = 0; i < 8; i++) {
		int status;

		wait(&status);
		wins += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	TAP_IS_INT(wins, 1, "eight racing claimers of epoch 4: one wins");
	snprintf(dir, sizeof(dir), "%s/claims", pool);
	snprintf(other, sizeof(other), "%s/claims/.claim.x.1", pool);
	{
		struct stat st;

		TAP_OK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "claims directory is 0700");
	}
	chmod(dir, 0777);
	TAP_OK(dlrt_claim_take(pool, 5, &err) < 0 && strstr(err.msg, "chmod go="),
	   "a claims directory open to others is refused: %s", err.msg);
	chmod(dir, 0700);
	TAP_OK(dlrt_claim_clear(pool, &err) == 0 && dlrt_claim_highest(pool, &e, &err) == 0 && e == 0,
	   "clear removes every claim");
	{
		char moved[300];

		snprintf(moved, sizeof(moved), "%s/real", pool);
		rename(dir, moved);
		if (symlink(moved, dir) == 0)
			TAP_OK(dlrt_claim_take(pool, 1, &err) < 0, "a claims directory that is a link "
			   "is refused: %s", err.msg);
		unlink(dir);
		rmdir(moved);
	}
	(void)other;
	rmdir(dir);
	rmdir(pool);
	return tap_done();
}
