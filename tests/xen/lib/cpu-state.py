"""Where the emulated machine's CPUs are, from QEMU's monitor (run-scenario.sh,
before it stops a hung QEMU).

    python3 cpu-state.py MONITOR_SOCKET

Two samples a second apart of `info cpus` and `info registers -a`. Prints one
summary line per CPU first ("summary: CPU 0: ..."): where its instruction
pointer was in each sample, its privilege level, whether it was halted, and
whether it moved. Xen runs at CPL 0 at ffff82d0..., a 64-bit PV kernel at
CPL 3 at ffffffff..., user space lower. Then the raw monitor output. Exit 0
with a line saying so when the monitor does not answer (a stub QEMU).
"""
import re
import socket
import sys
import time

PROMPT = b"(qemu) "
# the monitor echoes what it is sent, with terminal escapes
ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CPU = re.compile(r"^CPU#(\d+)")
IP = re.compile(r"\b([RE]IP)=([0-9a-f]+)")
CPL = re.compile(r"\bCPL=(\d)")
HLT = re.compile(r"\bHLT=(\d)")


def command(sock, cmd):
    sock.sendall(cmd.encode() + b"\n")
    # the first line is the echo of the command
    return cmd + "\n" + read_prompt(sock).split("\n", 1)[-1]


def read_prompt(sock):
    out = b""
    while not out.endswith(PROMPT):
        chunk = sock.recv(65536)
        if not chunk:
            break
        out += chunk
    return ESCAPES.sub("", out.decode(errors="replace"))


def parse(regs):
    """{cpu: (ip, cpl, hlt)} from `info registers -a`."""
    cpus, cur = {}, None
    for line in regs.splitlines():
        m = CPU.match(line.strip())
        if m:
            cur = int(m.group(1))
            cpus[cur] = ["?", "?", "?"]
            continue
        if cur is None:
            continue
        for i, rx in ((0, IP), (1, CPL), (2, HLT)):
            m = rx.search(line)
            if m and cpus[cur][i] == "?":
                cpus[cur][i] = m.group(m.lastindex)
    return cpus


def where(ip, cpl):
    if ip.startswith("ffff82d"):
        return "Xen"
    if ip.startswith("ffffffff"):
        return "a kernel"
    return "user space" if cpl == "3" else "low addresses"


def main():
    path = sys.argv[1]
    try:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(5)
        sock.connect(path)
        read_prompt(sock)
        raw, samples = [], []
        for i in range(2):
            if i:
                time.sleep(1)
            cpus = command(sock, "info cpus")
            regs = command(sock, "info registers -a")
            raw.append(cpus + regs)
            samples.append(parse(regs))
        sock.close()
    except OSError as e:
        print(f"summary: no answer from QEMU's monitor at {path}: {e}")
        return 0
    first, second = samples
    for cpu in sorted(first):
        ip0, cpl0, hlt0 = first[cpu]
        ip1, cpl1, hlt1 = second.get(cpu, ["?", "?", "?"])
        moved = "halted both times" if hlt0 == hlt1 == "1" else (
            "same instruction both times" if ip0 == ip1 else "moved")
        print(f"summary: CPU {cpu}: ip {ip0} (CPL {cpl0}, {where(ip0, cpl0)}, HLT={hlt0}), "
              f"1 s later {ip1} (CPL {cpl1}, {where(ip1, cpl1)}, HLT={hlt1}): {moved}")
    for i, text in enumerate(raw):
        print(f"---- sample {i + 1} ----")
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
