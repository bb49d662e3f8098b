// The runtime stage of the root Dockerfile as data: the Node image it starts
// from, and its ENV, LABEL, EXPOSE, USER, WORKDIR and CMD. The build without
// Docker (scripts/image/build.sh) gives its image these settings from here, so
// that the Dockerfile stays the one place they are written (a new service's
// port goes in its EXPOSE only); scripts/image/test/image.test.ts checks the
// image against them.
//
//   node scripts/image/dockerfile-runtime.js Dockerfile          JSON
//   node scripts/image/dockerfile-runtime.js Dockerfile --umoci  `umoci config` options, NUL-separated
//
// Reads the forms the Dockerfile uses: continuation lines, comments, KEY=VALUE
// pairs (values bare or double-quoted), CMD in JSON form.
"use strict";
const { readFileSync } = require("node:fs");

/**
 * @param {string} text the Dockerfile
 * @returns {{ nodeImage: string, env: Record<string, string>, labels: Record<string, string>, exposed: string[], user: string, workdir: string, cmd: string[] }}
 */
function dockerfileRuntime(text) {
  const lines = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n\s*/g, " ")
    .split("\n");
  const arg = /^ARG NODE_IMAGE=(\S+)/m.exec(lines.join("\n"));
  if (!arg) throw new Error("no `ARG NODE_IMAGE=...` in the Dockerfile");
  const start = lines.findIndex((line) => /^FROM \$\{NODE_IMAGE\} AS runtime\b/.test(line));
  if (start < 0) throw new Error("no `FROM ${NODE_IMAGE} AS runtime` stage in the Dockerfile");
  const result = { nodeImage: arg[1], env: {}, labels: {}, exposed: [], user: "", workdir: "", cmd: [] };
  const pairs = (rest, into) => {
    for (const match of rest.matchAll(/([\w.]+)=("(?:[^"\\]|\\.)*"|\S+)/g)) into[match[1]] = match[2].startsWith('"') ? JSON.parse(match[2]) : match[2];
  };
  for (const line of lines.slice(start + 1)) {
    const parsed = /^(\w+)\s+(.*)$/.exec(line.trim());
    if (!parsed) continue;
    const [, instruction, rest] = parsed;
    if (instruction === "FROM") break;
    if (instruction === "ENV") pairs(rest, result.env);
    else if (instruction === "LABEL") pairs(rest, result.labels);
    else if (instruction === "EXPOSE") result.exposed.push(...rest.split(/\s+/).map((port) => (port.includes("/") ? port : `${port}/tcp`)));
    else if (instruction === "USER") result.user = rest;
    else if (instruction === "WORKDIR") result.workdir = rest;
    else if (instruction === "CMD") result.cmd = JSON.parse(rest);
  }
  return result;
}

/** The same settings as options of `umoci config`. */
function umociOptions(runtime) {
  return [
    ...Object.entries(runtime.env).flatMap(([name, value]) => ["--config.env", `${name}=${value}`]),
    ...Object.entries(runtime.labels).flatMap(([name, value]) => ["--config.label", `${name}=${value}`]),
    ...runtime.exposed.flatMap((port) => ["--config.exposedports", port]),
    "--config.user", runtime.user,
    "--config.workingdir", runtime.workdir,
    ...runtime.cmd.flatMap((part) => ["--config.cmd", part]),
  ];
}

module.exports = { dockerfileRuntime, umociOptions };

if (require.main === module) {
  const runtime = dockerfileRuntime(readFileSync(process.argv[2], "utf8"));
  if (process.argv[3] === "--umoci") process.stdout.write(umociOptions(runtime).map((option) => `${option}\0`).join(""));
  else process.stdout.write(`${JSON.stringify(runtime, null, 2)}\n`);
}
