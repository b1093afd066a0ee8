/* Unit tests: when --dl-signal warns and --dl-requeue requeues a job still
 * running at its limit (jobpolicy/lifecycle.c), and --dl-signal's syntax (jobpolicy/warnsig.c). */
#include <signal.h>

#include "jobpolicy/lifecycle.h"
#include "jobpolicy/warnsig.h"
#include "tap.h"

int main(void)
{
	struct dlrt_lc_policy p = { .before = 120, .attempt = 0, .requeue = 2 };
	struct dlrt_lc_job j = { .now = 1000, .end_time = 1200, .running = true };
	struct dlrt_err err;
	const char *why = "";
	uint32_t secs;
	int sig;

	TAP_OK(!dlrt_lc_warn_due(&j, &p, &why), "200 s before the limit: no warning yet");
	TAP_IS_INT(dlrt_lc_next_poll(&j, &p, false), 10, "asks again within 10 s");
	j.now = 1075;
	TAP_IS_INT(dlrt_lc_next_poll(&j, &p, false), 5, "wakes at the warning time");
	j.now = 1080;
	TAP_OK(dlrt_lc_warn_due(&j, &p, &why), "120 s before: the warning is due (%s)", why);
	TAP_IS_INT(dlrt_lc_requeue_due(&j, &p), DLRT_LC_WAIT, "not yet requeued");
	TAP_IS_INT((int)dlrt_lc_requeue_lead(120), 30, "lead: 30 s at most");
	TAP_IS_INT((int)dlrt_lc_requeue_lead(9), 5, "lead: 5 s at least");
	TAP_IS_INT((int)dlrt_lc_requeue_lead(45), 15, "lead: a third of SECS");
	j.now = 1171;
	TAP_IS_INT(dlrt_lc_requeue_due(&j, &p), DLRT_LC_REQUEUE, "29 s before: requeue");
	j.restart_cnt = 1;
	TAP_IS_INT(dlrt_lc_requeue_due(&j, &p), DLRT_LC_WAIT, "not a job requeued already");
	j.restart_cnt = 2;
	p.attempt = 2;
	TAP_IS_INT(dlrt_lc_requeue_due(&j, &p), DLRT_LC_NO_MORE, "N requeues made: no more");
	j.running = false;
	TAP_IS_INT(dlrt_lc_requeue_due(&j, &p), DLRT_LC_WAIT, "never a job that does not run");
	j = (struct dlrt_lc_job){ .now = 1000, .end_time = 99999, .preempt_time = 990 };
	TAP_OK(dlrt_lc_warn_due(&j, &p, &why), "preemption: the warning is due at once");
	{
		struct dlrt_lc_policy q = { .before = 120, .requeue = 2 };
		struct dlrt_lc_job g = { .now = 1020, .end_time = 1045, .preempt_time = 1000,
					 .running = true };

		TAP_IS_INT(dlrt_lc_requeue_due(&g, &q), DLRT_LC_WAIT, "grace time: the program saves");
		g.now = 1041;
		TAP_IS_INT(dlrt_lc_requeue_due(&g, &q), DLRT_LC_REQUEUE, "5 s before its end: requeue");
		TAP_OK(dlrt_lc_hung(1000, 1030, 30), "30 s without progress: hung");
		TAP_OK(!dlrt_lc_hung(1000, 1029, 30), "29 s: not yet");
		TAP_OK(!dlrt_lc_hung(1000, 5000, 0), "0: never");
	}
	TAP_IS_STR(why, "preemption", "and says why");

	TAP_IS_INT(dlrt_warnsig_parse("USR1@120", &sig, &secs, &err), 0, "USR1@120");
	TAP_OK(sig == SIGUSR1 && secs == 120, "SIGUSR1, 120 s");
	TAP_IS_INT(dlrt_warnsig_parse("SIGUSR2", &sig, &secs, &err), 0, "SIGUSR2");
	TAP_OK(sig == SIGUSR2 && secs == 60, "Slurm's default of 60 s");
	TAP_IS_INT(dlrt_warnsig_parse("10@30", &sig, &secs, &err), 0, "a number");
	TAP_IS_INT(dlrt_warnsig_parse("none", &sig, &secs, &err), 0, "none");
	TAP_IS_INT(sig, 0, "none sends nothing");
	TAP_IS_INT(dlrt_warnsig_parse("KILL@10", &sig, &secs, &err), -1, "KILL is no warning");
	TAP_IS_INT(dlrt_warnsig_parse("9@10", &sig, &secs, &err), -1, "nor is 9");
	TAP_IS_INT(dlrt_warnsig_parse("USR1@", &sig, &secs, &err), -1, "no seconds");
	TAP_IS_INT(dlrt_warnsig_parse("USR1@0", &sig, &secs, &err), -1, "0 s");
	TAP_IS_INT(dlrt_warnsig_parse("@5", &sig, &secs, &err), -1, "no signal");
	return tap_done();
}
