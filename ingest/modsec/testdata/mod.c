/* A stand-in for a kernel module: functions and data in the sections the
 * modsec tests look at, each target placed after another symbol so that
 * its value within the section is not 0. Build: see README. */

int first = 7;    /* .data */
int counter = 42; /* .data, after first */

__attribute__((noinline)) int text_first(int x) /* .text */
{
	return x + first;
}

__attribute__((noinline)) int text_fn(int x) /* .text, after text_first */
{
	return x * 3 + counter;
}

__attribute__((section(".noinstr.text"), noinline)) int noinstr_first(int a)
{
	return a * 5 + 1;
}

__attribute__((section(".noinstr.text"), noinline)) int noinstr_fn(int a, int b)
{
	int s = 0;
	for (int i = 0; i < a; i++)
		s += (b ^ i) * 7;
	return s;
}

__attribute__((section(".init.text"), noinline)) int init_fn(void)
{
	return text_fn(1) + noinstr_fn(2, 3) + text_first(4) + noinstr_first(5);
}

__attribute__((section(".exit.text"), noinline)) void exit_fn(void)
{
	counter = 0;
}
