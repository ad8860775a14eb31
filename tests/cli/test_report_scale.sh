#!/bin/bash
# capguard report grows with its log, not faster (docs/benchmarks.md, the
# report's figures): every run (--all) costs time linear in the runs, since
# each run's view is made from one bucketing of the log by run rather than
# from a scan and copy of the whole log per run; and the census that finds
# the latest run holds at most 0.5 KB a process (held at 250 bytes). Each is compared at two
# sizes, so that a constant (start-up, the latest run) cancels out.
source "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
# The peak resident memory counted below is glibc's allocator's, which grows
# a large array in place (mremap). ASan's copies it: at the peak the array
# grown last is there twice, the old one two thirds of the new, and its
# shadow adds an eighth of what is touched; so with ASan (no quarantine
# holding freed blocks resident) the bound is 250 bytes times 5/3.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
shadow=100 bound=250
if nm "$CAPGUARD" 2>/dev/null | grep -q __asan_init; then shadow=113 bound=417; fi

# cost ARGS...: "CPU-SECONDS PEAK-RSS-KB" of capguard ARGS (stdout
# discarded), killed after 60 CPU seconds (a quadratic cost at the large size)
cost() {
  python3 - "$CAPGUARD" "$@" <<'PY'
import resource, subprocess, sys
def limit():
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=limit)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %d" % (u.ru_utime + u.ru_stime, u.ru_maxrss))
PY
}

# --all at N and 4N runs of one process each: 4x the time when linear,
# 16x when each run scans the whole log (5,000 and 20,000 runs took 0.22 s
# and 3.8 s of CPU before; text and JSON alike)
n=5000
python3 "$here/scale_log.py" runs $n "$WORK/runs1.jsonl"
python3 "$here/scale_log.py" runs $((4 * n)) "$WORK/runs4.jsonl"
for fmt in text json; do
  opt=(); [ "$fmt" = json ] && opt=(--json)
  read -r t1 _ < <(cost report --all "${opt[@]}" "$WORK/runs1.jsonl")
  read -r t4 _ < <(cost report --all "${opt[@]}" "$WORK/runs4.jsonl")
  echo "report --all ($fmt): $n runs $t1 s, $((4 * n)) runs $t4 s (CPU)"
  if python3 -c "import sys; t1, t4 = max(float(sys.argv[1]), 0.05), float(sys.argv[2]); sys.exit(not (t4 <= 7 * t1 and t4 <= 20))" "$t1" "$t4"; then
    pass
  else
    fail "report --all ($fmt) is not linear in runs: $n runs $t1 s, $((4 * n)) runs $t4 s (at most 7x and 20 s)"
  fi
done
# the runs are all there, each with its own advice
"$CAPGUARD" report --all "$WORK/runs4.jsonl" >"$WORK/runs4.out" 2>&1
expect_in "$WORK/runs4.out" "run $((4 * n)): pid " "the last of the runs listed"
expect_in "$WORK/runs4.out" "$((4 * n)) captures, $((n)) broken" "every run's captures counted"

# One run of N and 4N ranks, each with an image of its own loaded during
# capture (bench/gen_many_procs_log.py: a launcher's workers): the ranks
# compared, every image a difference, grow linearly (each image worded made
# a pass over every rank: 10,000 and 40,000 ranks took 1.0 s and 6.2 s, and
# 10^5 took 24 s, before only the differences worded paid for one)
n=10000
python3 "$here/../../bench/gen_many_procs_log.py" "$WORK/ranks1.jsonl" $n >/dev/null
python3 "$here/../../bench/gen_many_procs_log.py" "$WORK/ranks4.jsonl" $((4 * n)) >/dev/null
read -r t1 _ < <(cost report "$WORK/ranks1.jsonl")
read -r t4 _ < <(cost report "$WORK/ranks4.jsonl")
echo "report, ranks compared: $n ranks $t1 s, $((4 * n)) ranks $t4 s (CPU)"
if python3 -c "import sys; t1, t4 = max(float(sys.argv[1]), 0.05), float(sys.argv[2]); sys.exit(not (t4 <= 6 * t1 and t4 <= 20))" "$t1" "$t4"; then
  pass
else
  fail "comparing ranks is not linear: $n ranks $t1 s, $((4 * n)) ranks $t4 s (at most 6x and 20 s)"
fi
"$CAPGUARD" report "$WORK/ranks4.jsonl" >"$WORK/ranks4.out" 2>&1
expect_in "$WORK/ranks4.out" "more differences" "the differences past the first eight counted"

# Reading a log costs its parse, not jansson's tree of every value: the
# report of those 40,000 processes (107 MiB, one run: a census, then a
# whole read) at most 12 ms of CPU a MiB of log (about 7 now; 29 when
# every line was parsed by jansson, which made 10^6 processes 81 s), and its
# peak at most 500 bytes a process more than 10,000 processes' (about 443
# here, where meson's MALLOC_PERTURB_ touches every byte allocated; 561
# with a process of 184 bytes, a call of 144, the rank view's first
# offenders kept and its counts gathered again, and the analysis's counts
# 32 bytes; about 610 on a busier day; 805
# with a process of 272 bytes, a call of 192 and a capture of 104, the rank
# view's rows of 64 sorted as rows, and the reader's index and table of
# strings kept through the report; 1,310 with the census's counts, a first
# offender and unread fields in every record, and arrays that glibc grew by
# copying, leaving resident holes; 1,800 with index entries that held their
# keys and a hash-table entry of its own for each interned string). Each
# peak is the lower of two runs: a run now and then peaks a sixth higher
# (the machine's other work), which one run would say as a regression.
# Under ASan, with its own work and shadow (and no quarantine): about 28 ms
# and 444 bytes (at most 40 and 500), 560 with a process of 184 bytes and
# a call of 144, 800 with the records before, 95 ms and 1,170 before that.
ms=12 per_bound=500
if nm "$CAPGUARD" 2>/dev/null | grep -q __asan_init; then ms=40 per_bound=500; fi
# low_rss LOG: the lower peak RSS (KB) of two reports of LOG
low_rss() {
  local a b
  read -r _ a < <(cost report "$1")
  read -r _ b < <(cost report "$1")
  echo $((a < b ? a : b))
}
kr1=$(low_rss "$WORK/ranks1.jsonl")
read -r tr4 _ < <(cost report "$WORK/ranks4.jsonl")
kr4=$(low_rss "$WORK/ranks4.jsonl")
mib=$(( $(stat -c %s "$WORK/ranks4.jsonl") >> 20 ))
per_ms=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) * 1000 / int(sys.argv[2])))" "$tr4" "$mib")
per_proc=$(( (kr4 - kr1) * 1024 / (3 * n) ))
echo "report, $((4 * n)) processes: $tr4 s of CPU for $mib MiB ($per_ms ms a MiB); $per_proc bytes a process"
if python3 -c "import sys; sys.exit(not float(sys.argv[1]) <= int(sys.argv[2]))" "$per_ms" "$ms"; then pass; else
  fail "reading the log took $per_ms ms of CPU a MiB (at most $ms)"
fi
if [ "$per_proc" -le "$per_bound" ]; then pass; else
  fail "the report holds $per_proc bytes a process (at most $per_bound)"
fi

# The latest run after older runs of 20,000 and 80,000 processes (launchers
# and 7 workers each): what the census holds for each process of the 60,000
# more, at most 250 bytes (about 219; 270 with a process of 184 bytes, 371
# with one of 272 and the index and table of strings kept, 960 before the
# census was made lighter)
python3 "$here/scale_log.py" procs 20000 "$WORK/procs1.jsonl" "$DATA/run2.jsonl"
python3 "$here/scale_log.py" procs 80000 "$WORK/procs4.jsonl" "$DATA/run2.jsonl"
kb1=$(low_rss "$WORK/procs1.jsonl")
kb4=$(low_rss "$WORK/procs4.jsonl")
per=$(( (kb4 - kb1) * 1024 * 100 / shadow / 60000 ))
echo "census: peak RSS $kb1 KB at 20,000 processes, $kb4 KB at 80,000: $per bytes a process"
if [ "$per" -le "$bound" ]; then pass; else
  fail "the census holds $per bytes a process (at most $bound)"
fi
# and the latest run is still the one reported, the older ones counted
"$CAPGUARD" report "$WORK/procs4.jsonl" >"$WORK/procs4.out" 2>&1
expect_in "$WORK/procs4.out" "verdicts: allowed 1, served 1" "the latest run is the one reported"
finish
