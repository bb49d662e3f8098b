// The PostgreSQL cluster FerretDB runs on: private, socket-only, and gone
// after stop(). Runs its own cluster, whatever MONGO_URL points at.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { alive } from "../src/cache.js";
import { startPostgres } from "../src/postgres.js";

describe("startPostgres", () => {
  it("runs a cluster on a unix socket in a directory of its own, no TCP, and removes it on stop", async () => {
    const pg = await startPostgres();
    let pid = 0;
    try {
      expect(existsSync(join(pg.socketDir, ".s.PGSQL.5432"))).toBe(true);
      expect(statSync(pg.socketDir).mode & 0o777).toBe(0o700);
      expect(pg.url).toBe(`postgres://ferretdb@/postgres?host=${encodeURIComponent(pg.socketDir)}&port=5432`);
      // postmaster.pid: pid, data directory, start time, port, socket directory,
      // first listen address (empty: no TCP), shared memory key, status.
      const lines = readFileSync(join(pg.socketDir, "data", "postmaster.pid"), "utf8").split("\n");
      pid = Number(lines[0]);
      expect(alive(pid)).toBe(true);
      expect(lines[4]).toBe(pg.socketDir);
      expect(lines[5]).toBe("");
      expect(lines[7]?.trim()).toBe("ready");
      if (process.getuid?.() === 0) expect(statSync(join(pg.socketDir, "data")).uid).not.toBe(0);
    } finally {
      await pg.stop();
    }
    expect(alive(pid)).toBe(false);
    expect(existsSync(pg.socketDir)).toBe(false);
  });
});
