import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ADMIN_TOKEN, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Schemathesis (PyPI) against the whole platform in this process: every
// operation of the served OpenAPI document, with generated valid and invalid
// data, every check, a fixed seed and a bounded number of examples. The
// document must state every rule the server enforces, and the server must
// keep every promise of the document. The few exceptions, and why they are
// inherent, are in scripts/schemathesis/schemathesis.toml.

const REPO = resolve(__dirname, "../..");
const CONFIG = join(REPO, "scripts/schemathesis/schemathesis.toml");

/** Runs `st` without blocking this process's event loop: the platform answers it. */
function runSchemathesis(st: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(st, args, { cwd, env: { ...process.env, NO_COLOR: "1", PYTHONUNBUFFERED: "1" } });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, output }));
  });
}

describe("schemathesis against the running platform", () => {
  let t: TestPlatform;
  let st: string;
  let work: string;

  beforeAll(async () => {
    // Cached under ~/.cache/emailsvc after the first install (.ci/run prepares it).
    st = execFileSync("bash", [join(REPO, "scripts/schemathesis/install.sh")], { encoding: "utf8", timeout: 300_000 }).trim();
    t = await startTestPlatform("schemathesis");
    // Hypothesis keeps its example database in the working directory.
    work = mkdtempSync(join(tmpdir(), "schemathesis-"));
  }, 360_000);

  afterAll(async () => {
    await t?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("finds no failure with every check", async () => {
    const { code, output } = await runSchemathesis(
      st,
      [
        "--config-file",
        CONFIG,
        "--no-color",
        "run",
        `${t.url}/api/v1/openapi.json`,
        "-H",
        `X-API-Key: ${t.key}`,
        "-H",
        `Authorization: Bearer ${ADMIN_TOKEN}`,
        "--seed",
        "1",
        "--max-examples",
        "20",
        "--workers",
        "1",
        "--generation-database",
        "none",
      ],
      work,
    );
    if (code !== 0) throw new Error(`schemathesis exited with ${code}:\n${output}`);
    expect(output).toMatch(/\d+ generated, \d+ passed/);
  }, 240_000);
});
