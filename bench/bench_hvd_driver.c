/* bench_hvd_driver.c - requests/s of a Horovod rendezvous server under concurrent clients.
 *
 *   bench_hvd_driver --port P [--addr 127.0.0.1] [--clients 48] [--rounds 100] [--label NAME]
 *
 * Each client (a thread) does --rounds times, each request over a fresh TCP
 * connection as Horovod's HTTPRequest client does:
 *   PUT /bench/<client>_<round>, GET it (checks the body), DELETE it.
 * Prints one table row: label, clients, requests, seconds, req/s, p50/p99
 * latency, errors. Exits 1 if any request failed. Every socket has a 30 s
 * timeout, the number of requests is fixed: the run is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct client {
	pthread_t tid;
	int id;
	unsigned errors;
	uint32_t *lat_us; /* one per request */
	size_t nlat;
};

static struct sockaddr_in server;
static int rounds = 100;

static int64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* One request on a new connection; returns the status or -1. */
static int request(const char *method, const char *path, const char *body, char *rbody,
		   size_t rcap)
{
	char buf[4096];
	struct timeval tv = { 30, 0 };
	size_t blen = body ? strlen(body) : 0, len = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0), n, status = -1, one = 1;
	char *end;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&server, sizeof(server)) < 0)
		goto out;
	n = snprintf(buf, sizeof(buf), "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Length: %zu\r\n\r\n%s",
		     method, path, blen, body ? body : "");
	if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
		goto out;
	for (;;) {
		ssize_t r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	end = strstr(buf, "\r\n\r\n");
	if (!end || sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
		status = -1;
		goto out;
	}
	if (rbody)
		snprintf(rbody, rcap, "%s", end + 4);
out:
	close(fd);
	return status;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	char path[64], body[64], got[128];

	for (int r = 0; r < rounds; r++) {
		int64_t t;

		snprintf(path, sizeof(path), "/bench/%d_%d", c->id, r);
		snprintf(body, sizeof(body), "value-%d-%d", c->id, r);
		t = now_us();
		c->errors += request("PUT", path, body, NULL, 0) != 200;
		c->lat_us[c->nlat++] = (uint32_t)(now_us() - t);
		t = now_us();
		c->errors += request("GET", path, NULL, got, sizeof(got)) != 200 || strcmp(got, body);
		c->lat_us[c->nlat++] = (uint32_t)(now_us() - t);
		t = now_us();
		c->errors += request("DELETE", path, NULL, NULL, 0) != 200;
		c->lat_us[c->nlat++] = (uint32_t)(now_us() - t);
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "label", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = "127.0.0.1", *label = "server";
	int port = 0, nclients = 48, o;
	struct client *cl;
	uint32_t *all;
	size_t nall = 0;
	unsigned errors = 0;
	int64_t t0, t1;
	double secs;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': nclients = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'l': label = optarg; break;
		default:
			fprintf(stderr, "usage: bench_hvd_driver --port P [--addr A] [--clients N] [--rounds N] [--label L]\n");
			return 2;
		}
	}
	if (port <= 0 || port > 65535 || nclients < 1 || nclients > 1024 || rounds < 1 ||
	    rounds > 100000) {
		fprintf(stderr, "bench_hvd_driver: give --port 1-65535, --clients 1-1024, --rounds 1-100000\n");
		return 2;
	}
	server.sin_family = AF_INET;
	server.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &server.sin_addr) != 1) {
		fprintf(stderr, "bench_hvd_driver: --addr '%s' is not a numeric IPv4 address\n", addr);
		return 2;
	}
	cl = calloc((size_t)nclients, sizeof(*cl));
	all = calloc((size_t)nclients * (size_t)rounds * 3, sizeof(*all));
	if (!cl || !all)
		return 1;
	t0 = now_us();
	for (int i = 0; i < nclients; i++) {
		cl[i].id = i;
		cl[i].lat_us = all + (size_t)i * (size_t)rounds * 3;
		if (pthread_create(&cl[i].tid, NULL, client_main, &cl[i]) != 0) {
			fprintf(stderr, "bench_hvd_driver: cannot start client thread %d\n", i);
			return 1;
		}
	}
	for (int i = 0; i < nclients; i++) {
		pthread_join(cl[i].tid, NULL);
		errors += cl[i].errors;
		nall += cl[i].nlat;
	}
	t1 = now_us();
	secs = (double)(t1 - t0) / 1e6;
	qsort(all, nall, sizeof(*all), cmp_u32);
	printf("%-22s %7d %9zu %8.3f %10.0f %8.2f %8.2f %8.2f %6u\n", label, nclients, nall, secs,
	       (double)nall / secs, all[nall / 2] / 1000.0, all[nall * 99 / 100] / 1000.0,
	       all[nall - 1] / 1000.0, errors);
	free(cl);
	free(all);
	return errors ? 1 : 0;
}
