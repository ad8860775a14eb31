"""What the GPU benchmarks that alternate whole processes share: pinning every
process to one CPU on request (--cpu), and the A/A of the runs without capguard
(the even rounds' processes against the odd rounds'), the ratio's noise floor."""
import os
import statistics
import sys


def pinner(cpu, prog):
    """(preexec_fn, words for the heading) for --cpu (None: not pinned); exits 2
    with a line when the CPU is not one this process may use."""
    if cpu is None or cpu < 0:
        return None, "not pinned"
    cpus = sorted(os.sched_getaffinity(0))
    if cpu not in cpus:
        print("%s: CPU %d is not one this process may use (%s)" % (prog, cpu, cpus), file=sys.stderr)
        raise SystemExit(2)
    return (lambda: os.sched_setaffinity(0, {cpu})), "pinned to CPU %d" % cpu


def aa_ratio(values):
    """The even rounds' median over the odd rounds' (None with fewer than two)."""
    even, odd = values[0::2], values[1::2]
    return statistics.median(even) / statistics.median(odd) if odd else None
