// Shared by the CLIs in this folder: loads the compiled @emailsvc/testing
// package, compiling it first if `npm run build` has not run yet, so these
// scripts work on a fresh checkout with only `npm install` done.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const cli = join(root, "packages", "testing", "dist", "cli.js");

export async function runCli(args) {
  if (!existsSync(cli)) {
    execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b", join(root, "packages", "testing")], {
      stdio: "inherit",
    });
  }
  const { main } = createRequire(import.meta.url)(cli);
  process.exitCode = await main(args);
}
