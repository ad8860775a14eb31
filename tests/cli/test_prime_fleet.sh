#!/usr/bin/env bash
# The kernel cache for a fleet (docs/fleet.md), over the real shim and the
# fake driver, without a registry (test_prime_registry.sh adds one):
#   - identity: prime learn --label keeps the label, the program, the driver
#     and GPU it was learned on; prime info and list print it; doctor compares
#     it with this machine (driver and arch, FAKECUDA_SM);
#   - said when it cannot serve: the shim says so at the first preload, in one
#     line, for a wrong arch, a newer format and another program, and the
#     metrics count it;
#   - export --oci writes an OCI image layout whose digests are right; import
#     and --prime oci:DIR read it back byte for byte and refuse a tampered blob;
#   - many learners, one cache: files learned on two nodes merge into one
#     artifact that serves both; files of two programs are refused.
. "$(dirname "$0")/lib.sh"
use_real_shim
sm80=$SOURCE_ROOT/tests/data/kernels_sm80.cubin
app=("$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill)
P=$WORK/learned.cgp

# --- 1. identity
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --label model=llama-8b,tp=2 --prime "$P" -- "${app[@]}" \
  >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 0 "learn with a label"
expect_in "$WORK/learn.out" "capguard prime learn: identity: vllm_like, driver 13000, sm_90, label model=llama-8b,tp=2" \
  "learn says the identity it wrote"
run_cg info prime info "$P"
expect_rc 0 "prime info"
expect_in "$WORK/info.out" "$P: 1 image (sm_90)" "info: images and their arch"
expect_in "$WORK/info.out" "identity: program vllm_like, learned on driver 13000 (CUDA 13.0), sm_90; format 2; label model=llama-8b,tp=2" \
  "info: program, driver, GPU, format, label"
run_cg list prime list "$P"
expect_in "$WORK/list.out" "identity: program vllm_like, learned on driver 13000" "list prints the identity"
# learning again keeps the label it was given once
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$P" -- "${app[@]}" >/dev/null 2>&1
run_cg info2 prime info "$P"
expect_in "$WORK/info2.out" "label model=llama-8b,tp=2" "a second learn keeps the label"
"$CAPGUARD" prime learn --label "$(printf 'a\nb')" --prime "$WORK/x.cgp" -- true >"$WORK/badlabel.out" 2>&1; rc=$?
expect_rc 2 "a label with a newline is a usage error"
expect_in "$WORK/badlabel.out" "--label wants printable text" "bad label said"
FAKECUDA_SM=80 FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" doctor --prime "$P" >"$WORK/doctor.out" 2>&1
expect_in "$WORK/doctor.out" "identity: learned from vllm_like on driver 13000, sm_90, format 2, label model=llama-8b,tp=2" \
  "doctor prints the identity"
expect_in "$WORK/doctor.out" "learned on driver 13000, this one is 12020" "doctor compares the driver"
expect_in "$WORK/doctor.out" "learned on an sm_90 GPU, this one is sm_80" "doctor compares the GPU"
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" doctor --prime "$P" >"$WORK/doctor13.out" 2>&1
expect_in "$WORK/doctor13.out" "on driver 13000 (this driver)" "doctor: the same driver"
expect_not_in "$WORK/doctor13.out" "this one is sm_" "doctor: the same GPU is no note"

# --- 2. said when it cannot serve: one line at the first preload, and the metrics
# shim_run NAME FILE PROGRAM...: the shim alone (as a fleet's pod runs it) on 12.2, sm_80 (or $SM)
shim_run() {
  local name=$1 file=$2; shift 2
  mkdir -p "$WORK/m-$name"
  FAKECUDA_SM=${SM:-80} FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME=$file CAPGUARD_METRICS=$WORK/m-$name \
    CAPGUARD_LOG=$WORK/$name.jsonl LD_PRELOAD=$REAL_SHIM "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
}
# metric NAME SERIES: the value of a series in the metrics of run NAME
# (each process of the run writes its own: one value when they agree)
metric() { cat "$WORK/m-$1"/*.prom | grep "^$2" | grep -o '[0-9]*$' | sort -u; }
cp "$P" "$WORK/arch.cgp"
shim_run arch "$WORK/arch.cgp" "$VLLM_LIKE" --workers 1 "$sm80" cg_test_fill
expect_in "$WORK/arch.err" "capguard: priming file $WORK/arch.cgp cannot serve this process: none of its 1 image is built for this GPU's architecture (sm_80; the file's first is sm_90)" \
  "wrong arch said at once"
n=$(grep -c "cannot serve" "$WORK/arch.err"); procs=$(find "$WORK/m-arch" -name '*.prom' | wc -l)
[ "$n" = "$procs" ] && [ "$n" -ge 1 ] && pass || fail "wrong arch: $n lines for $procs processes, wanted one each"
[ "$(metric arch 'capguard_prime_images{')" = 1 ] && pass || fail "metrics: images in the file"
[ "$(metric arch 'capguard_prime_images_usable{')" = 0 ] && pass || fail "metrics: none usable here"
[ "$(metric arch 'capguard_prime_cannot_serve{.*reason="arch"')" = 1 ] && pass || fail "metrics: reason arch"
[ "$(metric arch 'capguard_prime_cannot_serve{.*reason="program"')" = 0 ] && pass || fail "metrics: not program"

cp "$P" "$WORK/other.cgp"
SM=90 shim_run other "$WORK/other.cgp" "$STARTUP_LIKE" --workers 1
expect_in "$WORK/other.err" "capguard: priming file $WORK/other.cgp cannot serve this process: it was learned from vllm_like, this program is startup_like" \
  "another program said at once"
[ "$(metric other 'capguard_prime_cannot_serve{.*reason="program"' | head -1)" = 1 ] && pass || fail "metrics: reason program"

# a newer capguard's format: version 3 in the header
cp "$P" "$WORK/newer.cgp"
printf '\003\000' | dd of="$WORK/newer.cgp" bs=1 seek=8 conv=notrunc status=none
shim_run newer "$WORK/newer.cgp" "$VLLM_LIKE" --workers 1 "$sm80" cg_test_fill
expect_in "$WORK/newer.err" "format version 3, written by a newer capguard (this one reads version 2)" "newer format said at once"
[ "$(metric newer 'capguard_prime_cannot_serve{.*reason="format"')" = 1 ] && pass || fail "metrics: reason format"
[ "$(metric newer 'capguard_prime_images{')" = 0 ] && pass || fail "metrics: a refused file has no images"

# a file that serves: no line, every image usable, the loads served counted
cp "$P" "$WORK/good.cgp"
SM=90 shim_run good "$WORK/good.cgp" "${app[@]}"
expect_not_in "$WORK/good.err" "cannot serve" "a file that serves says nothing"
[ "$(metric good 'capguard_prime_images_usable{')" = 1 ] && pass || fail "metrics: usable here"
[ "$(metric good 'capguard_prime_loads_served_total{')" = 1 ] && pass || fail "metrics: loads served"

# --- 3. an OCI image layout
for sub in export import info; do
  run_cg help-$sub prime $sub --help
  expect_rc 0 "prime $sub --help"
  expect_in "$WORK/help-$sub.out" "usage: capguard prime $sub" "prime $sub --help says its usage"
done
run_cg export prime export --oci "$WORK/oci" "$P"
expect_rc 0 "export --oci"
expect_in "$WORK/export.out" "written as an OCI image layout" "export says it"
grep -q '"imageLayoutVersion":"1.0.0"' "$WORK/oci/oci-layout" && pass || fail "oci-layout"
for blob in "$WORK"/oci/blobs/sha256/*; do
  [ "$(sha256sum <"$blob" | cut -d' ' -f1)" = "$(basename "$blob")" ] && pass || fail "blob $blob: digest is not its name"
done
layer=$(grep -l . "$WORK"/oci/blobs/sha256/* | while read -r b; do cmp -s "$b" "$P" && echo "$b"; done)
[ -n "$layer" ] && pass || fail "the priming file is a blob of the layout, byte for byte"
manifest=$(grep -l '"application/vnd.capguard.prime.v1"' "$WORK"/oci/blobs/sha256/*)
expect_in "$manifest" '"capguard.prime.program":"vllm_like"' "annotation: program"
expect_in "$manifest" '"capguard.prime.label":"model=llama-8b,tp=2"' "annotation: label"
expect_in "$manifest" '"org.opencontainers.image.created":' "annotation: created"
expect_in "$manifest" '"mediaType":"application/vnd.capguard.prime.config.v1+json"' "config media type"
# a label in UTF-8 is kept as it is; bytes that are not UTF-8 still export, as '?'
for label in "modèle=x" "$(printf 'caf\351')"; do
  cp "$P" "$WORK/l.cgp"
  FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --label "$label" --prime "$WORK/l.cgp" -- "${app[@]}" >/dev/null 2>&1
  rm -rf "$WORK/l-oci"
  run_cg lexport prime export --oci "$WORK/l-oci" "$WORK/l.cgp"
  expect_rc 0 "export with the label $label"
done
expect_in "$(grep -l '"application/vnd.capguard.prime.v1"' "$WORK"/l-oci/blobs/sha256/*)" '"capguard.prime.label":"caf?"' \
  "a label that is not UTF-8 is exported with '?'"
run_cg import prime import --oci "$WORK/oci" --prime "$WORK/imported.cgp"
expect_rc 0 "import --oci"
cmp -s "$P" "$WORK/imported.cgp" && pass || fail "import gives the file back byte for byte"
# a tampered blob is refused, nothing written
cp -r "$WORK/oci" "$WORK/bad"
bad=$WORK/bad/blobs/sha256/$(basename "$layer")
chmod u+w "$bad"; printf 'X' | dd of="$bad" bs=1 seek=100 conv=notrunc status=none
run_cg tampered prime import --oci "$WORK/bad" --prime "$WORK/tampered.cgp"
expect_rc 1 "a tampered blob is refused"
expect_in "$WORK/tampered.err" "does not match its digest" "tampered: said"
[ ! -e "$WORK/tampered.cgp" ] && pass || fail "tampered: nothing imported"
# --prime oci:DIR: run and check on 12.2 are served from the artifact
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime check --prime "oci:$WORK/oci" -- "${app[@]}" >"$WORK/ocicheck.out" 2>&1; rc=$?
expect_rc 0 "prime check --prime oci:DIR serves on 12.2"
expect_in "$WORK/ocicheck.out" "imported into $WORK/cache/capguard/oci/" "oci: imported into the cache"
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "oci:$WORK/oci" --log "$WORK/ocirun.jsonl" -- "${app[@]}" \
  >"$WORK/ocirun.out" 2>&1; rc=$?
expect_rc 0 "run --prime oci:DIR on 12.2"
grep -q '"verdict":"served"' "$WORK/ocirun.jsonl" && pass || fail "run --prime oci:DIR: the load is served"
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "oci:$WORK/bad" -- "${app[@]}" >"$WORK/ocibad.out" 2>&1; rc=$?
[ "$rc" != 0 ] && pass || fail "run --prime oci:DIR with a tampered blob fails"
expect_in "$WORK/ocibad.out" "does not match its digest" "run: tampered said"
expect_not_in "$WORK/ocibad.out" "graph captured" "run: the command does not start on a tampered artifact"

# --- 4. many learners, one cache: another node (sm_80) learns the same program
FAKECUDA_SM=80 FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/node2.cgp" --label model=llama-8b,tp=2 \
  -- "$VLLM_LIKE" --workers 1 "$sm80" cg_test_fill >/dev/null 2>&1; rc=$?
expect_rc 0 "second node learns"
run_cg merge prime merge "$WORK/fleet.cgp" "$P" "$WORK/node2.cgp"
expect_rc 0 "merge of two nodes' files"
run_cg finfo prime info "$WORK/fleet.cgp"
expect_in "$WORK/finfo.out" "2 images (sm_90,sm_80)" "merged: both archs"
expect_in "$WORK/finfo.out" "identity: program vllm_like" "merged: the identity kept"
run_cg fexport prime export --oci "$WORK/fleet-oci" "$WORK/fleet.cgp"
expect_rc 0 "export the merged file"
for sm in 80 90; do
  img=$CUBIN; [ $sm = 80 ] && img=$sm80
  FAKECUDA_SM=$sm FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime check --prime "oci:$WORK/fleet-oci" \
    -- "$VLLM_LIKE" --workers 1 "$img" cg_test_fill >"$WORK/fleet$sm.out" 2>&1; rc=$?
  expect_rc 0 "the merged artifact serves sm_$sm"
done
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/startup.cgp" -- "$STARTUP_LIKE" --workers 1 >/dev/null 2>&1
run_cg mixed prime merge "$WORK/mixed.cgp" "$P" "$WORK/startup.cgp"
expect_rc 1 "merge of two programs' files is refused"
expect_in "$WORK/mixed.err" "learned from different programs (vllm_like, startup_like)" "merge names both programs"
[ ! -e "$WORK/mixed.cgp" ] && pass || fail "refused merge writes nothing"
finish
