/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source.c - see source.h. */
#include "base/source.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct source *index_lines(struct source *src)
{
	size_t cap = 64;

	src->lines = xmalloc(cap * sizeof(*src->lines));
	src->nlines = 0;
	src->lines[src->nlines++] = 0;
	for (size_t i = 0; i < src->len; i++) {
		if (src->text[i] != '\n' || i + 1 >= src->len)
			continue;
		if (src->nlines == cap) {
			cap *= 2;
			src->lines = xrealloc(src->lines,
					      cap * sizeof(*src->lines));
		}
		src->lines[src->nlines++] = i + 1;
	}
	return src;
}

struct source *source_from_mem(const char *name, const char *text, size_t len)
{
	struct source *src;
	const char *nul = memchr(text, '\0', len);

	if (nul) {
		int line = 1;
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		error_set_location(name, line);
		error("NUL byte in script (is this a text file?)");
		error_clear_location();
		return NULL;
	}
	src = xcalloc(1, sizeof(*src));
	src->path = xstrdup(name);
	src->text = xmalloc(len + 1);
	memcpy(src->text, text, len);
	src->text[len] = '\0';
	src->len = len;
	return index_lines(src);
}

struct source *source_read(const char *path)
{
	struct buf b = {0};
	struct source *src;
	struct stat st;
	int is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);

	if (is_stdin)
		path = "<stdin>";
	if (fd < 0) {
		error("cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		error("cannot read '%s': %s", path, strerror(EISDIR));
		return NULL;
	}
	if (buf_read_fd(&b, fd) < 0) {
		int e = errno;
		close(fd);
		buf_free(&b);
		error("cannot read '%s': %s", path, strerror(e));
		return NULL;
	}
	close(fd);
	src = source_from_mem(path, b.s ? b.s : "", b.len);
	buf_free(&b);
	return src;
}

void source_free(struct source *src)
{
	if (!src)
		return;
	free(src->path);
	free(src->text);
	free(src->lines);
	free(src);
}

int source_line(const struct source *src, size_t offset)
{
	size_t lo = 0, hi = src->nlines;

	/* last line start <= offset */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (src->lines[mid] <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return (int)lo + 1;
}

char *source_header_tag(const struct source *src, const char *tag)
{
	size_t n = strlen(tag);

	for (size_t i = 0; i < src->nlines; i++) {
		const char *l = src->text + src->lines[i];
		if (*l != '#' && *l != '\n')
			break;	/* only the header comment counts */
		if (strncmp(l, tag, n) == 0)
			return xstrndup(l + n, strcspn(l + n, " \t\r\n"));
	}
	return NULL;
}
