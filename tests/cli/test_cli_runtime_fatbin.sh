#!/usr/bin/env bash
# Fatbins the CUDA runtime loads itself (torch's own kernels: cuLibraryLoadData
# from __cudaGetKernel at a kernel's first launch, CUDA_MODULE_LOADING=LAZY):
# the arch this GPU runs them as (not the highest entry: sm_90 on an H100 from
# sm_75...sm_120), their kernels named from compressed entries (zstd, as
# every fatbin of torch 2.11 is, and LZ4: decompressed) on the event, in the
# log, prime list, next: and the report's warm-up advice, and an image whose
# entries do not decompress still in that advice, unnamed; and the runtime's
# lazy loading said, with CUDA_MODULE_LOADING=EAGER.
. "$(dirname "$0")/lib.sh"

# --- a log with the runtime's lazy load (hand-written: the fake driver has no runtime)
run_cg lazy report "$DATA/runtime_lazy.jsonl"
# capguard records and serves the runtime's lazy loads: no advice to load eagerly
expect_not_in "$WORK/lazy.out" "CUDA_MODULE_LOADING=EAGER" "no EAGER advice for a lazy load capguard serves"
expect_in "$WORK/lazy.out" "warm the kernels of 1 image whose kernels capguard cannot name (a compressed fatbin, such as the CUDA runtime loads at a kernel's first launch: run the op that launches it) up before capture" "the unnamed image is in the warm-up advice"
expect_in "$WORK/lazy.out" "let capguard prime" "the warm-up advice offers priming"
run_cg lazyj report --json "$DATA/runtime_lazy.jsonl"
python3 -c 'import json,sys; f=[x["finding"] for x in json.load(open(sys.argv[1]))["findings"]]; assert "runtime-lazy-load" not in f and "warm-up" in f, f' "$WORK/lazyj.out" \
  && pass || fail "JSON findings: runtime-lazy-load for a load capguard serves, or no warm-up"
# a lazy load capguard cannot serve (an option it cannot reproduce): EAGER is the way out, said
sed 's/"event":"module-load",/&"options":true,"options_not_reproducible":"CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE",/' \
  "$DATA/runtime_lazy.jsonl" >"$WORK/foreign.jsonl"
run_cg foreign report "$WORK/foreign.jsonl"
expect_in "$WORK/foreign.out" "1 load during capture was made by the CUDA runtime's lazy loading (__cudaGetKernel: the first launch of a kernel compiled into a library, torch's own for one): CUDA_MODULE_LOADING=EAGER makes the runtime load its modules at start-up" "the runtime's lazy loading said"
expect_in "$WORK/foreign.out" "        CUDA_MODULE_LOADING=EAGER capguard run --emulate-driver 12020 -- python3 serve.py" "the command with CUDA_MODULE_LOADING=EAGER"
# a load without the runtime in its stack is not called lazy
sed 's/__cudaGetKernel/someOtherFunction/; s/libcudart.so.13+0x5a1b0/libfoo.so+0x5a1b0/' "$DATA/runtime_lazy.jsonl" >"$WORK/notlazy.jsonl"
run_cg notlazy report "$WORK/notlazy.jsonl"
expect_not_in "$WORK/notlazy.out" "lazy loading" "no lazy loading said without the runtime's frames"

# --- a multi-arch fatbin (sm_80 and sm_90 SASS, PTX for 90) loaded during capture on an sm_86 device
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020 FAKECUDA_SM=86
fatbin=$SOURCE_ROOT/tests/data/kernels_multi_zstd.fatbin
"$CAPGUARD" run --log "$WORK/f.jsonl" --prime "$WORK/f.cgp" -- "$VLLM_LIKE" --workers 1 "$fatbin" cg_test_fill >/dev/null 2>"$WORK/f.err"; rc=$?
expect_rc 1 "the fatbin's load breaks the capture on 12.2"
expect_in "$WORK/f.err" "image: fatbin, 3456 bytes, sm_80/sm_90 +ptx (sm_80 on this device)" "the event says which entry this device runs"
grep -q '"sm":80,"archs":\[80,90\]' "$WORK/f.jsonl" && pass || fail "the log's image sm is not the device's: $(grep -o '"sm":[0-9]*,"archs":[^]]*]' "$WORK/f.jsonl" | head -1)"
"$CAPGUARD" prime list "$WORK/f.cgp" >"$WORK/f-list.out" 2>&1
grep -q '^[0-9a-f]*  fatbin  sm_80 ' "$WORK/f-list.out" && pass || fail "prime list labels the fatbin with another arch than this device's: $(cat "$WORK/f-list.out")"
# zstd-compressed entries (nvcc -Xfatbin -compress-all, torch's own): named everywhere names appear
expect_in "$WORK/f.err" "  kernels: cg_test_fill, cg_test_axpy" "a zstd-compressed fatbin's kernels named on the event"
grep -q '"kernels":\["cg_test_fill","cg_test_axpy"\]' "$WORK/f.jsonl" && pass || fail "a zstd-compressed fatbin's kernels not in the log"
expect_in "$WORK/f.err" "(kernels cg_test_axpy, cg_test_fill)" "next: names the zstd fatbin's kernels"
expect_in "$WORK/f-list.out" "cg_test_axpy" "prime list names the zstd fatbin's kernels"
"$CAPGUARD" report "$WORK/f.jsonl" >"$WORK/f-report.out" 2>&1
expect_in "$WORK/f-report.out" "warm these 2 kernels (cg_test_axpy, cg_test_fill) up before capture" "the report's warm-up advice names the zstd fatbin's kernels"
expect_not_in "$WORK/f-report.out" "cannot name" "no image left unnamed in the advice"
# a zstd fatbin whose frames do not decode (bytes of each ELF entry's frame overwritten): unnamed, still advised
python3 - "$fatbin" "$WORK/bad_zstd.fatbin" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
off = struct.unpack_from('<H', b, 6)[0]
end = off + struct.unpack_from('<Q', b, 8)[0]
while off < end:
    kind, hs, ps = struct.unpack_from('<H', b, off)[0], struct.unpack_from('<I', b, off + 4)[0], struct.unpack_from('<Q', b, off + 8)[0]
    if kind == 2:
        b[off + hs + 40:off + hs + 200] = b'\x55' * 160
    off += hs + ps
open(sys.argv[2], 'wb').write(b)
PY
"$CAPGUARD" run --log "$WORK/b.jsonl" --prime "$WORK/b.cgp" -- "$VLLM_LIKE" --workers 1 "$WORK/bad_zstd.fatbin" cg_test_fill >/dev/null 2>"$WORK/b.err"; rc=$?
expect_rc 1 "the damaged fatbin's load breaks the capture on 12.2"
expect_in "$WORK/b.err" "(kernels not named: a compressed fatbin)" "next: says the kernels are not named, not '?'"
"$CAPGUARD" report "$WORK/b.jsonl" >"$WORK/b-report.out" 2>&1
expect_in "$WORK/b-report.out" "warm the kernels of 1 image whose kernels capguard cannot name (a compressed fatbin) up before capture" "the unnamed image is in the warm-up advice"
# torch's own: a fatbin of one zstd entry of libtorch_cuda.so (tests/data/README.md), its
# C++-mangled names shown demangled and shortened wherever a person reads them
# ("pytorch_flash::flash_bwd_convert_dq_kernel<...>", detect/image/kernel_name.c), the log's and
# the JSON's the exact symbols. The host here is C: the shim has no demangler of its own
# and names them on the event as they are; the runs below preload libstdc++, as any
# torch process has it, and the shim borrows its __cxa_demangle.
python3 - "$SOURCE_ROOT/tests/data/torch_flash_bwd_sm75_0.zstd.entry" "$WORK/torch.fatbin" <<'PY'
import struct, sys
e = open(sys.argv[1], 'rb').read()
open(sys.argv[2], 'wb').write(struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(e)) + e)
PY
FAKECUDA_SM=75 "$CAPGUARD" run --log "$WORK/c.jsonl" --prime "$WORK/c.cgp" -- "$VLLM_LIKE" --workers 1 "$WORK/torch.fatbin" flash_bwd >/dev/null 2>"$WORK/c.err"; rc=$?
expect_rc 1 "torch's fatbin's load breaks the capture on 12.2"
if ldd "$VLLM_LIKE" | grep -q 'libstdc++'; then
  # A sanitized build: the sanitizer's runtime brings libstdc++ into the host.
  expect_in "$WORK/c.err" "  kernels: pytorch_flash::flash_bwd_" "a host whose runtime loaded libstdc++ (the sanitizer's): torch's kernels demangled on the event"
else
  expect_in "$WORK/c.err" "  kernels: _ZN13pytorch_flash" "a host without a C++ runtime: torch's kernels named on the event as they are"
fi
grep -q '^capguard: why: .*(kernels pytorch_flash::flash_bwd_[a-z_]*_kernel<\.\.\.>, ' "$WORK/c.err" && pass || fail "why: does not name torch's kernels demangled (the command demangles them itself): $(grep 'why:' "$WORK/c.err")"
LD_PRELOAD=libstdc++.so.6 FAKECUDA_SM=75 "$CAPGUARD" run --log "$WORK/t.jsonl" --prime "$WORK/t.cgp" -- "$VLLM_LIKE" --workers 1 "$WORK/torch.fatbin" flash_bwd >/dev/null 2>"$WORK/t.err"; rc=$?
expect_rc 1 "torch's fatbin's load breaks the capture on 12.2 (libstdc++ loaded)"
expect_in "$WORK/t.err" "  kernels: pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>, pytorch_flash::flash_bwd_convert_dq_kernel<...>, " "torch's kernels demangled and shortened on the event"
grep -q '"kernels":\["_ZN13pytorch_flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI' "$WORK/t.jsonl" && pass || fail "the log does not keep the exact symbols"
grep -q '^capguard: why: .*(kernels pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<\.\.\.>, pytorch_flash::flash_bwd_convert_dq_kernel<\.\.\.>, \.\.\.)' "$WORK/t.err" && pass || fail "why: does not name torch's kernels readably: $(grep 'why:' "$WORK/t.err")"
grep -q '^capguard: next: .*(kernels pytorch_flash::flash_bwd_[a-z_]*_kernel<\.\.\.>, pytorch_flash::flash_bwd_[a-z_]*_kernel<\.\.\.>, \.\.\.)' "$WORK/t.err" && pass || fail "next: does not name torch's kernels readably: $(grep 'next:' "$WORK/t.err")"
grep '^capguard:\|^  kernels:' "$WORK/t.err" >"$WORK/t-lines.err"
expect_not_in "$WORK/t-lines.err" "_ZN" "no mangled name on capguard's lines"
"$CAPGUARD" prime list "$WORK/t.cgp" >"$WORK/t-list.out" 2>&1
expect_in "$WORK/t-list.out" "  pytorch_flash::flash_bwd_" "prime list names torch's kernels readably"
expect_not_in "$WORK/t-list.out" "_ZN" "prime list shows no mangled name"
"$CAPGUARD" report "$WORK/t.jsonl" >"$WORK/t-report.out" 2>&1
# Counted, and named when their distinct names are few (a template's instances are one name).
grep -Eq "warm these [0-9]+ kernels (\(pytorch_flash::[^_]|up before capture)" "$WORK/t-report.out" && pass || fail "the report's warm-up advice does not count torch's kernels: $(grep -A1 'What to do' "$WORK/t-report.out")"
expect_not_in "$WORK/t-report.out" "cannot name" "torch's image not left unnamed in the advice"
expect_in "$WORK/t-report.out" "    kernels: pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>, " "the report's broken capture names torch's kernels readably"
expect_in "$WORK/t-report.out" "       0  pytorch_flash::flash_bwd_convert_dq_kernel<...> (2 instances)" "the report's kernel table names them readably, a template's instances on one row"
expect_in "$WORK/t-report.out" "       0  pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...> (12 instances)" "the table counts a template's instances"
expect_not_in "$WORK/t-report.out" "_ZN" "the report's text shows no mangled name"
"$CAPGUARD" report --html "$WORK/t-report.html" "$WORK/t.jsonl" >/dev/null 2>&1
expect_in "$WORK/t-report.html" "<span title=\"_ZN13pytorch_flash27flash_bwd_convert_dq_kernel" "the page keeps the exact symbol, on hover"
expect_in "$WORK/t-report.html" "pytorch_flash::flash_bwd_convert_dq_kernel&lt;...&gt;</span>" "the page names torch's kernels readably"
if sed 's/title="[^"]*"//g' "$WORK/t-report.html" | grep -q _ZN; then fail "the page shows a mangled name outside a title"; else pass; fi
"$CAPGUARD" report --json "$WORK/t.jsonl" >"$WORK/t-report.json" 2>&1
grep -q '"_ZN13pytorch_flash27flash_bwd_convert_dq_kernel' "$WORK/t-report.json" && pass || fail "the report's JSON does not keep the exact symbols"
# served from the priming file the next run: the shim's one line names the first kernel readably
LD_PRELOAD=libstdc++.so.6 FAKECUDA_SM=75 "$CAPGUARD" run --log "$WORK/t2.jsonl" --prime "$WORK/t.cgp" -- "$VLLM_LIKE" --workers 1 "$WORK/torch.fatbin" flash_bwd >/dev/null 2>"$WORK/t2.err"; rc=$?
expect_rc 0 "the second run is served"
expect_in "$WORK/t2.err" "served from the priming file (pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>, ...)" "the served line names the kernel readably"
# LZ4-compressed entries (nvcc -compress-mode=speed): the shim decompresses them for the kernel names
lz4=$SOURCE_ROOT/tests/data/kernels_multi_lz4.fatbin
"$CAPGUARD" run --log "$WORK/l.jsonl" --prime "$WORK/l.cgp" -- "$VLLM_LIKE" --workers 1 "$lz4" cg_test_fill >/dev/null 2>"$WORK/l.err"; rc=$?
expect_in "$WORK/l.err" "  kernels: cg_test_fill, cg_test_axpy" "an LZ4-compressed fatbin's kernels named on the event"
grep -q '"kernels":\["cg_test_fill","cg_test_axpy"\]' "$WORK/l.jsonl" && pass || fail "an LZ4-compressed fatbin's kernels not in the log"
expect_in "$WORK/l.err" "(kernels cg_test_axpy, cg_test_fill)" "next: names them"
finish
