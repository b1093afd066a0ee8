/* test_ocitask.c - dlrt-oci-run's task config.json (tools/ocitask.c on
 * tools/ocijson.c) and the program itself ($(BUILD)/libexec/dlrt-oci-run):
 * process.env replaced, inserted, process added; strings with escapes and
 * unicode; the network namespace refusal; the runtime's state folder;
 * malformed documents; the size bound. Every output is read back by Python's json (python3 -m json.tool). */
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "buildpath.h"
#include "tools/ocitask.h"

static char dir[] = "/tmp/dlrt-test-ocitask.XXXXXX";
static char prog[4096];

static int write_text(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -1;
	rc = fwrite(data, 1, len, f) == len ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

static char *read_text(const char *path)
{
	char *data = NULL;
	size_t len;
	struct dlrt_err err;

	if (dlrt_ocitask_read(path, &data, &len, &err) < 0)
		return strdup("");
	return data;
}

/* Python's json reads it back. */
static int python_reads(const char *data, size_t len)
{
	char path[256], cmd[512];

	snprintf(path, sizeof(path), "%s/check.json", dir);
	if (write_text(path, data, len) < 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null", path);
	return system(cmd) == 0;
}

/* Builds the task config; returns the rc, *got the output (malloc'ed). */
static int build(const char *doc, char *const *env, char **got, struct dlrt_err *err)
{
	struct dlrt_buf out;
	int rc;

	dlrt_buf_init(&out, DLRT_OCITASK_MAX_OUT);
	err->msg[0] = '\0';
	rc = dlrt_ocitask_build(doc, strlen(doc), env, &out, err);
	*got = strndup(out.len ? (const char *)dlrt_buf_head(&out) : "", out.len);
	dlrt_buf_free(&out);
	return rc;
}

static char *env1[] = { "B=2", "A=1", "A=second", "NOEQUALS", "=x=1", NULL };
#define ENV1 "[\"=x=1\", \"A=1\", \"B=2\"]"

static void check_out(const char *name, const char *doc, char *const *env, const char *want)
{
	struct dlrt_err err;
	char *got = NULL;
	int rc = build(doc, env, &got, &err);

	TAP_IS_INT(rc, 0, "%s: accepted", name);
	if (rc)
		printf("#   %s\n", err.msg);
	TAP_IS_STR(got, want, "%s: the output", name);
	TAP_OK(python_reads(got, strlen(got)), "%s: python3 -m json.tool reads it", name);
	free(got);
}

static void check_refused(const char *name, const char *doc, char *const *env, const char *why)
{
	struct dlrt_err err;
	char *got = NULL;
	int rc = build(doc, env, &got, &err);

	TAP_IS_INT(rc, -1, "%s: refused", name);
	TAP_OK(strstr(err.msg, why) != NULL && !strchr(err.msg, '\n'),
	       "%s: one line naming the cause (%s)", name, err.msg);
	free(got);
}

static void test_edits(void)
{
	static char *uni[] = { "Q=say \"hi\"\\ now\n\t\x01\x7f", "U=\xc3\xa9\xf0\x9f\x98\x80",
			       "X=\xff\xc3", NULL };

	check_out("env replaced",
		  "{\"ociVersion\": \"1.0.2\", \"process\": {\"args\": [\"/bin/true\"], "
		  "\"env\": [\"PATH=/bin\"], \"cwd\": \"/\"}}\n", env1,
		  "{\"ociVersion\": \"1.0.2\", \"process\": {\"args\": [\"/bin/true\"], "
		  "\"env\": " ENV1 ", \"cwd\": \"/\"}}\n");
	check_out("env not an array, replaced", "{\"process\":{\"env\":null}}", env1,
		  "{\"process\":{\"env\":" ENV1 "}}");
	check_out("env inserted", "{\"process\": {\"cwd\": \"/\" }\n}", env1,
		  "{\"process\": {\"cwd\": \"/\", \"env\": " ENV1 " }\n}");
	check_out("env inserted into an empty process", "{\"process\": { }}", env1,
		  "{\"process\": {\"env\": " ENV1 " }}");
	check_out("process added", "{\"ociVersion\": \"1.0.2\",\n \"root\": {\"path\": \"rootfs\"}}",
		  env1, "{\"ociVersion\": \"1.0.2\",\n \"root\": {\"path\": \"rootfs\"}, "
		  "\"process\": {\"env\": " ENV1 "}}");
	check_out("process added to an empty object", " {} ", env1,
		  " {\"process\": {\"env\": " ENV1 "}} ");
	check_out("an empty environment", "{\"process\": {\"env\": [\"A=1\"]}}",
		  (char *[]){ NULL }, "{\"process\": {\"env\": []}}");
	/* names and strings that look like what is edited, escapes, unicode */
	check_out("escaped names, strings with braces and quotes",
		  "{\"x\": \"{\\\"process\\\": {\\\"env\\\": 1}}\", \"a]\": [\"}\", {\"env\": 2}],"
		  " \"pro\\u0063ess\": {\"s\": \"\\\\\\\"]}\", \"\\u0065nv\": [], "
		  "\"u\": \"\xc3\xa9\\ud83d\\ude00\\u00e9\"}}", env1,
		  "{\"x\": \"{\\\"process\\\": {\\\"env\\\": 1}}\", \"a]\": [\"}\", {\"env\": 2}],"
		  " \"pro\\u0063ess\": {\"s\": \"\\\\\\\"]}\", \"\\u0065nv\": " ENV1 ", "
		  "\"u\": \"\xc3\xa9\\ud83d\\ude00\\u00e9\"}}");
	check_out("the environment escaped as Python's json.dumps does", "{\"process\": {}}", uni,
		  "{\"process\": {\"env\": [\"Q=say \\\"hi\\\"\\\\ now\\n\\t\\u0001\\u007f\", "
		  "\"U=\\u00e9\\ud83d\\ude00\", \"X=\\udcff\\udcc3\"]}}");
	/* a step without dlrt: config.json as it is, once it is JSON */
	check_out("no environment: unchanged", "{\"process\": {\"env\": [\"A=1\"]}, \"x\": 1e5 }",
		  NULL, "{\"process\": {\"env\": [\"A=1\"]}, \"x\": 1e5 }");
	check_out("no environment: not an object is Slurm's business", "[1, 2]", NULL, "[1, 2]");
}

static void check_net(const char *name, const char *doc, int want)
{
	struct dlrt_err err;
	char *got = NULL;
	int rc = build(doc, env1, &got, &err);

	TAP_IS_INT(rc, want, "network: %s", name);
	if (rc < 0)
		printf("#   %s\n", err.msg);
	free(got);
}

static void test_network(void)
{
	check_net("a network entry without path is refused",
		  "{\"linux\": {\"namespaces\": [{\"type\": \"user\"}, {\"type\": \"network\"}]}}",
		  DLRT_OCITASK_OWN_NETWORK);
	check_net("an escaped \"network\" is the same",
		  "{\"linux\": {\"namespaces\": [{\"type\": \"netw\\u006frk\"}]}}",
		  DLRT_OCITASK_OWN_NETWORK);
	check_net("an empty path is none",
		  "{\"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"\"}]}}",
		  DLRT_OCITASK_OWN_NETWORK);
	check_net("a null path is none",
		  "{\"linux\": {\"namespaces\": [{\"path\": null, \"type\": \"network\"}]}}",
		  DLRT_OCITASK_OWN_NETWORK);
	check_net("the node's network namespace by path is fine",
		  "{\"linux\": {\"namespaces\": [{\"type\": \"network\", "
		  "\"path\": \"/proc/1/ns/net\"}]}}", 0);
	check_net("no network entry is fine",
		  "{\"linux\": {\"namespaces\": [{\"type\": \"pid\"}, \"network\", "
		  "{\"type\": [\"network\"]}]}}", 0);
	check_net("namespaces not a list is fine", "{\"linux\": {\"namespaces\": {\"type\": "
		  "\"network\"}}}", 0);
	check_net("a network entry elsewhere is fine",
		  "{\"process\": {\"namespaces\": [{\"type\": \"network\"}]}}", 0);
	check_net("two linux members are refused", "{\"linux\": {}, \"linux\": {}}", -1);
}

static void test_malformed(void)
{
	static const char *bad[][2] = {
		{ "", "the document ends where a value should be" },
		{ "   ", "the document ends" },
		{ "{", "expected a member name" },
		{ "{\"process\": {\"env\": [\"A\"]}", "an object is not closed" },
		{ "{\"a\": }", "not a value" },
		{ "{\"a\" 1}", "expected ':'" },
		{ "{\"a\": 1,}", "expected a member name" },
		{ "{a: 1}", "expected a member name" },
		{ "[1, ]", "not a value" },
		{ "[1 2]", "expected ',' or ']'" },
		{ "{\"a\": \"x}", "a string is not closed" },
		{ "{\"a\": \"\x01\"}", "a control character" },
		{ "{\"a\": \"\\x\"}", "an unknown escape" },
		{ "{\"a\": \"\\u12\"}", "4 hexadecimal digits" },
		{ "{\"a\": \"\xff\"}", "not UTF-8" },
		{ "{\"a\": \"\xc0\xaf\"}", "not UTF-8" },
		{ "{\"a\": \"\xed\xa0\x80\"}", "not UTF-8" },
		{ "\xef\xbb\xbf{}", "not a value" },
		{ "{\"a\": 01}", "expected ',' or '}'" },
		{ "{\"a\": 1.}", "digits after its '.'" },
		{ "{\"a\": -}", "a number without digits" },
		{ "{\"a\": 1e}", "in its exponent" },
		{ "{\"a\": NaN}", "not a value" },
		{ "{\"a\": tru}", "not a value" },
		{ "{} {}", "more after the end" },
		{ "[1, 2]", "not a JSON object" },
		{ "{\"process\": []}", "\"process\" is not a JSON object" },
		{ "{\"process\": {}, \"process\": {}}", "two \"process\" members" },
		{ "{\"process\": {\"env\": [], \"env\": []}}", "two \"env\" members" },
	};
	char deep[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_refused(bad[i][0], bad[i][0], env1, bad[i][1]);
	check_refused("malformed without an environment", "{\"a\": }", NULL, "not a value");
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	deep[130] = '\0';
	check_refused("65 nested arrays", deep, NULL, "nested more than 64 deep");
	memset(deep, '[', 64);
	memset(deep + 64, ']', 64);
	deep[128] = '\0';
	check_out("64 nested arrays", deep, NULL, deep);
}

static void test_size(void)
{
	char path[256];
	char *big = malloc(DLRT_OCITASK_MAX_CONFIG + 1), *data = NULL;
	struct dlrt_err err;
	size_t len;

	snprintf(path, sizeof(path), "%s/big.json", dir);
	memset(big, ' ', DLRT_OCITASK_MAX_CONFIG + 1);
	big[0] = '{';
	big[DLRT_OCITASK_MAX_CONFIG - 1] = '}';
	TAP_OK(write_text(path, big, DLRT_OCITASK_MAX_CONFIG) == 0, "size: a 4 MiB file");
	TAP_IS_INT(dlrt_ocitask_read(path, &data, &len, &err), 0, "size: 4 MiB is read");
	TAP_IS_INT(len, DLRT_OCITASK_MAX_CONFIG, "size: all of it");
	free(data);
	TAP_OK(write_text(path, big, DLRT_OCITASK_MAX_CONFIG + 1) == 0, "size: one byte more");
	TAP_IS_INT(dlrt_ocitask_read(path, &data, &len, &err), -1, "size: refused");
	TAP_OK(strstr(err.msg, "is over 4 MiB, the most dlrt-oci-run reads") != NULL,
	       "size: the error says the bound (%s)", err.msg);
	free(big);
}

/* Runs the program with env; its stdout and stderr into files; the exit
 * status, or -1. */
static int run(char *const *argv, char *const *env, char **out, char **errout)
{
	char opath[256], epath[256];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = -1;

	snprintf(opath, sizeof(opath), "%s/stdout", dir);
	snprintf(epath, sizeof(epath), "%s/stderr", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, epath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, env) == 0 &&
	    waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		status = WEXITSTATUS(status);
	posix_spawn_file_actions_destroy(&fa);
	*out = read_text(opath);
	*errout = read_text(epath);
	return status;
}

static const char bundle_config[] =
	"{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\n    \"args\": [ \"/bin/true\" ],\n"
	"    \"env\": [ \"PATH=/usr/bin:/bin\" ]\n  },\n  \"linux\": {\n"
	"    \"namespaces\": [ { \"type\": \"user\" }, { \"type\": \"mount\" } ]\n  }\n}\n";

static void test_program(void)
{
	char cfg[256], task[256], slash[256], *out, *err;
	char *dlrt_env[] = { "SLURM_PROCID=3", "RANK=3", "PATH=/usr/bin:/bin", NULL };
	char *stepd_env[] = { "PATH=/usr/bin:/bin", NULL };
	const char *netns = "{\"linux\": {\"namespaces\": [{\"type\": \"network\"}]}}";
	struct stat st;
	int rc;

	if (test_build_program("libexec/dlrt-oci-run", prog, sizeof(prog)) < 0) {
		TAP_OK(0, "program: %s is built", prog);
		return;
	}
	snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
	snprintf(task, sizeof(task), "%s/config-task3.json", dir);
	write_text(cfg, bundle_config, strlen(bundle_config));

	rc = run((char *[]){ prog, dir, "3", "--", "cat", task, NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 0, "program: a dlrt task's config written, the runtime run (%s)", err);
	TAP_OK(strstr(out, "\"env\": [\"PATH=/usr/bin:/bin\", \"RANK=3\", \"SLURM_PROCID=3\"]"),
	       "program: with the task's environment, sorted");
	TAP_OK(python_reads(out, strlen(out)), "program: python3 -m json.tool reads it");
	TAP_OK(stat(task, &st) == 0 && (st.st_mode & 07777) == 0600, "program: mode 0600");
	free(out);
	free(err);

	rc = run((char *[]){ prog, dir, "3", "--", "cat", task, NULL }, stepd_env, &out, &err);
	TAP_IS_INT(rc, 0, "program: a step without dlrt runs");
	TAP_IS_STR(out, bundle_config, "program: and its config is config.json unchanged");
	free(out);
	free(err);

	snprintf(slash, sizeof(slash), "%s/", dir);
	rc = run((char *[]){ prog, slash, "3", "--", "/nonexistent/crun", NULL }, dlrt_env,
		 &out, &err);
	TAP_IS_INT(rc, 127, "program: a runtime that is not there: 127");
	TAP_OK(!strncmp(err, "dlrt-oci-run: cannot run /nonexistent/crun: No such file or "
			"directory: install it on the nodes or fix RunTimeRun in oci.conf\n",
			strlen(err) + 1), "program: and says so in one line (%s)", err);
	free(out);
	free(err);

	rc = run((char *[]){ prog, dir, "3", "cat", NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 2, "program: no --: usage");
	TAP_IS_STR(err, "usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n"
		   "       dlrt-oci-run --user USER -- RUNTIME ARGS...\n", "program: usage lines");
	free(out);
	free(err);
	rc = run((char *[]){ prog, "--help", NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 0, "program: --help");
	TAP_OK(!strncmp(out, "usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n", 51) && !*err,
	       "program: --help prints the usage on stdout");
	free(out);
	free(err);
	rc = run((char *[]){ prog, dir, "%t", "--", "cat", NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 2, "program: a task id that is no number");
	TAP_IS_STR(err, "dlrt-oci-run: task id '%t' is not a number: give it %t\n",
		   "program: the task id line");
	free(out);
	free(err);

	write_text(cfg, netns, strlen(netns));
	rc = run((char *[]){ prog, dir, "3", "--", "cat", task, NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 1, "program: a bundle with its own network namespace fails a dlrt task");
	{
		char want[1024];

		snprintf(want, sizeof(want), "dlrt-oci-run: %s gives each task its own network "
			 "namespace (linux.namespaces has a network entry without a path), where "
			 "its node's relay on 127.0.0.1 and the other tasks' addresses are out of "
			 "reach: remove that entry from the bundle's config.json\n", cfg);
		TAP_IS_STR(err, want, "program: the network line");
	}
	free(out);
	free(err);
	rc = run((char *[]){ prog, dir, "3", "--", "true", NULL }, stepd_env, &out, &err);
	TAP_IS_INT(rc, 0, "program: the same bundle runs a step without dlrt");
	free(out);
	free(err);

	write_text(cfg, "{\"process\": ", strlen("{\"process\": "));
	rc = run((char *[]){ prog, dir, "3", "--", "true", NULL }, dlrt_env, &out, &err);
	TAP_IS_INT(rc, 1, "program: malformed config.json: 1");
	TAP_OK(!strncmp(err, "dlrt-oci-run: cannot write the task's config.json from ", 55) &&
	       strstr(err, "not JSON at line 1 column 13") &&
	       strstr(err, ": check the bundle's config.json\n") && !strchr(err, '\n')[1],
	       "program: one line naming the place (%s)", err);
	free(out);
	free(err);

	/* The runtime's state folder (tools/ocistate.c, test_ocistate.c): made
	 * 0700 in the step's folder; refused in a folder every user can write,
	 * before the task's config.json is written. */
	write_text(cfg, bundle_config, strlen(bundle_config));
	{
		char root[300], opt[320], shared[300];

		snprintf(root, sizeof(root), "%s/crun", dir);
		snprintf(opt, sizeof(opt), "--root=%s", root);
		rc = run((char *[]){ prog, dir, "3", "--", "/bin/sh", "-c", "exit 7", opt, NULL },
			 dlrt_env, &out, &err);
		TAP_IS_INT(rc, 7, "program: --root=%%b/crun, absent: the runtime runs (%s)", err);
		TAP_OK(stat(root, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700,
		       "program: and finds its state folder made, mode 0700");
		free(out);
		free(err);
		snprintf(shared, sizeof(shared), "%s/tmp", dir);
		mkdir(shared, 01777);
		chmod(shared, 01777);
		snprintf(root, sizeof(root), "%s/tmp/dlrt-crun-u", dir);
		unlink(task);
		rc = run((char *[]){ prog, dir, "3", "--", "crun", "--root", root, "run", NULL },
			 dlrt_env, &out, &err);
		TAP_IS_INT(rc, 1, "program: --root in a folder others can write: 1");
		TAP_OK(!strncmp(err, "dlrt-oci-run: the runtime's state folder (--root): ", 51) &&
		       strstr(err, "--root=%b/crun in every RunTime* line of oci.conf\n") &&
		       !strchr(err, '\n')[1], "program: one line naming the cause and the fix (%s)",
		       err);
		TAP_OK(access(task, F_OK) != 0 && access(root, F_OK) != 0,
		       "program: before it writes anything");
		free(out);
		free(err);
	}

	unlink(cfg);
	rc = run((char *[]){ prog, dir, "3", "--", "true", NULL }, stepd_env, &out, &err);
	TAP_IS_INT(rc, 1, "program: no config.json: 1");
	TAP_OK(strstr(err, "cannot open ") && strstr(err, "No such file or directory"),
	       "program: and says so (%s)", err);
	free(out);
	free(err);
}

/* config.json must be root's or ours, a regular file with one link, writable
 * by no one else (Slurm 24.11's task folder is 0770, group the job's: another
 * member of that group could have replaced it). */
static void test_program_config(void)
{
	char cfg[256], other[256], *out, *err;
	char *env[] = { "SLURM_PROCID=0", "PATH=/usr/bin:/bin", NULL };
	static const struct {
		const char *how, *want;
	} cases[] = {
		{ "link", "/config.json is a symbolic link: another account that could write the "
			  "step's spool folder may have put it there: submit the job again\n" },
		{ "0660", "/config.json is writable by other users (mode 0660): another account "
			  "that could write the step's spool folder (Slurm 24.11 makes it mode "
			  "0770, group the job's) may have replaced it: submit the job again" },
		{ "hard", "/config.json has 2 hard links, so it may be another file of yours that "
			  "others can write: " },
		{ "4242", "/config.json belongs to uid 4242, not to you or root: another account" },
	};
	int rc;

	snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
	snprintf(other, sizeof(other), "%s/other.json", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *how = cases[i].how;

		unlink(cfg);
		unlink(other);
		write_text(other, bundle_config, strlen(bundle_config));
		if (!strcmp(how, "link") && symlink("other.json", cfg) < 0)
			continue;
		if (!strcmp(how, "hard") && link(other, cfg) < 0)
			continue;
		if (!strcmp(how, "0660") || !strcmp(how, "4242"))
			write_text(cfg, bundle_config, strlen(bundle_config));
		if (!strcmp(how, "0660"))
			chmod(cfg, 0660);
		if (!strcmp(how, "4242") && (geteuid() != 0 || chown(cfg, 4242, 4242) < 0)) {
			printf("# config.json of another user's: needs root, skipped\n");
			continue;
		}
		rc = run((char *[]){ prog, dir, "0", "--", "/bin/sh", "-c", "exit 7", NULL }, env,
			 &out, &err);
		TAP_IS_INT(rc, 1, "program: config.json %s: refused, the runtime not run", how);
		TAP_OK(!strncmp(err, "dlrt-oci-run: the container's bundle (%b): ", 43) &&
		       strstr(err, cases[i].want) && !strchr(err, '\n')[1],
		       "program: in one line (%s)", err);
		free(out);
		free(err);
	}
	unlink(other);
	unlink(cfg);
	write_text(cfg, bundle_config, strlen(bundle_config));
}

/* --user USER: oci.conf's RunTimeQuery, Kill and Delete, which slurmstepd runs
 * as root, become the job's user before the runtime runs. */
static void test_program_user(void)
{
	char *env[] = { "PATH=/usr/bin:/bin", NULL }, *out, *err;
	struct passwd *pw = getpwuid(geteuid());
	struct passwd *nobody = getpwnam("nobody");
	char name[256];
	int rc;

	if (!pw)
		return;
	snprintf(name, sizeof(name), "%s", pw->pw_name);
	rc = run((char *[]){ prog, "--user", name, "--", "/bin/sh", "-c", "id -u; exit 7", NULL },
		 env, &out, &err);
	TAP_IS_INT(rc, 7, "program: --user ourselves: the runtime runs (%s)", err);
	TAP_IS_INT(atoi(out), (int)geteuid(), "program: as us");
	free(out);
	free(err);
	rc = run((char *[]){ prog, "--user", "no-such-user-dlrt", "--", "true", NULL }, env, &out,
		 &err);
	TAP_IS_INT(rc, 1, "program: --user with no such user: 1");
	TAP_OK(!strncmp(err, "dlrt-oci-run: --user no-such-user-dlrt: no such user (", 54) &&
	       strstr(err, "give it %u, the job's user, in RunTimeQuery, RunTimeKill and "
		      "RunTimeDelete of oci.conf\n"), "program: in one line (%s)", err);
	free(out);
	free(err);
	if (!nobody || nobody->pw_uid == geteuid())
		return;
	rc = run((char *[]){ prog, "--user", "nobody", "--", "/bin/sh", "-c", "id -u; id -G",
			     NULL }, env, &out, &err);
	if (geteuid() == 0) {
		char want[64];

		snprintf(want, sizeof(want), "%u\n", (unsigned)nobody->pw_uid);
		TAP_IS_INT(rc, 0, "program: as root, --user nobody: runs (%s)", err);
		TAP_OK(!strncmp(out, want, strlen(want)) && !strstr(out, "\n0\n") &&
		       !strstr(out, " 0 ") && !strstr(out, "\n0 "),
		       "program: as nobody, without root's groups (%s)", out);
	} else {
		TAP_IS_INT(rc, 1, "program: as a user, --user another one: 1");
		TAP_OK(strstr(err, ", neither root nor that user (uid ") != NULL,
		       "program: in one line (%s)", err);
	}
	free(out);
	free(err);
}

int main(void)
{
	char cmd[256];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_edits();
	test_network();
	test_malformed();
	test_size();
	test_program();
	test_program_config();
	test_program_user();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
