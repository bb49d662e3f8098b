#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/emailsvc offline, with no cluster:
#   1. helm lint --strict and helm template with every ci/*.yaml value set;
#   2. the rendered manifests against the Kubernetes API schemas (strict: unknown
#      fields fail) of the oldest and newest supported Kubernetes;
#   3. the hardening every workload must carry (non-root, read-only root, ...);
#   4. negative checks: unknown or misspelt values keys, missing required values
#      and bad cross references must fail the render.
#
# Tools are installed on first use into ${XDG_CACHE_HOME:-~/.cache}/emailsvc:
# helm built from the Go module proxy (needs go; ~5 min cold, instant warm) and
# kubernetes-validate (JSON schemas of each Kubernetes version) from PyPI.
# Override with HELM=/path/to/helm. SKIP_KUBE_SCHEMAS=1 skips step 2.
# Exits non-zero if any check fails; prints timings and "N passed, N failed".
set -uo pipefail

HELM_VERSION=v3.16.4
# Kubernetes minor that helm assumes for `helm template` (helm's Makefile derives it
# from its client-go, v0.31 -> 1.31); plain `go install` would leave it at 1.20.
HELM_K8S_MINOR=31
KUBE_VALIDATE_VERSION=1.37.0
# Oldest (Chart.yaml kubeVersion) and newest Kubernetes the manifests are checked against.
KUBE_VERSIONS=(1.27.0 1.37.0)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart="$root/deploy/helm/emailsvc"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/emailsvc"
work=$(mktemp -d "${TMPDIR:-/tmp}/helm-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.2fs", e - s }'; }
passed=0
failed=0
# check NAME COMMAND...: runs COMMAND, prints ok/FAIL with its time and, on
# failure, its output.
check() {
  local name=$1 t0 out
  shift
  t0=$(now)
  if out=$("$@" 2>&1); then
    passed=$((passed + 1))
    printf 'ok    %-58s %s\n' "$name" "$(since "$t0")"
  else
    failed=$((failed + 1))
    printf 'FAIL  %-58s %s\n' "$name" "$(since "$t0")"
    printf '%s\n' "$out" | sed 's/^/      /' | head -n 60
  fi
}
# must_fail PATTERN COMMAND...: COMMAND must fail with PATTERN (grep -E) in its output.
must_fail() {
  local pattern=$1 out
  shift
  if out=$("$@" 2>&1); then
    echo "expected a failure, but it succeeded"
    return 1
  fi
  if ! grep -qE -- "$pattern" <<<"$out"; then
    echo "failed, but without /$pattern/ in its output:"
    echo "$out"
    return 1
  fi
}

# --- tools -------------------------------------------------------------------

helm_ok() { [ -x "$1" ] && [ "$("$1" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]; }

install_helm() {
  local bin="$cache/helm/$HELM_VERSION/bin" t0 pkg=helm.sh/helm/v3
  if helm_ok "$bin/helm"; then
    HELM="$bin/helm"
    return 0
  fi
  command -v go >/dev/null || { echo "helm $HELM_VERSION is not cached and go is not installed" >&2; return 1; }
  echo "building helm $HELM_VERSION from the Go module proxy into $bin (several minutes on a cold Go cache)"
  t0=$(now)
  mkdir -p "$bin"
  GOBIN="$bin" CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath" go install -ldflags "-s -w \
    -X $pkg/internal/version.version=$HELM_VERSION \
    -X $pkg/pkg/chartutil.k8sVersionMajor=1 -X $pkg/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR \
    -X $pkg/pkg/lint/rules.k8sVersionMajor=1 -X $pkg/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR" \
    "$pkg/cmd/helm@$HELM_VERSION" || return 1
  helm_ok "$bin/helm" || { echo "built helm does not report $HELM_VERSION" >&2; return 1; }
  echo "built helm in $(since "$t0")"
  HELM="$bin/helm"
}

install_kube_validate() {
  local dir="$cache/kubernetes-validate/$KUBE_VALIDATE_VERSION" t0
  KV=(env PYTHONPATH="$dir" python3 -m kubernetes_validate)
  [ -f "$dir/.installed" ] && return 0
  command -v python3 >/dev/null || { echo "python3 is needed for kubernetes-validate" >&2; return 1; }
  echo "installing kubernetes-validate $KUBE_VALIDATE_VERSION from PyPI into $dir"
  t0=$(now)
  rm -rf "$dir"
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --no-warn-script-location \
    --target "$dir" "kubernetes-validate==$KUBE_VALIDATE_VERSION" || return 1
  touch "$dir/.installed"
  echo "installed kubernetes-validate in $(since "$t0")"
}

t_start=$(now)
t0=$(now)
if [ -n "${HELM:-}" ]; then
  echo "using HELM=$HELM"
elif ! install_helm; then
  echo "FAIL  could not get helm $HELM_VERSION"
  exit 1
fi
echo "helm $("$HELM" version --template '{{.Version}}') ready in $(since "$t0")"

kube_schemas=1
if [ "${SKIP_KUBE_SCHEMAS:-}" = 1 ]; then
  kube_schemas=0
  echo "skipping the Kubernetes schema checks (SKIP_KUBE_SCHEMAS=1)"
else
  t0=$(now)
  if ! install_kube_validate; then
    echo "FAIL  could not install kubernetes-validate"
    exit 1
  fi
  echo "kubernetes-validate $KUBE_VALIDATE_VERSION ready in $(since "$t0")"
fi
echo

# --- lint, render, validate -----------------------------------------------------

# Checks that every rendered workload is hardened and wired the way the chart
# promises. Reads the rendered manifests (multi-document YAML) on stdin.
cat >"$work/policy.py" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
errors = []
def err(obj, msg): errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {msg}")
by_kind = {}
for d in docs: by_kind.setdefault(d["kind"], []).append(d)
selector_keys = {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"}
label_keys = selector_keys | {"app.kubernetes.io/version", "app.kubernetes.io/managed-by"}
for d in docs:
    missing = label_keys - set(d["metadata"].get("labels", {}))
    if d["kind"] not in ("ConfigMap", "Secret", "NetworkPolicy"):
        if missing: err(d, f"labels missing {sorted(missing)}")
pods = [(d, d["spec"]["template"]["spec"], d["spec"]["template"]["metadata"]) for d in by_kind.get("Deployment", [])]
pods += [(d, d["spec"], d["metadata"]) for d in by_kind.get("Pod", [])]
for d, spec, meta in pods:
    if d["kind"] == "Deployment":
        sel = set(d["spec"]["selector"]["matchLabels"])
        if sel != selector_keys: err(d, f"selector is {sorted(sel)}, want name/instance/component")
        ann = meta.get("annotations", {})
        for a in ("checksum/config", "checksum/secret"):
            if a not in ann: err(d, f"no {a} annotation")
        if spec.get("terminationGracePeriodSeconds", 30) < 30: err(d, "terminationGracePeriodSeconds < 30")
        name = d["metadata"]["name"]
        for kind in ("ServiceAccount",):
            if not any(o["metadata"]["name"] == name for o in by_kind.get(kind, [])): err(d, f"no {kind}")
        if spec.get("serviceAccountName") != name: err(d, "does not use its own ServiceAccount")
    psc = spec.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True: err(d, "pod runAsNonRoot is not true")
    if psc.get("runAsUser") != 10001: err(d, "pod runAsUser is not 10001")
    if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault": err(d, "seccompProfile is not RuntimeDefault")
    if spec.get("automountServiceAccountToken") is not False: err(d, "automountServiceAccountToken is not false")
    for c in spec["containers"]:
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False: err(d, f"{c['name']}: allowPrivilegeEscalation")
        if sc.get("readOnlyRootFilesystem") is not True: err(d, f"{c['name']}: readOnlyRootFilesystem")
        if "ALL" not in sc.get("capabilities", {}).get("drop", []): err(d, f"{c['name']}: capabilities not dropped")
        res = c.get("resources", {})
        for part in ("requests", "limits"):
            for r in ("cpu", "memory"):
                if r not in res.get(part, {}): err(d, f"{c['name']}: no {part}.{r}")
        if not any(m["mountPath"] == "/tmp" for m in c.get("volumeMounts", [])): err(d, f"{c['name']}: no /tmp volume")
        if d["kind"] == "Deployment" and c.get("ports") and not (c.get("readinessProbe") and c.get("livenessProbe")):
            err(d, f"{c['name']}: serves ports without liveness and readiness probes")
for s in by_kind.get("ServiceAccount", []):
    if s.get("automountServiceAccountToken") is not False: err(s, "automountServiceAccountToken is not false")
for p in by_kind.get("Pod", []):
    if p["metadata"].get("annotations", {}).get("helm.sh/hook") != "test": err(p, "a bare Pod that is not a helm test hook")
# The gateway knows where subscribers is, and only the gateway may call it.
deps = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind.get("Deployment", [])}
if "gateway" in deps and "subscribers" in deps:
    env = {e["name"]: e for e in deps["gateway"]["spec"]["template"]["spec"]["containers"][0].get("env", [])}
    if not env.get("SUBSCRIBERS_URL", {}).get("value", "").endswith("-subscribers:50051"):
        err(deps["gateway"], "no SUBSCRIBERS_URL pointing at the subscribers Service")
    if "ADMIN_TOKEN" not in env: err(deps["gateway"], "no ADMIN_TOKEN")
    senv = {e["name"] for e in deps["subscribers"]["spec"]["template"]["spec"]["containers"][0].get("env", [])}
    if "ADMIN_TOKEN" in senv: err(deps["subscribers"], "gets ADMIN_TOKEN, which only the gateway needs")
nps = {n["metadata"]["name"]: n for n in by_kind.get("NetworkPolicy", [])}
if nps:
    if not any(n["spec"]["podSelector"]["matchLabels"].keys() == {"app.kubernetes.io/name", "app.kubernetes.io/instance"}
               and not n["spec"].get("ingress") for n in nps.values()):
        errors.append("no default-deny ingress NetworkPolicy for the release")
    for n in nps.values():
        if n["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "subscribers":
            froms = [f for rule in n["spec"].get("ingress") or [] for f in rule.get("from") or []]
            comps = {f.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component") for f in froms}
            if not froms or "gateway" not in comps: err(n, "does not admit its caller, the gateway")
for e in errors: print(e)
kinds = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items()))
print(f"rendered: {kinds}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
policy() {
  PYTHONPATH="$cache/kubernetes-validate/$KUBE_VALIDATE_VERSION${PYTHONPATH:+:$PYTHONPATH}" python3 "$work/policy.py"
}

render() { # render VALUES_FILE OUT
  "$HELM" template emailsvc "$chart" --namespace email -f "$1" >"$2"
}

# `helm template` does not render NOTES.txt: a copy of the chart renders it as a
# YAML string so that its template errors show here, not after an install.
notes_chart="$work/notes-chart"
cp -R "$chart" "$notes_chart"
echo 'notes: {{ include (print $.Template.BasePath "/NOTES.txt") . | toJson }}' >"$notes_chart/templates/zz-notes.yaml"
notes() { # notes VALUES_FILE
  local out
  out=$("$HELM" template emailsvc "$notes_chart" --namespace email -f "$1" --show-only templates/zz-notes.yaml) || return 1
  grep -q 'ADMIN_TOKEN' <<<"$out" || { echo "NOTES.txt does not tell how to get ADMIN_TOKEN"; echo "$out"; return 1; }
}

echo "== lint and render each ci/*.yaml"
shopt -s nullglob
ci_files=("$chart"/ci/*.yaml)
[ ${#ci_files[@]} -gt 0 ] || { echo "FAIL  no value sets in $chart/ci"; exit 1; }
for values in "${ci_files[@]}"; do
  set_name=$(basename "$values" .yaml)
  out="$work/$set_name.yaml"
  check "lint --strict ($set_name)" "$HELM" lint --strict --quiet "$chart" --namespace email -f "$values"
  check "template ($set_name)" render "$values" "$out"
  [ -s "$out" ] || continue
  check "NOTES.txt ($set_name)" notes "$values"
  check "workload policy ($set_name)" policy <"$out"
  if [ "$kube_schemas" = 1 ]; then
    for kv in "${KUBE_VERSIONS[@]}"; do
      check "kubernetes $kv schemas, strict ($set_name)" \
        "${KV[@]}" --strict --quiet --kubernetes-version "$kv" "$out"
    done
  fi
done

echo
echo "== values that must be rejected"
base="$chart/ci/default-values.yaml"
check "unknown top-level key fails the schema" \
  must_fail '[Aa]dditional propert(y|ies).*replicaCount' "$HELM" template emailsvc "$chart" -f "$base" --set replicaCount=3
check "misspelt component key fails the schema" \
  must_fail 'components\.gateway.*replica' "$HELM" template emailsvc "$chart" -f "$base" --set components.gateway.replica=3
check "misspelt nested key fails the schema" \
  must_fail 'autoscale' "$HELM" template emailsvc "$chart" -f "$base" --set componentDefaults.autoscaling.autoscale=true
check "grace period under 30 s fails the schema" \
  must_fail 'terminationGracePeriodSeconds' "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.subscribers.terminationGracePeriodSeconds=10
check "missing MongoDB URL fails" \
  must_fail 'secrets\.mongoUrl' "$HELM" template emailsvc "$chart" --set config.kafkaBrokers=kafka:9092
check "missing Kafka brokers fails" \
  must_fail 'config\.kafkaBrokers' "$HELM" template emailsvc "$chart" --set secrets.mongoUrl=mongodb://mongo:27017
check "caller that is not a component fails" \
  must_fail 'is not a component' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.subscribers.ports.grpc.callers={gatway}'
check "secretEnv not in the Secret fails" \
  must_fail 'SMTP_URL' "$HELM" template emailsvc "$chart" -f "$base" --set 'components.subscribers.secretEnv={SMTP_URL}'
check "portal custom domains (not yet available) fail" \
  must_fail 'portal\.customDomains' "$HELM" template emailsvc "$chart" -f "$base" --set portal.customDomains.enabled=true

echo
echo "total $(since "$t_start")"
echo "helm-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
