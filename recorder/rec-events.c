// SPDX-License-Identifier: GPL-2.0
/*
 * The event catalogue: every Xen trace event id of Xen 4.17's public
 * trace.h (plus the per-scheduler ids and the 4.19+ per-vendor exit ids),
 * with its trace.dat name, field layout and payload encoding.
 *
 * A xen/ payload is the common header, u32 nr (payload words the record
 * had), then the words themselves under the field names below, zero-filled
 * to the declared size; so nothing is lost and a short record stays
 * recognisable. The record layouts come from the Xen sources (payloads
 * are packed u32 words, 64-bit values low word first); a struct that is
 * not __packed has its tail padding traced too, hence the "pad" words.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <stdint.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"

/* Xen 4.19+: the exit event split per vendor (not in the 4.17 header). */
#define XEN_VMX_EXIT		(TRC_HVM_ENTRYEXIT + 0x02)
#define XEN_VMX_EXIT64		(TRC_HVM_ENTRYEXIT + TRC_64_FLAG + 0x02)
#define XEN_SVM_EXIT		(TRC_HVM_ENTRYEXIT + 0x03)
#define XEN_SVM_EXIT64		(TRC_HVM_ENTRYEXIT + TRC_64_FLAG + 0x03)

#define SCHED_EVT(s, e)		(TRC_SCHED_CLASS | ((s) << TRC_SCHED_ID_SHIFT) | (e))
#define CSCHED(e)		SCHED_EVT(TRC_SCHED_CSCHED, e)
#define CSCHED2(e)		SCHED_EVT(TRC_SCHED_CSCHED2, e)
#define RTDS(e)			SCHED_EVT(TRC_SCHED_RTDS, e)
#define SNULL(e)		SCHED_EVT(TRC_SCHED_SNULL, e)
#define HVM64(e)		((e) | TRC_64_FLAG)

/* Pseudo ids of the catalogue rows that are not one Xen id. */
#define ID_RUNSTATE		TRC_SCHED_RUNSTATE_CHANGE
#define ID_UNKNOWN		0xffffffffu
#define ID_GUEST		TRC_GUEST
#define ID_SCHED_SWITCH		0xfffffffeu

#define RAW_FIELDS "x32 xen_id; u32 nr; x32 w0; x32 w1; x32 w2; x32 w3; x32 w4; x32 w5; x32 w6"
#define ARGS "x32 arg0; x32 arg1; x32 arg2; x32 arg3; x32 arg4; x32 arg5; x32 arg6"

struct row {
	uint32_t	xen_id;
	const char	*system;
	const char	*name;
	enum rec_enc	enc;
	const char	*fields;
};

#define W(id, n, f)	{ id, "xen", n, REC_ENC_WORDS, f }
#define R(id, n)	{ id, "xen", n, REC_ENC_RAW, RAW_FIELDS }

static const struct row rows[] = {
	/* derived events first: their ids are fixed */
	{ ID_SCHED_SWITCH, "sched", "sched_switch", REC_ENC_WORDS, NULL },
	{ TRC_HVM_VMENTRY, "kvm", "kvm_entry", REC_ENC_VMENTRY, NULL },
	{ XEN_VMX_EXIT, "kvm", "kvm_exit", REC_ENC_VMEXIT, NULL },
	{ XEN_VMX_EXIT64, "kvm", "kvm_exit", REC_ENC_VMEXIT, NULL },
	{ XEN_SVM_EXIT, "kvm", "kvm_exit", REC_ENC_VMEXIT, NULL },
	{ XEN_SVM_EXIT64, "kvm", "kvm_exit", REC_ENC_VMEXIT, NULL },
	{ ID_UNKNOWN, "xen", "unknown", REC_ENC_RAW, RAW_FIELDS },

	/* GEN */
	W(TRC_LOST_RECORDS, "lost_records", "u32 count; u16 dom; u16 vcpu; x64 first_tsc"),
	W(TRC_TRACE_CPU_CHANGE, "cpu_change", "u32 cpu; u32 window_size"),
	R(TRC_GEN + 4, "trace_irq"),

	/* SCHED: runstate changes (one row for the 16 old/new pairs) */
	{ ID_RUNSTATE, "xen", "runstate_change", REC_ENC_RUNSTATE,
	  "u16 vcpu; u16 dom; u8 old_state; u8 new_state; u16 pad" },
	W(TRC_SCHED_CONTINUE_RUNNING, "continue_running", "u16 vcpu; u16 dom"),
	W(TRC_SCHED_DOM_ADD, "dom_add", "u32 dom"),
	W(TRC_SCHED_DOM_REM, "dom_rem", "u32 dom"),
	W(TRC_SCHED_SLEEP, "sleep", "u32 dom; u32 vcpu"),
	W(TRC_SCHED_WAKE, "wake", "u32 dom; u32 vcpu"),
	W(TRC_SCHED_YIELD, "yield", "u32 dom; u32 vcpu"),
	W(TRC_SCHED_BLOCK, "block", "u32 dom; u32 vcpu"),
	W(TRC_SCHED_SHUTDOWN, "shutdown", "u32 dom; u32 vcpu; u32 reason"),
	R(TRC_SCHED_CTL, "sched_ctl"),
	W(TRC_SCHED_ADJDOM, "adjdom", "u32 dom"),
	W(TRC_SCHED_SWITCH, "switch", "u32 prev_dom; u32 prev_unit; u32 next_dom; u32 next_unit"),
	R(TRC_SCHED_S_TIMER_FN, "s_timer_fn"),
	R(TRC_SCHED_T_TIMER_FN, "t_timer_fn"),
	R(TRC_SCHED_DOM_TIMER_FN, "dom_timer_fn"),
	W(TRC_SCHED_SWITCH_INFPREV, "switch_infprev", "u32 dom; u32 unit; u32 runtime_ns"),
	W(TRC_SCHED_SWITCH_INFNEXT, "switch_infnext", "u32 dom; u32 unit; u32 wait_ns; s32 slice_ns"),
	W(TRC_SCHED_SHUTDOWN_CODE, "shutdown_code", "u32 dom; u32 vcpu; u32 reason"),
	W(TRC_SCHED_SWITCH_INFCONT, "switch_infcont", "u32 dom; u32 unit; u32 runtime_ns; s32 slice_ns"),

	/* credit */
	W(CSCHED(1), "csched_sched_tasklet", ""),
	W(CSCHED(2), "csched_account_start", "u32 dom; u32 unit; u32 active_units"),
	W(CSCHED(3), "csched_account_stop", "u32 dom; u32 unit; u32 active_units"),
	W(CSCHED(4), "csched_stolen_unit", "u32 peer_cpu; u32 dom; u32 unit"),
	W(CSCHED(5), "csched_picked_cpu", "u32 dom; u32 unit; u32 cpu"),
	W(CSCHED(6), "csched_tickle", "u32 cpu"),
	W(CSCHED(7), "csched_boost_start", "u32 dom; u32 unit"),
	W(CSCHED(8), "csched_boost_end", "u32 dom; u32 unit"),
	W(CSCHED(9), "csched_schedule", "u16 cpu; u8 tasklet; u8 idle"),
	W(CSCHED(10), "csched_ratelimit", "u16 unit; u16 dom; u32 runtime_ns"),
	W(CSCHED(11), "csched_steal_check", "u32 peer_cpu; u32 checked"),

	/* credit2 (18 does not exist) */
	W(CSCHED2(1), "csched2_tick", ""),
	W(CSCHED2(2), "csched2_runq_pos", "u16 unit; u16 dom; u32 pos"),
	W(CSCHED2(3), "csched2_credit_burn", "u16 unit; u16 dom; s32 credit; s32 budget; s32 delta"),
	W(CSCHED2(4), "csched2_credit_add", "u16 unit; u16 dom; s32 credit"),
	W(CSCHED2(5), "csched2_tickle_check", "u16 unit; u16 dom; s32 credit; s32 score"),
	W(CSCHED2(6), "csched2_tickle", "u16 cpu; u16 pad"),
	W(CSCHED2(7), "csched2_credit_reset", "u16 unit; u16 dom; s32 credit_start; s32 credit_end"),
	W(CSCHED2(8), "csched2_sched_tasklet", ""),
	W(CSCHED2(9), "csched2_update_load", ""),
	W(CSCHED2(10), "csched2_runq_assign", "u16 unit; u16 dom; u16 rqi; u16 pad"),
	W(CSCHED2(11), "csched2_update_unit_load", "x64 avgload; u16 unit; u16 dom; u32 shift"),
	W(CSCHED2(12), "csched2_update_runq_load",
	  "x64 rq_avgload; x64 b_avgload; u16 rq_load; u8 rq_id; u8 shift; u32 pad"),
	W(CSCHED2(13), "csched2_tickle_new", "u16 unit; u16 dom; u32 processor; s32 credit"),
	W(CSCHED2(14), "csched2_runq_max_weight", "u16 rqi; u16 max_weight"),
	W(CSCHED2(15), "csched2_migrate", "u16 unit; u16 dom; u16 rqi; u16 trqi"),
	W(CSCHED2(16), "csched2_load_check", "u16 lrq_id; u16 orq_id; u32 load_delta"),
	W(CSCHED2(17), "csched2_load_balance", "x64 lb_avgload; x64 ob_avgload; u16 lrq_id; u16 orq_id; u32 pad"),
	W(CSCHED2(19), "csched2_picked_cpu", "x64 b_avgload; u16 unit; u16 dom; u16 rq_id; u16 new_cpu"),
	W(CSCHED2(20), "csched2_runq_candidate", "u16 unit; u16 dom; u32 tickled_cpu; s32 credit"),
	W(CSCHED2(21), "csched2_schedule",
	  "u16 cpu; u16 rq_id; u8 tasklet; u8 idle; u8 smt_idle; u8 tickled"),
	W(CSCHED2(22), "csched2_ratelimit", "u16 unit; u16 dom; u32 runtime_ns"),
	W(CSCHED2(23), "csched2_runq_cand_check", "u16 unit; u16 dom"),

	/* rtds */
	W(RTDS(1), "rtds_tickle", "u16 cpu; u16 pad"),
	W(RTDS(2), "rtds_runq_pick", "u16 unit; u16 dom; u64 cur_deadline; u64 cur_budget"),
	W(RTDS(3), "rtds_budget_burn",
	  "u16 unit; u16 dom; u64 cur_budget; s32 delta; u32 priority_level; u32 has_extratime"),
	W(RTDS(4), "rtds_budget_replenish",
	  "u16 unit; u16 dom; u32 priority_level; u64 cur_deadline; u64 cur_budget"),
	W(RTDS(5), "rtds_sched_tasklet", ""),
	W(RTDS(6), "rtds_schedule", "u16 cpu; u8 tasklet; u8 tickled_idle"),

	/* null */
	W(SNULL(1), "snull_picked_cpu", "u16 unit; u16 dom; u32 new_cpu"),
	W(SNULL(2), "snull_unit_assign", "u16 unit; u16 dom; u32 cpu"),
	W(SNULL(3), "snull_unit_deassign", "u16 unit; u16 dom; u32 cpu"),
	W(SNULL(4), "snull_migrate", "u16 unit; u16 dom; u16 cpu; u16 new_cpu"),
	W(SNULL(5), "snull_schedule", "u16 tasklet; u16 cpu; s16 unit; s16 dom"),
	W(SNULL(6), "snull_tasklet", ""),

	/* DOM0OP */
	W(TRC_DOM0_DOM_ADD, "dom0_dom_add", "u32 dom"),
	W(TRC_DOM0_DOM_REM, "dom0_dom_rem", "u32 dom"),

	/* HVM handlers (entry/exit are the kvm rows above) */
	W(TRC_HVM_PF_XEN, "hvm_pf_xen", "x32 error_code; x32 va"),
	W(TRC_HVM_PF_XEN64, "hvm_pf_xen64", "x32 error_code; x64 va"),
	W(TRC_HVM_PF_INJECT, "hvm_pf_inject", "x32 error_code; x32 cr2"),
	W(TRC_HVM_PF_INJECT64, "hvm_pf_inject64", "x32 error_code; x64 cr2"),
	W(TRC_HVM_INJ_EXC, "hvm_inj_exc", "u32 vector; x32 error_code"),
	W(TRC_HVM_INJ_VIRQ, "hvm_inj_virq", "u32 vector; u32 fake"),
	W(TRC_HVM_REINJ_VIRQ, "hvm_reinj_virq", "u32 vector"),
	W(TRC_HVM_IO_READ, "hvm_io_read", "x32 port; u32 size; x32 data"),
	W(TRC_HVM_IO_WRITE, "hvm_io_write", "x32 port; u32 size; x32 data"),
	W(TRC_HVM_CR_READ, "hvm_cr_read", "u32 cr; x32 value"),
	W(TRC_HVM_CR_READ64, "hvm_cr_read64", "u32 cr; x64 value"),
	W(TRC_HVM_CR_WRITE, "hvm_cr_write", "u32 cr; x32 value"),
	W(TRC_HVM_CR_WRITE64, "hvm_cr_write64", "u32 cr; x64 value"),
	W(TRC_HVM_DR_READ, "hvm_dr_read", ""),
	W(TRC_HVM_DR_WRITE, "hvm_dr_write", ""),
	W(TRC_HVM_MSR_READ, "hvm_msr_read", "x32 msr; x64 value"),
	W(TRC_HVM_MSR_WRITE, "hvm_msr_write", "x32 msr; x64 value"),
	W(TRC_HVM_CPUID, "hvm_cpuid", "x32 leaf; x32 subleaf; x32 eax; x32 ebx; x32 ecx; x32 edx"),
	W(TRC_HVM_INTR, "hvm_intr", "u32 vector"),
	W(TRC_HVM_NMI, "hvm_nmi", ""),
	W(TRC_HVM_SMI, "hvm_smi", ""),
	W(TRC_HVM_VMMCALL, "hvm_vmmcall", "x32 eax"),
	W(TRC_HVM_HLT, "hvm_hlt", "u32 pending"),
	W(TRC_HVM_INVLPG, "hvm_invlpg", "u32 is_invlpga; x32 va"),
	W(TRC_HVM_INVLPG64, "hvm_invlpg64", "u32 is_invlpga; x64 va"),
	W(TRC_HVM_MCE, "hvm_mce", ""),
	W(TRC_HVM_IOPORT_READ, "hvm_ioport_read", "x32 port; u32 size; x32 data"),
	W(TRC_HVM_IOPORT_WRITE, "hvm_ioport_write", "x32 port; u32 size; x32 data"),
	W(TRC_HVM_IOMEM_READ, "hvm_iomem_read", "x32 addr; u32 size; x32 data"),
	W(TRC_HVM_IOMEM_WRITE, "hvm_iomem_write", "x32 addr; u32 size; x32 data"),
	W(HVM64(TRC_HVM_IOMEM_READ), "hvm_iomem_read64", "x64 addr; u32 size; x32 data"),
	W(HVM64(TRC_HVM_IOMEM_WRITE), "hvm_iomem_write64", "x64 addr; u32 size; x32 data"),
	W(TRC_HVM_CLTS, "hvm_clts", ""),
	W(TRC_HVM_LMSW, "hvm_lmsw", "x32 value"),
	W(TRC_HVM_LMSW64, "hvm_lmsw64", "x64 value"),
	W(TRC_HVM_RDTSC, "hvm_rdtsc", "u64 guest_tsc"),
	W(TRC_HVM_INTR_WINDOW, "hvm_intr_window", "u32 vector; u32 source; s32 intr"),
	W(TRC_HVM_NPF, "hvm_npf", "x64 gpa; x64 mfn; x32 qualification; u32 p2mt"),
	W(TRC_HVM_REALMODE_EMULATE, "hvm_realmode_emulate", ""),
	W(TRC_HVM_TRAP, "hvm_trap", "u32 vector"),
	W(TRC_HVM_TRAP_DEBUG, "hvm_trap_debug", "x32 exit_qualification"),
	W(TRC_HVM_VLAPIC, "hvm_vlapic", ""),
	W(TRC_HVM_XCR_READ64, "hvm_xcr_read64", "u32 index; x64 value"),
	W(TRC_HVM_XCR_WRITE64, "hvm_xcr_write64", "u32 index; x64 value"),

	/* HVM emulated devices */
	W(TRC_HVM_EMUL_HPET_START_TIMER, "hvm_emul_hpet_start_timer", ARGS),
	W(TRC_HVM_EMUL_PIT_START_TIMER, "hvm_emul_pit_start_timer", ARGS),
	W(TRC_HVM_EMUL_RTC_START_TIMER, "hvm_emul_rtc_start_timer", ARGS),
	W(TRC_HVM_EMUL_LAPIC_START_TIMER, "hvm_emul_lapic_start_timer", ARGS),
	W(TRC_HVM_EMUL_HPET_STOP_TIMER, "hvm_emul_hpet_stop_timer", ARGS),
	W(TRC_HVM_EMUL_PIT_STOP_TIMER, "hvm_emul_pit_stop_timer", ARGS),
	W(TRC_HVM_EMUL_RTC_STOP_TIMER, "hvm_emul_rtc_stop_timer", ARGS),
	W(TRC_HVM_EMUL_LAPIC_STOP_TIMER, "hvm_emul_lapic_stop_timer", ARGS),
	W(TRC_HVM_EMUL_PIT_TIMER_CB, "hvm_emul_pit_timer_cb", ARGS),
	W(TRC_HVM_EMUL_LAPIC_TIMER_CB, "hvm_emul_lapic_timer_cb", ARGS),
	W(TRC_HVM_EMUL_PIC_INT_OUTPUT, "hvm_emul_pic_int_output", ARGS),
	W(TRC_HVM_EMUL_PIC_KICK, "hvm_emul_pic_kick", ARGS),
	W(TRC_HVM_EMUL_PIC_INTACK, "hvm_emul_pic_intack", ARGS),
	W(TRC_HVM_EMUL_PIC_POSEDGE, "hvm_emul_pic_posedge", ARGS),
	W(TRC_HVM_EMUL_PIC_NEGEDGE, "hvm_emul_pic_negedge", ARGS),
	W(TRC_HVM_EMUL_PIC_PEND_IRQ_CALL, "hvm_emul_pic_pend_irq_call", ARGS),
	W(TRC_HVM_EMUL_LAPIC_PIC_INTR, "hvm_emul_lapic_pic_intr", ARGS),

	/* MEM */
	W(TRC_MEM_PAGE_GRANT_MAP, "mem_grant_map", "u32 dom"),
	W(TRC_MEM_PAGE_GRANT_UNMAP, "mem_grant_unmap", "u32 dom"),
	W(TRC_MEM_PAGE_GRANT_TRANSFER, "mem_grant_transfer", "u32 dom"),
	W(TRC_MEM_SET_P2M_ENTRY, "mem_set_p2m_entry", "x64 gfn; x64 mfn; u32 p2mt; u16 dom; u16 order"),
	W(TRC_MEM_DECREASE_RESERVATION, "mem_decrease_reservation", "x64 gfn; u16 dom; u16 order; u32 pad"),
	W(TRC_MEM_POD_POPULATE, "mem_pod_populate", "x64 gfn; x64 mfn; u16 dom; u16 order; u32 pad"),
	W(TRC_MEM_POD_ZERO_RECLAIM, "mem_pod_zero_reclaim", "x64 gfn; x64 mfn; u16 dom; u16 order; u32 pad"),
	W(TRC_MEM_POD_SUPERPAGE_SPLINTER, "mem_pod_superpage_splinter", "x64 gfn; u16 dom; u16 pad; u32 pad2"),

	/* PV */
	W(TRC_PV_HYPERCALL, "pv_hypercall", "x32 eip; u32 eax"),
	W(TRC_PV_HYPERCALL | TRC_64_FLAG, "pv_hypercall64", "x64 rip; u32 eax"),
	W(TRC_PV_TRAP, "pv_trap", "x32 eip; u16 trapnr; u16 error_code"),
	W(TRC_PV_TRAP | TRC_64_FLAG, "pv_trap64", "x64 rip; u16 trapnr; u16 error_code"),
	W(TRC_PV_PAGE_FAULT, "pv_page_fault", "x32 eip; x32 addr; x32 error_code"),
	W(TRC_PV_PAGE_FAULT | TRC_64_FLAG, "pv_page_fault64", "x64 rip; x64 addr; x32 error_code"),
	W(TRC_PV_FORCED_INVALID_OP, "pv_forced_invalid_op", "x32 eip"),
	W(TRC_PV_FORCED_INVALID_OP | TRC_64_FLAG, "pv_forced_invalid_op64", "x64 rip"),
	W(TRC_PV_EMULATE_PRIVOP, "pv_emulate_privop", "x32 eip"),
	W(TRC_PV_EMULATE_PRIVOP | TRC_64_FLAG, "pv_emulate_privop64", "x64 rip"),
	W(TRC_PV_EMULATE_4GB, "pv_emulate_4gb", "x32 eip"),
	W(TRC_PV_EMULATE_4GB | TRC_64_FLAG, "pv_emulate_4gb64", "x64 rip"),
	W(TRC_PV_MATH_STATE_RESTORE, "pv_math_state_restore", ""),
	W(TRC_PV_MATH_STATE_RESTORE | TRC_64_FLAG, "pv_math_state_restore64", ""),
	W(TRC_PV_PAGING_FIXUP, "pv_paging_fixup", "x32 eip; x32 addr"),
	W(TRC_PV_PAGING_FIXUP | TRC_64_FLAG, "pv_paging_fixup64", "x64 rip; x64 addr"),
	W(TRC_PV_GDT_LDT_MAPPING_FAULT, "pv_gdt_ldt_mapping_fault", "x32 eip; x32 offset"),
	W(TRC_PV_GDT_LDT_MAPPING_FAULT | TRC_64_FLAG, "pv_gdt_ldt_mapping_fault64", "x64 rip; x64 offset"),
	W(TRC_PV_PTWR_EMULATION, "pv_ptwr_emulation", "x64 pte; x32 addr; x32 eip"),
	W(TRC_PV_PTWR_EMULATION | TRC_64_FLAG, "pv_ptwr_emulation64", "x64 pte; x64 addr; x64 rip"),
	W(TRC_PV_PTWR_EMULATION_PAE, "pv_ptwr_emulation_pae", "x64 pte; x32 addr; x32 eip"),
	{ TRC_PV_HYPERCALL_V2, "xen", "pv_hypercall_v2", REC_ENC_HCALL_V2, NULL },
	{ TRC_PV_HYPERCALL_SUBCALL, "xen", "pv_hypercall_subcall", REC_ENC_HCALL_V2, NULL },

	/* SHADOW: the guest paging levels sit in bits 8-11 of the id */
	R(TRC_SHADOW_NOT_SHADOW, "shadow_not_shadow"),
	R(TRC_SHADOW_FAST_PROPAGATE, "shadow_fast_propagate"),
	R(TRC_SHADOW_FAST_MMIO, "shadow_fast_mmio"),
	R(TRC_SHADOW_FALSE_FAST_PATH, "shadow_false_fast_path"),
	R(TRC_SHADOW_MMIO, "shadow_mmio"),
	R(TRC_SHADOW_FIXUP, "shadow_fixup"),
	R(TRC_SHADOW_DOMF_DYING, "shadow_domf_dying"),
	R(TRC_SHADOW_EMULATE, "shadow_emulate"),
	R(TRC_SHADOW_EMULATE_UNSHADOW_USER, "shadow_emulate_unshadow_user"),
	R(TRC_SHADOW_EMULATE_UNSHADOW_EVTINJ, "shadow_emulate_unshadow_evtinj"),
	R(TRC_SHADOW_EMULATE_UNSHADOW_UNHANDLED, "shadow_emulate_unshadow_unhandled"),
	R(TRC_SHADOW_WRMAP_BF, "shadow_wrmap_bf"),
	R(TRC_SHADOW_PREALLOC_UNPIN, "shadow_prealloc_unpin"),
	R(TRC_SHADOW_RESYNC_FULL, "shadow_resync_full"),
	R(TRC_SHADOW_RESYNC_ONLY, "shadow_resync_only"),

	/* HW: power management and IRQs */
	W(TRC_PM_FREQ_CHANGE, "pm_freq_change", "u32 old_mhz; u32 new_mhz"),
	W(TRC_PM_IDLE_ENTRY, "pm_idle_entry", "u32 cstate; x32 tick; u32 expected_us; u32 predicted_us"),
	W(TRC_PM_IDLE_EXIT, "pm_idle_exit",
	  "u32 cstate; x32 tick; u32 irq0; u32 irq1; u32 irq2; u32 irq3"),
	W(TRC_HW_IRQ_MOVE_CLEANUP_DELAY, "irq_move_cleanup_delay", "u32 irq; u32 vector; u32 cpu"),
	W(TRC_HW_IRQ_MOVE_CLEANUP, "irq_move_cleanup", "u32 irq; u32 vector; u32 cpu"),
	W(TRC_HW_IRQ_BIND_VECTOR, "irq_bind_vector",
	  "u16 irq; u16 vector; x32 mask0; x32 mask1; x32 mask2; x32 mask3; x32 mask4; x32 mask5"),
	W(TRC_HW_IRQ_CLEAR_VECTOR, "irq_clear_vector",
	  "u16 irq; u16 vector; x32 mask0; x32 mask1; x32 mask2; x32 mask3; x32 mask4; x32 mask5"),
	W(TRC_HW_IRQ_MOVE_FINISH, "irq_move_finish", "u32 irq; u32 vector; u32 cpu"),
	W(TRC_HW_IRQ_ASSIGN_VECTOR, "irq_assign_vector",
	  "u16 irq; u16 vector; x32 mask0; x32 mask1; x32 mask2; x32 mask3; x32 mask4; x32 mask5"),
	W(TRC_HW_IRQ_UNMAPPED_VECTOR, "irq_unmapped_vector", "u32 vector"),
	W(TRC_HW_IRQ_HANDLED, "irq_handled", "u32 irq; x32 tsc_in; x32 tsc_out"),

	/* GUEST: HVMOP_xentrace, a 12-bit event number and up to 7 words */
	{ ID_GUEST, "xen", "guest", REC_ENC_GUEST,
	  "x32 event; u32 nr; x32 w0; x32 w1; x32 w2; x32 w3; x32 w4; x32 w5; x32 w6" },
};

#define NR_ROWS	(sizeof(rows) / sizeof(rows[0]))
#define MAX_FIELDS 12

struct field {
	char		type;		/* 'u', 's' or 'x' (unsigned, hex printed) */
	uint8_t		size;
	uint16_t	offset;
	char		name[24];
};

struct fmt {
	struct rec_event	pub;
	int			nfields;
	struct field		f[MAX_FIELDS];
};

static struct fmt fmts[NR_ROWS];
static int nfmts;
static int row_fmt[NR_ROWS];
static int unknown_fmt, runstate_fmt, guest_fmt;

#define HASH_BITS	10
static struct { uint32_t key; int16_t fmt; } table[1 << HASH_BITS];

static inline unsigned int hash(uint32_t k)
{
	return (k * 0x9e3779b1u) >> (32 - HASH_BITS);
}

static void table_add(uint32_t key, int f)
{
	unsigned int h = hash(key);

	while (table[h].fmt >= 0 && table[h].key != key)
		h = (h + 1) & ((1 << HASH_BITS) - 1);
	table[h].key = key;
	table[h].fmt = f;
}

static inline int table_get(uint32_t key)
{
	unsigned int h = hash(key);

	while (table[h].fmt >= 0) {
		if (table[h].key == key)
			return table[h].fmt;
		h = (h + 1) & ((1 << HASH_BITS) - 1);
	}
	return -1;
}

/*
 * One "<type><bits> <name>" of a field spec into @fd and @bits; returns
 * the characters it took, -1 if it is not one. By hand: sscanf() cost
 * every session's setup 1.3 M instructions.
 */
static int scan_field(const char *p, struct field *fd, int *bits)
{
	const char *q = p + 1;
	int b = 0, n = 0;

	fd->type = *p;
	if (*q < '0' || *q > '9')
		return -1;
	while (*q >= '0' && *q <= '9' && b < 1000)
		b = b * 10 + (*q++ - '0');
	while (*q == ' ')
		q++;
	while (n < (int)sizeof(fd->name) - 1 &&
	       ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
		fd->name[n++] = *q++;
	if (!n)
		return -1;
	fd->name[n] = '\0';
	*bits = b;
	return (int)(q - p);
}

/* "u32 dom; x64 rip" -> fields from offset @off. */
static int parse_fields(struct fmt *f, const char *spec, unsigned int off)
{
	const char *p = spec;

	while (p && *p) {
		struct field *fd = &f->f[f->nfields];
		int bits, n;

		while (*p == ' ' || *p == ';')
			p++;
		if (!*p)
			break;
		if (f->nfields == MAX_FIELDS)
			return -EINVAL;
		n = scan_field(p, fd, &bits);
		if (n < 0)
			return -EINVAL;
		fd->size = bits / 8;
		fd->offset = off;
		off += fd->size;
		f->nfields++;
		p += n;
	}
	return off;
}

static void add_field(struct fmt *f, char type, int size, unsigned int off, const char *name)
{
	struct field *fd = &f->f[f->nfields++];

	fd->type = type;
	fd->size = size;
	fd->offset = off;
	snprintf(fd->name, sizeof(fd->name), "%s", name);
}

static void build_special(struct fmt *f, uint32_t xen_id)
{
	switch (f->pub.enc) {
	/*
	 * The kvm plugin and KernelShark find fields by name, so the Linux
	 * names with a compact layout (no info1/info2, intr_info, error_code
	 * that Xen does not record): half the bytes of Linux's kvm_exit.
	 */
	case REC_ENC_VMENTRY:
		add_field(f, 'u', 4, 8, "vcpu_id");
		add_field(f, 'x', 4, 12, "xen_event");
		add_field(f, 'x', 8, 16, "rip");
		f->pub.size = REC_KVM_ENTRY_SIZE - 8;
		break;
	case REC_ENC_VMEXIT:
		add_field(f, 'u', 4, 8, "exit_reason");
		add_field(f, 'u', 4, 12, "isa");
		add_field(f, 'x', 8, 16, "guest_rip");
		add_field(f, 'u', 4, 24, "vcpu_id");
		add_field(f, 'x', 4, 28, "xen_event");
		f->pub.size = REC_KVM_EXIT_SIZE - 8;
		break;
	case REC_ENC_HCALL_V2: {
		static const char *const a[] = { "a0", "a1", "a2", "a3", "a4", "a5" };

		add_field(f, 'u', 4, 8, "op");
		add_field(f, 'x', 4, 12, "arg_mask");
		for (int i = 0; i < 6; i++)
			add_field(f, 'x', 8, 16 + 8 * i, a[i]);
		f->pub.size = 56;
		break;
	}
	default:
		/* sched/sched_switch, Linux's layout */
		add_field(f, 'c', 16, 8, "prev_comm");
		add_field(f, 's', 4, 24, "prev_pid");
		add_field(f, 's', 4, 28, "prev_prio");
		add_field(f, 's', 8, 32, "prev_state");
		add_field(f, 'c', 16, 40, "next_comm");
		add_field(f, 's', 4, 56, "next_pid");
		add_field(f, 's', 4, 60, "next_prio");
		f->pub.size = REC_SCHED_SWITCH_SIZE - 8;
		break;
	}
	(void)xen_id;
}

/* Rows that share a format find it by name: a scan of every format was a third of init(). */
#define NAME_BITS	9
_Static_assert(NR_ROWS < (1u << NAME_BITS) / 2, "the name table must stay sparse");

/* The slot of @r's system/name in @by_name (format + 1, 0: empty): its format's, or a free one. */
static int16_t *name_slot(int16_t *by_name, const struct row *r)
{
	uint32_t h = 2166136261u, mask = (1u << NAME_BITS) - 1;

	for (const char *c = r->system; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	for (const char *c = r->name; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	for (h &= mask; by_name[h]; h = (h + 1) & mask) {
		const struct rec_event *e = &fmts[by_name[h] - 1].pub;

		if (!strcmp(e->name, r->name) && !strcmp(e->system, r->system))
			break;
	}
	return &by_name[h];
}

static void init(void)
{
	int16_t by_name[1u << NAME_BITS] = { 0 };

	/* about 25 pages of zeroes: one call instead of a fault each */
	tcx_mem_populate(fmts, sizeof(fmts));
	tcx_mem_populate(table, sizeof(table));
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		table[i].fmt = -1;
	for (size_t i = 0; i < NR_ROWS; i++) {
		const struct row *r = &rows[i];
		int16_t *slot = name_slot(by_name, r);
		int f = *slot - 1;

		if (f < 0) {
			struct fmt *fm = &fmts[nfmts];
			int end;

			fm->pub.xen_id = r->xen_id;
			fm->pub.system = r->system;
			fm->pub.name = r->name;
			fm->pub.enc = r->enc;
			if (!strcmp(r->name, "sched_switch"))
				fm->pub.id = REC_ID_SCHED_SWITCH;
			else if (r->enc == REC_ENC_VMENTRY)
				fm->pub.id = REC_ID_KVM_ENTRY;
			else if (r->enc == REC_ENC_VMEXIT)
				fm->pub.id = REC_ID_KVM_EXIT;
			else
				fm->pub.id = REC_ID_XEN_BASE + nfmts;
			if (r->fields) {
				unsigned int base = 8;

				if (r->enc == REC_ENC_WORDS) {
					add_field(fm, 'u', 4, 8, "nr");
					base = 12;
				}
				end = parse_fields(fm, r->fields, base);
				if (end < 0 || end - 8 > REC_MAX_PAYLOAD - 8) {
					fprintf(stderr, "recorder: bad field spec of %s\n", r->name);
					end = base;
				}
				fm->pub.size = end - 8;
			} else {
				build_special(fm, r->xen_id);
			}
			f = nfmts++;
			*slot = (int16_t)nfmts;
		}
		row_fmt[i] = f;
		if (r->xen_id == ID_UNKNOWN)
			unknown_fmt = f;
		else if (r->xen_id == ID_SCHED_SWITCH)
			continue;
		else {
			if (r->enc == REC_ENC_RUNSTATE)
				runstate_fmt = f;
			if (r->enc == REC_ENC_GUEST)
				guest_fmt = f;
			table_add(r->xen_id, f);
		}
	}
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_bool ready;

static void init_once(void)
{
	init();
	atomic_store_explicit(&ready, true, memory_order_release);
}

/* Once built the tables are read-only: one acquire load per lookup. */
static inline void ensure_init(void)
{
	if (!atomic_load_explicit(&ready, memory_order_acquire))
		pthread_once(&once, init_once);
}

int rec_events_count(void)
{
	ensure_init();
	return nfmts;
}

const struct rec_event *rec_event_at(int i)
{
	ensure_init();
	if (i < 0 || i >= nfmts)
		return NULL;
	return &fmts[i].pub;
}

const char *rec_class_name(enum rec_class c)
{
	static const char *const names[REC_NR_CLASSES] = {
		"gen", "sched", "dom0op", "hvm", "mem", "pv", "shadow", "hw", "guest", "other",
	};

	return (unsigned int)c < REC_NR_CLASSES ? names[c] : "?";
}

const struct rec_event *rec_event_lookup(uint32_t event)
{
	int f;

	ensure_init();
	event &= 0x0fffffff;
	f = table_get(event);
	if (f >= 0)
		return &fmts[f].pub;
	switch (rec_event_class(event)) {
	case REC_CLASS_SCHED:
		/* 0x00021001 | old << 8 | new << 4 */
		if ((event & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE)
			return &fmts[runstate_fmt].pub;
		break;
	case REC_CLASS_HVM:
		if (event & TRC_HVM_NESTEDFLAG) {
			f = table_get(event & ~TRC_HVM_NESTEDFLAG);
			if (f >= 0 && fmts[f].pub.enc != REC_ENC_WORDS)
				return &fmts[f].pub;
		}
		break;
	case REC_CLASS_SHADOW:
		f = table_get(event & ~0xf00u);
		if (f >= 0)
			return &fmts[f].pub;
		break;
	case REC_CLASS_GUEST:
		return &fmts[guest_fmt].pub;
	default:
		break;
	}
	return &fmts[unknown_fmt].pub;
}

static const struct fmt *fmt_of(const struct rec_event *e)
{
	return (const struct fmt *)e;
}

static const char *c_type(const struct field *fd)
{
	if (fd->type == 'c')
		return "char";
	switch (fd->size) {
	case 1: return fd->type == 's' ? "signed char" : "unsigned char";
	case 2: return fd->type == 's' ? "short" : "unsigned short";
	case 4: return fd->type == 's' ? "int" : "unsigned int";
	default: return fd->type == 's' ? "long" : "unsigned long long";
	}
}

static const char *conv(const struct field *fd)
{
	if (fd->size == 8)
		return fd->type == 's' ? "%ld" : "0x%llx";
	if (fd->type == 'x')
		return "0x%x";
	return fd->type == 's' ? "%d" : "%u";
}

/* Fields the print fmt names: not the word count nor padding. */
static bool in_print(const struct field *fd)
{
	return strcmp(fd->name, "nr") && strncmp(fd->name, "pad", 3);
}

/* @v in decimal at @p; returns the end. */
static char *put_dec(char *p, unsigned int v)
{
	char t[10];
	int n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = t[--n];
	return p;
}

/* The format text, appended piece by piece: snprintf() cost a session's setup 3.5 M instructions. */
struct text {
	char	*buf;
	size_t	size;
	size_t	len;	/* what the whole text needs, as snprintf() counts */
};

static void text_add(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->len < t->size)
		memcpy(t->buf + t->len, s, n < t->size - t->len ? n : t->size - t->len);
	t->len += n;
}

static void text_uint(struct text *t, unsigned int v)
{
	char d[12];

	*put_dec(d, v) = '\0';
	text_add(t, d);
}

/* The length without the NUL, -ENOSPC if it (and its NUL) did not fit. */
static int text_end(struct text *t)
{
	if (t->len >= t->size) {
		if (t->size)
			t->buf[t->size - 1] = '\0';
		return -ENOSPC;
	}
	t->buf[t->len] = '\0';
	return (int)t->len;
}

int rec_event_format(const struct rec_event *e, char *buf, size_t size)
{
	const struct fmt *f = fmt_of(e);
	struct text t = { .buf = buf, .size = size };
	/* the layouts Linux uses, "long" where it has them */
	bool kernel_types = e->enc == REC_ENC_VMENTRY || e->enc == REC_ENC_VMEXIT ||
		     !strcmp(e->name, "sched_switch");
	bool first = true;

	text_add(&t, "name: ");
	text_add(&t, e->name);
	text_add(&t, "\nID: ");
	text_uint(&t, e->id);
	text_add(&t, "\nformat:\n"
		 "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		 "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		 "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		 "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n");
	for (int i = 0; i < f->nfields; i++) {
		const struct field *fd = &f->f[i];

		text_add(&t, "\tfield:");
		if (fd->type == 'c') {
			text_add(&t, "char ");
			text_add(&t, fd->name);
			text_add(&t, "[16];\toffset:");
			text_uint(&t, fd->offset);
			text_add(&t, ";\tsize:16;\tsigned:1;\n");
			continue;
		}
		if (kernel_types && fd->size == 8)
			text_add(&t, fd->type == 's' ? "long" : "unsigned long");
		else
			text_add(&t, c_type(fd));
		text_add(&t, " ");
		text_add(&t, fd->name);
		text_add(&t, ";\toffset:");
		text_uint(&t, fd->offset);
		text_add(&t, ";\tsize:");
		text_uint(&t, fd->size);
		text_add(&t, fd->type == 's' ? ";\tsigned:1;\n" : ";\tsigned:0;\n");
	}
	if (!strcmp(e->name, "sched_switch")) {
		text_add(&t, "\nprint fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> "
			 "next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, "
			 "REC->prev_prio, REC->prev_state ? \"S\" : \"R\", REC->next_comm, "
			 "REC->next_pid, REC->next_prio\n");
		return text_end(&t);
	}
	text_add(&t, "\nprint fmt: \"");
	for (int i = 0; i < f->nfields; i++) {
		const struct field *fd = &f->f[i];

		if (!in_print(fd))
			continue;
		if (!first)
			text_add(&t, " ");
		text_add(&t, fd->name);
		text_add(&t, "=");
		text_add(&t, conv(fd));
		first = false;
	}
	text_add(&t, "\"");
	for (int i = 0; i < f->nfields; i++) {
		const struct field *fd = &f->f[i];

		if (!in_print(fd))
			continue;
		text_add(&t, ", REC->");
		text_add(&t, fd->name);
	}
	text_add(&t, "\n");
	return text_end(&t);
}

static inline void put16(uint8_t *b, unsigned int off, uint16_t v)
{
	memcpy(b + off, &v, 2);
}

static inline void put32(uint8_t *b, unsigned int off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static inline void put64(uint8_t *b, unsigned int off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static inline void common(uint8_t *b, uint16_t id, int pid)
{
	put16(b, 0, id);
	b[2] = 0;
	b[3] = 0;
	put32(b, 4, (uint32_t)pid);
}

/*
 * PV_HYPERCALL_V2: op, then the arguments its flags say are present. Out
 * of line: the common encodings stay short (fewer registers to save).
 */
static __attribute__((noinline)) bool encode_hcall(const struct rec_event *e,
						   const struct rec_record *r,
						   unsigned int nr, uint8_t *b)
{
	uint32_t w0 = nr ? r->w[0] : 0;
	unsigned int k = 1;

	memset(b + 8, 0, e->size);
	put32(b, 8, w0 & 0x000fffff);
	put32(b, 12, w0 >> 20);
	for (int i = 0; i < 6; i++) {
		unsigned int code = (w0 >> (20 + 2 * i)) & 3;
		uint64_t v = 0;

		if (code == 1 && k < nr) {
			v = r->w[k++];
		} else if (code == 2 && k + 1 < nr) {
			v = r->w[k] | ((uint64_t)r->w[k + 1] << 32);
			k += 2;
		} else if (code) {
			return false;	/* arguments missing: keep it raw */
		}
		put64(b, 16 + 8 * i, v);
	}
	return k >= nr;
}

size_t rec_event_encode(const struct rec_event *e, const struct rec_record *r,
			int pid, int isa, void *buf)
{
	uint8_t *b = buf;
	size_t len = 8 + e->size;
	unsigned int nr = r->nr > 7 ? 7 : r->nr;

	common(b, e->id, pid);
	switch (e->enc) {
	case REC_ENC_WORDS:
		if (4 + nr * 4u > e->size)
			return 0;
		rec_encode_words(b, e->id, e->size, pid, r->w, nr);
		return len;
	case REC_ENC_RUNSTATE:
		if (nr != 1)
			return 0;
		put32(b, 8, r->w[0]);
		b[12] = (r->event >> 8) & 0xf;
		b[13] = (r->event >> 4) & 0xf;
		put16(b, 14, 0);
		return len;
	case REC_ENC_RAW:
	case REC_ENC_GUEST:
		put32(b, 8, e->enc == REC_ENC_GUEST ? (r->event & 0xfff) : r->event);
		put32(b, 12, nr);
		memcpy(b + 16, r->w, nr * 4u);
		memset(b + 16 + nr * 4u, 0, (7 - nr) * 4u);
		return len;
	case REC_ENC_HCALL_V2:
		return encode_hcall(e, r, nr, b) ? len : 0;
	case REC_ENC_VMENTRY:
		if (nr)
			return 0;
		rec_encode_vmentry(b, e->id, pid, r->event);
		return len;
	case REC_ENC_VMEXIT:
		if (nr > 3)
			return 0;
		rec_encode_vmexit(b, e->id, pid, isa, r->event, r->w, nr);
		return len;
	}
	return 0;
}

size_t rec_encode_sched_switch(void *buf, int prev_pid, const char *prev_comm,
			       long prev_state, int next_pid, const char *next_comm)
{
	uint8_t *b = buf;
	int64_t st = prev_state;

	memset(b, 0, REC_SCHED_SWITCH_SIZE);
	common(b, REC_ID_SCHED_SWITCH, prev_pid);
	strncpy((char *)b + 8, prev_comm, 15);
	put32(b, 24, (uint32_t)prev_pid);
	put32(b, 28, 120);
	memcpy(b + 32, &st, 8);
	strncpy((char *)b + 40, next_comm, 15);
	put32(b, 56, (uint32_t)next_pid);
	put32(b, 60, 120);
	return REC_SCHED_SWITCH_SIZE;
}

size_t rec_encode_kvm_entry(void *buf, int pid, uint32_t vcpu)
{
	uint8_t *b = buf;

	memset(b, 0, REC_KVM_ENTRY_SIZE);
	common(b, REC_ID_KVM_ENTRY, pid);
	put32(b, 8, vcpu);
	return REC_KVM_ENTRY_SIZE;
}

size_t rec_encode_kvm_exit_state(void *buf, int pid, uint32_t vcpu, long prev_state)
{
	uint8_t *b = buf;

	memset(b, 0, REC_KVM_EXIT_SIZE);
	common(b, REC_ID_KVM_EXIT, pid);
	/*
	 * No Xen exit record (PV, or HVM tracing off): name the reason the
	 * vCPU left by a VMX reason the kvm plugin prints, HLT when it
	 * blocked, EXTERNAL_INTERRUPT (the scheduler's tick) when preempted.
	 * xen_event 0 tells these apart from real exits.
	 */
	put32(b, 8, prev_state == REC_STATE_BLOCKED ? REC_SYNTH_EXIT_BLOCKED
						    : REC_SYNTH_EXIT_PREEMPTED);
	put32(b, 12, 1);
	put32(b, 24, vcpu);
	return REC_KVM_EXIT_SIZE;
}

size_t rec_encode_kvm_exit(void *buf, int pid, uint32_t vcpu)
{
	return rec_encode_kvm_exit_state(buf, pid, vcpu, REC_STATE_RUNNING);
}

/* By hand, not snprintf(): it runs for every vCPU switch (a thousand instructions each). */
void rec_vcpu_comm(uint32_t dom, uint32_t vcpu, char comm[16])
{
	char *p = comm;

	if (dom == REC_DOMID_IDLE) {
		memcpy(comm, "<idle>", 7);
		return;
	}
	*p++ = 'd';
	p = put_dec(p, dom & 0xffff);
	*p++ = 'v';
	p = put_dec(p, vcpu & 0xffff);
	*p = '\0';
}

uint64_t rec_guest_traceid(uint32_t dom)
{
	/* "XENDOM" and the domid: stable, and never 0 as KernelShark needs. */
	return 0x58454e444f4d0000ull | (dom & 0xffff);
}
