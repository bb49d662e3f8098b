#!/usr/bin/env bash
# Builds Helm from the Go module proxy into the cache, once, and prints the
# path of the binary. Immediate when it is cached. The one place that knows how
# Helm is built here: scripts/helm-check.sh and the chart's test against a real
# API server (deploy/helm/test) both use it. HELM=/path/to/helm skips the build.
#   ${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/emailsvc}/helm/<version>/bin/helm
set -euo pipefail

HELM_VERSION=v3.16.4
# Kubernetes minor that helm assumes for `helm template` (helm's Makefile derives it
# from its client-go, v0.31 -> 1.31); plain `go install` would leave it at 1.20.
HELM_K8S_MINOR=31

if [ -n "${HELM:-}" ]; then
  echo "$HELM"
  exit 0
fi
cache="${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/emailsvc}"
bin="$cache/helm/$HELM_VERSION/bin"
helm_ok() { [ -x "$1" ] && [ "$("$1" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]; }
if helm_ok "$bin/helm"; then
  echo "$bin/helm"
  exit 0
fi
command -v go >/dev/null || { echo "helm $HELM_VERSION is not cached and go is not installed" >&2; exit 1; }
echo "building helm $HELM_VERSION from the Go module proxy into $bin (several minutes on a cold Go cache)" >&2
start=$(date +%s)
pkg=helm.sh/helm/v3
mkdir -p "$bin"
GOBIN="$bin" CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath" go install -ldflags "-s -w \
  -X $pkg/internal/version.version=$HELM_VERSION \
  -X $pkg/pkg/chartutil.k8sVersionMajor=1 -X $pkg/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR \
  -X $pkg/pkg/lint/rules.k8sVersionMajor=1 -X $pkg/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR" \
  "$pkg/cmd/helm@$HELM_VERSION" >&2
helm_ok "$bin/helm" || { echo "built helm does not report $HELM_VERSION" >&2; exit 1; }
echo "built helm in $(($(date +%s) - start))s" >&2
echo "$bin/helm"
