import { chmod, readdir, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * Makes a copied tree writable. Go's module cache is read-only (0444 files,
 * 0555 directories) and a copy keeps those modes, so without this we could
 * neither add files to the copy nor delete it afterwards.
 */
export async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await makeWritable(path);
    else if (entry.isFile()) await chmod(path, ((await stat(path)).mode & 0o111) | 0o644);
  }
}
