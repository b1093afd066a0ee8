/* tap.h - a tiny Test Anything Protocol emitter for dlrt's unit tests.
 *
 * Each test program prints "1..N" at the end (no plan up front, so tests can be
 * added without counting) and one "ok"/"not ok" line per check; `prove` reads
 * them and prints the standard "All tests successful / Result: PASS" summary.
 * Header-only on purpose: every test is one .c file with no extra link step.
 */
#ifndef DLRT_TAP_H
#define DLRT_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count;
static int tap_failed;

#define TAP_OK(cond, ...)                                                       \
	do {                                                                    \
		int tap_ok_ = !!(cond);                                         \
		tap_count++;                                                    \
		if (!tap_ok_)                                                   \
			tap_failed++;                                           \
		printf("%sok %d - ", tap_ok_ ? "" : "not ", tap_count);         \
		printf(__VA_ARGS__);                                            \
		printf("\n");                                                   \
		if (!tap_ok_)                                                   \
			printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__,     \
			       #cond);                                          \
	} while (0)

#define TAP_IS_INT(got, want, ...)                                              \
	do {                                                                    \
		long long tap_g_ = (long long)(got), tap_w_ = (long long)(want); \
		TAP_OK(tap_g_ == tap_w_, __VA_ARGS__);                          \
		if (tap_g_ != tap_w_)                                           \
			printf("#   got %lld, want %lld\n", tap_g_, tap_w_);      \
	} while (0)

#define TAP_IS_STR(got, want, ...)                                              \
	do {                                                                    \
		const char *tap_g_ = (got), *tap_w_ = (want);                   \
		int tap_eq_ = tap_g_ && tap_w_ ? strcmp(tap_g_, tap_w_) == 0    \
					       : tap_g_ == tap_w_;              \
		TAP_OK(tap_eq_, __VA_ARGS__);                                   \
		if (!tap_eq_)                                                   \
			printf("#   got \"%s\", want \"%s\"\n",                 \
			       tap_g_ ? tap_g_ : "(null)",                      \
			       tap_w_ ? tap_w_ : "(null)");                     \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
