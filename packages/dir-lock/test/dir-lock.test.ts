import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOCK_FILE, lockDir, parseHolder } from "../src/index";

// The lock of a data directory against real processes: a holder that is a
// zombie (killed, not reaped yet, as `npm start` is for a second or two after
// `kill -9` while its threads are torn down), a pid that now belongs to
// another process (a container restarted in a new PID namespace), a live
// holder (refused, after waiting), and a holder that dies while the next
// start waits.

const HOLDER = join(__dirname, "support", "holder.js");

interface Holder {
  pid: number;
  /** The process spawned: the holder itself, or the shell that became `sleep` above it. */
  child: ChildProcess;
}

let dir: string;
const started: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "dir-lock-"));
});

afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Spawns `command` and resolves once a line of its stdout says "locked <pid>". */
async function spawnHolder(command: string, args: string[]): Promise<Holder> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += String(d)));
  const pid = await new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      const found = /locked (\d+)/.exec(out);
      if (found) resolve(Number(found[1]));
    });
    child.once("exit", (code) => reject(new Error(`holder exited (${code}) before locking: ${err}`)));
  });
  return { pid, child };
}

/** A holder that is a child of the test. */
const holder = () => spawnHolder(process.execPath, [HOLDER, dir]);

/**
 * A holder whose parent never reaps it: the shell starts it in the
 * background, then becomes `sleep`, so once killed it stays a zombie.
 */
const unreapedHolder = () => spawnHolder("sh", ["-c", `"${process.execPath}" "${HOLDER}" "${dir}" & exec sleep 600`]);

function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once("exit", () => resolve()));

describe("lockDir", () => {
  it("takes over the lock of a killed holder that is still a zombie (kill(pid, 0) would call it alive)", async () => {
    const { pid } = await unreapedHolder();
    process.kill(pid, "SIGKILL");
    await until(() => stateOf(pid) === "Z", `process ${pid} to be a zombie`);
    // Still there for kill(pid, 0), which the lock trusted before.
    expect(() => process.kill(pid, 0)).not.toThrow();

    const lock = await lockDir(dir, "test directory", { waitMs: 0 });
    expect(parseHolder(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it("takes over a lock whose pid now belongs to another process (the start time differs)", async () => {
    const first = await holder();
    const written = await readFile(join(dir, LOCK_FILE), "utf8");
    first.child.kill("SIGKILL");
    await exited(first.child);
    // As in a container restarted in a new PID namespace: the pid of the lock is taken by someone else.
    const other = spawn("sleep", ["600"], { stdio: "ignore" });
    started.push(other);
    await until(() => stateOf(other.pid!) !== undefined, "sleep to run");
    await writeFile(join(dir, LOCK_FILE), written.replace(String(first.pid), String(other.pid)));
    expect(() => process.kill(other.pid!, 0)).not.toThrow();

    const lock = await lockDir(dir, "test directory", { waitMs: 0 });
    expect(parseHolder(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it("refuses a directory a live process holds, naming it, after waiting; takes it once that process dies meanwhile", async () => {
    const live = await holder();
    await expect(lockDir(dir, "test directory", { waitMs: 300 })).rejects.toThrow(
      new RegExp(`test directory .* is in use by process ${live.pid} \\(lock file .*\\.lock\\)`),
    );

    // The next start waits instead of giving up at once: the holder dies while it does.
    const taking = lockDir(dir, "test directory", { waitMs: 50_000 });
    let settled = false;
    void taking.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    live.child.kill("SIGKILL");
    const lock = await taking;
    expect(parseHolder(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it("names its holder with pid, start time and boot id, written whole; release removes it", async () => {
    const lock = await lockDir(dir, "test directory");
    const holderOf = parseHolder(await readFile(join(dir, LOCK_FILE), "utf8"))!;
    expect(holderOf.pid).toBe(process.pid);
    expect(holderOf.start).toMatch(/^\d+$/);
    expect(holderOf.boot).toMatch(/^[0-9a-f-]{36}$/);
    // Within this process a second lock is the caller's business (it keeps its own record): taken over.
    const again = await lockDir(dir, "test directory", { waitMs: 0 });
    await again.release();
    await lock.release();
    await expect(readFile(join(dir, LOCK_FILE), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
