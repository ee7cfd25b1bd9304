/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A C process whose CPU split is known (t/89: sample-bt on eBPF): main()
 * calls a() and b() in turn, which call spin() for 1 and 2 units of the
 * same work, forever: spin's samples are 1:2 under a and b.  Built with
 * -O2 -fomit-frame-pointer, as distributions build: no frame pointers,
 * so only the binary's CFI unwinds it.
 *
 * A unit is a few microseconds, and of a length drawn anew every turn
 * (a linear congruential generator): a sample lands under a or b as if
 * by chance, whatever the sampling period.  With a fixed unit of about a
 * millisecond, a turn lasted about 5 sampling periods of 1 ms: the samples
 * fell at the same few points of every turn for seconds at a time, and a
 * session of 4,370 samples gave b 63.0% (truth 66.7). */
__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
	volatile unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += i;
	return s;
}

/* (not tail calls: each keeps its frame while spin() runs) */
__attribute__((noinline)) unsigned long a(unsigned long unit)
{
	unsigned long r = spin(unit);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) unsigned long b(unsigned long unit)
{
	unsigned long r = spin(2 * unit);

	__asm__ volatile("" ::: "memory");
	return r + 2;
}

int main(void)
{
	unsigned long t = 0, x = 1;

	for (;;) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		unsigned long unit = 1000 + (x >> 33) % 4000;

		t += a(unit);
		t += b(unit);
	}
	return (int)t;
}
