#!/usr/bin/env bash
# The kernel cache shipped through a real registry, as a fleet does it
# (docs/fleet.md): Debian's docker-registry (the distribution registry) is
# started on 127.0.0.1 on a free port, its storage in the test's folder, and
# skopeo pushes and pulls the artifact capguard prime export wrote.
#   - a file learned over the fake driver on 13.0 is exported, pushed, pulled
#     into another folder, and comes back byte for byte;
#   - a deploy from the pulled artifact (--prime oci:DIR) on emulated 12.2
#     captures at its first run, every load served;
#   - the identity travels as the manifest's annotations (skopeo inspect);
#   - a tampered blob in the pulled folder is refused, the command not run.
# Without docker-registry or skopeo the test is skipped, saying which is
# missing; where CI=true (CI installs both: tools/install-deps.sh) it fails.
. "$(dirname "$0")/lib.sh"
use_real_shim
missing=
for tool in docker-registry skopeo; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
if [ -n "$missing" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: not installed:$missing (tools/install-deps.sh installs them)" >&2
    exit 1
  fi
  echo "SKIP: not installed:$missing (apt-get install skopeo docker-registry; tools/install-deps.sh)"
  exit 77
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$WORK/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $WORK/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
registry=$!
trap 'kill "$registry" 2>/dev/null; wait "$registry" 2>/dev/null; rm -rf "$WORK"' EXIT
up=
for _ in $(seq 100); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v2/', timeout=1)" 2>/dev/null; then
    up=1; break
  fi
  kill -0 "$registry" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$up" ]; then
  echo "FAIL: docker-registry did not answer on 127.0.0.1:$port:" >&2; sed 's/^/    | /' "$WORK/registry.log" >&2
  exit 1
fi
echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$WORK/policy.json"
skopeo_() { skopeo --policy "$WORK/policy.json" "$@"; }
ref=docker://127.0.0.1:$port/capguard/prime:startup-tp2
app=("$STARTUP_LIKE" --workers 2)

# --- learn on 13.0, export, push
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --label model=startup,tp=2 --prime "$WORK/learned.cgp" \
  -- "${app[@]}" >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 0 "learn on 13.0"
run_cg export prime export --oci "$WORK/out" "$WORK/learned.cgp"
expect_rc 0 "export --oci"
skopeo_ copy --dest-tls-verify=false "oci:$WORK/out" "$ref" >"$WORK/push.out" 2>&1; rc=$?
expect_rc 0 "skopeo pushes the layout to the registry"
[ "$rc" = 0 ] || sed 's/^/    | /' "$WORK/push.out" >&2
skopeo_ inspect --tls-verify=false --raw "$ref" >"$WORK/manifest.json" 2>&1; rc=$?
expect_rc 0 "the registry serves the manifest"
expect_in "$WORK/manifest.json" '"capguard.prime.program":"startup_like"' "the registry's manifest names the program"
expect_in "$WORK/manifest.json" '"capguard.prime.label":"model=startup,tp=2"' "the registry's manifest has the label"
expect_in "$WORK/manifest.json" '"mediaType":"application/vnd.capguard.prime.v1"' "the layer keeps its media type"

# --- pull on a node, into another folder
mkdir -p "$WORK/node"
skopeo_ copy --src-tls-verify=false "$ref" "oci:$WORK/node/prime:startup-tp2" >"$WORK/pull.out" 2>&1; rc=$?
expect_rc 0 "skopeo pulls the artifact into another folder"
[ "$rc" = 0 ] || sed 's/^/    | /' "$WORK/pull.out" >&2
run_cg import prime import --oci "$WORK/node/prime" --prime "$WORK/pulled.cgp"
expect_rc 0 "import the pulled layout"
cmp -s "$WORK/learned.cgp" "$WORK/pulled.cgp" && pass || fail "the pulled file is the learned one, byte for byte"
expect_in "$WORK/import.out" "identity: program startup_like, learned on driver 13000" "the identity came along"

# --- deploy from the pulled artifact on emulated 12.2: captured at the first run
FAKECUDA_DRIVER_VERSION=12020 FAKECUDA_TRACE=$WORK/trace "$CAPGUARD" run --prime "oci:$WORK/node/prime" \
  --log "$WORK/deploy.jsonl" -- "${app[@]}" >"$WORK/deploy.out" 2>"$WORK/deploy.err"; rc=$?
expect_rc 0 "the first run on 12.2 from the pulled artifact"
n=$(grep -c "captured 10 of 10 sizes; every replay ran" "$WORK/deploy.out"); [ "$n" -eq 2 ] && pass || fail "12.2: $n of 2 workers captured all ten"
n=$(grep -c '"verdict":"served"' "$WORK/deploy.jsonl"); [ "$n" -eq 10 ] && pass || fail "12.2: $n loads served, wanted 10"
if grep -E '^cu(ModuleLoad|LibraryLoad)[A-Za-z]* .* capturing=[1-9]' "$WORK/trace" >"$WORK/bad-loads"; then
  fail "12.2: loads reached the driver during capture"; sed 's/^/    | /' "$WORK/bad-loads" >&2
else pass; fi
expect_not_in "$WORK/deploy.err" "cannot serve" "the pulled artifact serves this node"

# --- a tampered blob in the pulled folder is refused
layer=$(grep -o '"application/vnd.capguard.prime.v1","digest":"sha256:[0-9a-f]*"\|"digest":"sha256:[0-9a-f]*","mediaType":"application/vnd.capguard.prime.v1"' \
  "$WORK/manifest.json" | grep -o '[0-9a-f]\{64\}')
blob=$WORK/node/prime/blobs/sha256/$layer
[ -f "$blob" ] && pass || fail "the pulled folder holds the layer blob $layer"
chmod u+w "$blob"; printf 'X' | dd of="$blob" bs=1 seek=64 conv=notrunc status=none
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "oci:$WORK/node/prime" -- "${app[@]}" \
  >"$WORK/tampered.out" 2>&1; rc=$?
[ "$rc" != 0 ] && pass || fail "run from a tampered artifact fails"
expect_in "$WORK/tampered.out" "blob sha256:$layer does not match its digest" "tampered blob refused, named"
expect_not_in "$WORK/tampered.out" "startup:" "the command did not run"
run_cg timport prime import --oci "$WORK/node/prime" --prime "$WORK/tampered.cgp"
expect_rc 1 "import refuses the tampered blob"
[ ! -e "$WORK/tampered.cgp" ] && pass || fail "nothing imported from a tampered blob"
finish
