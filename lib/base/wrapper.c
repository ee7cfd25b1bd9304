/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wrapper.c - see wrapper.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/wrapper.h"
#include "base/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		die("out of memory");
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		die("out of memory");
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		die("out of memory");
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

char *read_file(const char *path, size_t *len)
{
	struct buf b = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (buf_read_fd(&b, fd) < 0) {
		int e = errno;
		close(fd);
		buf_free(&b);
		errno = e;
		return NULL;
	}
	close(fd);
	if (len)
		*len = b.len;
	return buf_steal(&b);
}

int write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return error("cannot write '%s': %s", path, strerror(errno));
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return error("cannot write '%s': %s", path, strerror(e));
		}
		data += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0)
		return error("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

char *path_lookup(const char *name)
{
	const char *env = getenv("PATH");
	char *dirs = xstrdup(env ? env : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL, *found = NULL;

	for (char *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *cand = xasprintf("%s/%s", *d ? d : ".", name);
		struct stat st;
		if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 &&
		    S_ISREG(st.st_mode))
			found = cand;
		else
			free(cand);
	}
	free(dirs);
	return found;
}

const char *path_under(const char *root, const char *path)
{
	size_t n = root ? strlen(root) : 0;

	return n && path && !strncmp(path, root, n) && path[n] == '/' ? path + n : path;
}
