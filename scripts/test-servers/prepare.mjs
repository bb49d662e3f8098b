#!/usr/bin/env node
// Builds FerretDB, downloads the Kafka jars, and builds kube-apiserver and
// kube-controller-manager (with cert-manager's CRDs beside them) into the cache
// (${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/emailsvc}) without
// starting anything, and prints how long each took. For CI, to warm the
// cache in a step of its own before the tests. PostgreSQL, FerretDB's backend,
// comes from the system: it is only looked for, to fail here if it is missing;
// etcd, the API server's store, is installed from Debian when missing.
//   node scripts/test-servers/prepare.mjs [--no-kube]
import { runCli } from "./lib.mjs";

await runCli(["prepare", ...process.argv.slice(2)]);
