/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wire protocol between the shim libraries and the xensim daemon: one
 * SOCK_SEQPACKET connection per library handle at $XENSIM_HOST/ctl. Each
 * request gets exactly one reply with the same header. The reply to HELLO
 * carries the machine-memory fd and, for event-channel handles, the read
 * end of a pipe on which pending ports arrive as u32 values; for xenstore
 * handles, one on which watch events arrive as u32 length, "path\0token\0".
 */
#ifndef XSIM_PROTO_H
#define XSIM_PROTO_H

#include <stdint.h>

#define XSIM_PROTO_VERSION	1
#define XSIM_MSG_MAX		65536

enum xsim_op {
	XSIM_OP_HELLO = 1,	/* a0 version, a1 domid, a2 kind -> a0 mem pages,
				 * a1 first page of the grant pool */
	XSIM_OP_PHYSINFO,	/* -> a0 pcpus, a1 cpu_khz, a2 vendor */
	XSIM_OP_TBUF,		/* a0 sysctl cmd, a1 value, data cpumap -> a0 evt
				 * mask, a1 t_info mfn, a2 t_info bytes */
	XSIM_OP_MAPCHECK,	/* a0 domid, a1 mfn, a2 count, a3 writable */
	XSIM_OP_DOMINFO,	/* a0 first domid, a1 max -> data xsim_wdom[] */
	XSIM_OP_TSCINFO,	/* a0 domid -> a0 mode, a1 gtsc_khz, a2 incarnation */
	XSIM_OP_VCPUINFO,	/* a0 domid, a1 vcpu -> a0 online, a1 blocked,
				 * a2 running, a3 cpu_time ns, a4 cpu */
	XSIM_OP_BIND_VIRQ,	/* a0 virq -> ret port */
	XSIM_OP_UNMASK,		/* a0 port */
	XSIM_OP_UNBIND,		/* a0 port */
	XSIM_OP_HVM_XENTRACE,	/* a0 1 + the caller's CPU if its thread is
				 * pinned to one, else 0; data xen_hvm_xentrace */
	XSIM_OP_XS,		/* a0 XS_* type, data path NUL [argument] */
	XSIM_OP_EVT_UNBOUND,	/* a0 remote domid -> port */
	XSIM_OP_EVT_INTERDOMAIN, /* a0 remote domid, a1 remote port -> port */
	XSIM_OP_EVT_NOTIFY,	/* a0 port; no reply (see xsim_post) */
	XSIM_OP_GNT_SHARE,	/* a0 peer, a1 count, a2 notify byte (-1 none),
				 * a3 notify port -> data u32 refs, a0 page
				 * of the first */
	XSIM_OP_GNT_UNSHARE,	/* a0 first ref */
	XSIM_OP_GNT_MAP,	/* a0 granter, a1 count, a2/a3 as share, data
				 * u32 refs -> a0 page of the first ref */
	XSIM_OP_GNT_UNMAP,	/* a0 first ref, a1 granter */
	XSIM_OP_GTSC,		/* a0 domid, a1 vcpu (one it lacks: 0), a2 host
				 * TSC -> a0 ratio, a1 frac, a2 s(t0), a3 drift
				 * ppm (s64), a4 the vCPU's offset at a2, a5 the
				 * host TSC of the next offset change (~0: none) */
};

enum xsim_kind { XSIM_KIND_CTRL = 1, XSIM_KIND_FMEM, XSIM_KIND_EVTCHN,
		 XSIM_KIND_CALL, XSIM_KIND_XS, XSIM_KIND_GNT };

struct xsim_msg {
	uint32_t op;
	int32_t ret;		/* reply: >= 0, or -errno */
	uint64_t a[6];
	uint32_t len;		/* bytes of data that follow */
	uint32_t pad;
};

/** struct xsim_wdom - a domain as XSIM_OP_DOMINFO returns it */
struct xsim_wdom {
	uint32_t domid;
	uint32_t type;		/* enum xsim_dtype */
	uint32_t vcpus;
	uint32_t running;	/* vCPUs running now */
	uint64_t cpu_time_ns;
	char name[64];
};

#endif /* XSIM_PROTO_H */
