/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trace-cmd-xen command line: one function per subcommand, a thin front
 * over the libraries. Exit codes follow trace-cmd: 0 ok, 1 failure, 2 usage.
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_EXIT_OK	0
#define CLI_EXIT_FAIL	1
#define CLI_EXIT_USAGE	2
#define CLI_EXIT_LOSS	3	/* record --fail-on-loss: something was lost */

/* Each takes argv with argv[0] = the subcommand name. */
int cmd_convert(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_analyze(int argc, char **argv);

/* Print "<prefix><cmd>: <message>" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * cli_set_program - what cli_err() prints before the subcommand's name:
 * "trace-cmd-xen " unless set ("trace-cmd-xen-" in trace-cmd-xen-agent).
 * @prefix must stay valid for the program's life.
 */
void cli_set_program(const char *prefix);

/* The agent's and the recorder's shared secret for TCP/vsock. */
#define CLI_SECRET_MIN		16
#define CLI_SECRET_MAX		256

/*
 * cli_read_secret - a secret file's bytes without trailing newlines into
 * @buf (CLI_SECRET_MAX + 1 bytes)
 *
 * Returns 0; -EINVAL unless CLI_SECRET_MIN..CLI_SECRET_MAX of them, -EPERM
 * if group or others may read the file (mode & 077), or -errno; the
 * message, which names the file, in tcx_error().
 */
int cli_read_secret(const char *path, unsigned char *buf, size_t *len);

/*
 * ---- record --xen's command line (record-args.c) ----
 * Declared where recorder.h is included first: the agent's programs,
 * which share this header, never see the recorder's.
 */
#ifdef RECORDER_H

/* Where a record option applies. */
enum cli_rec_where {
	CLI_REC_BOTH,		/* dom0 before the first -A, a guest after its -A */
	CLI_REC_DOM0,		/* dom0 only: before the first -A */
	CLI_REC_GUEST,		/* after an -A only (--name) */
	CLI_REC_GLOBAL,		/* the whole recording, anywhere */
	CLI_REC_REFUSED,	/* trace-cmd's, but not here: @why says why */
};

/**
 * struct cli_rec_opt - one option of record --xen, trace-cmd's or ours
 * @name:	"-e", "--max-graph-depth"
 * @where:	where it applies
 * @why:	refused (or dom0 only): why, and what to use instead
 * @ours:	trace-cmd-xen's own, not trace-cmd record's
 */
struct cli_rec_opt {
	const char		*name;
	enum cli_rec_where	where;
	const char		*why;
	bool			ours;
};

/* Every option record --xen knows, NULL-terminated: trace-cmd 3.1's and ours. */
extern const struct cli_rec_opt cli_rec_opts[];

/**
 * struct cli_rec_inst - the options of one instance: dom0 or an -A guest
 * @spec:	the -A argument (NULL: dom0)
 * @ft:		the ftrace options (dom0: applied to its instance)
 * @words:	a guest's options, as words for its agent's TRACE_REQ
 */
struct cli_rec_inst {
	const char		*spec;
	const char		*name;
	struct rec_ftrace_opts	ft;
	struct rec_event_sel	*ev;
	const char		**funcs, **notrace, **graph;
	int			*pids;
	const char		**words;
	int			nwords;
	bool			exclude;	/* -v given: the -e after it are off */
	bool			filtered;	/* the last -e has its -f */
	char			verbose_word[24];	/* --verbose=N, one word */
};

/**
 * struct cli_rec_args - a parsed record --xen command line
 * @o:		rec_record()'s options, pointing into the rest
 * @inst:	@ninst instances: [0] dom0, then each -A in order
 * @help:	-h was given (nothing else is filled)
 * @err:	why the parse failed
 * @session:	--session DIR (NULL: none); @repeat runs of it (--repeat, 1)
 * @fail_on_loss: --fail-on-loss: exit CLI_EXIT_LOSS when anything was lost
 * @output_set, @summary_set: -o, --summary-json were given
 */
struct cli_rec_args {
	struct rec_record_opts	o;
	struct cli_rec_inst	*inst;
	int			ninst;
	const char		**specs;
	struct rec_guest_args	*gargs;
	bool			xen;
	bool			help;
	const char		*session;
	int			repeat;
	bool			fail_on_loss;
	bool			output_set, summary_set;
	uint8_t			cpumap[REC_MAX_CPUS / 8];
	uint8_t			secret[CLI_SECRET_MAX + 1];
	char			err[512];
};

/**
 * cli_rec_parse - record's argv (argv[0] = "record") into @a: what comes
 * before the first -A is dom0's, what follows each -A that guest's;
 * global options anywhere; a command after them (or after "--")
 *
 * Returns CLI_EXIT_OK, CLI_EXIT_USAGE with @a->err saying what was wrong
 * (an unknown option, a refused one: why and what to use instead, a bad
 * value), or CLI_EXIT_FAIL (out of memory, an unreadable secret file).
 * Free @a with cli_rec_args_free() in every case.
 */
int cli_rec_parse(struct cli_rec_args *a, int argc, char **argv);

/** cli_rec_args_free - free what cli_rec_parse() took (safe twice) */
void cli_rec_args_free(struct cli_rec_args *a);

#endif /* RECORDER_H */

#endif /* CLI_H */
