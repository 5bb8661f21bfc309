// SPDX-License-Identifier: GPL-2.0
/*
 * Names of exit reasons (Intel SDM appendix C basic reasons; AMD APM
 * VMEXIT codes) and of PV hypercalls (xen/include/public/xen.h numbers).
 */
#include <stddef.h>

#include "analyze.h"

static const char *const vmx[] = {
	[0] = "EXCEPTION_NMI", [1] = "EXTERNAL_INTERRUPT", [2] = "TRIPLE_FAULT",
	[3] = "INIT", [4] = "SIPI", [5] = "IO_SMI", [6] = "OTHER_SMI",
	[7] = "PENDING_INTERRUPT", [8] = "PENDING_VIRT_NMI", [9] = "TASK_SWITCH",
	[10] = "CPUID", [11] = "GETSEC", [12] = "HLT", [13] = "INVD", [14] = "INVLPG",
	[15] = "RDPMC", [16] = "RDTSC", [17] = "RSM", [18] = "VMCALL", [19] = "VMCLEAR",
	[20] = "VMLAUNCH", [21] = "VMPTRLD", [22] = "VMPTRST", [23] = "VMREAD",
	[24] = "VMRESUME", [25] = "VMWRITE", [26] = "VMXOFF", [27] = "VMXON",
	[28] = "CR_ACCESS", [29] = "DR_ACCESS", [30] = "IO_INSTRUCTION", [31] = "MSR_READ",
	[32] = "MSR_WRITE", [33] = "INVALID_GUEST_STATE", [34] = "MSR_LOADING",
	[36] = "MWAIT_INSTRUCTION", [37] = "MONITOR_TRAP_FLAG",
	[39] = "MONITOR_INSTRUCTION", [40] = "PAUSE_INSTRUCTION", [41] = "MACHINE_CHECK",
	[43] = "TPR_BELOW_THRESHOLD", [44] = "APIC_ACCESS", [45] = "EOI_INDUCED",
	[46] = "GDTR_IDTR", [47] = "LDTR_TR", [48] = "EPT_VIOLATION", [49] = "EPT_MISCONFIG",
	[50] = "INVEPT", [51] = "RDTSCP", [52] = "PREEMPTION_TIMER", [53] = "INVVPID",
	[54] = "WBINVD", [55] = "XSETBV", [56] = "APIC_WRITE", [57] = "RDRAND",
	[58] = "INVPCID", [59] = "VMFUNC", [60] = "ENCLS", [61] = "RDSEED",
	[62] = "PML_FULL", [63] = "XSAVES", [64] = "XRSTORS",
};

static const char *svm_name(uint32_t r)
{
	static const char *const low[] = {
		[0x60] = "INTR", [0x61] = "NMI", [0x62] = "SMI", [0x63] = "INIT",
		[0x64] = "VINTR", [0x65] = "CR0_SEL_WRITE", [0x66] = "IDTR_READ",
		[0x67] = "GDTR_READ", [0x68] = "LDTR_READ", [0x69] = "TR_READ",
		[0x6a] = "IDTR_WRITE", [0x6b] = "GDTR_WRITE", [0x6c] = "LDTR_WRITE",
		[0x6d] = "TR_WRITE", [0x6e] = "RDTSC", [0x6f] = "RDPMC", [0x70] = "PUSHF",
		[0x71] = "POPF", [0x72] = "CPUID", [0x73] = "RSM", [0x74] = "IRET",
		[0x75] = "SWINT", [0x76] = "INVD", [0x77] = "PAUSE", [0x78] = "HLT",
		[0x79] = "INVLPG", [0x7a] = "INVLPGA", [0x7b] = "IOIO", [0x7c] = "MSR",
		[0x7d] = "TASK_SWITCH", [0x7e] = "FERR_FREEZE", [0x7f] = "SHUTDOWN",
		[0x80] = "VMRUN", [0x81] = "VMMCALL", [0x82] = "VMLOAD", [0x83] = "VMSAVE",
		[0x84] = "STGI", [0x85] = "CLGI", [0x86] = "SKINIT", [0x87] = "RDTSCP",
		[0x88] = "ICEBP", [0x89] = "WBINVD", [0x8a] = "MONITOR", [0x8b] = "MWAIT",
		[0x8c] = "MWAIT_CONDITIONAL", [0x8d] = "XSETBV",
	};

	if (r < 0x10)
		return "CR_READ";
	if (r < 0x20)
		return "CR_WRITE";
	if (r < 0x30)
		return "DR_READ";
	if (r < 0x40)
		return "DR_WRITE";
	if (r < 0x60)
		return "EXCEPTION";
	if (r < sizeof(low) / sizeof(low[0]))
		return low[r];
	if (r == 0x400)
		return "NPF";
	return NULL;
}

const char *ana_exit_name(uint32_t isa, uint32_t reason)
{
	if (isa == 2)
		return svm_name(reason);
	if (reason < sizeof(vmx) / sizeof(vmx[0]))
		return vmx[reason];
	return NULL;
}

static const char *const hcalls[ANA_NHCALL] = {
	[0] = "set_trap_table", [1] = "mmu_update", [2] = "set_gdt", [3] = "stack_switch",
	[4] = "set_callbacks", [5] = "fpu_taskswitch", [6] = "sched_op_compat",
	[7] = "platform_op", [8] = "set_debugreg", [9] = "get_debugreg",
	[10] = "update_descriptor", [12] = "memory_op", [13] = "multicall",
	[14] = "update_va_mapping", [15] = "set_timer_op", [16] = "event_channel_op_compat",
	[17] = "xen_version", [18] = "console_io", [19] = "physdev_op_compat",
	[20] = "grant_table_op", [21] = "vm_assist", [22] = "update_va_mapping_otherdomain",
	[23] = "iret", [24] = "vcpu_op", [25] = "set_segment_base", [26] = "mmuext_op",
	[27] = "xsm_op", [28] = "nmi_op", [29] = "sched_op", [30] = "callback_op",
	[31] = "xenoprof_op", [32] = "event_channel_op", [33] = "physdev_op",
	[34] = "hvm_op", [35] = "sysctl", [36] = "domctl", [37] = "kexec_op",
	[38] = "tmem_op", [39] = "argo_op", [40] = "xenpmu_op", [41] = "dm_op",
	[42] = "hypfs_op",
};

const char *ana_hcall_name(uint32_t op)
{
	return op < ANA_NHCALL ? hcalls[op] : NULL;
}
