/* test_elfneeds.c - dlrt_program_uses_mpi on paths a user controls.
 *
 * The step's program is the user's path: a FIFO must give "no" at once (the
 * open blocked before, in root slurmstepd), and so must a device, a folder and
 * a missing file; a real ELF program is still read. An alarm bounds the test,
 * so a blocking open fails it instead of hanging it.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exchange/elfneeds.h"
#include "tap.h"

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - dlrt_program_uses_mpi blocked (alarm)\n";

	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

int main(void)
{
	char dir[] = "/tmp/dlrt-elfneeds-XXXXXX", fifo[64];

	signal(SIGALRM, on_alarm);
	alarm(10);
	if (!mkdtemp(dir))
		return 2;
	snprintf(fifo, sizeof(fifo), "%s/prog", dir);
	TAP_OK(mkfifo(fifo, 0700) == 0, "a FIFO as the program");
	TAP_OK(!dlrt_program_uses_mpi(fifo), "a FIFO: no, at once (no writer needed)");
	TAP_OK(!dlrt_program_uses_mpi("/dev/zero"), "/dev/zero: no");
	TAP_OK(!dlrt_program_uses_mpi(dir), "a folder: no");
	TAP_OK(!dlrt_program_uses_mpi("/nonexistent/prog"), "a missing file: no");
	TAP_OK(!dlrt_program_uses_mpi("/bin/true"), "a real ELF program without MPI: no");
	unlink(fifo);
	rmdir(dir);
	return tap_done();
}
