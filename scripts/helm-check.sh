#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/emailsvc offline, with no cluster:
#   1. helm lint --strict and helm template with every ci/*.yaml value set;
#   2. the rendered manifests against the Kubernetes API schemas (strict: unknown
#      fields fail) of the oldest and newest supported Kubernetes;
#   3. the hardening every workload must carry (non-root, read-only root, ...),
#      the wiring of callers (<NAME>_URL and NetworkPolicy) and the secrets of
#      each component as the service manifest declares them, gRPC listen
#      address and probes, open egress (SMTP relay);
#   4. the default components against the repository: they are what the service
#      manifest (packages/manifest) generates (`npm run generate:chart`), and
#      each runs the dist/main.js of an existing service, which reads every env
#      var the chart sets, on ports the Dockerfile EXPOSEs;
#   5. negative checks: unknown or misspelt values keys, missing required values,
#      bad cross references, a service called as required left out, and an
#      incomplete mail provider (for each provider the manifest declares with
#      secrets, e.g. EMAIL_PROVIDER=smtp without SMTP_URL) must fail the render.
#
# Tools are installed on first use into ${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/emailsvc}
# (the cache of the test servers and schemathesis too):
# helm built from the Go module proxy (needs go; ~5 min cold, instant warm) and
# kubernetes-validate (JSON schemas of each Kubernetes version) from PyPI.
# Override with HELM=/path/to/helm. SKIP_KUBE_SCHEMAS=1 skips step 2. Needs
# `npm install` (it builds packages/manifest, the service manifest, with turbo).
# Exits non-zero if any check fails; prints timings and "N passed, N failed".
set -uo pipefail

# Must match scripts/helm/install.sh, which builds it.
HELM_VERSION=v3.16.4
KUBE_VALIDATE_VERSION=1.37.0
# Oldest (Chart.yaml kubeVersion) and newest Kubernetes the manifests are checked against.
KUBE_VERSIONS=(1.27.0 1.37.0)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart="$root/deploy/helm/emailsvc"
cache="${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/emailsvc}"
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

install_helm() {
  # Built from the Go module proxy into the cache by scripts/helm/install.sh
  # (the one way Helm is built here; the chart's API-server test uses it too).
  HELM=$(bash "$root/scripts/helm/install.sh") || return 1
  [ "$("$HELM" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ] ||
    { echo "$HELM is not helm $HELM_VERSION" >&2; return 1; }
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

# The service manifest: which components exist, whom each calls, the secrets it
# reads. The checks below take the wiring from it rather than from a list here.
t0=$(now)
manifest="$work/manifest.json"
if ! (cd "$root" && npx --no-install turbo run build --filter=@emailsvc/manifest --output-logs=errors-only >"$work/manifest-build.log" 2>&1) ||
  ! node "$root/packages/manifest/dist/cli.js" json >"$manifest"; then
  echo "FAIL  could not build and read the service manifest (packages/manifest; run npm install first)"
  cat "$work/manifest-build.log"
  exit 1
fi
echo "service manifest ready in $(since "$t0")"
echo

# --- lint, render, validate -----------------------------------------------------

# Checks that every rendered workload is hardened and wired the way the chart
# promises. Reads the rendered manifests (multi-document YAML) on stdin.
cat >"$work/policy.py" <<'PY'
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
manifest = json.load(open(sys.argv[1]))["components"]
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
# RBAC: only the portal's ServiceAccount is bound, to one Role granting exactly
# Certificates and Ingresses (custom domains) in the release namespace.
CUSTOM_DOMAIN_RULES = [
    {"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "verbs": ["get", "create", "delete"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "create", "delete"]},
]
for kind in ("ClusterRole", "ClusterRoleBinding"):
    for o in by_kind.get(kind, []): err(o, "the chart grants nothing cluster-wide")
roles = {r["metadata"]["name"]: r for r in by_kind.get("Role", [])}
for r in roles.values():
    if r.get("rules") != CUSTOM_DOMAIN_RULES: err(r, f"rules are {r.get('rules')}, want exactly Certificates and Ingresses")
api_accounts = set()
for b in by_kind.get("RoleBinding", []):
    if b["roleRef"]["kind"] != "Role" or b["roleRef"]["name"] not in roles: err(b, "binds something other than the chart's Role")
    for sub in b.get("subjects", []):
        if sub["kind"] != "ServiceAccount" or not sub["name"].endswith("-portal"): err(b, f"binds {sub}, not the portal's ServiceAccount")
        else: api_accounts.add(sub["name"])
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
    # Only the portal with custom domains (a RoleBinding to its ServiceAccount) gets an API token.
    if spec.get("automountServiceAccountToken") is not (spec.get("serviceAccountName") in api_accounts):
        err(d, f"automountServiceAccountToken is {spec.get('automountServiceAccountToken')}, want {spec.get('serviceAccountName') in api_accounts}")
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
    if s.get("automountServiceAccountToken") is not (s["metadata"]["name"] in api_accounts):
        err(s, f"automountServiceAccountToken is {s.get('automountServiceAccountToken')}, want {s['metadata']['name'] in api_accounts}")
for p in by_kind.get("Pod", []):
    if p["metadata"].get("annotations", {}).get("helm.sh/hook") != "test": err(p, "a bare Pod that is not a helm test hook")
comp_of = lambda o: o["metadata"].get("labels", {}).get("app.kubernetes.io/component")
deps = {comp_of(d): d for d in by_kind.get("Deployment", [])}
svcs = {comp_of(s): s for s in by_kind.get("Service", [])}
def container(comp): return deps[comp]["spec"]["template"]["spec"]["containers"][0]
def env_of(comp): return {e["name"]: e for e in container(comp).get("env", [])}
def url_of(comp, port_name="grpc"):
    s = svcs.get(comp)
    port = next((p["port"] for p in (s or {}).get("spec", {}).get("ports", []) if p["name"] == port_name), None)
    return f"http://{s['metadata']['name']}:{port}" if s and port else None
# Who calls whom (the manifest's calls), by the env var the caller reads; checked when both are rendered.
wiring = {(caller, callee): manifest[callee]["urlVariable"] for caller, m in manifest.items() for callee in m["calls"]}
for (caller, callee), var in wiring.items():
    if caller in deps and callee in deps and env_of(caller).get(var, {}).get("value") != url_of(callee):
        err(deps[caller], f"{var} is not {url_of(callee)}, the {callee} Service")
# Every <NAME>_URL of the release points at a rendered Service port; none at a disabled component.
svc_urls = {f"http://{s['metadata']['name']}:{p['port']}" for s in svcs.values() for p in s["spec"]["ports"]}
prefix = next((f"http://{s['metadata']['name'][:-len(c)]}" for c, s in svcs.items()), None)
for comp in deps:
    for name, e in env_of(comp).items():
        v = e.get("value") or ""
        if name.endswith("_URL") and prefix and v.startswith(prefix) and v not in svc_urls:
            err(deps[comp], f"{name}={v} is no Service port of the release")
# Secrets go only where the manifest says they are read: each component gets those
# it declares, and of the others only the optional ones it declares.
for comp in deps:
    env = env_of(comp)
    if comp in manifest:
        secret = {n for n, e in env.items() if "secretKeyRef" in e.get("valueFrom", {})}
        declared = set(manifest[comp]["secrets"])
        for n in sorted(declared - secret): err(deps[comp], f"no {n}, which its manifest says it reads")
        for n in sorted(secret - declared - set(manifest[comp]["optionalSecrets"])):
            err(deps[comp], f"gets the secret {n}, which its manifest does not say it reads")
    # A component that picks a provider (delivery, EMAIL_PROVIDER) runs one its manifest declares, and
    # gets from a Secret exactly the secrets of the provider it runs, none of another's.
    choice = manifest.get(comp, {}).get("providers")
    if choice:
        provider = env.get(choice["setting"], {}).get("value") or choice["default"]
        if provider not in choice["options"]: err(deps[comp], f"{choice['setting']} is {provider!r}, none of {sorted(choice['options'])}")
        for other, declared_provider in choice["options"].items():
            for n in declared_provider["secrets"]:
                from_secret = env.get(n, {}).get("valueFrom", {}).get("secretKeyRef")
                if other == provider and not from_secret: err(deps[comp], f"{choice['setting']}={provider} without {n} from a Secret")
                if other != provider and n not in choice["options"].get(provider, {}).get("secrets", {}) and n in env:
                    err(deps[comp], f"gets {n} but does not send through {other}")
# gRPC services listen on all interfaces (their default is 127.0.0.1) on the port the
# Service targets, and their native gRPC probes ask that port.
for comp, s in svcs.items():
    for p in s["spec"]["ports"]:
        if p.get("appProtocol") != "kubernetes.io/h2c" or comp not in deps: continue
        c, env = container(comp), env_of(comp)
        cport = next((cp["containerPort"] for cp in c.get("ports", []) if cp["name"] == p["targetPort"]), None)
        if env.get("GRPC_HOST", {}).get("value") != "0.0.0.0": err(deps[comp], "GRPC_HOST is not 0.0.0.0")
        if env.get("GRPC_PORT", {}).get("value") != str(cport): err(deps[comp], f"GRPC_PORT is not {cport}")
        for probe in ("livenessProbe", "readinessProbe"):
            if c.get(probe, {}).get("grpc", {}).get("port") != cport: err(deps[comp], f"{probe} is not gRPC on {cport}")
nps = {n["metadata"]["name"]: n for n in by_kind.get("NetworkPolicy", [])}
if nps:
    if not any(n["spec"]["podSelector"]["matchLabels"].keys() == {"app.kubernetes.io/name", "app.kubernetes.io/instance"}
               and not n["spec"].get("ingress") for n in nps.values()):
        errors.append("no default-deny ingress NetworkPolicy for the release")
    egress = {n["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component"): n
              for n in nps.values() if "Egress" in n["spec"].get("policyTypes", [])}
    # Egress is open, or (networkPolicy.egress.enabled) restricted for every component alike.
    if egress and set(egress) != set(deps): errors.append(f"egress restricted for {sorted(egress)}, not for every component {sorted(deps)}")
    for comp, n in egress.items():
        rules = n["spec"].get("egress") or []
        if "Ingress" in n["spec"]["policyTypes"]: err(n, "mixes ingress and egress")
        if not any({"port": 53, "protocol": "UDP"} in (r.get("ports") or []) for r in rules): err(n, "no DNS (port 53/UDP)")
        to_comps = {t.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component")
                    for r in rules for t in r.get("to") or []}
        for caller, callee in wiring:
            if caller == comp and callee in deps and callee not in to_comps: err(n, f"does not let {comp} reach {callee}, which it calls")
        # A rule to the Kubernetes API: only ports 443/6443, to addresses (or anywhere).
        api = [r for r in rules if r.get("ports") and all(p.get("port") in (443, 6443) for p in r["ports"])
               and all("ipBlock" in t for t in r.get("to") or [])]
        portal_api = comp == "portal" and deps[comp]["spec"]["template"]["spec"].get("serviceAccountName") in api_accounts
        if api and not portal_api: err(n, "lets a component other than the portal with custom domains reach the Kubernetes API")
        if portal_api and not api: err(n, "the portal with custom domains cannot reach the Kubernetes API")
    for n in nps.values():
        if "Ingress" not in n["spec"].get("policyTypes", []): continue
        callee = n["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component")
        froms = [f for rule in n["spec"].get("ingress") or [] for f in rule.get("from") or []]
        comps = {f.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/component") for f in froms}
        for caller in {c for c, to in wiring if to == callee and c in deps}:
            if caller not in comps: err(n, f"does not admit {caller}, a caller of {callee}")
        # Each admitted caller that is rendered knows the address.
        for caller in comps & set(deps):
            if url_of(callee) and url_of(callee) not in {e.get("value") for e in env_of(caller).values()}:
                err(n, f"admits {caller}, which gets no URL of {callee}")
for e in errors: print(e)
kinds = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_kind.items()))
print(f"rendered: {kinds}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
policy() {
  PYTHONPATH="$cache/kubernetes-validate/$KUBE_VALIDATE_VERSION${PYTHONPATH:+:$PYTHONPATH}" python3 "$work/policy.py" "$manifest"
}

# Checks the default components against the code of the repository: they are
# the components of the service manifest, each runs services/<name>/dist/main.js
# of a service that exists (the Dockerfile copies every services/* dist and fails
# without its main.js), reads every env var the chart gives it, and listens on
# ports the Dockerfile EXPOSEs. Reads the rendered manifests on stdin; arguments:
# the repository root and the service manifest (JSON).
cat >"$work/code.py" <<'PY'
import glob, json, os, re, sys, yaml
root = sys.argv[1]
manifest = json.load(open(sys.argv[2]))["components"]
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
dockerfile = open(os.path.join(root, "Dockerfile")).read()
exposed = {int(p) for line in re.findall(r"^EXPOSE\s+(.+)$", dockerfile, re.M) for p in line.split()}
def source(*dirs):
    return "".join(open(f).read() for d in dirs for f in glob.glob(os.path.join(root, d, "src/**/*.ts"), recursive=True))
shared = source("packages/runtime", "packages/telemetry", "packages/grpc", "packages/storage", "packages/events", "packages/service")
# `<NAME>_URL` settings are read by name from the manifest's calls (packages/service, serviceUrls),
# and the setting that picks a provider from its `providers` (delivery's registry, EMAIL_PROVIDER).
def url_vars(service):
    entry = manifest.get(service, {})
    return {manifest[callee]["urlVariable"] for callee in entry.get("calls", {})} | ({entry["providers"]["setting"]} if entry.get("providers") else set())
errors = []
deployed = {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in docs if d["kind"] == "Deployment"}
if deployed != set(manifest): errors.append(f"the components are {sorted(deployed)}, the manifest's services {sorted(manifest)}")
for d in (d for d in docs if d["kind"] == "Deployment"):
    name = d["metadata"]["name"]
    c = d["spec"]["template"]["spec"]["containers"][0]
    m = re.fullmatch(r"services/([a-z0-9-]+)/dist/main\.js", (c["command"] + [""])[1]) if c["command"][0] == "node" else None
    if not m:
        errors.append(f"{name}: command {c['command']} is not node services/<name>/dist/main.js"); continue
    service = m.group(1)
    if not os.path.isfile(os.path.join(root, "services", service, "src/main.ts")):
        errors.append(f"{name}: no services/{service}/src/main.ts in the repository"); continue
    code = source(f"services/{service}") + shared
    derived = url_vars(service)
    for e in c.get("env", []):
        if e["name"] not in derived and not re.search(rf"[\"'`]{e['name']}[\"'`]", code):
            errors.append(f"{name}: sets {e['name']}, which services/{service} never reads")
    for p in c.get("ports", []):
        if p["containerPort"] not in exposed: errors.append(f"{name}: port {p['containerPort']} is not in the Dockerfile's EXPOSE")
for e in errors: print(e)
sys.exit(1 if errors else 0)
PY
code_check() { # code_check RENDERED
  python3 "$work/code.py" "$root" "$manifest" <"$1"
}

render() { # render VALUES_FILE OUT
  "$HELM" template emailsvc "$chart" --namespace email -f "$1" >"$2"
}

# `helm template` does not render NOTES.txt: a copy of the chart renders it as a
# YAML string so that its template errors show here, not after an install.
notes_chart="$work/notes-chart"
cp -R "$chart" "$notes_chart"
echo 'notes: {{ include (print $.Template.BasePath "/NOTES.txt") . | toJson }}' >"$notes_chart/templates/zz-notes.yaml"
notes() { # notes VALUES_FILE RENDERED
  local out
  out=$("$HELM" template emailsvc "$notes_chart" --namespace email -f "$1" --show-only templates/zz-notes.yaml) || return 1
  grep -q 'ADMIN_TOKEN' <<<"$out" || { echo "NOTES.txt does not tell how to get ADMIN_TOKEN"; echo "$out"; return 1; }
  if grep -qx '  name: emailsvc-delivery' "$2"; then # delivery is rendered
    grep -q 'EMAIL_PROVIDER=' <<<"$out" || { echo "NOTES.txt does not tell which mail provider delivery uses"; echo "$out"; return 1; }
  fi
}

echo "== the chart's components are the service manifest's"
check "values.yaml components generated from packages/manifest" node "$root/packages/manifest/dist/cli.js" chart --check
echo

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
  check "NOTES.txt ($set_name)" notes "$values" "$out"
  check "workload policy ($set_name)" policy <"$out"
  [ "$set_name" = default-values ] && check "components match the code and the image ($set_name)" code_check "$out"
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
check "delivery without the templates service fails" \
  must_fail 'components\.delivery needs the templates service \(TEMPLATES_URL\)' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.templates.ports.grpc.callers={gateway,campaigns,portal}'
check "a service that a component calls as required, disabled, fails" \
  must_fail 'components\.[a-z]+ needs the templates service' "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.templates.enabled=false
check "a required service's URL set by hand is enough" \
  "$HELM" template emailsvc "$chart" -f "$base" --set 'components.templates.ports.grpc.callers={gateway,campaigns,portal}' \
  --set components.delivery.env.TEMPLATES_URL=http://templates.elsewhere:50052
check "subscribers without SUPPRESSION_KEYS fails" \
  must_fail 'components\.subscribers\.secretEnv must list SUPPRESSION_KEYS' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.subscribers.secretEnv={MONGO_URL}'
check "webhooks without SEALING_KEYS fails" \
  must_fail 'components\.webhooks\.secretEnv must list SEALING_KEYS' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.webhooks.secretEnv={MONGO_URL}'
check "delivery without TOKEN_SIGNING_KEYS fails" \
  must_fail 'components\.delivery\.secretEnv must list TOKEN_SIGNING_KEYS' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.delivery.secretEnv={MONGO_URL}'
# Each provider the manifest declares with secrets (delivery's EMAIL_PROVIDER), chosen without them.
# Lines of "component setting provider secret defaultSecrets otherSecretsOfTheProvider" from the manifest
# ("-": none): the provider's other secrets are given, so that the one left out is the one named.
provider_secrets=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["components"]
for comp, c in m.items():
    choice = c.get("providers")
    for provider, p in sorted((choice or {}).get("options", {}).items()):
        for secret in p["secrets"]:
            others = [o for o in p["secrets"] if o != secret]
            print(comp, choice["setting"], provider, secret, ",".join(c["secrets"]), ",".join(others) or "-")' "$manifest")
[ -n "$provider_secrets" ] || echo "note: no provider of the manifest has secrets; the provider checks below check nothing"
while read -r comp setting provider secret defaults others; do
  [ -n "$comp" ] || continue
  given=() listed="$defaults"
  if [ "$others" != "-" ]; then
    listed="$defaults,$others"
    for o in ${others//,/ }; do given+=(--set "secrets.extra.$o=given-for-the-check"); done
  fi
  check "$setting=$provider without $secret fails" \
    must_fail "$setting=$provider needs $secret" "$HELM" template emailsvc "$chart" -f "$base" \
    --set "components.$comp.env.$setting=$provider" --set "components.$comp.secretEnv={$listed}" "${given[@]}"
  check "$setting=$provider with $secret not in the Secret fails" \
    must_fail "secrets\\.extra\\.$secret" "$HELM" template emailsvc "$chart" -f "$base" \
    --set "components.$comp.env.$setting=$provider" --set "components.$comp.secretEnv={$listed,$secret}" "${given[@]}"
  check "$provider with existingSecret, $secret not in secretEnv fails" \
    must_fail "add $secret to components\\.$comp\\.secretEnv.*existingSecret" "$HELM" template emailsvc "$chart" \
    -f "$chart/ci/all-features-values.yaml" --set "components.$comp.env.$setting=$provider" --set "components.$comp.secretEnv={$listed}"
  check "$setting=$provider in config.env, overridden, fails" \
    must_fail "config\\.env\\.$setting=$provider is overridden" "$HELM" template emailsvc "$chart" -f "$base" \
    --set "config.env.$setting=$provider"
done <<<"$provider_secrets"
check "unknown EMAIL_PROVIDER fails, naming the manifest's providers" \
  must_fail "EMAIL_PROVIDER must be one of $(python3 -c 'import json,sys; print(", ".join(sorted(json.load(open(sys.argv[1]))["components"]["delivery"]["providers"]["options"])))' "$manifest"), got \"postmark\"" "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.delivery.env.EMAIL_PROVIDER=postmark
check "unknown EMAIL_PROVIDER in extraEnv fails" \
  must_fail 'extraEnv EMAIL_PROVIDER must be one of' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.delivery.extraEnv[0].name=EMAIL_PROVIDER' --set 'components.delivery.extraEnv[0].value=postmark'
check "SMTP_URL that is no smtp(s):// URL fails the schema" \
  must_fail 'secrets\.extra\.SMTP_URL' "$HELM" template emailsvc "$chart" -f "$chart/ci/smtp-values.yaml" \
  --set secrets.extra.SMTP_URL=smtp.example.com:587
check "TEMPLATES_COMPILE_WORKERS out of range fails the schema" \
  must_fail 'TEMPLATES_COMPILE_WORKERS' "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.templates.env.TEMPLATES_COMPILE_WORKERS=100
check "RATE_LIMIT_SEND that is no budget fails the schema" \
  must_fail 'RATE_LIMIT_SEND' "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.gateway.env.RATE_LIMIT_SEND=300-per-minute
check "unknown RATE_LIMIT_STORE fails the schema" \
  must_fail 'RATE_LIMIT_STORE' "$HELM" template emailsvc "$chart" -f "$base" \
  --set components.gateway.env.RATE_LIMIT_STORE=redis
# The gateway behind the chart's ingress trusts the controller's X-Forwarded-For entry, unless told otherwise.
hops_of() { "$HELM" template emailsvc "$chart" --namespace email -f "$base" "$@" --show-only templates/deployment.yaml |
  python3 -c 'import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["metadata"]["name"].endswith("-gateway"):
        print({e["name"]: e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}.get("TRUSTED_PROXY_HOPS"))'; }
trusted_hops() { # trusted_hops WANT ARGS...: the gateway's TRUSTED_PROXY_HOPS renders as WANT
  local want=$1 got
  shift
  got=$(PYTHONPATH="$cache/kubernetes-validate/$KUBE_VALIDATE_VERSION${PYTHONPATH:+:$PYTHONPATH}" hops_of "$@") || return 1
  [ "$got" = "$want" ] || { echo "TRUSTED_PROXY_HOPS is $got, want $want"; return 1; }
}
check "gateway trusts no X-Forwarded-For without the ingress" trusted_hops None
check "gateway trusts one X-Forwarded-For hop behind the ingress" trusted_hops 1 --set ingress.enabled=true
check "gateway's own TRUSTED_PROXY_HOPS wins over the ingress default" trusted_hops 2 --set ingress.enabled=true \
  --set-string components.gateway.env.TRUSTED_PROXY_HOPS=2
policy_of() { "$HELM" template emailsvc "$chart" --namespace email -f "$base" "$@" | policy; }
check "gRPC service on loopback fails the workload policy" \
  must_fail 'templates: GRPC_HOST is not 0\.0\.0\.0' policy_of --set components.templates.env.GRPC_HOST=127.0.0.1
check "caller left out of the callers fails the workload policy" \
  must_fail 'does not admit gateway, a caller of delivery' policy_of --set 'components.delivery.ports.grpc.callers={campaigns,portal}'
check "a secret the manifest does not declare fails the workload policy" \
  must_fail 'templates: gets the secret ADMIN_TOKEN, which its manifest does not say it reads' \
  policy_of --set 'components.templates.secretEnv={MONGO_URL,ADMIN_TOKEN}'
check "a secret the manifest declares, left out, fails the install" \
  must_fail 'components\.portal\.secretEnv must list TOKEN_SIGNING_KEYS' "$HELM" template emailsvc "$chart" -f "$base" \
  --set 'components.portal.secretEnv={MONGO_URL}'
check "a secret the manifest declares, given as plain env, fails the workload policy" \
  must_fail 'portal: no TOKEN_SIGNING_KEYS, which its manifest says it reads' policy_of --set 'components.portal.secretEnv={MONGO_URL}' \
  --set 'components.portal.extraEnv[0].name=TOKEN_SIGNING_KEYS' --set 'components.portal.extraEnv[0].value=k1:x'
code_of() { "$HELM" template emailsvc "$chart" --namespace email -f "$base" "$@" >"$work/code-of.yaml" && code_check "$work/code-of.yaml"; }
check "env var the service never reads fails the code check" \
  must_fail 'sets EMAIL_FORM, which services/delivery never reads' code_of --set components.delivery.env.EMAIL_FORM=x
cd_values="$chart/ci/custom-domains.yaml"
check "custom domains without an issuer fail" \
  must_fail 'portal\.issuer\.name' "$HELM" template emailsvc "$chart" -f "$base" --set portal.customDomains.enabled=true
check "custom domains without a CNAME target fail" \
  must_fail 'portal\.customDomains\.target' "$HELM" template emailsvc "$chart" -f "$base" \
  --set portal.customDomains.enabled=true --set portal.issuer.name=letsencrypt
check "custom domains with the portal disabled fail" \
  must_fail 'needs components\.portal enabled' "$HELM" template emailsvc "$chart" -f "$cd_values" \
  --set components.portal.enabled=false
check "ACME issuer without an email fails" \
  must_fail 'portal\.issuer\.acme\.email' "$HELM" template emailsvc "$chart" -f "$cd_values" --set portal.issuer.acme.email=
check "portal ingress without a host fails" \
  must_fail 'portal\.ingress\.host' "$HELM" template emailsvc "$chart" -f "$base" \
  --set portal.ingress.enabled=true --set portal.ingress.tls.enabled=false
check "unknown issuer kind fails the schema" \
  must_fail 'kind' "$HELM" template emailsvc "$chart" -f "$cd_values" --set portal.issuer.kind=Vault
# mutated_policy SED_EXPR: the custom-domains render, edited by sed, through the workload policy.
mutated_policy() { "$HELM" template emailsvc "$chart" --namespace email -f "$cd_values" | sed -E "$1" | policy; }
check "an API token for another component fails the workload policy" \
  must_fail 'emailsvc-gateway: automountServiceAccountToken is True' \
  mutated_policy '/^  name: emailsvc-gateway$/,/^---/ s/^automountServiceAccountToken: false/automountServiceAccountToken: true/'
check "a Role granting Secrets fails the workload policy" \
  must_fail 'want exactly Certificates and Ingresses' mutated_policy 's/resources: \[certificates\]/resources: [certificates, secrets]/'
check "a ClusterRole fails the workload policy" \
  must_fail 'grants nothing cluster-wide' mutated_policy 's/^kind: Role$/kind: ClusterRole/'
check "Kubernetes API egress for another component fails the workload policy" \
  must_fail 'emailsvc-delivery-egress: lets a component other than the portal' \
  mutated_policy '/^  name: emailsvc-delivery-egress$/,/^---/ s/^  egress:$/  egress:\n    - ports: [{port: 6443}]/'

echo
echo "total $(since "$t_start")"
echo "helm-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
