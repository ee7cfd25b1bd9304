/* source.c - see source.h. */
#include "source.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
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
	char chunk[65536];
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
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			buf_free(&b);
			error("cannot read '%s': %s", path, strerror(e));
			return NULL;
		}
		if (n == 0)
			break;
		buf_add(&b, chunk, (size_t)n);
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

static void buf_grow(struct buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	b->s = xrealloc(b->s, cap);
	b->cap = cap;
}

void buf_add(struct buf *b, const char *s, size_t n)
{
	buf_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	buf_adds(b, s);
	free(s);
}

char *buf_steal(struct buf *b)
{
	char *s = b->s ? b->s : xstrdup("");
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void buf_free(struct buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

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

void strv_take(struct strv *sv, char *s)
{
	if (sv->n + 1 >= sv->cap) {
		sv->cap = sv->cap ? 2 * sv->cap : 8;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(*sv->v));
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void strv_add(struct strv *sv, const char *s)
{
	strv_take(sv, xstrdup(s));
}

long strv_find(const struct strv *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return (long)i;
	return -1;
}

void strv_free(struct strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}
