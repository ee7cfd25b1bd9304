/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A C process whose CPU split is known (t/89: sample-bt on eBPF): main()
 * calls a() and b() in turn, which call spin() for 1 and 2 units of the
 * same work, forever: spin's samples are 1:2 under a and b.  Built with
 * -O2 -fomit-frame-pointer, as distributions build: no frame pointers,
 * so only the binary's CFI unwinds it. */
__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
	volatile unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += i;
	return s;
}

/* (not tail calls: each keeps its frame while spin() runs) */
__attribute__((noinline)) unsigned long a(void)
{
	unsigned long r = spin(1000000);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) unsigned long b(void)
{
	unsigned long r = spin(2000000);

	__asm__ volatile("" ::: "memory");
	return r + 2;
}

int main(void)
{
	unsigned long t = 0;

	for (;;) {
		t += a();
		t += b();
	}
	return (int)t;
}
