// SPDX-License-Identifier: GPL-2.0
/*
 * fake-trace-cmd: stands in for the stock trace-cmd (installed as
 * trace-cmd), for trace-cmd-xen and for trace-cmd-xen-agent (installed as
 * those) in test-front.sh.
 * Writes to $FAKE_OUT which it is, its pid and argv one word a line; then
 * FAKE=stdin copies stdin there, FAKE=kill dies of SIGTERM; exits
 * $FAKE_STATUS. A script could not: the kernel hides its argv[0].
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *out = getenv("FAKE_OUT"), *what = getenv("FAKE");
	const char *status = getenv("FAKE_STATUS");
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *base;
	FILE *f;
	int c;

	if (!out || n < 0)
		return 99;
	self[n] = '\0';
	base = strrchr(self, '/') + 1;
	f = fopen(out, "w");
	if (!f)
		return 99;
	fprintf(f, "%s pid=%d argv0=%s\n",
		!strcmp(base, "trace-cmd-xen") ? "ours" :
		!strcmp(base, "trace-cmd-xen-agent") ? "agent" : "stock",
		(int)getpid(), argv[0]);
	for (int i = 1; i < argc; i++)
		fprintf(f, "%s\n", argv[i]);
	if (what && !strcmp(what, "stdin"))
		while ((c = getchar()) != EOF)
			fputc(c, f);
	fclose(f);
	if (what && !strcmp(what, "kill"))
		raise(SIGTERM);
	return status ? atoi(status) : 0;
}
