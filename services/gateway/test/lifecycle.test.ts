import * as http from "node:http";
import type { DocumentStore } from "@emailsvc/storage";
import { openStore } from "@emailsvc/storage";
import { startHarness, type Harness } from "./support/harness";

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("probes", () => {
  let h: Harness;
  let storeUp = true;
  let store: DocumentStore;
  beforeAll(async () => {
    store = await openStore({ dbName: "gateway" });
    const flaky: DocumentStore = {
      collection: (name) => store.collection(name),
      ping: async () => storeUp && store.ping(),
      close: () => store.close(),
    };
    h = await startHarness({ store: flaky });
  });
  afterAll(async () => {
    await h.close();
    await store.close();
  });

  it("/healthz answers while the process runs", async () => {
    const res = await h.request("GET", "/healthz", { key: null });
    expect(res).toMatchObject({ status: 200, body: { status: "ok" } });
  });

  it("/readyz is 200 when the store and the subscribers service answer", async () => {
    expect((await h.request("GET", "/readyz", { key: null })).status).toBe(200);
  });

  it("/readyz is 503 when the subscribers service is not serving", async () => {
    h.fake.serving = false;
    const res = await h.request("GET", "/readyz", { key: null });
    h.fake.serving = true;
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("not_ready");
  });

  it("/readyz is 503 when the store does not answer", async () => {
    storeUp = false;
    const res = await h.request("GET", "/readyz", { key: null });
    storeUp = true;
    expect(res.status).toBe(503);
  });
});

describe("graceful shutdown", () => {
  it("turns not ready at once, finishes in-flight requests, then stops taking connections", async () => {
    const h = await startHarness();
    h.fake.delayMs = 300;
    const inFlight = h.request("GET", "/api/v1/tags");
    await until(() => h.fake.calls.some((c) => c.method === "listTags"));
    expect(h.running.gateway.inFlight).toBe(1);

    const closing = h.running.close();
    expect(await h.running.gateway.ready()).toBe(false);
    const res = await inFlight;
    expect(res.status).toBe(200);
    // The response asked the client to close its connection.
    expect(res.headers.get("connection")).toBe("close");
    await closing;
    await expect(fetch(`${h.url}/healthz`)).rejects.toThrow();
    await h.close();
  });

  it("with an idle-connection grace, answers a client's next request on its kept-alive connection, with Connection: close", async () => {
    // A rollout behind a Service: a client (an ingress controller, a Pod)
    // calls in a loop on a keep-alive connection to this replica when it is
    // told to stop. Ending that idle connection at once would fail the
    // request the client is writing on it (deploy/kube/test/helm.test.ts saw it).
    const h = await startHarness({ idleConnectionGraceMs: 2000 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status?: number; connection?: string }>((resolve, reject) => {
        http
          .get(`${h.url}/healthz`, { agent }, (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode, connection: res.headers.connection }));
          })
          .on("error", reject);
      });
    try {
      expect((await get()).connection).toBe("keep-alive");
      const closing = h.running.close();
      // Sent on the idle connection just after close() began.
      expect(await get()).toEqual({ status: 200, connection: "close" });
      await closing;
      await expect(get()).rejects.toThrow();
    } finally {
      agent.destroy();
      await h.close();
    }
  });

  it("cancels the service call when the client goes away", async () => {
    const h = await startHarness();
    try {
      h.fake.delayMs = 500;
      const controller = new AbortController();
      const request = fetch(`${h.url}/api/v1/tags`, { headers: { "x-api-key": h.key }, signal: controller.signal });
      await until(() => h.fake.calls.some((c) => c.method === "listTags"));
      controller.abort();
      await expect(request).rejects.toThrow();
      await until(() => h.fake.lastCall!.signal.aborted);
      // A client that left is not an error of ours.
      await until(() => h.logs.some((l) => l.msg === "request"));
      expect(h.logs.filter((l) => l.msg === "request failed")).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
