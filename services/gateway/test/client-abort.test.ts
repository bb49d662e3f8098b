// Regression test of issue 16, defect 11b: a client that sends part of a body
// and hangs up was logged as a failed request (level error, with a stack) and
// counted as a 500. A client that goes away is no server error: the access
// line says 499 ("client closed request"), no error line or stack is
// written, the metrics count a 499, and nothing reaches a service.

import { connect, type Socket } from "node:net";
import { startMetricsServer, type MetricsServer } from "@emailsvc/telemetry";
import { startHarness, type Harness } from "./support/harness";

let h: Harness;
let metrics: MetricsServer;
beforeAll(async () => {
  h = await startHarness();
  metrics = await startMetricsServer({ port: 0 });
});
afterAll(async () => {
  await metrics.close();
  await h.close();
});

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (!condition()) throw new Error(`gave up waiting for ${what}`);
}

/** Sends the head of a POST and part of its body, then hangs up once the gateway is reading it. */
async function abortedUpload(path: string, headers: Record<string, string>): Promise<void> {
  const { port } = new URL(h.url);
  const socket: Socket = connect(Number(port), "127.0.0.1");
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  // Under every body limit (the one-click form takes 1 KiB), so the announced length is no reason to refuse it.
  const head = Object.entries({ Host: "gateway.test", "Content-Length": "900", ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{"email": "slow-upl`);
  // The gateway reads a body only after authenticating: let it get there.
  await until(() => h.running.gateway.inFlight === 1, "the request to be in flight");
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.destroy();
  await until(() => h.running.gateway.inFlight === 0, "the request to end");
}

describe("a client that hangs up mid-upload", () => {
  it("is a 499 in the access log and the metrics, never an error with a stack", async () => {
    h.logs.length = 0;
    h.fake.calls.length = 0;
    await abortedUpload("/api/v1/subscribers", { "X-API-Key": h.key, "Content-Type": "application/json" });
    await until(() => h.logs.some((line) => line.msg === "request"), "the access line");

    const access = h.logs.filter((line) => line.msg === "request");
    expect(access.map((line) => ({ method: line.method, route: line.route, status: line.status }))).toEqual([
      { method: "POST", route: "/api/v1/subscribers", status: 499 },
    ]);
    // No error line, no stack, nothing at warn or above (pino: warn 40, error 50).
    expect(h.logs.filter((line) => line.level >= 40).map((line) => line.msg)).toEqual([]);
    expect(JSON.stringify(h.logs)).not.toMatch(/stack|ECONNRESET|at .*\.js:\d+/);
    // Nothing reached the subscribers service.
    expect(h.fake.calls).toEqual([]);

    const scraped = await (await fetch(metrics.url)).text();
    expect(scraped).toMatch(/http_requests_total\{method="POST",route="\/api\/v1\/subscribers",status="499"\} 1/);
    expect(scraped).not.toMatch(/http_requests_total\{method="POST",route="\/api\/v1\/subscribers",status="500"\}/);
  });

  it("the same on the one-click endpoint, whose form body it reads itself", async () => {
    h.logs.length = 0;
    await abortedUpload("/unsubscribe?token=a.b.c", { "Content-Type": "application/x-www-form-urlencoded" });
    await until(() => h.logs.some((line) => line.msg === "request"), "the access line");
    expect(h.logs.filter((line) => line.msg === "request").map((line) => line.status)).toEqual([499]);
    expect(h.logs.filter((line) => line.level >= 40)).toEqual([]);
  });
});
