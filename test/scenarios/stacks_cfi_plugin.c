// SPDX-License-Identifier: Apache-2.0
// Plugins for stacks_libunwind_probe.cc (issue 7): the same function,
// stacks_cfi_call(fn), which calls fn, at the same offset in two libraries
// that differ only in the unwind rule at the return address: built with
// CFA_OFFSET=32 it tells the truth (its frame is 24 bytes plus the return
// address), with CFA_OFFSET=120 it does not. Loaded one after the other at
// the same address, they show whether libunwind walks the second with the
// first one's cached rules.
#if defined(__x86_64__)
#define GT_STR2(x) #x
#define GT_STR(x) GT_STR2(x)
__asm__(
    ".text\n"
    ".globl stacks_cfi_call\n"
    ".type stacks_cfi_call,@function\n"
    "stacks_cfi_call:\n"
    ".cfi_startproc\n"
    "sub $24, %rsp\n"
    ".cfi_def_cfa_offset " GT_STR(CFA_OFFSET) "\n"
    "call *%rdi\n"
    "add $24, %rsp\n"
    ".cfi_def_cfa_offset 8\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size stacks_cfi_call, .-stacks_cfi_call\n");
#endif
