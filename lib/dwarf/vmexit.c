/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/vmexit.c - the window of lj_vm_exit_interp in an interpreter's
 * machine code.  See dwarf/vmexit.h.
 */
#include "dwarf/vmexit.h"

#include <string.h>

/* mov dword [r14+disp32], imm32: REX.B, C7 /0, ModRM mod=10 rm=r14 */
#define STORE_LEN 11
#define MAX_GAP 1024

/* Whether P holds mov [r14+disp32], IMM (REX.B or REX.WB: 4 or 8 bytes),
 * its displacement in *DISP. */
static int store(const unsigned char *p, int wide, unsigned imm, unsigned *disp)
{
	unsigned v;

	if (p[0] != (wide ? 0x49 : 0x41) || p[1] != 0xc7 || p[2] != 0x86)
		return 0;
	memcpy(disp, p + 3, 4);
	memcpy(&v, p + 7, 4);
	return v == imm;
}

int lj_vm_exit_window(const unsigned char *code, size_t n, size_t *lo, size_t *hi)
{
	size_t at = 0, found = 0;
	unsigned vmstate = 0, d;

	if (n < 2 * STORE_LEN)
		return -1;
	for (size_t i = 0; i + STORE_LEN <= n; i++)
		if (store(code + i, 0, 0xfffffffcu, &d)) {	/* ~LJ_VMST_EXIT */
			at = i;
			vmstate = d;
			found++;
		}
	if (found != 1)
		return -1;
	for (size_t i = at + STORE_LEN; i + 2 * STORE_LEN <= n && i < at + MAX_GAP; i++) {
		unsigned jb, v;
		if ((store(code + i, 1, 0, &jb) || store(code + i, 0, 0, &jb)) &&
		    store(code + i + STORE_LEN, 0, 0xffffffffu, &v) && v == vmstate &&
		    jb != vmstate) {
			*lo = at + STORE_LEN;
			*hi = i + 2 * STORE_LEN;
			return 0;
		}
	}
	return -1;
}
