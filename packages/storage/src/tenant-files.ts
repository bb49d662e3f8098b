import { randomBytes } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import * as path from "node:path";

// Files beside the embedded store, one directory per tenant
// (<root>/<account>/<mode>/…): what that store must not hold in memory
// (delivery's sandbox bodies, an import's uploaded chunks). Names come from
// ids, checked so that none can leave the directory.

const TENANT = /^(acc_[A-Za-z0-9]+):(live|test)$/;
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * The path of `names` (each a plain file or directory name: letters, digits,
 * `_`, `-`, `.`, not starting with `.`) under the tenant's directory of
 * `root`. Throws a TypeError for a tenant key or name that could leave it.
 */
export function tenantFilePath(root: string, tenant: string, ...names: string[]): string {
  const parts = TENANT.exec(tenant);
  if (!parts || names.some((name) => !NAME.test(name))) throw new TypeError("tenant files: unexpected tenant or file name");
  return path.join(root, parts[1]!, parts[2]!, ...names);
}

/**
 * Writes `data` to `file` whole: to a temporary name beside it, renamed over
 * it, so that a crash mid-write leaves a `*.tmp` file (for a sweep), never a
 * cut `file`. The directory must exist.
 */
export async function writeFileWhole(file: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(temporary, data, { flag: "wx", mode: 0o600 });
  await rename(temporary, file);
}

/** The file's bytes, or undefined when there is none. */
export async function readFileIfPresent(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
