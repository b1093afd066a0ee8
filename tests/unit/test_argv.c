/* Unit tests: a helper program's argument list built with a bound (common/argv.c). */
#include <string.h>

#include "common/argv.h"
#include "tap.h"

int main(void)
{
	static struct dlrt_argv a;
	static char big[DLRT_ARGV_ROOM];

	dlrt_argv_init(&a);
	dlrt_argv_add(&a, "--job");
	dlrt_argv_add(&a, "%u", 42u);
	dlrt_argv_program(&a, "/x/dlrt-lifecycle");
	TAP_IS_STR(a.v[0], "/x/dlrt-lifecycle", "v[0] is the program, set last");
	TAP_IS_STR(a.v[1], "--job", "the first option");
	TAP_IS_STR(a.v[2], "42", "a number formatted into the list's own room");
	TAP_OK(a.v[3] == NULL && a.n == 3 && !a.full, "NULL-terminated, not full");

	dlrt_argv_init(&a);
	for (int i = 0; i < DLRT_ARGV_MAX + 5; i++)
		dlrt_argv_add(&a, "%d", i);
	TAP_OK(a.full, "too many arguments: the list is full");
	TAP_OK(a.n == DLRT_ARGV_MAX && a.v[DLRT_ARGV_MAX] == NULL, "and never written past its end");

	dlrt_argv_init(&a);
	memset(big, 'x', sizeof(big) - 1);
	dlrt_argv_add(&a, "--progress-dir");
	dlrt_argv_add(&a, "%s", big);
	TAP_OK(a.full && a.n == 2 && a.v[2] == NULL, "an argument longer than the room: full, not cut");
	dlrt_argv_init(&a);
	TAP_OK(!a.full && a.n == 1 && a.used == 0, "init empties it again");
	return tap_done();
}
