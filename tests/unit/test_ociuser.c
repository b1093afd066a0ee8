/* test_ociuser.c - dlrt-oci-run --user's runner (tools/ociuser.c): the
 * runtime's exit status and output come through; one that does not end in
 * time is killed and reported in one line; a process it leaves behind with
 * its output open is not waited for; the child's preparation can stop it. */
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tools/ociuser.h"

static char dir[] = "/tmp/dlrt-test-ociuser.XXXXXX";
static char me[256];

/* dlrt_ociuser_run with its stdout and stderr in dir/out and dir/err. */
static int run(char *const *argv, int timeout_s, int (*prepare)(char *const *),
	       struct dlrt_err *err)
{
	char path[300];
	int saved[2] = { dup(STDOUT_FILENO), dup(STDERR_FILENO) }, rc;

	fflush(stdout);
	snprintf(path, sizeof(path), "%s/out", dir);
	if (!freopen(path, "w", stdout))
		return -2;
	snprintf(path, sizeof(path), "%s/err", dir);
	if (!freopen(path, "w", stderr))
		return -2;
	rc = dlrt_ociuser_run(me, argv, timeout_s, prepare, err);
	fflush(stdout);
	fflush(stderr);
	dup2(saved[0], STDOUT_FILENO);
	dup2(saved[1], STDERR_FILENO);
	close(saved[0]);
	close(saved[1]);
	return rc;
}

static const char *slurp(const char *name)
{
	static char buf[4096];
	char path[300];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

static int refuse(char *const *argv)
{
	fprintf(stderr, "dlrt-oci-run: not prepared (%s)\n", argv[0]);
	return -1;
}

int main(void)
{
	struct dlrt_err err = { "" };
	struct passwd *pw = getpwuid(geteuid());
	char pidfile[300], cmd[400];
	int rc;
	FILE *f;

	if (!pw || !mkdtemp(dir))
		return 1;
	snprintf(me, sizeof(me), "%s", pw->pw_name);

	rc = run((char *[]){ "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL }, 10, NULL,
		 &err);
	TAP_IS_INT(rc, 3, "the runtime's exit status (%s)", err.msg);
	TAP_IS_STR(slurp("out"), "out\n", "its stdout on ours");
	TAP_IS_STR(slurp("err"), "err\n", "its stderr on ours");

	rc = run((char *[]){ "/bin/sh", "-c", "kill -TERM $$", NULL }, 10, NULL, &err);
	TAP_IS_INT(rc, 128 + SIGTERM, "ended by a signal: 128 + the signal");

	rc = run((char *[]){ "sleep", "60", NULL }, 1, NULL, &err);
	TAP_IS_INT(rc, -1, "one that does not end within the limit: killed, -1");
	TAP_OK(strstr(err.msg, "sleep did not end within 1 s, so it was killed: the state folder "
		      "it reads is ") && strstr(err.msg, "who may have put something there it "
		      "waits on (a named pipe in place of a state file)"), "%s", err.msg);

	/* What the runtime leaves behind holding its output must not hold us:
	 * slurmstepd reads that output to its end. */
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	snprintf(cmd, sizeof(cmd), "sleep 60 & echo $! >%s; exit 4", pidfile);
	rc = run((char *[]){ "/bin/sh", "-c", cmd, NULL }, 30, NULL, &err);
	TAP_IS_INT(rc, 4, "a process left behind with the output open: not waited for");
	f = fopen(pidfile, "r");
	if (f) {
		int pid = 0;

		if (fscanf(f, "%d", &pid) == 1 && pid > 0)
			kill(pid, SIGKILL);
		fclose(f);
	}

	rc = run((char *[]){ "true", NULL }, 10, refuse, &err);
	TAP_IS_INT(rc, 1, "a preparation that fails: 1, the runtime not run");
	TAP_IS_STR(slurp("err"), "dlrt-oci-run: not prepared (true)\n", "its line on stderr");

	rc = run((char *[]){ "/nonexistent/crun", NULL }, 10, NULL, &err);
	TAP_IS_INT(rc, 127, "a runtime that is not there: 127");
	TAP_OK(strstr(slurp("err"), "cannot run /nonexistent/crun: No such file or directory: "
			"install it on the nodes or fix oci.conf\n") != NULL, "%s", slurp("err"));

	snprintf(me, sizeof(me), "no-such-user-dlrt");
	rc = run((char *[]){ "true", NULL }, 10, NULL, &err);
	TAP_IS_INT(rc, -1, "no such user: -1");
	TAP_OK(strstr(err.msg, "--user no-such-user-dlrt: no such user (") != NULL, "%s", err.msg);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
