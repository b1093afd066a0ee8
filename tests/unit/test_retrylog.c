/* Unit tests: the --dl-retries readers (logs/retrylog.c). */
#include "logs/retrylog.h"
#include "tap.h"

int main(void)
{
	char list[64] = "", tiny[6] = "", out[32];
	const char *log = "2026-11-22T13:46:30.311101Z attempt=0 node=n2 step=0 signal=9\n"
			  "2026-11-22T13:46:30.4Z attempt=1 node=n3 step=0 signal=11\n"
			  "2026-11-22T13:46:30.5Z attempt=0 failed-nodes=n2 requeued exclude=n2\n"
			  "2026-11-22T13:46:30.6Z attempt=0 node=n2 step=1 signal=9\n"
			  "2026-11-22T13:46:30.7Z attempt=10 node=n9 step=1 signal=9";
	const char *job = "JobId=89 JobName=x JobState=PENDING Reason=BeginTime ReqNodeList=(null) "
			  "ExcNodeList=n2,n3 NodeList=n[1,4]";

	dlrt_retry_log_nodes(log, 0, 0, list, sizeof(list));
	TAP_IS_STR(list, "n2", "attempt 0: n2, once");
	dlrt_retry_log_nodes(log, 1, 0, list, sizeof(list));
	TAP_IS_STR(list, "n2,n3", "attempt 1 adds n3 (attempt=10 is not attempt=1)");
	{
		char some[32] = "";

		/* With a node down, a SIGKILL elsewhere is the step's teardown. */
		dlrt_retry_log_nodes(log, 0, 9, some, sizeof(some));
		TAP_IS_STR(some, "", "attempt 0 without its SIGKILLs: no node");
		dlrt_retry_log_nodes(log, 1, 9, some, sizeof(some));
		TAP_IS_STR(some, "n3", "attempt 1's SIGSEGV still counts");
		dlrt_retry_log_nodes("x attempt=0 node=n5 step=0\n", 0, 9, some, sizeof(some));
		TAP_IS_STR(some, "n3,n5", "a line without signal= counts");
	}
	{
		char none[16] = "";
		const char *w = "2026-11-28T10:00:00.0Z attempt=1 warning signal=USR1 node=n1 step=0\n"
				"2026-11-28T10:00:00.1Z attempt=12 warning signal=USR1 node=n1\n";

		TAP_OK(dlrt_retry_log_warned(w, 1), "attempt 1 was warned");
		TAP_OK(!dlrt_retry_log_warned(w, 2), "attempt 2 was not (attempt=12 is not 2)");
		TAP_OK(!dlrt_retry_log_warned(log, 0), "a signal record is no warning");

		dlrt_retry_log_nodes(w, 1, 0, none, sizeof(none));
		TAP_IS_STR(none, "", "a warning names no failed node");
	}
	dlrt_retry_down_nodes("n1 alloc\nn2 down*\nn4 idle*\nn5 drain\nn6 mix\nn7 fail\n", list, sizeof(list));
	TAP_IS_STR(list, "n2,n3,n4,n5,n7", "down, not responding, draining and failing nodes");
	dlrt_retry_down_nodes("n1 down*\nn22 down*\n", tiny, sizeof(tiny));
	TAP_IS_STR(tiny, "n1", "a full list stays within its size");
	dlrt_retry_list_add(list, sizeof(list), "a,b");
	TAP_IS_STR(list, "n2,n3,n4,n5,n7", "a name with a comma is refused");
	dlrt_retry_field(job, "JobState=", out, sizeof(out));
	TAP_IS_STR(out, "PENDING", "JobState");
	dlrt_retry_field(job, "NodeList=", out, sizeof(out));
	TAP_IS_STR(out, "n[1,4]", "NodeList= is not ReqNodeList= or ExcNodeList=");
	dlrt_retry_field(job, "ExcNodeList=", out, sizeof(out));
	TAP_IS_STR(out, "n2,n3", "ExcNodeList");
	dlrt_retry_field(job, "Missing=", out, sizeof(out));
	TAP_IS_STR(out, "", "absent key");
	return tap_done();
}
