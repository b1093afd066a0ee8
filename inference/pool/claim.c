#include "claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

int dlrt_claim_parse_name(const char *name, size_t len, uint64_t *epoch)
{
	static const char pfx[] = "epoch-";
	uint64_t v = 0;
	size_t i = sizeof(pfx) - 1;

	if (len <= i || len > i + 20 || memcmp(name, pfx, i) || name[i] == '0')
		return -1;
	for (; i < len; i++) {
		unsigned d = (unsigned char)name[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*epoch = v;
	return 0;
}

/* The claims directory, made private if missing; refused if it is not the
 * user's own, closed to others (a link or another's directory). */
static int claim_dir(const char *pool, char *dir, size_t len, struct dlrt_err *err)
{
	struct stat st;
	int n = snprintf(dir, len, "%s/%s", pool, DLRT_CLAIM_DIR);

	if (n < 0 || (size_t)n >= len)
		return dlrt_err_set(err, "pool directory path too long: give a shorter --pool");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlrt_err_errno(err, errno, "cannot create %s: check the pool directory's "
				      "permissions", dir);
	if (lstat(dir, &st) < 0)
		return dlrt_err_errno(err, errno, "cannot use %s", dir);
	if (!S_ISDIR(st.st_mode))
		return dlrt_err_set(err, "%s is not a directory: remove it", dir);
	return dlrt_pool_check_private(dir, &st, err);
}

int dlrt_claim_highest(const char *pool, uint64_t *epoch, struct dlrt_err *err)
{
	char dir[4200];
	struct dirent *de;
	DIR *d;

	*epoch = 0;
	if (claim_dir(pool, dir, sizeof(dir), err) < 0)
		return -1;
	d = opendir(dir);
	if (!d)
		return dlrt_err_errno(err, errno, "cannot read %s", dir);
	while ((de = readdir(d))) {
		uint64_t e;

		if (dlrt_claim_parse_name(de->d_name, strlen(de->d_name), &e) == 0 && e > *epoch)
			*epoch = e;
	}
	closedir(d);
	return 0;
}

int dlrt_claim_changed(const char *pool, struct stat *seen)
{
	char dir[4200];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/%s", pool, DLRT_CLAIM_DIR);
	if (stat(dir, &st) < 0)
		return 1; /* the scan says why */
	if (st.st_ino == seen->st_ino && st.st_mtim.tv_sec == seen->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == seen->st_mtim.tv_nsec && st.st_ctim.tv_sec == seen->st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == seen->st_ctim.tv_nsec && st.st_nlink == seen->st_nlink)
		return 0;
	*seen = st;
	return 1;
}

int dlrt_claim_take(const char *pool, uint64_t epoch, struct dlrt_err *err)
{
	char dir[4200], tmp[4400], path[4400], host[64] = "", text[128];
	struct stat st;
	uint64_t high;
	int fd, n, rc = -1, linked;

	if (!epoch)
		return dlrt_err_set(err, "epoch 0 cannot be claimed");
	if (claim_dir(pool, dir, sizeof(dir), err) < 0)
		return -1;
	gethostname(host, sizeof(host) - 1);
	snprintf(tmp, sizeof(tmp), "%s/.claim.%s.%d", dir, host, (int)getpid());
	snprintf(path, sizeof(path), "%s/epoch-%llu", dir, (unsigned long long)epoch);
	unlink(tmp); /* our own leftover: the same host and pid */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot create %s: check the pool directory", tmp);
	/* Who claimed it, for a person reading the directory; never parsed. */
	n = snprintf(text, sizeof(text), "%s %d\n", host, (int)getpid());
	if (write(fd, text, (size_t)n) != n || fsync(fd) != 0) {
		dlrt_err_errno(err, errno, "cannot write %s: free space in the pool folder", tmp);
		close(fd);
		goto out;
	}
	if (close(fd) != 0) {
		dlrt_err_errno(err, errno, "cannot write %s: free space in the pool folder", tmp);
		goto out;
	}
	linked = link(tmp, path) == 0;
	if (!linked && errno == EEXIST) {
		rc = 1;
		goto out;
	}
	/* NFS may lose link's reply after doing it: the link count tells. */
	if (!linked && !(lstat(tmp, &st) == 0 && st.st_nlink == 2)) {
		dlrt_err_errno(err, errno, "cannot create %s: check the pool directory", path);
		goto out;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		/* The claim must outlive a crash of this node. */
		if (fsync(fd) != 0) {
			dlrt_err_errno(err, errno, "cannot sync %s: free space in the pool folder",
				       dir);
			close(fd);
			goto out;
		}
		close(fd);
	}
	if (dlrt_claim_highest(pool, &high, err) < 0)
		goto out;
	rc = high > epoch ? 1 : 0;
out:
	unlink(tmp);
	return rc;
}

bool dlrt_claim_stale(const char *pool, uint64_t epoch, int age_s)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/epoch-%llu", pool, DLRT_CLAIM_DIR,
		 (unsigned long long)epoch);
	return lstat(path, &st) == 0 && time(NULL) - st.st_mtime > age_s;
}

int dlrt_claim_clear(const char *pool, struct dlrt_err *err)
{
	char dir[4200], path[4500];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (claim_dir(pool, dir, sizeof(dir), err) < 0)
		return -1;
	d = opendir(dir);
	if (!d)
		return dlrt_err_errno(err, errno, "cannot read %s", dir);
	while ((de = readdir(d))) {
		uint64_t e;

		if (dlrt_claim_parse_name(de->d_name, strlen(de->d_name), &e) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) < 0 && errno != ENOENT && rc == 0)
			rc = dlrt_err_errno(err, errno, "cannot remove %s: remove it by hand", path);
	}
	closedir(d);
	return rc;
}
