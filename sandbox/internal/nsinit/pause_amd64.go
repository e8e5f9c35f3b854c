package nsinit

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// The pause executable: a static x86-64 ELF with one loadable segment of
// hand-assembled code, no libc, no data. In assembly:
//
//	_start: push  $SIGSET                 ; {SIGINT, SIGTERM, SIGCHLD} at (%rsp)
//	        rt_sigprocmask(SIG_BLOCK, %rsp, NULL, 8)
//	reap:   wait4(-1, NULL, WNOHANG, NULL)
//	        if rax > 0: jmp reap           ; reaped one, look for more
//	wait:   eax = rt_sigtimedwait(%rsp, NULL, NULL, 8)
//	        if eax == SIGCHLD: jmp reap
//	        if eax == SIGTERM or SIGINT: exit_group(0)
//	        jmp wait                       ; EINTR and the like
//
// The signals are blocked, so they are queued even though a PID-namespace
// init ignores signals it has no handler for; rt_sigtimedwait takes them
// synchronously. A SIGCHLD arriving while it reaps stays pending, so no
// exit is missed.
const (
	pauseBase  = 0x400000
	elfHdrSize = 64
	phdrSize   = 56
	numPhdrs   = 2
	codeOffset = elfHdrSize + numPhdrs*phdrSize

	sysRtSigprocmask  = 14
	sysWait4          = 61
	sysRtSigtimedwait = 128
	sysExitGroup      = 231
	sigINT            = 2
	sigTERM           = 15
	sigCHLD           = 17
	pauseSigset       = 1<<(sigINT-1) | 1<<(sigTERM-1) | 1<<(sigCHLD-1)
)

// pauseCode assembles the program.
func pauseCode() []byte {
	var a asm
	a.emit(0x68) // push imm32 (sign-extended to 64 bits)
	a.imm32(pauseSigset)
	a.movEAX(sysRtSigprocmask)
	a.emit(0x31, 0xff)       // xor edi, edi          (SIG_BLOCK)
	a.emit(0x48, 0x89, 0xe6) // mov rsi, rsp          (set)
	a.emit(0x31, 0xd2)       // xor edx, edx          (oldset = NULL)
	a.movR10D(8)             //                       (sigsetsize)
	a.emit(0x0f, 0x05)       // syscall

	a.label("reap")
	a.movEAX(sysWait4)
	a.emit(0x48, 0x83, 0xcf, 0xff) // or rdi, -1       (any child)
	a.emit(0x31, 0xf6)             // xor esi, esi     (status = NULL)
	a.emit(0xba)                   // mov edx, imm32   (WNOHANG)
	a.imm32(1)
	a.emit(0x45, 0x31, 0xd2) // xor r10d, r10d       (rusage = NULL)
	a.emit(0x0f, 0x05)       // syscall
	a.emit(0x48, 0x85, 0xc0) // test rax, rax
	a.jump(0x7f, "reap")     // jg reap

	a.label("wait")
	a.movEAX(sysRtSigtimedwait)
	a.emit(0x48, 0x89, 0xe7) // mov rdi, rsp         (set)
	a.emit(0x31, 0xf6)       // xor esi, esi         (info = NULL)
	a.emit(0x31, 0xd2)       // xor edx, edx         (timeout = NULL)
	a.movR10D(8)             //                      (sigsetsize)
	a.emit(0x0f, 0x05)       // syscall
	a.cmpEAX(sigCHLD)
	a.jump(0x74, "reap") // je reap
	a.cmpEAX(sigTERM)
	a.jump(0x74, "exit") // je exit
	a.cmpEAX(sigINT)
	a.jump(0x75, "wait") // jne wait

	a.label("exit")
	a.movEAX(sysExitGroup)
	a.emit(0x31, 0xff) // xor edi, edi            (status 0)
	a.emit(0x0f, 0x05) // syscall
	return a.assemble()
}

// pauseELF returns the pause executable.
func pauseELF() []byte {
	code := pauseCode()
	size := uint64(codeOffset + len(code))
	var b bytes.Buffer
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(elf.EM_X86_64),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     pauseBase + codeOffset,
		Phoff:     elfHdrSize,
		Ehsize:    elfHdrSize,
		Phentsize: phdrSize,
		Phnum:     numPhdrs,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	progs := [numPhdrs]elf.Prog64{
		{ // text: the whole file, read + execute
			Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
			Vaddr: pauseBase, Paddr: pauseBase, Filesz: size, Memsz: size, Align: 0x1000,
		},
		{ // a non-executable stack
			Type: uint32(elf.PT_GNU_STACK), Flags: uint32(elf.PF_R | elf.PF_W), Align: 16,
		},
	}
	_ = binary.Write(&b, binary.LittleEndian, hdr)
	_ = binary.Write(&b, binary.LittleEndian, progs)
	b.Write(code)
	return b.Bytes()
}

// asm is just enough of an x86-64 assembler for pauseCode: raw bytes,
// labels and short (rel8) conditional jumps.
type asm struct {
	code   []byte
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at    int // offset of the rel8 byte
	label string
}

func (a *asm) emit(b ...byte) { a.code = append(a.code, b...) }

func (a *asm) imm32(v uint32) { a.code = binary.LittleEndian.AppendUint32(a.code, v) }

func (a *asm) movEAX(v uint32) { a.emit(0xb8); a.imm32(v) } // mov eax, imm32

func (a *asm) movR10D(v uint32) { a.emit(0x41, 0xba); a.imm32(v) } // mov r10d, imm32

func (a *asm) cmpEAX(v byte) { a.emit(0x83, 0xf8, v) } // cmp eax, imm8

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	a.labels[name] = len(a.code)
}

// jump emits a short jump opcode (jg 0x7f, je 0x74, jne 0x75, jmp 0xeb).
func (a *asm) jump(op byte, label string) {
	a.emit(op, 0)
	a.fixups = append(a.fixups, fixup{at: len(a.code) - 1, label: label})
}

func (a *asm) assemble() []byte {
	for _, f := range a.fixups {
		target, ok := a.labels[f.label]
		rel := target - (f.at + 1)
		if !ok || rel < -128 || rel > 127 {
			panic("nsinit: pause assembler: bad jump to " + f.label)
		}
		a.code[f.at] = byte(int8(rel))
	}
	return a.code
}
