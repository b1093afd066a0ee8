/* dlist.h - an intrusive doubly linked list in insertion order.
 *
 * Servers keep things that must leave in age order, and leave early when
 * they end: a store's keys with a time to live, a service's connections that
 * have not proved the secret, the inference coordinator's unauthenticated
 * peers; and the connections a program holds, to sweep or release them: the
 * node relay's clients and spares, the stores' clients, the Horovod driver's
 * workers held at its barrier. Each entry holds a dlrt_dlist_node, so queueing
 * allocates nothing and unlinking any entry is O(1); DLRT_DLIST_ENTRY gets
 * back from the node to the entry that holds it. This is the one list of the
 * tree: no file keeps prev/next pointers of its own.
 *
 * The functions are inline: they are a handful of stores on hot paths
 * (every SET with a TTL, every accepted connection).
 */
#ifndef DLRT_DLIST_H
#define DLRT_DLIST_H

#include <stddef.h>

struct dlrt_dlist_node {
	struct dlrt_dlist_node *prev, *next;
};

struct dlrt_dlist {
	struct dlrt_dlist_node *head, *tail; /* oldest, newest */
	size_t n;
};

/* The entry of type `type` whose member `member` is the node `node`. */
#define DLRT_DLIST_ENTRY(node, type, member)                                   \
	((type *)(void *)((char *)(node) - offsetof(type, member)))

static inline void dlrt_dlist_append(struct dlrt_dlist *l, struct dlrt_dlist_node *e)
{
	e->next = NULL;
	e->prev = l->tail;
	if (l->tail)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
	l->n++;
}

/* `e` must be on `l`. */
static inline void dlrt_dlist_unlink(struct dlrt_dlist *l, struct dlrt_dlist_node *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
	l->n--;
}

/* Forgets every entry without touching them (their owner frees them). */
static inline void dlrt_dlist_clear(struct dlrt_dlist *l)
{
	l->head = l->tail = NULL;
	l->n = 0;
}

#endif
