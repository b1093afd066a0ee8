/* Unit tests: one diagnostic line to stderr in one write (common/errline.c). */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errline.h"
#include "tap.h"

/* Reads one write from the socket that is stderr: a SOCK_SEQPACKET socket keeps
 * each write a message of its own, and one read returns one message, so a line
 * written in pieces would come back as its first piece only. */
static ssize_t one_write(int rd, char *got, size_t len)
{
	ssize_t n = read(rd, got, len - 1);

	got[n > 0 ? n : 0] = '\0';
	return n;
}

int main(void)
{
	static char got[4096], want[4096];
	static uint8_t key[200];
	struct dlrt_errline l;
	int p[2], saved = dup(STDERR_FILENO);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p) < 0 || saved < 0 ||
	    dup2(p[1], STDERR_FILENO) < 0)
		return 1;
	dlrt_errline_init(&l);
	dlrt_errline_printf(&l, "store: conn %d: GET ", 2);
	dlrt_errline_escaped(&l, (const uint8_t *)"dlrt/0\\\n", 8, 64);
	dlrt_errline_end(&l);
	one_write(p[0], got, sizeof(got));
	TAP_IS_STR(got, "store: conn 2: GET dlrt/0\\x5c\\x0a\n",
		   "pieces, an escaped key and the newline come out as one write");

	memset(key, 'k', sizeof(key));
	dlrt_errline_init(&l);
	dlrt_errline_escaped(&l, key, sizeof(key), 96);
	dlrt_errline_end(&l);
	one_write(p[0], got, sizeof(got));
	memset(want, 'k', 96);
	strcpy(want + 96, "...\n");
	TAP_IS_STR(got, want, "a key over the shown length ends in ...");

	dlrt_errline_init(&l);
	for (int i = 0; i < 300; i++)
		dlrt_errline_printf(&l, "abcdefgh");
	dlrt_errline_printf(&l, "more");
	dlrt_errline_end(&l);
	TAP_IS_INT((int)one_write(p[0], got, sizeof(got)), (int)sizeof(l.text),
		   "a line longer than the room is cut to it, in one write");
	TAP_OK(!strcmp(got + sizeof(l.text) - 4, "...\n"), "and says it was cut: ...%s",
	       got + sizeof(l.text) - 8);
	TAP_OK(l.len == 0, "end empties the line for the next");

	dup2(saved, STDERR_FILENO);
	return tap_done();
}
