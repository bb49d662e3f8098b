// Jest runs tests in a separate realm: errors made by Node itself (a refused
// connection, an AbortSignal's AbortError) are not `instanceof Error` for
// connect's code there, so connect-node (and our transport alike) report them
// as Internal in the other tests. This runs the outcomes that depend on it in
// a plain Node process, as in production (support/plain-node-scenarios.ts).
import { execFile } from "node:child_process";
import { join } from "node:path";

type Outcome = { ok?: string; code?: string; rawMessage?: string };

function runScenarios(): Promise<Record<string, { ours: Outcome; stock: Outcome }>> {
  const support = join(__dirname, "support");
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["-r", join(support, "swc-register.js"), join(support, "plain-node-scenarios.ts")],
      { cwd: join(__dirname, ".."), timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

describe("outside Jest's realm (plain Node)", () => {
  let results: Awaited<ReturnType<typeof runScenarios>>;
  beforeAll(async () => {
    results = await runScenarios();
  });

  it("both transports call, time out and cancel the same way", () => {
    expect(results["up"]).toEqual({ ours: { ok: "sub_known" }, stock: { ok: "sub_known" } });
    const deadline = { code: "DeadlineExceeded", rawMessage: "the operation timed out" };
    expect(results["deadline"]).toEqual({ ours: deadline, stock: deadline });
    const canceled = { code: "Canceled", rawMessage: "This operation was aborted" };
    expect(results["cancel"]).toEqual({ ours: canceled, stock: canceled });
  });

  it("a closed server: Unavailable (connection refused) from both; after a restart on the same port both succeed", () => {
    const down = { code: "Unavailable", rawMessage: expect.stringContaining("ECONNREFUSED") };
    expect(results["down"]).toEqual({ ours: down, stock: down });
    expect(results["restarted"]).toEqual({ ours: { ok: "sub_known" }, stock: { ok: "sub_known" } });
  });

  it("a refused stream: Unavailable from our transport (after its one retry), Internal from connect-node's", () => {
    expect(results["refused"]).toEqual({
      ours: { code: "Unavailable", rawMessage: "http/2 stream closed with error code REFUSED_STREAM (0x7)" },
      stock: { code: "Internal", rawMessage: "Stream closed with error code NGHTTP2_REFUSED_STREAM" },
    });
  });
});
