#!/usr/bin/env bash
# capguard report: call sites are deduplicated on the frame without its absolute
# " [0x...]" address, so one site in two processes (ASLR: two addresses) counts
# once, with both events, and is shown without an address.
. "$(dirname "$0")/lib.sh"

# log_line PID ADDR FRAME-SUFFIX: one refused load at demo_engine(main+0x343) [ADDR]
log_lines() {
  local pid=$1 addr=$2
  cat <<JSON
{"v":1,"type":"process","pid":$pid,"ppid":1,"time_ns":1${pid}000,"mode":"guard","driver_version":12020,"emulate_driver":0,"version":"0.1.0","argv":["demo_engine"]}
{"v":1,"type":"event","pid":$pid,"time_ns":1${pid}100,"event":"module-load","call":"cuModuleLoadData","verdict":"refused","result":900,"driver_result":900,"driver_version":12020,"emulate_driver":0,"tid":$pid,"thread_mode":"global","capture":{"id":1,"stream":"0x1","mode":"global","tid":$pid,"status":"invalidated","began":"demo_engine(main+0x29d)"},"prohibitors":1,"image":{"kind":"cubin","size":6184,"sm":90,"archs":[90],"hash":"62f67bdd9e1cd473a543af9cf3a866a8","kernels":["cg_test_fill"],"kernels_truncated":false},"native_stack":["libcapguard.so(+0x1a2b) [0x7f0000001a2b]","demo_engine(main+0x343) [$addr]","libc.so.6(__libc_start_main+0x85) [0x7f866734d305]"],"python_stack":[]}
{"v":1,"type":"event","pid":$pid,"time_ns":1${pid}200,"event":"module-load","call":"cuModuleLoadData","verdict":"refused","result":900,"driver_result":900,"driver_version":12020,"emulate_driver":0,"tid":$pid,"thread_mode":"global","capture":{"id":1,"stream":"0x1","mode":"global","tid":$pid,"status":"invalidated","began":"demo_engine(main+0x29d)"},"prohibitors":1,"native_stack":["demo_engine+0x2f4f [0x${pid}f4f]"],"python_stack":[]}
JSON
}
log_lines 101 0x5579b1f04453 >"$WORK/a.jsonl"
log_lines 202 0x55d360b10453 >"$WORK/b.jsonl"

# --- two processes' logs given as two files (two top-level processes: two runs, so --all)
run_cg two report --all "$WORK/a.jsonl" "$WORK/b.jsonl"
expect_rc 1 "report of two logs with broken captures"
expect_in "$WORK/two.out" "2 logs, 2 processes" "both logs read"
expect_in "$WORK/two.out" "      2  demo_engine(main+0x343)  [cuModuleLoadData; kernels: cg_test_fill]" "one site in two processes counted once"
expect_in "$WORK/two.out" "      2  demo_engine+0x2f4f  [cuModuleLoadData]" "a symbol-less frame deduplicated on its module offset"
n=$(sed -n '/^Call sites/,/^$/p' "$WORK/two.out" | grep -c '^ *[0-9]')
[ "$n" -eq 2 ] && pass || fail "$n call sites listed, wanted 2"
expect_not_in "$WORK/two.out" "[0x5579b1f04453]" "address not shown"
expect_not_in "$WORK/two.out" "[0x55d360b10453]" "address not shown"
expect_in "$WORK/two.out" "first broken by cuModuleLoadData (module-load, refused, CUresult 900 operation not permitted when stream is capturing) at demo_engine(main+0x343)" "first call's site without address"

# --- the same two processes in one log (how capguard run writes them)
cat "$WORK/a.jsonl" "$WORK/b.jsonl" >"$WORK/one.jsonl"
run_cg one report --all "$WORK/one.jsonl"
expect_in "$WORK/one.out" "      2  demo_engine(main+0x343)  [cuModuleLoadData; kernels: cg_test_fill]" "one log: site counted once"
run_cg json report --all --json "$WORK/one.jsonl"
n=$(grep -o '"site": *"demo_engine(main+0x343)"' "$WORK/json.out" | wc -l)
[ "$n" -ge 1 ] && pass || fail "JSON site not address-free: $(grep -o '"site":[^,]*' "$WORK/json.out" | head -3)"
expect_not_in "$WORK/json.out" "0x5579b1f04453" "JSON without the address"

# --- what is not an address stays: brackets that are not " [0x<hex>]"
sed -e 's/demo_engine(main+0x343) \[0x5579b1f04453\]/odd[frame] [0xzz]/' "$WORK/a.jsonl" >"$WORK/odd.jsonl"
run_cg odd report "$WORK/odd.jsonl"
expect_in "$WORK/odd.out" "odd[frame] [0xzz]" "a frame ending in non-hex brackets is kept whole"

# --- a Python site is the first frame outside Triton's and torch's machinery
cat >"$WORK/py.jsonl" <<'JSON'
{"v":1,"type":"event","pid":7,"time_ns":100,"event":"module-load","call":"cuModuleLoadData","verdict":"allowed","result":0,"driver_result":0,"driver_version":13000,"emulate_driver":0,"tid":7,"thread_mode":"global","capture":{"id":1,"stream":"0x1","mode":"global","tid":7,"status":"active","began":""},"prohibitors":1,"image":{"kind":"cubin","size":5640,"sm":90,"archs":[90],"hash":"f8960748498da9ffe07a13c035e596cd","kernels":["_causal_conv1d_update_kernel"],"kernels_truncated":false},"native_stack":[],"python_stack":[{"file":"/venv/lib/python3.12/site-packages/triton/compiler/compiler.py","line":465,"func":"_init_handles"},{"file":"/venv/lib/python3.12/site-packages/triton/runtime/jit.py","line":743,"func":"run"},{"file":"/venv/lib/python3.12/site-packages/vllm/model_executor/layers/mamba/ops/causal_conv1d.py","line":1068,"func":"causal_conv1d_update"},{"file":"/venv/lib/python3.12/site-packages/torch/cuda/graphs.py","line":250,"func":"__exit__"}]}
JSON
run_cg py report "$WORK/py.jsonl"
expect_in "$WORK/py.out" "causal_conv1d.py:1068 in causal_conv1d_update" "Python site skips Triton's launcher frames"
expect_not_in "$WORK/py.out" "compiler.py:465" "Triton's own frame is not the site"

# --- C++ names in native frames are demangled (the address still dropped)
sed -e 's/demo_engine(main+0x343) \[0x5579b1f04453\]/libtorch_cuda.so(_ZN2at4cuda9CUDAGraph13capture_beginESt4pairIyyE21cudaStreamCaptureMode+0x29c) [0x7f6e8a2b4c7c]/' "$WORK/a.jsonl" >"$WORK/cxx.jsonl"
run_cg cxx report "$WORK/cxx.jsonl"
expect_in "$WORK/cxx.out" "libtorch_cuda.so(at::cuda::CUDAGraph::capture_begin(std::pair<unsigned long long, unsigned long long>, cudaStreamCaptureMode)+0x29c)" "demangled frame"
expect_not_in "$WORK/cxx.out" "_ZN2at4cuda" "no mangled name left"
# a name that is not a C++ name, or does not demangle, stays as it was
sed -e 's/demo_engine(main+0x343) \[0x5579b1f04453\]/lib.so(_Znotvalid+0x1) [0x10]/' "$WORK/a.jsonl" >"$WORK/bad-cxx.jsonl"
run_cg bad-cxx report "$WORK/bad-cxx.jsonl"
expect_in "$WORK/bad-cxx.out" "lib.so(_Znotvalid+0x1)" "an invalid mangled name is kept"

finish
