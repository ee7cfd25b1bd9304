/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef STAPXX_BASE_HASH_H
#define STAPXX_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * FNV-1a, 64 bits: the one hash of the caches' keys, the hash tables and
 * the binaries' identities.  Pure functions, no memory owned.
 */

/* The hash of no bytes: the start of every chain of fnv1a calls. */
#define FNV1A_INIT 0xcbf29ce484222325ULL

/* H with the LEN bytes at DATA mixed in. */
static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* H with the bytes of the string S (not its NUL) mixed in. */
static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

#endif
