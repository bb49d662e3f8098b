#!/usr/bin/env node
// The tests' Kubernetes node by hand (packages/testing/src/kube-node-cli.ts):
//   node scripts/kube-node/cli.mjs up [image.tar...]   (npm run kube:up)
//   node scripts/kube-node/cli.mjs down                (npm run kube:down)
//   node scripts/kube-node/cli.mjs prepare             (fill the cache only)
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(import.meta.url);
const cli = join(dirname(here), "..", "..", "packages", "testing", "dist", "kube-node-cli.js");
const { main } = createRequire(import.meta.url)(cli);
process.exitCode = await main(here, process.argv.slice(2));
