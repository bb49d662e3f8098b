#!/usr/bin/env node
// Finds or starts the test servers (see packages/testing) and either
//   node scripts/test-servers/start.mjs
//     prints `MONGO_URL=... KAFKA_BROKERS=...` and keeps them running until
//     SIGINT/SIGTERM (for `npm start` against real servers, benchmarks), or
//   node scripts/test-servers/start.mjs -- <command> [args...]
//     runs the command with both variables set, then stops the servers and
//     exits with the command's exit code.
import { runCli } from "./lib.mjs";

const args = process.argv.slice(2);
await runCli(args[0] === "--" ? ["run", ...args] : ["start", ...args]);
