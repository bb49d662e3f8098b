#!/usr/bin/env node
// Builds FerretDB and downloads the Kafka jars into the cache
// (${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/emailsvc}) without
// starting anything, and prints how long each took. For CI, to warm the
// cache in a step of its own before the tests. PostgreSQL, FerretDB's backend,
// comes from the system: it is only looked for, to fail here if it is missing.
//   node scripts/test-servers/prepare.mjs
import { runCli } from "./lib.mjs";

await runCli(["prepare"]);
