import { existsSync } from "node:fs";
import { AppError } from "@emailsvc/runtime";
import { BodyCompilerPool } from "../src/compile-pool.js";
import { compileTemplateBody } from "../src/domain/body.js";
import { mjmlWith, WORKER_SCRIPT } from "./harness.js";

describe("compile worker pool", () => {
  beforeAll(() => {
    if (!existsSync(WORKER_SCRIPT)) throw new Error(`${WORKER_SCRIPT} is missing: build first (npm test does)`);
  });

  it("compiles in worker threads exactly as in process, several at once", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 2 });
    try {
      const sources = [mjmlWith("a {{x}}"), mjmlWith("b {{y}}"), mjmlWith("c {{{z}}}"), "<mjml><mj-body><mj-colum></mj-colum></mj-body></mjml>", mjmlWith("d")];
      const [inWorkers, inProcess] = await Promise.all([Promise.all(sources.map((s) => pool.compile(s))), Promise.all(sources.map(compileTemplateBody))]);
      expect(inWorkers).toEqual(inProcess);
      expect(inWorkers.map((r) => (r.ok ? "ok" : r.kind))).toEqual(["ok", "ok", "template", "mjml", "ok"]);
      expect(pool.workers).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("abandons a compile past the timeout and keeps serving", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, timeoutMs: 1 });
    try {
      const big = mjmlWith("x".repeat(10), "<mj-section><mj-column><mj-text>y</mj-text></mj-column></mj-section>\n".repeat(400));
      const result = await pool.compile(big);
      expect(result).toEqual({ ok: false, kind: "mjml", problems: [{ line: 0, message: "takes longer than 1 ms to compile; make the template smaller" }] });
    } finally {
      await pool.close();
    }
    const patient = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1 });
    try {
      expect((await patient.compile(mjmlWith("fine"))).ok).toBe(true);
    } finally {
      await patient.close();
    }
  });

  it("refuses work beyond its queue and after close", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, maxQueue: 1 });
    const first = pool.compile(mjmlWith("1")); // dispatched at once
    const second = pool.compile(mjmlWith("2")); // queued
    await expect(pool.compile(mjmlWith("3"))).rejects.toMatchObject({ kind: "unavailable", code: "busy" });
    expect((await first).ok).toBe(true);
    expect((await second).ok).toBe(true);
    await pool.close();
    const late = await pool.compile(mjmlWith("4")).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(AppError);
    expect(pool.workers).toBe(0);
  });
});
