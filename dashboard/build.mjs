// Builds the dashboard into dist/: type-checks the sources (tsc, no output),
// bundles them with esbuild (one entry, a chunk per page loaded on first
// visit, content-hashed names), and writes index.html naming the entry's
// script and style sheet. No inline script or style anywhere: the gateway
// serves the files under a CSP that allows only its own (`script-src 'self'`).
//
//   node build.mjs            production build (minified)
//   node build.mjs --watch    rebuild on change (sources only; no type check)

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, gzipSync, constants as zlib } from "node:zlib";
import * as esbuild from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");
const watch = process.argv.includes("--watch");

if (!watch) {
  execFileSync(process.execPath, [join(root, "..", "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.json")], { stdio: "inherit" });
}

rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });

/** @type {esbuild.BuildOptions} */
const options = {
  absWorkingDir: root,
  entryPoints: { app: "src/main.tsx" },
  bundle: true,
  splitting: true,
  format: "esm",
  target: ["chrome109", "firefox115", "safari15.6"],
  outdir: join(dist, "assets"),
  entryNames: "[name]-[hash]",
  chunkNames: "chunk-[hash]",
  assetNames: "[name]-[hash]",
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  metafile: true,
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  logLevel: "warning",
  // Paths of the chunks inside the entry: /dashboard/assets/…
  publicPath: "/dashboard/assets",
};

function writeIndex(metafile) {
  const outputs = Object.entries(metafile.outputs);
  const entry = outputs.find(([, out]) => out.entryPoint === "src/main.tsx");
  if (!entry) throw new Error("no entry in the build's outputs");
  const script = "/dashboard/assets/" + relative(join(dist, "assets"), join(root, entry[0]));
  const css = entry[1].cssBundle ? "/dashboard/assets/" + relative(join(dist, "assets"), join(root, entry[1].cssBundle)) : undefined;
  // The chunks the entry imports statically: fetched in parallel with it.
  const preloads = entry[1].imports.filter((i) => i.kind === "import-statement").map((i) => "/dashboard/assets/" + relative(join(dist, "assets"), join(root, i.path)));
  const html = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light">',
    "<title>Dashboard</title>",
    '<link rel="icon" href="/dashboard/favicon.svg" type="image/svg+xml">',
    css ? `<link rel="stylesheet" href="${css}">` : "",
    ...preloads.map((p) => `<link rel="modulepreload" href="${p}">`),
    `<script type="module" src="${script}"></script>`,
    "</head>",
    "<body>",
    // Shown until the app has started (and to a browser without JavaScript or modules).
    '<div id="app"><main class="boot"><p>Loading the dashboard…</p><noscript>The dashboard needs JavaScript.</noscript></main></div>',
    "</body>",
    "</html>",
    "",
  ]
    .filter((line) => line !== "")
    .join("\n");
  writeFileSync(join(dist, "index.html"), html);
  copyFileSync(join(root, "src", "favicon.svg"), join(dist, "favicon.svg"));
  // What the gateway needs to know about the build: the files it may serve long-cached.
  const files = outputs.map(([path]) => relative(dist, join(root, path))).sort();
  const version = createHash("sha256").update(files.join("\n")).digest("hex").slice(0, 12);
  writeFileSync(join(dist, "build.json"), JSON.stringify({ version, files }, null, 2) + "\n");
  // Compressed once here, not at each gateway start: <file>.br and <file>.gz beside every file it serves.
  for (const name of ["index.html", "favicon.svg", ...files]) {
    const body = readFileSync(join(dist, name));
    writeFileSync(join(dist, `${name}.br`), brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
    writeFileSync(join(dist, `${name}.gz`), gzipSync(body, { level: 9 }));
  }
}

if (watch) {
  const ctx = await esbuild.context({ ...options, plugins: [{ name: "index", setup: (b) => b.onEnd((r) => r.metafile && writeIndex(r.metafile)) }] });
  await ctx.watch();
  console.log("watching dashboard/src …");
} else {
  const result = await esbuild.build(options);
  writeIndex(result.metafile);
  const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  console.log(`dashboard built: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1024).toFixed(0)} KiB`);
}
