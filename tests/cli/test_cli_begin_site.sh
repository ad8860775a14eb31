#!/usr/bin/env bash
# Where a capture began, and where its first offender was called, read as a
# person reads an event's call site: C++ names demangled (torch's
# CUDAGraph::capture_begin), and file:line from the debug info of an
# executable that exports no symbols (startup_like), its functions named from
# its symbol table, in the report and in
# capguard run's summary.
. "$(dirname "$0")/lib.sh"

# --- a hand-written log: torch's begin frame, mangled, alone and after a Python line
mangled='libtorch_cuda.so(_ZN2at4cuda9CUDAGraph13capture_beginESt4pairIyyE21cudaStreamCaptureMode+0x29c)'
pretty='libtorch_cuda.so(at::cuda::CUDAGraph::capture_begin(std::pair<unsigned long long, unsigned long long>, cudaStreamCaptureMode)+0x29c)'
cat >"$WORK/torch.jsonl" <<EOF
{"v":1,"type":"process","pid":61,"time_ns":1800000000100000000,"ppid":1,"argv":["python3","serve.py"],"mode":"report","driver_version":12020,"emulate_driver":0,"version":"0.9"}
{"v":1,"type":"capture","pid":61,"time_ns":1800000001200000000,"id":1,"stream":"0x10","mode":"global","tid":61,"status":"failed","begin_ns":1800000001000000000,"end_ns":1800000001200000000,"events":0,"began":"$mangled [0x7f0000001234]","end_result":901,"broken_by":{"call":"cuMemAlloc_v2","event":"allocation","verdict":"refused","result":900,"tid":61,"time_ns":1800000001100000000,"python":"","where":"libc10_cuda.so(_ZN3c104cuda20CUDACachingAllocator6mallocEPPvimP11CUstream_st+0x40)"}}
{"v":1,"type":"capture","pid":61,"time_ns":1800000002200000000,"id":2,"stream":"0x10","mode":"global","tid":61,"status":"failed","begin_ns":1800000002000000000,"end_ns":1800000002200000000,"events":0,"began":"model.py:50 in capture_graph ($mangled)","end_result":901,"broken_by":null}
EOF
run_cg torch report "$WORK/torch.jsonl"
expect_rc 1 "report of broken captures"
expect_in "$WORK/torch.out" "capture 1 (stream 0x10, global, broken; began $pretty)" "torch's begin frame demangled, its absolute address dropped"
expect_in "$WORK/torch.out" "began model.py:50 in capture_graph ($pretty))" "a Python begin line's native frame demangled"
expect_in "$WORK/torch.out" "first offender cuMemAlloc_v2 at libc10_cuda.so(c10::cuda::CUDACachingAllocator::malloc(void**, int, unsigned long, CUstream_st*)+0x40)" "the offender's frame demangled"
expect_not_in "$WORK/torch.out" "_ZN2at4cuda" "no mangled name left"
run_cg torchhtml report --html "$WORK/torch.html" "$WORK/torch.jsonl"
expect_in "$WORK/torch.html" "at::cuda::CUDAGraph::capture_begin(std::pair&lt;unsigned long long, unsigned long long&gt;, cudaStreamCaptureMode)+0x29c" "HTML: the begin frame demangled"

# --- a real run of an executable without exported symbols, built with debug info
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020
"$CAPGUARD" run --log "$WORK/s.jsonl" --prime "$WORK/s.cgp" -- "$STARTUP_LIKE" >/dev/null 2>"$WORK/s.err"; rc=$?
expect_rc 1 "startup_like breaks on 12.2"
grep -q '"began":"startup_like([a-z_]*+0x' "$WORK/s.jsonl" && pass || fail "the shim logs the begin frame named from the symbol table, startup_like(FUNCTION+0x...): $(grep -o '"began":"[^"]*"' "$WORK/s.jsonl" | head -1)"
# the line capguard run's summary gives: the begin and the offender with their source lines
grep '^capguard: broken:' "$WORK/s.err" >"$WORK/s-broken"
grep -q 'began at startup_like([a-z_]*+0x[0-9a-f]*) at startup_like\.c:[0-9][0-9]*)' "$WORK/s-broken" && pass || fail "summary: the begin site without file:line: $(cat "$WORK/s-broken")"
grep -q 'first offender cuModuleLoadData at startup_like([a-z_]*+0x[0-9a-f]*) at startup_like\.c:[0-9][0-9]* ' "$WORK/s-broken" && pass || fail "summary: the offender without file:line: $(cat "$WORK/s-broken")"
run_cg sr report "$WORK/s.jsonl"
grep -q 'broken; began startup_like([a-z_]*+0x[0-9a-f]*) at startup_like\.c:[0-9][0-9]*)' "$WORK/sr.out" && pass || fail "report: the begin site without file:line: $(grep began "$WORK/sr.out")"
# the line is the capture's begin: startup_like.c's cuStreamBeginCapture call
line=$(grep -o 'began startup_like([a-z_]*+0x[0-9a-f]*) at startup_like\.c:[0-9]*' "$WORK/sr.out" | head -1 | sed 's/.*://')
[ -n "$line" ] && sed -n "${line}p" "$SOURCE_ROOT/tests/cli/startup_like.c" | grep -qE 'BeginCapture|cu\.begin\(' && pass \
  || fail "startup_like.c:$line is not where the capture begins: $(sed -n "${line}p" "$SOURCE_ROOT/tests/cli/startup_like.c")"
finish
