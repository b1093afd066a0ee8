/* Unit tests: the intrusive list (common/dlist.h) its three users queue on. */
#include <string.h>

#include "common/dlist.h"
#include "tap.h"

struct item {
	int id;
	struct dlrt_dlist_node link;
};

/* The list's ids from head to tail, and back, as "1 2 3|3 2 1". */
static void order(const struct dlrt_dlist *l, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (const struct dlrt_dlist_node *n = l->head; n && off < len; n = n->next)
		off += (size_t)snprintf(out + off, len - off, "%d ",
					DLRT_DLIST_ENTRY(n, const struct item, link)->id);
	if (off < len)
		off += (size_t)snprintf(out + off, len - off, "|");
	for (const struct dlrt_dlist_node *n = l->tail; n && off < len; n = n->prev)
		off += (size_t)snprintf(out + off, len - off, "%d ",
					DLRT_DLIST_ENTRY(n, const struct item, link)->id);
}

int main(void)
{
	struct item it[4];
	struct dlrt_dlist l;
	char got[64];

	memset(&l, 0, sizeof(l));
	for (int i = 0; i < 4; i++) {
		it[i].id = i;
		dlrt_dlist_append(&l, &it[i].link);
	}
	order(&l, got, sizeof(got));
	TAP_IS_STR(got, "0 1 2 3 |3 2 1 0 ", "appended in order, linked both ways");
	TAP_IS_INT((int)l.n, 4, "four entries");

	dlrt_dlist_unlink(&l, &it[2].link);
	order(&l, got, sizeof(got));
	TAP_IS_STR(got, "0 1 3 |3 1 0 ", "a middle entry unlinked");
	TAP_OK(!it[2].link.prev && !it[2].link.next, "the unlinked node points nowhere");

	dlrt_dlist_unlink(&l, &it[0].link);
	dlrt_dlist_unlink(&l, &it[3].link);
	order(&l, got, sizeof(got));
	TAP_IS_STR(got, "1 |1 ", "head and tail unlinked: one left");
	TAP_OK(DLRT_DLIST_ENTRY(l.head, struct item, link) == &it[1], "the entry of the head");

	dlrt_dlist_append(&l, &it[0].link);
	dlrt_dlist_unlink(&l, &it[1].link);
	dlrt_dlist_unlink(&l, &it[0].link);
	TAP_OK(l.n == 0 && !l.head && !l.tail, "emptied");

	dlrt_dlist_append(&l, &it[3].link);
	dlrt_dlist_clear(&l);
	TAP_OK(l.n == 0 && !l.head && !l.tail, "cleared");
	return tap_done();
}
