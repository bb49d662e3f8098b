// Compiled files in a workspace's dist that no source of it produces any more
// (a source renamed or deleted since: tsc never removes an output, and turbo's
// cache hands a dist back with whatever it held). A clean build, as the
// Dockerfile's, has none; the build without Docker (scripts/image/build.sh)
// takes each dist from this checkout, so it removes them first.
//
//   node scripts/image/stale-outputs.js <workspace dir>...   prints one path a line
//
// Uses the checkout's TypeScript: each workspace's tsconfig.json gives its
// sources and, through TypeScript's own mapping, their outputs; a .js file in
// its outDir that is none of those is stale. Workspaces built otherwise (the
// dashboard, esbuild) have no tsconfig outDir and are left alone.
"use strict";
const { existsSync, readdirSync } = require("node:fs");
const { join, resolve } = require("node:path");
const ts = require("typescript");

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

for (const workspace of process.argv.slice(2).map((dir) => resolve(dir))) {
  const configFile = join(workspace, "tsconfig.json");
  if (!existsSync(configFile)) continue;
  const parsed = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  const outDir = parsed?.options.outDir;
  if (!parsed || !outDir || !existsSync(outDir)) continue;
  const expected = new Set(parsed.fileNames.flatMap((file) => ts.getOutputFileNames(parsed, file, false)).map((file) => resolve(file)));
  for (const file of filesUnder(outDir)) {
    if (/\.[cm]?js$/.test(file) && !expected.has(resolve(file))) process.stdout.write(`${file}\n`);
  }
}
